"""Shared fixtures of the minimod_gpu tests: the program built beside the module, small surveys.

ctest runs this suite with PYTHONPATH at the build's python/ folder and MINIMOD_BINARY naming the
program of the same build (tests/CMakeLists.txt); the comparisons run both on the same input.
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import minimod_gpu as mm

SOURCE_DIR = Path(os.environ.get("MINIMOD_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = os.environ.get("MINIMOD_BINARY", str(SOURCE_DIR / "build" / "minimod-gpu"))

# A non-cubic grid, so that an axis taken for another changes the gathers.
NX, NY, NZ = 24, 20, 22


def velocity_xyz() -> np.ndarray:
    """vp[x, y, z], varying along every axis: 1500 m/s at the origin, faster with depth."""
    x, y, z = np.meshgrid(np.arange(NX), np.arange(NY), np.arange(NZ), indexing="ij")
    return (1500.0 + 4.0 * x + 3.0 * y + 25.0 * z).astype(np.float32)


ACOUSTIC = """\
name: python-check
grid: {{shape: [{nx}, {ny}, {nz}], spacing: 10}}
model: {{type: file, file: {model}, order: zyx}}
time: {{steps: {steps}}}
boundary: {{width: 4}}
shots:
  wavelet: {{type: ricker, frequency: 12}}
  positions: {{points: [[80, 100, 60], [120, 100, 60], [140, 90, 70], [100, 80, 60]]}}
receivers:
  lines: [{{start: [50, 100, 50], end: [180, 100, 50], count: 14}}]
output: {{file: out/never.h5}}
"""

TTI = """\
name: python-tti
physics: tti
grid: {{shape: [{nx}, {ny}, {nz}], spacing: 10}}
model: {{type: file, file: {model}, order: zyx}}
anisotropy:
  angle_unit: degrees
  epsilon: {{type: file, file: {epsilon}, format: npy, order: zyx}}
  delta: 0.05
  theta: 30
time: {{steps: {steps}}}
boundary: {{width: 4}}
sources:
  - position: [110, 100, 70]
    wavelet: {{type: ricker, frequency: 12}}
receivers:
  lines: [{{start: [50, 100, 50], end: [180, 100, 50], count: 14}}]
output: {{file: out/never.h5}}
"""


def epsilon_xyz() -> np.ndarray:
    x, y, z = np.meshgrid(np.arange(NX), np.arange(NY), np.arange(NZ), indexing="ij")
    return (0.1 + 0.002 * x + 0.004 * z + 0.001 * y).astype(np.float32)


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The program of this build, with its output captured."""
    done = subprocess.run([BINARY, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"minimod-gpu {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return done


def cli_error(done: subprocess.CompletedProcess) -> str:
    """The message of the program's last 'error: ' line."""
    lines = [l for l in done.stderr.splitlines() if l.startswith("error: ")]
    assert lines, f"no error line in: {done.stderr!r}"
    return lines[-1][len("error: "):]


def read_gathers(path) -> dict:
    import h5py
    with h5py.File(path, "r") as f:
        return {int(n): f["shots"][n]["traces"][...] for n in f["shots"]}


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        np.array_equal(a.view(np.uint32), b.view(np.uint32)))


@pytest.fixture
def acoustic_files(tmp_path):
    """An acoustic survey of four shots on a .npy model of (nx, ny, nz), and the model."""
    vp = velocity_xyz()
    np.save(tmp_path / "vp.npy", vp)
    survey = tmp_path / "survey.yaml"
    survey.write_text(ACOUSTIC.format(nx=NX, ny=NY, nz=NZ, model="vp.npy", steps=50))
    return survey, vp


@pytest.fixture
def tti_files(tmp_path):
    vp = velocity_xyz()
    eps = epsilon_xyz()
    np.save(tmp_path / "vp.npy", vp)
    np.save(tmp_path / "eps.npy", eps)
    survey = tmp_path / "tti.yaml"
    survey.write_text(TTI.format(nx=NX, ny=NY, nz=NZ, model="vp.npy", epsilon="eps.npy", steps=40))
    return survey, vp, eps


def acoustic_dict(model, steps: int = 50, order=None) -> dict:
    """The acoustic survey of acoustic_files as a dict, its model `model` (a file or an array)."""
    d = {
        "name": "python-check",
        "grid": {"shape": [NX, NY, NZ], "spacing": 10},
        "model": {"type": "file", "file": model},
        "time": {"steps": steps},
        "boundary": {"width": 4},
        "shots": {"wavelet": {"type": "ricker", "frequency": 12},
                  "positions": np.array([[80, 100, 60], [120, 100, 60], [140, 90, 70],
                                         [100, 80, 60]], float)},
        "receivers": {"lines": [{"start": [50, 100, 50], "end": [180, 100, 50], "count": 14}]},
        "output": {"file": "out/never.h5"},
    }
    if order is not None:
        d["model"]["order"] = order
    return d
