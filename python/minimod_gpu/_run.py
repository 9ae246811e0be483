"""`run`: a survey modelled in this process, its gathers as NumPy arrays."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Union

import numpy as np

from . import _core
from ._core import DeviceError, InputError, RuntimeFailure
from ._survey import Plan, Survey

#: progress(event, shot, a, b): ("shot", shot, done, total) as a shot starts, then
#: ("step", shot, steps_done, steps) every few steps.
ProgressCallback = Callable[[str, int, int, int], None]


@dataclass
class Gather:
    """One shot's gather: ``traces[receiver, sample]``, sample k at ``time[k]`` seconds."""

    shot: int
    traces: Any  #: float32 (receivers, samples): NumPy, or CuPy/PyTorch with device_arrays
    time: np.ndarray  #: (samples,) seconds
    receivers: np.ndarray  #: (receivers, 3) metres
    sources: np.ndarray  #: (sources, 3) metres
    wavelet: np.ndarray  #: float32 (sources, steps): each source's wavelet as sampled
    wavelet_dt: float  #: the wavelet's sample interval (the solver's dt)
    #: Where the run wrote the traces: ``traces.ctypes.data`` equals it (NumPy holds that buffer).
    buffer_address: int = 0

    @property
    def dt(self) -> float:
        """The traces' sample interval in seconds."""
        return float(self.time[1] - self.time[0]) if len(self.time) > 1 else 0.0


@dataclass
class Result:
    """What `run` returns: the gathers of the shots it modelled, the plan, kernels and timings."""

    gathers: List[Gather]
    plan: Plan
    backend: str
    device: str
    kernels: Dict[str, str]  #: kernel of each region (inner, top, bottom, front, back, left, right)
    shot_timings: List[Dict[str, float]]  #: per shot: setup_ms, step_ms, output_ms
    timings: Dict[str, float]  #: model_ms, problem_ms, device_ms, total_ms, assemble_ms, ...
    skipped: List[int]  #: shots kept from the interrupted run (resume=True): read them with open
    output: Optional[str]  #: the HDF5 file written (None: nothing was kept)
    notices: List[str] = field(default_factory=list)  #: every line the run reported

    @property
    def shots(self) -> List[int]:
        """The shot numbers of `gathers`, in order."""
        return [g.shot for g in self.gathers]

    def gather(self, shot: int) -> Gather:
        """The gather of shot number `shot`."""
        for g in self.gathers:
            if g.shot == shot:
                return g
        raise KeyError(f"shot {shot} is not among the shots this run modelled: {self.shots}")

    def __repr__(self) -> str:
        return (f"Result({len(self.gathers)} gather(s), {self.plan.steps} steps of {self.plan.dt:g}"
                f" s on {self.backend}, output={self.output!r})")


def _shots_text(shots: Union[None, int, str, Iterable[int]]) -> str:
    if shots is None:
        return ""
    if isinstance(shots, str):
        return shots
    if isinstance(shots, (int, np.integer)):
        return str(int(shots))
    return ",".join(str(int(s)) for s in shots)


def _printed(line: str) -> bool:
    """The notices the command line prints even with --quiet."""
    return (line.startswith("warning:") or line.startswith("no GPU found") or "failed" in line
            or "resume with:" in line)


class _Bar:
    """A tqdm bar over the steps of every shot the run models, when tqdm is installed."""

    def __init__(self) -> None:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # no bar without tqdm
            tqdm = None
        self._tqdm = tqdm
        self._bar = None
        self._shots = 1
        self._last = 0
        self._label = "steps"

    def __call__(self, event: str, shot: int, a: int, b: int) -> None:
        if self._tqdm is None:
            return
        if event == "shot":
            if self._bar is None:
                self._shots = max(1, b - a)  # the shots still to model
            self._last = 0
            self._label = f"shot {shot} ({a + 1}/{b})"
            if self._bar is not None:
                self._bar.set_description(self._label)
            return
        if self._bar is None:
            self._bar = self._tqdm(total=b * self._shots, unit="step", desc=self._label)
        self._bar.update(max(0, a - self._last))
        self._last = a

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _to_device(traces: np.ndarray, library: Union[bool, str]) -> Any:
    """The traces on the GPU: a PyTorch CUDA tensor or a CuPy array (`library` True: PyTorch when
    it is imported, else CuPy)."""
    asked = library
    if library is True:
        torch = sys.modules.get("torch")
        library = "torch" if torch is not None and torch.cuda.is_available() else "cupy"
    try:
        module = importlib.import_module(library)
    except ImportError:
        raise DeviceError(f"device_arrays={asked!r}: {library} cannot be imported here; "
                          f"allowed: device_arrays=False, or a machine with a GPU and torch or "
                          f"cupy") from None
    try:
        if library == "torch":
            if not module.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            return module.from_numpy(traces).to("cuda")
        return module.asarray(traces)
    except Exception as e:  # no GPU behind the library
        raise DeviceError(f"device_arrays={asked!r}: {library} cannot use a GPU here ({e}); "
                          f"allowed: device_arrays=False") from None


