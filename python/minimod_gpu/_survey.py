"""Surveys from a YAML file, YAML text or a dict, with NumPy arrays in place of input files."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from . import _core
from ._core import InputError

PathLike = Union[str, "os.PathLike[str]"]

#: The keys whose value is a 3-D array file: a model or an anisotropy parameter.
_VOLUME_PARENTS = ("model", "anisotropy.epsilon", "anisotropy.delta", "anisotropy.theta",
                   "anisotropy.phi")


#: DLPack's device types (dlpack.h) that NumPy reads in place: host memory, CUDA's pinned memory.
_DL_CPU, _DL_CUDA_HOST = 1, 3


def _host_array(value: Any, key: str) -> np.ndarray:
    """A NumPy array of `value`: a NumPy array as is; any other array that speaks DLPack (PyTorch,
    CuPy, JAX, ...) viewed in place when it lies in host memory and copied to the host when it
    lies on a GPU."""
    if isinstance(value, np.ndarray):
        return value
    if not hasattr(value, "__dlpack__"):
        raise InputError(f"{key}: {type(value).__name__} is not allowed: a NumPy array or an "
                         f"array with DLPack (__dlpack__: PyTorch, CuPy, JAX)")
    module = type(value).__module__.split(".")[0]
    if module == "torch":  # detached first: a tensor that requires grad refuses DLPack export
        return value.detach().cpu().numpy()
    if module == "cupy":
        return value.get()
    device = value.__dlpack_device__()[0] if hasattr(value, "__dlpack_device__") else _DL_CPU
    try:
        if device in (_DL_CPU, _DL_CUDA_HOST):
            return np.from_dlpack(value)
        # DLPack 1.0: the producer copies to the host itself.
        return np.from_dlpack(value, device="cpu", copy=True)
    except Exception as e:  # a producer that cannot copy to the host
        raise InputError(f"{key}: the {type(value).__name__} on DLPack device type {device} "
                         f"cannot be read on the host ({e}); allowed: a NumPy array, or a "
                         f"PyTorch, CuPy or DLPack array that NumPy can read") from None


#: DLPack's device types of GPU memory: CUDA and ROCm.
_DL_GPU = {"cuda": 2, "hip": 10}


def _gpu_array(value: Any) -> bool:
    """Whether `value` is an array in the GPU memory of this build's GPU backend (DLPack)."""
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack_device__"):
        return False
    kind = _DL_GPU.get(_core.gpu_backend)
    try:
        return kind is not None and int(value.__dlpack_device__()[0]) == kind
    except Exception:
        return False


def _device_handle(value: Any, key: str, order: str) -> "_core.MemoryFile":
    """A GPU array registered in place (no host copy): scanned on its GPU, kept alive by the
    handle. The producer's stream is waited for first, so the scan sees its values."""
    module = type(value).__module__.split(".")[0]
    device = int(value.__dlpack_device__()[1])
    if module == "torch":
        import torch
        value = value.detach()
        torch.cuda.current_stream(device).synchronize()
    elif module == "cupy":
        import cupy
        with cupy.cuda.Device(device):
            cupy.cuda.get_current_stream().synchronize()
    owner = f"{module}.{type(value).__name__} on {_core.gpu_backend}:{device}"
    if getattr(value, "ndim", 3) != 3 or str(getattr(value, "dtype", "")).split(".")[-1] not in (
            "float32", "float64"):
        raise InputError(f"{key}: a {owner} of dtype {getattr(value, 'dtype', '?')} and shape "
                         f"{tuple(getattr(value, 'shape', ()))} is not allowed: a 3-D float32 or "
                         f"float64 array")
    return _core.register_device_array(key, value, order, owner)


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or hasattr(value, "__dlpack__")


def _volume_file(array: np.ndarray, key: str) -> "_core.MemoryFile":
    """A 3-D float32 or float64 array as a .npy file in memory (C or Fortran order kept)."""
    if array.ndim != 3 or array.dtype not in (np.float32, np.float64):
        raise InputError(f"{key}: an array of {array.dtype} and shape {array.shape} is not "
                         f"allowed: a 3-D float32 or float64 array")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return _core.register_memory_file(key, ".npy", buffer.getvalue())


def _wavelet_file(array: np.ndarray, key: str) -> "_core.MemoryFile":
    """A 1-D array of samples as a raw float32 file in memory."""
    if array.ndim != 1 or array.dtype.kind != "f":
        raise InputError(f"{key}: an array of {array.dtype} and shape {array.shape} is not "
                         f"allowed: a 1-D float array of samples")
    samples = np.ascontiguousarray(array, dtype="<f4")
    return _core.register_memory_file(key, ".f32", samples.tobytes())


