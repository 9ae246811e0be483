"""`open`: a run's HDF5 output (docs/output.md), read lazily, as xarray objects or NumPy."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ._core import InputError


def _xarray():
    try:
        import xarray
        from xarray.core import indexing  # noqa: F401  (the lazy arrays below need it)
    except ImportError:
        return None
    return xarray


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


_LAZY = None


def _lazy_array(path: str, shape: Tuple[int, ...], dtype: Any, read) -> Any:
    """HDF5 data read only where it is indexed: an xarray backend array, wrapped lazily.

    `read(h5py.File, key)` reads the part `key` (a tuple of slices and ints)."""
    global _LAZY
    from xarray.backends import BackendArray
    from xarray.core import indexing

    if _LAZY is None:
        class LazyArray(BackendArray):
            def __init__(self, path, shape, dtype, read):
                self.path, self.shape, self.dtype, self._read = path, shape, np.dtype(dtype), read

            def __getitem__(self, key):
                return indexing.explicit_indexing_adapter(
                    key, self.shape, indexing.IndexingSupport.BASIC, self._raw)

            def _raw(self, key):
                import h5py
                with h5py.File(self.path, "r") as f:
                    return self._read(f, key)

        _LAZY = LazyArray
    return indexing.LazilyIndexedArray(_LAZY(path, shape, dtype, read))


class Output:
    """A run's output file (of the command line or of `run`), opened for reading.

    ``gathers`` is an xarray Dataset with dims (shot, receiver, time): the ``traces`` variable,
    coordinates ``receiver_x/y/z`` (per shot: receivers that move with the source differ),
    ``source_x/y/z`` (the shot's first source) and ``time`` in seconds, the survey and the run's
    provenance in ``attrs``; traces are read from the file only where they are indexed. ``model``
    and ``snapshots`` are DataArrays (dims z, y, x and snapshot, z, y, x) with coordinates in
    metres. Without xarray each is a dict of NumPy arrays.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        import h5py
        self.path = os.fspath(path)
        try:
            f = h5py.File(self.path, "r")
        except OSError as e:
            raise InputError(f"{self.path}: cannot be read as an HDF5 file ({e}); allowed: an "
                             f"output of minimod-gpu run or minimod_gpu.run") from None
        with f:
            self.attrs: Dict[str, Any] = {k: _text(v) for k, v in f.attrs.items()}
            if self.attrs.get("format") != "minimod-gpu-output":
                raise InputError(f"{self.path}: format {self.attrs.get('format')!r} is not "
                                 f"allowed: a minimod-gpu output (root attribute format = "
                                 f"'minimod-gpu-output')")
            self._shot_names = sorted(f["shots"].keys(), key=int) if "shots" in f else []
            self.shots: List[int] = [int(n) for n in self._shot_names]
            self._shot_meta = []
            for name in self._shot_names:
                g = f["shots"][name]
                self._shot_meta.append({
                    "receivers": g["receiver_positions"][...],
                    "sources": g["source_positions"][...],
                    "dt_out": float(g.attrs["dt_out"]),
                    "samples": int(g.attrs["samples"]),
                    "traces_units": _text(g["traces"].attrs.get("units", "")),
                })
            self._has_model = "model" in f
            self._has_snapshots = "snapshots" in f

    @property
    def survey(self) -> str:
        """The survey text the run read."""
        return self.attrs.get("survey", "")

    def _gather_arrays(self):
        meta = self._shot_meta
        if not meta:
            return None
        receivers = {m["receivers"].shape[0] for m in meta}
        samples = {m["samples"] for m in meta}
        if len(receivers) != 1 or len(samples) != 1:
            raise InputError(f"{self.path}: shots with different receiver or sample counts cannot "
                             f"form one (shot, receiver, time) array; allowed: read them one by "
                             f"one with gather(shot)")
        return receivers.pop(), samples.pop()

    def gather(self, shot: int) -> Any:
        """Shot `shot`'s gather, read now: a DataArray (receiver, time), or a NumPy array."""
        import h5py
        if shot not in self.shots:
            raise InputError(f"shot {shot} is not in {self.path}: it holds shots {self.shots}")
        n = self.shots.index(shot)
        with h5py.File(self.path, "r") as f:
            traces = f["shots"][self._shot_names[n]]["traces"][...]
        xr = _xarray()
        if xr is None:
            return traces
        m = self._shot_meta[n]
        return xr.DataArray(traces, dims=("receiver", "time"), coords={
            "time": ("time", np.arange(m["samples"]) * m["dt_out"], {"units": "s"}),
            "receiver_x": ("receiver", m["receivers"][:, 0], {"units": "m"}),
            "receiver_y": ("receiver", m["receivers"][:, 1], {"units": "m"}),
            "receiver_z": ("receiver", m["receivers"][:, 2], {"units": "m"}),
        }, attrs={"shot": shot, "units": m["traces_units"]}, name="traces")

    @property
    def gathers(self) -> Any:
        """Every shot's traces: an xarray Dataset (shot, receiver, time), read lazily."""
        shape = self._gather_arrays()
        if shape is None:
            raise InputError(f"{self.path}: the file holds no shot")
        receivers, samples = shape
        names = self._shot_names
        meta = self._shot_meta
        rx = np.stack([m["receivers"] for m in meta])
        sx = np.stack([m["sources"][0] if len(m["sources"]) else np.zeros(3) for m in meta])
        time = np.arange(samples) * meta[0]["dt_out"]
        xr = _xarray()

        def read(f, key):
            shot, rows, columns = key
            if isinstance(shot, (int, np.integer)):
                return f["shots"][names[shot]]["traces"][rows, columns]
            picked = [f["shots"][names[s]]["traces"][rows, columns]
                      for s in range(len(names))[shot]]
            if picked:
                return np.stack(picked)
            return np.zeros((0,) + np.empty((receivers, samples))[rows, columns].shape, np.float32)

        if xr is None:
            import h5py
            with h5py.File(self.path, "r") as f:
                traces = np.stack([f["shots"][n]["traces"][...] for n in names])
            return {"traces": traces, "time": time, "shot": np.array(self.shots),
                    "receiver_xyz": rx, "source_xyz": sx, "attrs": dict(self.attrs)}
        lazy = _lazy_array(self.path, (len(names), receivers, samples), np.float32, read)
        traces = xr.Variable(("shot", "receiver", "time"), lazy,
                             attrs={"units": meta[0]["traces_units"]})
        coords = {"shot": ("shot", np.array(self.shots)),
                  "time": ("time", time, {"units": "s"})}
        for a, axis in enumerate("xyz"):
            coords[f"receiver_{axis}"] = (("shot", "receiver"), rx[:, :, a], {"units": "m"})
            coords[f"source_{axis}"] = ("shot", sx[:, a], {"units": "m"})
        attrs = {k: v for k, v in self.attrs.items() if isinstance(v, (str, int, float))}
        return xr.Dataset({"traces": traces}, coords=coords, attrs=attrs)

    def _volume(self, f, name: str, dims: Tuple[str, ...]) -> Dict[str, Any]:
        ds = f[name]
        attrs = {k: (_text(v) if not isinstance(v, np.ndarray) else v) for k, v in ds.attrs.items()}
        owner = ds.parent.attrs
        origin = np.asarray(attrs.get("origin", owner.get("origin", np.zeros(3))), float)
        spacing = np.asarray(attrs.get("spacing", owner.get("spacing", np.ones(3))), float)
        shape = ds.shape
        nz, ny, nx = shape[-3:]
        return {"shape": shape, "dtype": ds.dtype, "attrs": attrs,
                "x": origin[0] + np.arange(nx) * spacing[0],
                "y": origin[1] + np.arange(ny) * spacing[1],
                "z": origin[2] + np.arange(nz) * spacing[2]}

    def _lazy_volume(self, name: str, dims: Tuple[str, ...], extra: Optional[Dict] = None) -> Any:
        import h5py
        with h5py.File(self.path, "r") as f:
            v = self._volume(f, name, dims)
        xr = _xarray()
        if xr is None:
            with h5py.File(self.path, "r") as f:
                return {"values": f[name][...], "x": v["x"], "y": v["y"], "z": v["z"],
                        "attrs": v["attrs"], **(extra or {})}
        lazy = _lazy_array(self.path, v["shape"], v["dtype"], lambda f, key: f[name][key])
        coords = {"x": ("x", v["x"], {"units": "m"}), "y": ("y", v["y"], {"units": "m"}),
                  "z": ("z", v["z"], {"units": "m"})}
        coords.update(extra or {})
        attrs = {k: val for k, val in v["attrs"].items() if isinstance(val, (str, int, float))}
        return xr.DataArray(xr.Variable(dims, lazy, attrs=attrs), coords=coords,
                            name=name.rsplit("/", 1)[-1])

    def model(self, name: str = "vp") -> Any:
        """The stored model (decimated when large, docs/output.md): vp, or a TTI parameter."""
        if not self._has_model:
            raise InputError(f"{self.path}: the file holds no /model")
        return self._lazy_volume(f"model/{name}", ("z", "y", "x"))

    @property
    def snapshots(self) -> Any:
        """The wavefield snapshots (snapshot, z, y, x), with their step and time."""
        import h5py
        if not self._has_snapshots:
            raise InputError(f"{self.path}: the file holds no snapshots (the survey's "
                             f"output.snapshots)")
        with h5py.File(self.path, "r") as f:
            step = f["snapshots/step"][...]
            time = f["snapshots/time"][...]
        return self._lazy_volume("snapshots/wavefield", ("snapshot", "z", "y", "x"),
                                 {"step": ("snapshot", step), "time": ("snapshot", time,
                                                                       {"units": "s"})})

    def __repr__(self) -> str:
        return f"Output({self.path!r}: {len(self.shots)} shot(s))"


def open(path: Union[str, "os.PathLike[str]"]) -> Output:  # noqa: A001 (the package's reader)
    """Open a run's HDF5 output (command line's or `run`'s) for reading; see :class:`Output`."""
    return Output(path)
