"""The GPU path from Python (run on the GPU machine): NumPy and PyTorch or CuPy models against the
program's GPU output, and gathers returned on the GPU. Each test skips, saying why, without a GPU
backend in this build, a GPU, or PyTorch/CuPy."""

import sys

import numpy as np
import pytest

import minimod_gpu as mm
from conftest import acoustic_dict, cli, read_gathers, same_bits, velocity_xyz


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


def test_device_models_and_device_gathers(acoustic_files, tmp_path):
    """A model on the GPU (each library found, a tensor that requires grad included) gives the
    program's gathers; device_arrays returns them on the GPU in the library named."""
    backend = gpu_backend()
    survey, vp = acoustic_files
    require_gpu(backend, survey)
    libraries = gpu_libraries()
    cli("run", str(survey), "-o", str(tmp_path / "gpu.h5"), "--backend", backend, "--quiet")
    reference = read_gathers(tmp_path / "gpu.h5")
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