def _dump(value: Any, depth: int = 0) -> str:
    """JSON (so YAML) text of a survey: a key a line, a list of numbers on one line, a list of
    points a point a line, so that the parser's line numbers point at the entry at fault."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {_dump(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and not all(
            not isinstance(v, (dict, list)) for v in value):
        items = [f"{inner}{_dump(v, depth + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value)


class _Prepared:
    """A dict turned into the survey text the parser reads, with the arrays it names."""

    def __init__(self, gpu_model: bool = False) -> None:
        self.arrays: List["_core.MemoryFile"] = []
        #: A GPU array may stay on its GPU as the model (an acoustic survey, a GPU build).
        self.gpu_model = gpu_model
        self.device_model = False  #: whether the model is such an array

    def value(self, value: Any, key: str) -> Any:
        if isinstance(value, Mapping):
            return self.section(value, key)
        if isinstance(value, (list, tuple)):
            return [self.value(v, f"{key}[{n}]") for n, v in enumerate(value)]
        if _is_array(value):
            return _host_array(value, key).tolist()
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if value is not None and not isinstance(value, (str, bool, int, float)):
            raise InputError(f"{key}: a value of type {type(value).__name__} is not allowed: a "
                             f"number, text, a bool, a list, a dict or an array")
        return value

    def section(self, section: Mapping, key: str) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name, value in section.items():
            if not isinstance(name, str):
                raise InputError(f"{key or 'survey'}: key {name!r} is not allowed: text keys")
            child = f"{key}.{name}" if key else name
            if name == "file" and key == "model" and self.gpu_model and _gpu_array(value) \
                    and section.get("format") in (None, "npy"):
                handle = _device_handle(value, child, str(section.get("order", "zyx")))
                self.arrays.append(handle)
                self.device_model = True
                out[name] = handle.name
            elif name == "file" and _is_array(value):
                out[name] = self.array_file(section, _host_array(value, child), key, child)
            elif name in ("receivers", "positions") and _is_array(value):
                out[name] = {"points": _host_array(value, child).tolist()}  # (n, 3) metres
            else:
                out[name] = self.value(value, child)
        if any(name == "file" and _is_array(v) for name, v in section.items()):
            if key in _VOLUME_PARENTS and "order" not in section:
                out["order"] = "zyx"  # an (nx, ny, nz) array, z last, as Devito holds a model
            if key in _VOLUME_PARENTS and "format" not in section:
                out["format"] = "npy"  # what the array is handed over as
        return out

    def array_file(self, section: Mapping, array: np.ndarray, parent: str, key: str) -> str:
        fmt = section.get("format")
        if parent in _VOLUME_PARENTS or parent.startswith("anisotropy."):
            if fmt not in (None, "npy"):
                raise InputError(f"{parent}.format: '{fmt}' is not allowed with an array in "
                                 f"{key}: npy, or no format")
            handle = _volume_file(array, key)
        elif parent.endswith("wavelet"):
            handle = _wavelet_file(array, key)
        else:
            raise InputError(f"{key}: an array is not allowed here: a file name (arrays are "
                             f"allowed for model.file, anisotropy.*.file and wavelet.file)")
        self.arrays.append(handle)
        return handle.name


@dataclass
class Plan:
    """What a survey will do, as `minimod-gpu validate` prints it (`text`)."""

    shape: Tuple[int, int, int]
    spacing: Tuple[float, float, float]
    origin: Tuple[float, float, float]
    layer_widths: Tuple[int, int, int, int, int, int]  #: x_lo, x_hi, y_lo, y_hi, z_lo, z_hi
    dt: float  #: the solver's time step (s)
    dt_limit: float  #: the stability limit (cfl = 1)
    cfl: float
    steps: int
    duration: float
    points_per_wavelength: float
    dt_out: float  #: the traces' sample interval (s)
    trace_samples: int
    model_vmin: float
    model_vmax: float
    vmax: float
    fmax: float
    snapshot_every: int
    snapshot_count: int
    snapshot_shape: Tuple[int, int, int]
    device_bytes: int
    output_bytes: int
    host_bytes: float
    warnings: List[str] = field(default_factory=list)
    text: str = ""  #: the plan as `minimod-gpu validate` prints it

    @classmethod
    def _from(cls, d: Mapping[str, Any]) -> "Plan":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})

    def __str__(self) -> str:
        return self.text or repr(self)


class Survey:
    """A survey, parsed and checked by the program's own parser (docs/survey.md).

    ``Survey(source)`` takes a YAML file (a path), YAML text (a string with a newline) or a dict
    with exactly the keys of docs/survey.md. In a dict, ``model.file``, ``anisotropy.*.file`` and
    ``wavelet.file`` may be arrays: a 3-D float32 or float64 array for a model or an anisotropy
    parameter, in axis order (nx, ny, nz) unless ``order`` says otherwise (C or Fortran memory
    order alike), and a 1-D array of samples for a wavelet; ``receivers`` and
    ``shots.positions`` (or their ``points``) may be (n, 3) arrays in metres. Errors raise
    :class:`InputError` with the command line's message.
    """

    def __init__(self, source: Union[PathLike, str, Mapping[str, Any]], *,
                 base_dir: Optional[PathLike] = None, path: Optional[str] = None,
                 _host: bool = False) -> None:
        self._arrays: List["_core.MemoryFile"] = []
        self._source, self._base_dir, self._path = source, base_dir, path
        self._device_model = False
        if isinstance(source, Mapping):
            gpu = (not _host and bool(_core.gpu_backend)
                   and source.get("physics", "acoustic") == "acoustic")
            prepared = _Prepared(gpu_model=gpu)
            data = prepared.section(source, "")
            self._arrays = prepared.arrays
            self._device_model = prepared.device_model
            text = _dump(data) + "\n"
            self._handle = _core.parse_survey(text, path or "<dict>",
                                              os.fspath(base_dir or "."), self._arrays)
        elif isinstance(source, str) and "\n" in source:
            self._handle = _core.parse_survey(source, path or "<string>",
                                              os.fspath(base_dir or "."), [])
        elif isinstance(source, (str, os.PathLike)):
            self._handle = _core.load_survey(os.fspath(source))
        else:
            raise InputError(f"survey: {type(source).__name__} is not allowed: a YAML file's path, "
                             f"YAML text or a dict")
        self._facts = self._handle.facts()

    @property
    def model_on_device(self) -> bool:
        """Whether the model is a GPU array used in place (see docs/python.md, GPU arrays)."""
        return self._device_model

    def _on_host(self) -> "Survey":
        """This survey with a GPU array model copied to the host once, for a run that reads its
        model in host memory (the CPU backend, a split grid)."""
        if not self._device_model:
            return self
        return Survey(self._source, base_dir=self._base_dir, path=self._path, _host=True)

    @classmethod
    def from_file(cls, path: PathLike) -> "Survey":
        """The survey in a YAML file."""
        return cls(os.fspath(path))

    @classmethod
    def from_string(cls, text: str, *, base_dir: Optional[PathLike] = None) -> "Survey":
        """A survey from YAML text; relative file names resolve against base_dir (default '.')."""
        return cls(text if "\n" in text else text + "\n", base_dir=base_dir)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base_dir: Optional[PathLike] = None) -> "Survey":
        """A survey from a dict (arrays allowed, see the class)."""
        return cls(data, base_dir=base_dir)

    @property
    def text(self) -> str:
        """The survey's text as the parser read it (and as the output stores it)."""
        return self._facts["text"]

    @property
    def path(self) -> str:
        return self._facts["path"]

    @property
    def name(self) -> str:
        return self._facts["name"]

    @property
    def physics(self) -> str:
        return self._facts["physics"]

    @property
    def shape(self) -> Tuple[int, int, int]:
        """nx, ny, nz of the grid, absorbing layers included."""
        return self._facts["shape"]

    @property
    def spacing(self) -> Tuple[float, float, float]:
        return self._facts["spacing"]

    @property
    def origin(self) -> Tuple[float, float, float]:
        return self._facts["origin"]

    @property
    def shots(self) -> int:
        """The number of shots."""
        return self._facts["shots"]

    @property
    def receivers(self) -> np.ndarray:
        """(n, 3) receiver positions in metres (offsets when they move with the source)."""
        return self._facts["receivers"]

    @property
    def sources(self) -> np.ndarray:
        """(shots, 3): each shot's (first) source position in metres."""
        return self._facts["sources"]

    def validate(self, *, backend: str = "auto", kernel: Optional[str] = None,
                 steps: Optional[int] = None, decompose: Optional[str] = None,
                 max_device_memory: Optional[str] = None, ranks: int = 1) -> Plan:
        """Every check `run` makes before its first step; the plan (raises on bad input)."""
        survey = self._on_host() if (decompose or ranks > 1) else self
        d = _core.validate(survey._handle, backend, kernel or "", int(steps or 0),
                           decompose or "", max_device_memory or "", int(ranks))
        return Plan._from(d)

    def __repr__(self) -> str:
        nx, ny, nz = self.shape
        return (f"Survey({self.path!r}: {self.physics}, {nx}x{ny}x{nz}, {self.shots} shot(s), "
                f"{len(self.receivers)} receivers)")
