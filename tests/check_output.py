#!/usr/bin/env python3
"""Check a minimod-gpu output file with h5py alone (no project code) and print a summary.

Usage: python3 tests/check_output.py FILE.h5

Exit status: 0 when the file follows docs/output.md, 1 when it is malformed (every problem is
listed), 2 when it cannot be opened or h5py is missing.
"""

import sys

try:
    import h5py
    import numpy as np
except ImportError as error:  # the C++ test skips on this, so say exactly what is missing
    print(f"check_output: {error}", file=sys.stderr)
    sys.exit(2)

FORMAT_NAME = "minimod-gpu-output"
FORMAT_VERSION = 1
REGIONS = ("inner", "top", "bottom", "front", "back", "left", "right")
STRING_ATTRS = (
    "program_version", "git_commit", "survey", "survey_path", "physics", "backend",
    "device_name", "created", "format", "grid_spacing_units",
) + tuple(f"kernel_{region}" for region in REGIONS)
# name -> number of values (None: scalar)
NUMBER_ATTRS = {
    "grid_shape": 3, "grid_spacing": 3, "grid_origin": 3, "layer_widths": 6,
    "dt": None, "steps": None, "format_version": None,
}


class Checker:
    def __init__(self):
        self.problems = []

    def fail(self, message):
        self.problems.append(message)

    def string_attr(self, obj, name):
        if name not in obj.attrs:
            self.fail(f"{obj.name}: missing attribute '{name}'")
            return None
        value = obj.attrs[name]
        if not isinstance(value, str):
            self.fail(f"{obj.name}: attribute '{name}' is {type(value).__name__}, not str")
            return None
        return value

    def number_attr(self, obj, name, count=None):
        if name not in obj.attrs:
            self.fail(f"{obj.name}: missing attribute '{name}'")
            return None
        value = np.asarray(obj.attrs[name])
        if value.dtype.kind not in "iuf":
            self.fail(f"{obj.name}: attribute '{name}' is not numeric ({value.dtype})")
            return None
        if count is None and value.size != 1:
            self.fail(f"{obj.name}: attribute '{name}' should be a scalar, has {value.size} values")
            return None
        if count is not None and value.shape != (count,):
            self.fail(f"{obj.name}: attribute '{name}' should have {count} values, has {value.shape}")
            return None
        return value.item() if count is None else value

    def dataset(self, group, name, kind, itemsize, rank):
        if name not in group or not isinstance(group[name], h5py.Dataset):
            self.fail(f"{group.name}: missing dataset '{name}'")
            return None
        data = group[name]
        if data.dtype.kind != kind or data.dtype.itemsize != itemsize:
            self.fail(f"{data.name}: dtype {data.dtype}, expected {kind}{itemsize}")
        if data.ndim != rank:
            self.fail(f"{data.name}: rank {data.ndim}, expected {rank}")
            return None
        return data


def check_root(check, f):
    for name in STRING_ATTRS:
        check.string_attr(f, name)
    for name, count in NUMBER_ATTRS.items():
        check.number_attr(f, name, count)
    if f.attrs.get("format") != FORMAT_NAME:
        check.fail(f"/: format is {f.attrs.get('format')!r}, expected {FORMAT_NAME!r}")
    if "format_version" in f.attrs and int(f.attrs["format_version"]) != FORMAT_VERSION:
        check.fail(f"/: format_version {f.attrs['format_version']}, expected {FORMAT_VERSION}")


def check_shots(check, f):
    """Returns a list of (name, receivers, samples, dt_out)."""
    if "shots" not in f or not isinstance(f["shots"], h5py.Group):
        check.fail("/: missing group 'shots'")
        return []
    shots = []
    for name, group in sorted(f["shots"].items()):
        if not (len(name) >= 4 and name.isdigit() and isinstance(group, h5py.Group)):
            check.fail(f"/shots: unexpected member '{name}' (shots are groups named like 0000)")
            continue
        receivers = check.number_attr(group, "receivers")
        samples = check.number_attr(group, "samples")
        dt_out = check.number_attr(group, "dt_out")
        shot = check.number_attr(group, "shot")
        if shot is not None and shot != int(name):
            check.fail(f"{group.name}: attribute shot = {shot} does not match the group name")
        traces = check.dataset(group, "traces", "f", 4, 2)
        positions = check.dataset(group, "receiver_positions", "f", 8, 2)
        sources = check.dataset(group, "source_positions", "f", 8, 2)
        if traces is not None and (receivers, samples) != traces.shape:
            check.fail(f"{traces.name}: shape {traces.shape}, attributes say "
                       f"({receivers}, {samples})")
        if positions is not None and positions.shape != (receivers, 3):
            check.fail(f"{positions.name}: shape {positions.shape}, expected ({receivers}, 3)")
        if sources is not None and sources.shape[1:] != (3,):
            check.fail(f"{sources.name}: shape {sources.shape}, expected (sources, 3)")
        if "wavelet" in group:
            wavelet = check.dataset(group, "wavelet", "f", 4, 2)
            if wavelet is not None:
                if sources is not None and wavelet.shape[0] != sources.shape[0]:
                    check.fail(f"{wavelet.name}: {wavelet.shape[0]} rows, "
                               f"{sources.shape[0]} sources")
                for attr in ("units", "dt_units"):
                    check.string_attr(wavelet, attr)
                check.number_attr(wavelet, "dt")
                check.number_attr(wavelet, "t0")
        if traces is not None:
            for attr in ("units", "dt_units"):
                check.string_attr(traces, attr)
            check.number_attr(traces, "dt")
            check.number_attr(traces, "t0")
            if traces.size and not np.all(np.isfinite(traces[()])):
                check.fail(f"{traces.name}: contains NaN or Inf")
        shots.append((name, receivers, samples, dt_out))
    return shots


