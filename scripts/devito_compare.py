#!/usr/bin/env python3
"""The CPU backend side by side with Devito on the same machine (docs/perf/README.md).

Installs Devito into a virtual environment (once), then runs the same problem in both programs:
an N^3 grid, 8th-order Laplacian, the given steps, with the 27-point absorbing layer and without,
with 1 and 2 OpenMP threads. The runs of each configuration alternate between the two programs,
at least three rounds, so that a change of the machine's load hits both; the table gives the
median Gpts/s of each and the ratio minimod / Devito, and the load average before and after.

    python3 scripts/devito_compare.py                       # 256^3, 200 steps, 3 rounds
    python3 scripts/devito_compare.py --grid 64 --steps 20  # a quick check that it all works

Devito's operator is its own idiom for this problem: u.forward from m u.dt2 - laplace u
(+ damp u.dt in the layer form, a damping field read at every point, zero inside), space order 8,
time order 2, language openmp, gcc. minimod-gpu runs `bench --backend cpu --kernel cpu`
(Minimod's layer with its memory variable phi where there is a layer, --layer 0 without). Both
count points per second as grid points (no halo) times steps over the time of the steps alone
(Devito: the operator's own timer of its section; minimod: the bench's median repeat).

Not run in CI: it downloads Devito and takes minutes at 256^3.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEVITO_VERSION = "4.8.23"

# Runs inside the virtual environment: one configuration, prints one JSON line.
DEVITO_RUN = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from devito import Grid, TimeFunction, Function, Eq, Operator, solve, configuration

    n, steps, layer = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    configuration["log-level"] = "ERROR"
    h = 20.0
    grid = Grid(shape=(n, n, n), extent=tuple((n - 1) * h for _ in range(3)), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=0)
    m.data[:] = 1.0 / 2000.0 ** 2  # slowness squared, 2000 m/s
    dt = 0.8 * h / 4500.0 / np.sqrt(3.0)
    # A Gaussian pulse at the centre, so that the operator works on live numbers, not zeros.
    c = n // 2
    idx = np.arange(n) - c
    g = np.exp(-(idx.astype(np.float32) ** 2) / 8.0)
    u.data[0] = g[:, None, None] * g[None, :, None] * g[None, None, :]
    u.data[1] = u.data[0]
    pde = m * u.dt2 - u.laplace
    if layer > 0:
        damp = Function(name="damp", grid=grid, space_order=0)
        ramp = np.zeros(n, dtype=np.float32)
        for i in range(layer):
            ramp[i] = ramp[n - 1 - i] = ((layer - i) / layer) ** 2 * 0.1 / dt
        damp.data[:] = ramp[:, None, None] + ramp[None, :, None] + ramp[None, None, :]
        pde = pde + damp * u.dt
    op = Operator([Eq(u.forward, solve(pde, u.forward))], opt="advanced")
    op.apply(time_m=0, time_M=1, dt=dt)  # compile and warm up outside the timing
    t0 = time.perf_counter()
    summary = op.apply(time_m=0, time_M=steps - 1, dt=dt)
    wall = time.perf_counter() - t0
    section = sum(v.time for v in summary.values())
    print(json.dumps({"seconds": section, "wall": wall,
                      "gpts": n ** 3 * steps / section / 1e9}))
    """
)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def ensure_venv(path):
    python = path / "bin" / "python"
    if python.exists():
        probe = subprocess.run([str(python), "-c", "import devito; print(devito.__version__)"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return python
    print(f"devito_compare: installing Devito {DEVITO_VERSION} into {path}", file=sys.stderr)
    venv.EnvBuilder(with_pip=True, clear=not python.exists()).create(path)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"devito=={DEVITO_VERSION}"],
                   check=True)
    return python