def run(survey: Union[Survey, str, "os.PathLike[str]", Mapping[str, Any]], *,
        backend: str = "auto", kernel: Optional[str] = None,
        shots: Union[None, int, str, Iterable[int]] = None, steps: Optional[int] = None,
        output: Optional[Union[str, "os.PathLike[str]"]] = None, resume: bool = False,
        progress: Union[bool, ProgressCallback] = True, quiet: bool = False,
        device_arrays: Union[bool, str] = False, decompose: Optional[str] = None,
        max_device_memory: Optional[str] = None) -> Result:
    """Model the survey in this process, as ``minimod-gpu run`` does, and return its gathers.

    ``backend`` (cpu, cuda, hip, auto), ``kernel``, ``shots`` (``"10-19"``, ``[0, 3]``, ``5``),
    ``steps``, ``decompose`` and ``max_device_memory`` are the command line's options. With
    ``output=PATH`` the run writes exactly the files the command line writes with ``-o PATH``
    (HDF5, SEG-Y, XDMF, snapshots, the parts of an interrupted run); ``resume=True`` continues an
    interrupted run into that output. Without ``output`` nothing is kept on disk (the run's parts
    go to a temporary folder, removed at the end).

    The gathers are NumPy arrays that own the run's buffers (no copy); with
    ``device_arrays`` they are moved to the GPU: ``"torch"`` or ``"cupy"``, or ``True`` for
    PyTorch when it is imported, else CuPy. The GIL
    is released while the run steps; ``progress`` shows a tqdm bar (``False``: none; a callable:
    called as ``progress(event, shot, a, b)``). Ctrl-C (KeyboardInterrupt) stops at the next step
    with the command line's guarantees: with ``output``, a survey of many shots keeps its complete
    shots for ``resume=True``. Errors raise InputError, RuntimeFailure, DeviceError or OutputError
    with the command line's messages.
    """
    if not isinstance(survey, Survey):
        survey = Survey(survey)
    if survey.model_on_device and (decompose or _core.resolve_backend(backend) == "cpu"):
        survey = survey._on_host()  # these runs read the model in host memory: copied once
    if resume and output is None:
        raise InputError("resume: True needs output=: the file of the interrupted run")
    if device_arrays not in (False, True, "torch", "cupy"):
        raise InputError(f"device_arrays: {device_arrays!r} is not allowed: False, True, 'torch' "
                         f"or 'cupy'")
    notices: List[str] = []

    def notice(line: str) -> None:
        notices.append(line)
        if _printed(line) or (not quiet and line.startswith("note:")):
            print(line, file=sys.stderr)

    selected = _shots_text(shots)
    bar = None
    callback: Optional[ProgressCallback] = None
    if callable(progress):
        callback = progress
    elif progress and not quiet:
        bar = _Bar()
        callback = bar

    command = f"minimod_gpu.run(survey, output={os.fspath(output)!r}, resume=True" if output \
        else ""
    for name, value in (("backend", backend if backend != "auto" else None), ("kernel", kernel),
                        ("shots", selected or None), ("steps", steps), ("decompose", decompose),
                        ("max_device_memory", max_device_memory)):
        if command and value is not None:
            command += f", {name}={value!r}"
    command += ")" if command else ""

    temporary = None
    path = os.fspath(output) if output is not None else None
    if path is None:
        # In memory where Linux has a tmpfs: the parts' syncs then cost nothing.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        temporary = tempfile.TemporaryDirectory(prefix="minimod_gpu-", dir=shm)
        path = os.path.join(temporary.name, "run.h5")
    try:
        r = _core.run(survey._handle, backend, kernel or "", int(steps or 0), selected, path,
                      bool(resume), command, decompose or "", max_device_memory or "", callback,
                      notice)
    finally:
        if bar is not None:
            bar.close()
        if temporary is not None:
            temporary.cleanup()

    gathers = []
    for g in r["gathers"]:
        traces = g["traces"]
        gathers.append(Gather(shot=g["shot"], traces=_to_device(traces, device_arrays) if device_arrays
                              else traces,
                              time=np.arange(g["samples"]) * g["dt_out"], receivers=g["receivers"],
                              sources=g["sources"], wavelet=g["wavelet"],
                              wavelet_dt=g["wavelet_dt"], buffer_address=g["traces_address"]))
    timings = {k: r[k] for k in ("model_ms", "problem_ms", "device_ms", "total_ms", "assemble_ms",
                                 "median_step_ms", "mpoints_per_s")}
    result = Result(gathers=gathers, plan=Plan._from(r["plan"]), backend=r["backend"],
                    device=r["device"], kernels=dict(r["kernels"]),
                    shot_timings=r["shot_timings"], timings=timings, skipped=list(r["skipped"]),
                    output=None if temporary is not None else path, notices=notices)
    if r["failed"]:
        # As the command line reports them (exit 3); the complete shots stay in `result`.
        listed = ", ".join(str(s) for s, _ in r["failed"])
        why = "; ".join(f"shot {s} failed: {w}" for s, w in r["failed"])
        error = RuntimeFailure(f"{why}; {len(r['failed'])} shot(s) failed ({listed}); fix the "
                               f"cause and rerun with resume=True (the complete shots are kept)")
        error.result = result
        raise error
    return result