MODEL_UNITS = {"vp": "m/s", "epsilon": "1", "delta": "1", "theta": "rad", "phi": "rad"}


def check_model(check, f):
    """Returns {property: (nz, ny, nx)} of /model, or None without it."""
    if "model" not in f:
        return None
    group = f["model"]
    decimation = check.number_attr(group, "decimation", 3)
    if check.string_attr(group, "axis_order") not in (None, "[z, y, x]"):
        check.fail(f"{group.name}: axis_order is {group.attrs['axis_order']!r}")
    found = {}
    for name in group:
        if name not in MODEL_UNITS:
            check.fail(f"/model: unexpected member '{name}' (allowed: {', '.join(MODEL_UNITS)})")
            continue
        data = check.dataset(group, name, "f", 4, 3)
        if data is None:
            continue
        units = check.string_attr(data, "units")
        if units is not None and units != MODEL_UNITS[name]:
            check.fail(f"{data.name}: units {units!r}, expected {MODEL_UNITS[name]!r}")
        check.number_attr(data, "origin", 3)
        check.number_attr(data, "spacing", 3)
        own = check.number_attr(data, "decimation", 3)
        if own is not None and decimation is not None and list(own) != list(decimation):
            check.fail(f"{data.name}: decimation {list(own)}, the group says {list(decimation)}")
        if data.size and not np.all(np.isfinite(data[()])):
            check.fail(f"{data.name}: contains NaN or Inf")
        found[name] = tuple(data.shape)
    if "vp" not in found:
        check.fail("/model: missing dataset 'vp'")
    return found


def check_snapshots(check, f):
    """Returns (count, (nz, ny, nx), last snapshot or None), or None without snapshots."""
    if "snapshots" not in f:
        return None
    group = f["snapshots"]
    shape = check.number_attr(group, "shape", 3)
    check.number_attr(group, "origin", 3)
    check.number_attr(group, "spacing", 3)
    if check.string_attr(group, "axis_order") not in (None, "[n, z, y, x]"):
        check.fail(f"{group.name}: axis_order is {group.attrs['axis_order']!r}")
    wavefield = check.dataset(group, "wavefield", "f", 4, 4)
    step = check.dataset(group, "step", "i", 4, 1)
    time = check.dataset(group, "time", "f", 8, 1)
    if wavefield is None:
        return None
    count = wavefield.shape[0]
    if shape is not None and tuple(wavefield.shape[1:]) != tuple(int(n) for n in shape[::-1]):
        check.fail(f"{wavefield.name}: shape {wavefield.shape} does not match shape attribute "
                   f"{list(shape)} (nx, ny, nz)")
    # The shot of each snapshot; a file written before /snapshots/shot existed holds shot 0's.
    shot = check.dataset(group, "shot", "i", 4, 1) if "shot" in group else None
    for coordinate in (step, time, shot):
        if coordinate is not None and coordinate.shape != (count,):
            check.fail(f"{coordinate.name}: {coordinate.shape[0]} entries, {count} snapshots")
    shots = shot[()] if shot is not None and shot.shape == (count,) else np.zeros(count, int)
    if step is not None and step.shape == (count,):
        for s in np.unique(shots):
            if not np.all(np.diff(step[()][shots == s]) > 0):
                check.fail(f"{step.name}: the steps of shot {s} are not increasing")
    last = wavefield[count - 1] if count else None
    if last is not None and not np.all(np.isfinite(last)):
        check.fail(f"{wavefield.name}: last snapshot contains NaN or Inf")
    return count, tuple(wavefield.shape[1:]), last


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = argv[1]
    try:
        f = h5py.File(path, "r")
    except OSError as error:
        print(f"check_output: cannot open {path}: {error}", file=sys.stderr)
        return 2

    check = Checker()
    with f:
        check_root(check, f)
        shots = check_shots(check, f)
        snapshots = check_snapshots(check, f)
        model = check_model(check, f)

        print(f"{path}: {f.attrs.get('format')} v{f.attrs.get('format_version')}, "
              f"{f.attrs.get('backend')} on {f.attrs.get('device_name')!r}")
        print(f"  shots: {len(shots)}")
        for name, receivers, samples, dt_out in shots:
            print(f"    {name}: {receivers} receivers x {samples} samples, dt_out {dt_out} s")
        if model is None:
            print("  model: none")
        else:
            for name, shape in model.items():
                print(f"  model: {name} [nz, ny, nx] = {list(shape)}")
        if snapshots is None:
            print("  snapshots: none")
        else:
            count, shape, last = snapshots
            print(f"  snapshots: {count} of [nz, ny, nx] = {list(shape)}")
            if last is not None and last.size:
                rms = float(np.sqrt(np.mean(np.square(last, dtype=np.float64))))
                print(f"    last: min {float(last.min()):.6g} max {float(last.max()):.6g} "
                      f"rms {rms:.6g}")

    if check.problems:
        print(f"{path}: MALFORMED ({len(check.problems)} problems)", file=sys.stderr)
        for problem in check.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print("  ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
