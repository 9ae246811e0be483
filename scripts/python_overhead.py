#!/usr/bin/env python3
"""The Python module's overhead per shot against the time stepping (docs/python.md).

Runs SURVEY with `minimod_gpu.run` (progress bar on, as a notebook user has it) and reports, per
shot, the stepping time the driver measured and the rest of the shot's wall time as Python sees
it: the shot's setup and output, the callbacks (progress, notices) and handing the gather to NumPy.
The whole run's wall time less the stepping, over the shots, is the overhead a shot; the figure
asked for is at most 1% of the stepping.

  PYTHONPATH=build/python python3 scripts/python_overhead.py input/survey16.yaml --backend cuda
"""

import argparse
import json
import sys
import time

import minimod_gpu as mm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("survey")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()

    survey = mm.Survey(args.survey)
    try:  # tqdm's first import (about 0.3 s) belongs to the interpreter, not the run
        import tqdm.auto  # noqa: F401
    except ImportError:
        pass
    start = time.perf_counter()
    result = mm.run(survey, backend=args.backend, steps=args.steps)
    wall_ms = (time.perf_counter() - start) * 1e3
    shots = len(result.shot_timings)
    stepping = sum(t["step_ms"] for t in result.shot_timings)
    once = result.timings["model_ms"] + result.timings["assemble_ms"]
    # Later shots: what a shot costs besides its stepping once the run is set up.
    later = result.shot_timings[1:] or result.shot_timings
    per_shot_driver = sum(t["setup_ms"] + t["output_ms"] for t in later) / len(later)
    per_shot_python = (wall_ms - result.timings["total_ms"]) / shots
    figures = {
        "survey": args.survey, "backend": result.backend, "device": result.device,
        "shots": shots, "steps": result.plan.steps, "wall_ms": wall_ms,
        "stepping_ms_per_shot": stepping / shots,
        "driver_overhead_ms_per_later_shot": per_shot_driver,
        "python_outside_driver_ms_per_shot": per_shot_python,
        "once_ms": once,
        # A later shot's setup and output, and what Python adds outside the driver, a shot.
        "overhead_percent_of_stepping": 100.0 * (per_shot_driver + per_shot_python) /
                                        (stepping / shots),
    }
    for key, value in figures.items():
        print(f"{key:40s} {value:.4g}" if isinstance(value, float) else f"{key:40s} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
