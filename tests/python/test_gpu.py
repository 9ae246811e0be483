"""The GPU path from Python (run on the GPU machine): NumPy and PyTorch or CuPy models against the
program's GPU output, and gathers returned on the GPU. Each test skips, saying why, without a GPU
backend in this build, a GPU, or PyTorch/CuPy."""

import sys

import numpy as np
import pytest

import minimod_gpu as mm
from conftest import NX, NY, NZ, acoustic_dict, cli, read_gathers, same_bits, velocity_xyz


def gpu_backend() -> str:
    backends = {k["backend"] for k in mm.kernels()}
    for name in ("cuda", "hip"):
        if name in backends:
            return name
    pytest.skip("this build has no GPU backend (built without nvcc or hipcc)")


def require_gpu(backend: str, survey) -> None:
    """Skip, with the program's reason, when a run on `backend` cannot start here."""
    try:
        mm.run(survey, backend=backend, shots=0, steps=1, progress=False, quiet=True)
    except mm.MinimodError as e:
        pytest.skip(f"no usable GPU for --backend {backend}: {e}")


def gpu_libraries():
    """The GPU array libraries usable here: (name, module) for PyTorch with CUDA and CuPy."""
    found = []
    try:
        import torch
        if torch.cuda.is_available():
            found.append(("torch", torch))
    except ImportError:
        pass
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        found.append(("cupy", cupy))
    except Exception:
        pass
    if not found:
        pytest.skip("neither PyTorch with CUDA nor CuPy with a GPU is available")
    return found


def test_gpu_run_equals_the_program(acoustic_files, tmp_path):
    backend = gpu_backend()
    survey, vp = acoustic_files
    require_gpu(backend, survey)
    cli("run", str(survey), "-o", str(tmp_path / "gpu.h5"), "--backend", backend, "--quiet")
    reference = read_gathers(tmp_path / "gpu.h5")
    for source in (survey, acoustic_dict(vp), acoustic_dict(np.asfortranarray(vp))):
        r = mm.run(source, backend=backend, progress=False)
        assert r.backend == backend
        for g in r.gathers:
            assert same_bits(g.traces, reference[g.shot])


def gpu_reference(acoustic_files, tmp_path):
    """The GPU backend, the survey and model of acoustic_files, the GPU array libraries found and
    the program's GPU gathers of the survey (written to tmp_path/gpu.h5); skips as above."""
    backend = gpu_backend()
    survey, vp = acoustic_files
    require_gpu(backend, survey)
    libraries = gpu_libraries()
    cli("run", str(survey), "-o", str(tmp_path / "gpu.h5"), "--backend", backend, "--quiet")
    return backend, survey, vp, libraries, read_gathers(tmp_path / "gpu.h5")


def test_device_models_and_device_gathers(acoustic_files, tmp_path):
    """A model on the GPU (each library found, a tensor that requires grad included) gives the
    program's gathers; device_arrays returns them on the GPU in the library named."""
    backend, survey, vp, libraries, reference = gpu_reference(acoustic_files, tmp_path)
    for kind, lib in libraries:
        models = [lib.asarray(vp)] if kind == "cupy" else [
            lib.from_numpy(vp).to("cuda"), lib.from_numpy(vp).to("cuda").requires_grad_(True),
            lib.from_numpy(np.asfortranarray(vp)).to("cuda")]
        for model in models:
            r = mm.run(acoustic_dict(model), backend=backend, progress=False, device_arrays=kind)
            for g in r.gathers:
                if kind == "torch":
                    assert g.traces.is_cuda
                    host = g.traces.cpu().numpy()
                else:
                    assert isinstance(g.traces, lib.ndarray)
                    host = g.traces.get()
                assert same_bits(host, reference[g.shot])
    names = [k for k, _ in libraries]
    r = mm.run(survey, backend=backend, shots=0, progress=False, device_arrays=True)
    expected = "torch" if "torch" in sys.modules and "torch" in names else "cupy"
    assert type(r.gathers[0].traces).__module__.split(".")[0] == expected


def test_device_arrays_names_a_library_or_true(acoustic_files):
    with pytest.raises(mm.InputError, match="device_arrays: 'jax' is not allowed: False, True, "
                                            "'torch' or 'cupy'"):
        mm.run(acoustic_files[0], backend="cpu", shots=0, progress=False, device_arrays="jax")


