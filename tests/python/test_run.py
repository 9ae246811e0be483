"""run() against the command line: the same gathers bit for bit, the same files, no copies."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import minimod_gpu as mm
from conftest import (BINARY, NX, NY, NZ, acoustic_dict, cli, cli_error, read_gathers, same_bits,
                      velocity_xyz, epsilon_xyz)


def assert_same_gathers(result, reference):
    assert sorted(reference) == result.shots
    for g in result.gathers:
        assert same_bits(g.traces, reference[g.shot]), f"shot {g.shot} differs"
        assert np.abs(g.traces).max() > 0  # something was recorded


def test_acoustic_file_and_arrays_equal_the_program(acoustic_files, tmp_path):
    survey, vp = acoustic_files
    cli("run", str(survey), "-o", str(tmp_path / "cli.h5"), "--backend", "cpu", "--quiet")
    reference = read_gathers(tmp_path / "cli.h5")
    assert len(reference) == 4

    assert_same_gathers(mm.run(survey, backend="cpu", progress=False), reference)
    # The same model as an (nx, ny, nz) array, in C order and in Fortran order (z last by default).
    assert_same_gathers(mm.run(acoustic_dict(vp), backend="cpu", progress=False), reference)
    fortran = np.asfortranarray(vp)
    assert fortran.flags.f_contiguous and not fortran.flags.c_contiguous
    assert_same_gathers(mm.run(acoustic_dict(fortran), backend="cpu", progress=False), reference)
    # float64, and (nz, ny, nx) with order: xyz as the survey key says.
    assert_same_gathers(mm.run(acoustic_dict(vp.astype(np.float64)), backend="cpu",
                               progress=False), reference)
    zyx = np.ascontiguousarray(vp.transpose(2, 1, 0))
    assert_same_gathers(mm.run(acoustic_dict(zyx, order="xyz"), backend="cpu", progress=False),
                        reference)


def test_a_transposed_model_changes_the_gathers(acoustic_files, tmp_path):
    """The check above can fail: the array read in the wrong axis order gives other traces."""
    survey, vp = acoustic_files
    cli("run", str(survey), "-o", str(tmp_path / "cli.h5"), "--backend", "cpu", "--quiet")
    reference = read_gathers(tmp_path / "cli.h5")
    other = np.ascontiguousarray(np.flip(vp, axis=2))
    r = mm.run(acoustic_dict(other), backend="cpu", progress=False)
    assert not same_bits(r.gathers[0].traces, reference[0])


def test_tti_file_and_arrays_equal_the_program(tti_files, tmp_path):
    survey, vp, eps = tti_files
    cli("run", str(survey), "-o", str(tmp_path / "cli.h5"), "--backend", "cpu", "--quiet")
    reference = read_gathers(tmp_path / "cli.h5")
    assert_same_gathers(mm.run(survey, backend="cpu", progress=False), reference)
    d = {
        "name": "python-tti", "physics": "tti",
        "grid": {"shape": [NX, NY, NZ], "spacing": 10},
        "model": {"type": "file", "file": np.asfortranarray(vp)},
        "anisotropy": {"angle_unit": "degrees", "epsilon": {"type": "file", "file": eps},
                       "delta": 0.05, "theta": 30},
        "time": {"steps": 40}, "boundary": {"width": 4},
        "sources": [{"position": [110, 100, 70], "wavelet": {"type": "ricker", "frequency": 12}}],
        "receivers": {"lines": [{"start": [50, 100, 50], "end": [180, 100, 50], "count": 14}]},
        "output": {"file": "out/never.h5"},
    }
    assert_same_gathers(mm.run(d, backend="cpu", progress=False), reference)


def test_output_writes_the_programs_files(acoustic_files, tmp_path):
    import h5py
    survey, _ = acoustic_files
    (tmp_path / "cli").mkdir()
    (tmp_path / "py").mkdir()
    cli("run", str(survey), "-o", str(tmp_path / "cli" / "run.h5"), "--backend", "cpu", "--quiet")
    r = mm.run(survey, backend="cpu", output=tmp_path / "py" / "run.h5", progress=False)
    assert r.output == str(tmp_path / "py" / "run.h5")
    assert sorted(os.listdir(tmp_path / "py")) == sorted(os.listdir(tmp_path / "cli"))
    with h5py.File(tmp_path / "cli" / "run.h5") as a, h5py.File(tmp_path / "py" / "run.h5") as b:
        for name in ("model/vp", "shots/0000/traces", "shots/0003/traces",
                     "shots/0002/receiver_positions", "shots/0001/wavelet"):
            assert np.array_equal(a[name][...], b[name][...]), name
        for attr in ("survey", "grid_shape", "dt", "steps", "run_fingerprint", "backend"):
            assert np.array_equal(a.attrs[attr], b.attrs[attr]), attr


def test_result_holds_plan_kernels_timings_and_coordinates(acoustic_files):
    survey, _ = acoustic_files
    s = mm.Survey(survey)
    plan = s.validate(backend="cpu")
    r = mm.run(s, backend="cpu", shots=[1, 3], progress=False)
    assert r.shots == [1, 3]
    assert r.plan.dt == plan.dt and r.plan.steps == plan.steps == 50
    assert r.kernels["inner"] == "cpu" and r.backend == "cpu"
    assert [t["shot"] for t in r.shot_timings] == [1, 3]
    assert all(t["step_ms"] > 0 for t in r.shot_timings)
    g = r.gather(3)
    assert g.traces.shape == (14, plan.trace_samples)
    assert np.allclose(g.time, np.arange(plan.trace_samples) * plan.dt_out)
    assert np.array_equal(g.sources, [[100, 80, 60]])
    assert np.allclose(g.receivers[:, 0], np.linspace(50, 180, 14))
    assert g.wavelet.shape == (1, plan.steps)


def test_gathers_own_the_runs_buffers(acoustic_files):
    survey, _ = acoustic_files
    r = mm.run(survey, backend="cpu", shots=0, progress=False)
    traces = r.gathers[0].traces
    assert not traces.flags.owndata and traces.base is not None
    # Where the run wrote them: NumPy's array is that buffer, not a copy of it.
    assert traces.ctypes.data == r.gathers[0].buffer_address
    assert traces.dtype == np.float32 and traces.flags.c_contiguous


MEMORY_CHECK = r"""
import sys, numpy as np, minimod_gpu as mm
d = {"grid": {"shape": [12, 12, 12], "spacing": 10},
     "model": {"type": "file", "file": np.full((12, 12, 12), 1500, np.float32)},
     "time": {"steps": 2}, "boundary": {"width": 1},
     "sources": [{"position": [50, 50, 50], "wavelet": {"type": "ricker", "frequency": 15}}],
     "receivers": {"points": [[60, 50, 50], [70, 50, 50]]}}
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
kept = []
for n in range(520):
    if n == 20:
        start = rss()
    r = mm.run(d, backend="cpu", progress=False, quiet=True)
    assert r.gathers[0].traces.shape[0] == 2