def run_devito(python, grid, steps, layer, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), DEVITO_LANGUAGE="openmp",
               DEVITO_ARCH="gcc", DEVITO_LOGGING="ERROR")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(DEVITO_RUN)
        script = f.name
    try:
        out = subprocess.run([str(python), script, str(grid), str(steps), str(layer)],
                             env=env, capture_output=True, text=True)
    finally:
        os.unlink(script)
    if out.returncode != 0:
        raise SystemExit(f"devito_compare: the Devito run failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["gpts"]


def run_minimod(binary, grid, steps, layer, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "bench.json"
        cmd = [str(binary), "bench", "--backend", "cpu", "--kernel", "cpu", "--grid", str(grid),
               "--steps", str(steps), "--warmup", "5", "--repeats", "3",
               "--json", str(record)]
        if layer == 0:
            cmd += ["--layer", "0"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"devito_compare: {' '.join(cmd)} failed:\n{out.stderr}")
        rec = json.loads(record.read_text())["records"][0]
        return rec["gpts_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=256, help="N for an N^3 grid (256)")
    ap.add_argument("--steps", type=int, default=200, help="time steps per run (200)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs per program (>= 3)")
    ap.add_argument("--threads", default="1,2", help="OpenMP thread counts (1,2)")
    ap.add_argument("--binary", default=str(ROOT / "build" / "minimod-gpu"),
                    help="minimod-gpu to time (build/minimod-gpu)")
    ap.add_argument("--venv", default=str(ROOT / "build" / "devito-venv"),
                    help="virtual environment for Devito (build/devito-venv)")
    ap.add_argument("--json", help="write the measurements to this file")
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error(f"--rounds {a.rounds}: allowed: >= 3 (the median of fewer says little)")
    if a.grid <= 2 * 27:
        ap.error(f"--grid {a.grid}: allowed: > 54 (an inner region between 27-point layers)")
    if a.steps <= 0:
        ap.error(f"--steps {a.steps}: allowed: a positive integer")
    threads = [int(t) for t in a.threads.split(",") if t.strip()]
    if not threads or min(threads) <= 0:
        ap.error(f"--threads '{a.threads}': allowed: positive integers separated by ','")
    binary = Path(a.binary)
    if not binary.exists():
        ap.error(f"--binary {binary}: no such file; build minimod-gpu first")
    python = ensure_venv(Path(a.venv))

    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load_before = load_average()
    rows = []
    for layer in (27, 0):
        for t in threads:
            ours, theirs = [], []
            for r in range(a.rounds):
                ours.append(run_minimod(binary, a.grid, a.steps, layer, t))
                theirs.append(run_devito(python, a.grid, a.steps, layer, t))
                print(f"devito_compare: layer {layer}, {t} thread(s), round {r + 1}: minimod "
                      f"{ours[-1]:.3f}, Devito {theirs[-1]:.3f} Gpts/s (load {load_average()})",
                      file=sys.stderr)
            rows.append({"layer": layer, "threads": t, "minimod_gpts": ours,
                         "devito_gpts": theirs, "ratio": statistics.median(ours) /
                         statistics.median(theirs)})
    load_after = load_average()

    print(f"{cpu}, {os.cpu_count()} CPUs, {a.grid}^3, {a.steps} steps, {a.rounds} alternating "
          f"rounds; Devito {DEVITO_VERSION}")
    print(f"load average before: {load_before}; after: {load_after}")
    print(f"{'layer':>5}  {'threads':>7}  {'minimod Gpts/s':>14}  {'Devito Gpts/s':>13}  "
          f"{'ratio':>5}")
    for row in rows:
        print(f"{row['layer']:>5}  {row['threads']:>7}  "
              f"{statistics.median(row['minimod_gpts']):>14.3f}  "
              f"{statistics.median(row['devito_gpts']):>13.3f}  {row['ratio']:>5.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"cpu": cpu, "grid": a.grid, "steps": a.steps,
                                            "rounds": a.rounds, "devito": DEVITO_VERSION,
                                            "load_before": load_before,
                                            "load_after": load_after, "rows": rows}, indent=2)
                                + "\n")


if __name__ == "__main__":
    main()