def test_device_arrays_without_a_gpu_library_is_a_device_error(acoustic_files, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(mm.DeviceError, match="device_arrays=True"):
        mm.run(acoustic_files[0], backend="cpu", shots=0, progress=False, device_arrays=True)


def gpu_models(libraries, vp: np.ndarray):
    """Each library's GPU copies of vp[x, y, z] in several memory layouts: C order, Fortran
    order, float64, a strided view into a larger array, and (PyTorch) one that requires grad."""
    models = []
    for kind, lib in libraries:
        if kind == "torch":
            big = lib.zeros((NX + 3, NY, 2 * NZ), dtype=lib.float32, device="cuda")
            big[1:NX + 1, :, ::2] = lib.from_numpy(vp).to("cuda")
            models += [(kind, "C", lib.from_numpy(vp).to("cuda")),
                       (kind, "F", lib.from_numpy(vp).to("cuda").permute(2, 1, 0).contiguous()
                        .permute(2, 1, 0)),
                       (kind, "f64", lib.from_numpy(vp.astype(np.float64)).to("cuda")),
                       (kind, "strided", big[1:NX + 1, :, ::2]),
                       (kind, "grad", lib.from_numpy(vp).to("cuda").requires_grad_(True))]
        else:
            big = lib.zeros((NX + 3, NY, 2 * NZ), dtype=lib.float32)
            big[1:NX + 1, :, ::2] = lib.asarray(vp)
            models += [(kind, "C", lib.asarray(vp)), (kind, "F", lib.asfortranarray(lib.asarray(vp))),
                       (kind, "f64", lib.asarray(vp.astype(np.float64))),
                       (kind, "strided", big[1:NX + 1, :, ::2])]
    return models


def test_gpu_model_is_used_in_place(acoustic_files, tmp_path):
    """A GPU array model stays on the GPU (Survey.model_on_device) in every memory layout and
    gives the program's gathers and stored model bit for bit, with output= too."""
    import h5py
    backend, survey, vp, libraries, reference = gpu_reference(acoustic_files, tmp_path)
    with h5py.File(tmp_path / "gpu.h5", "r") as f:
        stored = f["model"]["vp"][...]
    for kind, layout, model in gpu_models(libraries, vp):
        s = mm.Survey(acoustic_dict(model))
        assert s.model_on_device, (kind, layout)
        out = tmp_path / f"{kind}-{layout}.h5"
        r = mm.run(s, backend=backend, progress=False, output=out)
        for g in r.gathers:
            assert same_bits(g.traces, reference[g.shot]), (kind, layout, g.shot)
        with h5py.File(out, "r") as f:
            assert same_bits(f["model"]["vp"][...], stored), (kind, layout)


def test_gpu_model_on_the_cpu_backend_is_copied_once(acoustic_files, tmp_path):
    backend = gpu_backend()
    survey, vp = acoustic_files
    require_gpu(backend, survey)
    cli("run", str(survey), "-o", str(tmp_path / "cpu.h5"), "--backend", "cpu", "--quiet")
    reference = read_gathers(tmp_path / "cpu.h5")
    for kind, layout, model in gpu_models(gpu_libraries(), vp)[:2]:
        r = mm.run(acoustic_dict(model), backend="cpu", progress=False)
        assert r.backend == "cpu"
        for g in r.gathers:
            assert same_bits(g.traces, reference[g.shot]), (kind, layout)


def test_gpu_model_errors_name_the_key(acoustic_files):
    backend = gpu_backend()
    survey, vp = acoustic_files
    require_gpu(backend, survey)
    kind, lib = gpu_libraries()[0]
    bad = vp.copy()
    bad[3, 2, 5] = 0
    model = lib.asarray(bad) if kind == "cupy" else lib.from_numpy(bad).to("cuda")
    with pytest.raises(mm.InputError, match=r"model.file: 0 at \(i, j, k\) = \(3, 2, 5\) of the "
                                            r"model \(element \[3\]\[2\]\[5\] of .* on .*:0\) is "
                                            r"not allowed: velocities finite and > 0"):
        mm.Survey(acoustic_dict(model)).validate(backend=backend)
    small = lib.asarray(vp[:-1]) if kind == "cupy" else lib.from_numpy(vp[:-1].copy()).to("cuda")
    with pytest.raises(mm.InputError, match=r"model.file: .* \(23 x 20 x 22 points, nx x ny x nz\)"
                                            r" is not allowed: a GPU array model has the grid's "
                                            r"24 x 20 x 22 points"):
        mm.run(acoustic_dict(small), backend=backend, progress=False)
    # Written after the survey was made: refused, not run with a plan of other values.
    model = lib.asarray(vp) if kind == "cupy" else lib.from_numpy(vp).to("cuda")
    s = mm.Survey(acoustic_dict(model))
    model *= 1.5
    with pytest.raises(mm.InputError, match="changed after the survey was made"):
        mm.run(s, backend=backend, progress=False)


def resident_bytes() -> int:
    import os
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_gpu_model_takes_no_host_memory(acoustic_files):
    """A 1.2e8-point model (460 MB as float32): its survey and run leave the process's resident
    memory within 100 MB of what it was (a host copy of the model alone would add 460 MB while
    the survey lives)."""
    backend = gpu_backend()
    survey, _ = acoustic_files
    require_gpu(backend, survey)
    kind, lib = gpu_libraries()[0]
    n = (500, 480, 500)
    model = (lib.full(n, 2000.0, dtype=lib.float32) if kind == "cupy"
             else lib.full(n, 2000.0, dtype=lib.float32, device="cuda"))
    d = {"name": "big", "grid": {"shape": list(n), "spacing": 10},
         "model": {"type": "file", "file": model}, "time": {"steps": 3},
         "boundary": {"width": 4},
         "sources": [{"position": [2500, 2400, 100], "wavelet": {"type": "ricker", "frequency": 10}}],
         "receivers": {"lines": [{"start": [100, 2400, 50], "end": [4800, 2400, 50], "count": 20}]}}
    mm.run(survey, backend=backend, shots=0, steps=2, progress=False)  # the GPU context first
    before = resident_bytes()
    s = mm.Survey(d)
    assert s.model_on_device
    r = mm.run(s, backend=backend, progress=False)
    grown = resident_bytes() - before
    assert r.gathers[0].traces.shape[0] == 20
    assert grown < 100 << 20, f"resident memory grew by {grown >> 20} MB"