print((rss() - start) / 2**20)
"""


def test_500_runs_grow_memory_by_less_than_50_mb():
    done = subprocess.run([sys.executable, "-c", MEMORY_CHECK], capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=300)
    assert done.returncode == 0, done.stderr
    grown = float(done.stdout.split()[-1])
    print(f"resident memory grew by {grown:.2f} MB over 500 runs")
    assert grown < 50


def test_interrupt_keeps_complete_shots_and_resume_completes_them(acoustic_files, tmp_path):
    survey, _ = acoustic_files
    cli("run", str(survey), "-o", str(tmp_path / "cli.h5"), "--backend", "cpu", "--quiet")
    reference = read_gathers(tmp_path / "cli.h5")
    out = tmp_path / "py.h5"

    def ctrl_c_in_shot_2(event, shot, a, b):
        if event == "shot" and shot == 2:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C does, while the run steps

    with pytest.raises(KeyboardInterrupt, match="interrupted by SIGINT"):
        mm.run(survey, backend="cpu", output=out, progress=ctrl_c_in_shot_2)
    assert not out.exists()
    parts = tmp_path / "py.h5.parts"
    assert sorted(p.name for p in parts.glob("shot-*.h5")) == ["shot-0000.h5", "shot-0001.h5"]
    # Python's own SIGINT handling is back once the run has stopped.
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(2)

    r = mm.run(survey, backend="cpu", output=out, resume=True, progress=False)
    assert r.skipped == [0, 1] and r.shots == [2, 3]
    assert_same_gathers(r, {k: v for k, v in reference.items() if k in (2, 3)})
    final = read_gathers(out)
    assert sorted(final) == [0, 1, 2, 3]
    for shot, traces in reference.items():
        assert same_bits(final[shot], traces)


def test_a_failed_shot_keeps_the_others_and_resume_completes_them(acoustic_files, tmp_path,
                                                                  monkeypatch):
    survey, _ = acoustic_files
    cli("run", str(survey), "-o", str(tmp_path / "cli.h5"), "--backend", "cpu", "--quiet")
    reference = read_gathers(tmp_path / "cli.h5")
    out = tmp_path / "py.h5"
    # The program's testing aid (docs/architecture.md): shot 1 fails at its step 10.
    monkeypatch.setenv("MINIMOD_FAULT_INJECT", "rank=0,shot=1,step=10")
    with pytest.raises(mm.RuntimeFailure) as failed:
        mm.run(survey, backend="cpu", output=out, progress=False, quiet=True)
    assert failed.value.exit_code == 3
    message = str(failed.value)
    assert message.startswith("shot 1 failed: injected failure (MINIMOD_FAULT_INJECT): shot 1")
    assert "1 shot(s) failed (1)" in message and "resume=True" in message
    result = failed.value.result  # the complete shots, as the run returned them
    assert result.shots == [0, 2, 3]
    assert_same_gathers(result, {k: v for k, v in reference.items() if k != 1})
    assert not out.exists()
    kept = sorted(p.name for p in (tmp_path / "py.h5.parts").glob("shot-*.h5"))
    assert kept == ["shot-0000.h5", "shot-0002.h5", "shot-0003.h5"]

    monkeypatch.delenv("MINIMOD_FAULT_INJECT")
    r = mm.run(survey, backend="cpu", output=out, resume=True, progress=False)
    assert r.skipped == [0, 2, 3] and r.shots == [1]
    final = read_gathers(out)
    assert sorted(final) == [0, 1, 2, 3]
    for shot, traces in reference.items():
        assert same_bits(final[shot], traces)


def test_a_failed_shot_of_the_program_keeps_the_others(acoustic_files, tmp_path):
    """The same aid in one process of the command line: exit 3, the others kept."""
    survey, _ = acoustic_files
    out = tmp_path / "cli.h5"
    done = subprocess.run([BINARY, "run", str(survey), "-o", str(out), "--backend", "cpu"],
                          capture_output=True, text=True,
                          env=dict(os.environ, MINIMOD_FAULT_INJECT="rank=0,shot=2,step=0"))
    assert done.returncode == 3, done.stderr
    assert "shot 2 failed: injected failure (MINIMOD_FAULT_INJECT): shot 2, step 0" in done.stderr
    kept = sorted(p.name for p in (tmp_path / "cli.h5.parts").glob("shot-*.h5"))
    assert kept == ["shot-0000.h5", "shot-0001.h5", "shot-0003.h5"] and not out.exists()
    bad = subprocess.run([BINARY, "run", str(survey), "-o", str(tmp_path / "bad.h5"), "--backend",
                          "cpu"], capture_output=True, text=True,
                         env=dict(os.environ, MINIMOD_FAULT_INJECT="shot=2"))
    assert bad.returncode == 2 and "MINIMOD_FAULT_INJECT='shot=2'" in cli_error(bad)


def test_a_run_that_would_drop_kept_shots_is_refused_as_the_program_does(acoustic_files,
                                                                          tmp_path):
    survey, _ = acoustic_files
    out = tmp_path / "py.h5"

    def stop_in_shot_1(event, shot, a, b):
        if event == "shot" and shot == 1:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        mm.run(survey, backend="cpu", output=out, progress=stop_in_shot_1)
    with pytest.raises(mm.InputError) as python:
        mm.run(survey, backend="cpu", output=out, progress=False)
    program = cli("run", str(survey), "-o", str(out), "--backend", "cpu", check=False)
    assert program.returncode == python.value.exit_code == 2
    # The same refusal; only the resume command differs (each names its own).
    assert str(python.value).split("continue it")[0] == cli_error(program).split("continue it")[0]


def test_errors_are_the_programs(acoustic_files, tmp_path):
    survey, _ = acoustic_files
    (tmp_path / "a-file").write_text("not a folder\n")
    missing = tmp_path / "a-file" / "x.h5"
    with pytest.raises(mm.OutputError) as python:
        mm.run(survey, backend="cpu", output=missing, progress=False)
    program = cli("run", str(survey), "-o", str(missing), "--backend", "cpu", check=False)
    assert program.returncode == python.value.exit_code == 4
    assert str(python.value) == cli_error(program)
    with pytest.raises(mm.InputError) as bad:
        mm.run(survey, backend="gpu-please", progress=False)
    assert "backend" in str(bad.value) and "allowed" in str(bad.value)
    with pytest.raises(mm.InputError, match="past the survey's last"):
        mm.run(survey, backend="cpu", shots="2-9", progress=False)
    assert issubclass(mm.DeviceError, mm.RuntimeFailure)
    assert mm.RuntimeFailure.exit_code == 3 and mm.InputError.exit_code == 2


def test_a_callback_error_stops_the_run_and_is_raised(acoustic_files, tmp_path):
    survey, _ = acoustic_files
    out = tmp_path / "py.h5"

    def broken(event, shot, a, b):
        if event == "step" and shot == 1:
            raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        mm.run(survey, backend="cpu", output=out, progress=broken)
    assert not out.exists() and (tmp_path / "py.h5.parts" / "shot-0000.h5").exists()


def test_the_gil_is_released_while_stepping(acoustic_files):
    survey, _ = acoustic_files
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    seen = []
    try:
        def progress(event, shot, a, b):
            if event == "step":
                seen.append(len(ticks))
        mm.run(survey, backend="cpu", progress=progress, steps=200)
    finally:
        done.set()
        thread.join()
    # The other thread ran between the progress reports of one run.
    assert seen[-1] - seen[0] > 10


def test_progress_bar_and_quiet(acoustic_files, capsys):
    survey, _ = acoustic_files
    mm.run(survey, backend="cpu", shots=0)
    err = capsys.readouterr().err
    pytest.importorskip("tqdm")
    assert "step" in err and "shot 0" in err
    mm.run(survey, backend="cpu", shots=0, progress=False, quiet=True)
    # Only the warnings, which the command line prints even with --quiet.
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines)


def test_version_has_the_commit():
    out = cli("--version").stdout.strip()
    version, commit = out.split(" (")
    assert mm.__commit__ == commit.rstrip(")")
    assert mm.__version__.startswith(version)
    if mm.__commit__ not in ("", "unknown"):
        assert mm.__commit__.split("-")[0] in mm.__version__
