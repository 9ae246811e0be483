#!/usr/bin/env python3
"""Read a minimod-gpu output with the usual Python tools and plot it with matplotlib.

    python3 examples/read_output.py OUT.h5 [--segy GATHERS.sgy] [--shot K] [--out-dir DIR]

Reads, with h5py, one shot gather (the first unless --shot), the last wavefield snapshot and, when
the file holds it, the velocity model (/model/vp); with segyio, the SEG-Y gathers of the same run.
Writes PNG files (matplotlib's Agg backend, no display needed) to DIR (default: beside OUT.h5):
<name>_gather.png, <name>_snapshot.png, <name>_model.png and <name>_segy.png, each only when the
file holds what it shows, and prints one summary line per item. The layout of the HDF5 file is in
docs/output.md; the SEG-Y header bytes in its "SEG-Y" section.
"""

import argparse
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")  # files only: no display, no GUI toolkit
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402


def signed_offsets(receivers, source):
    """Horizontal source-receiver distance, negative at smaller x (or equal x, smaller y): the
    convention of the SEG-Y offset header (bytes 37-40)."""
    dx = receivers[:, 0] - source[0]
    dy = receivers[:, 1] - source[1]
    behind = (dx < -1e-6) | ((np.abs(dx) <= 1e-6) & (dy < -1e-6))
    return np.where(behind, -1.0, 1.0) * np.hypot(dx, dy)


def clip_of(values, percentile=99.0):
    """Symmetric display clip: a percentile of |value|, 1 when everything is zero."""
    clip = float(np.percentile(np.abs(values), percentile)) if values.size else 0.0
    return clip if clip > 0 else 1.0


def plot_gather(traces, dt, offsets, title, path):
    """A shot gather as variable density: offset across, time down."""
    clip = clip_of(traces)
    fig, ax = plt.subplots(figsize=(7, 6))
    # One column per trace, evenly spaced; ticks carry the signed offsets.
    extent = (-0.5, traces.shape[0] - 0.5, (traces.shape[1] - 1) * dt, 0.0)
    ax.imshow(traces.T, cmap="gray_r", vmin=-clip, vmax=clip, aspect="auto", extent=extent,
              interpolation="nearest")
    ticks = np.linspace(0, traces.shape[0] - 1, min(traces.shape[0], 7)).round().astype(int)
    ax.set_xticks(ticks)
    ax.set_xticklabels(["%.0f" % offsets[t] for t in ticks])
    ax.set_xlabel("offset (m), negative at smaller x")
    ax.set_ylabel("time (s)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_xz(volume, origin, spacing, y_index, title, label, cmap, path, symmetric):
    """The x-z slice of a [nz, ny, nx] volume at y index `y_index`, depth down, true aspect."""
    section = volume[:, y_index, :]
    nz, nx = section.shape
    extent = (origin[0] - spacing[0] / 2, origin[0] + (nx - 0.5) * spacing[0],
              origin[2] + (nz - 0.5) * spacing[2], origin[2] - spacing[2] / 2)
    if symmetric:
        clip = clip_of(section)
        limits = dict(vmin=-clip, vmax=clip)
    else:
        limits = dict(vmin=float(section.min()), vmax=float(section.max()))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    image = ax.imshow(section, cmap=cmap, extent=extent, interpolation="nearest", **limits)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("z (m), depth")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label=label, shrink=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def nearest_index(coordinate, origin, spacing, n):
    return int(np.clip(round((coordinate - origin) / spacing), 0, n - 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("h5", help="HDF5 output of `minimod-gpu run`")
    parser.add_argument("--segy", help="SEG-Y gathers of the same run (output.segy)")
    parser.add_argument("--shot", type=int, help="shot number to plot (default: the first)")
    parser.add_argument("--out-dir", help="folder for the PNG files (default: beside the .h5)")
    args = parser.parse_args()

    if not os.path.isfile(args.h5):
        print("error: %s: no such file" % args.h5, file=sys.stderr)
        return 2
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.h5))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, os.path.splitext(os.path.basename(args.h5))[0])

    with h5py.File(args.h5, "r") as f:
        if f.attrs.get("format") != "minimod-gpu-output":
            print("error: %s: not a minimod-gpu output file" % args.h5, file=sys.stderr)
            return 2
        grid_origin = f.attrs["grid_origin"]
        grid_spacing = f.attrs["grid_spacing"]

        # A shot gather: /shots/NNNN, traces [receivers, samples].
        shots = sorted(int(name) for name in f["shots"])
        source = None
        if shots:
            shot = shots[0] if args.shot is None else args.shot
            if shot not in shots:
                print("error: --shot %d: the file has shots %s" % (shot, shots), file=sys.stderr)
                return 2
            g = f["shots/%04d" % shot]
            traces = g["traces"][()]
            dt = float(g.attrs["dt_out"])
            receivers = g["receiver_positions"][()]
            source = g["source_positions"][0]
            offsets = signed_offsets(receivers, source)
            plot_gather(traces, dt, offsets, "shot %d: %d receivers" % (shot, traces.shape[0]),
                        stem + "_gather.png")
            print("gather: shot %d, %d receivers x %d samples, dt %g s, offsets %.0f to %.0f m -> %s"
                  % (shot, traces.shape[0], traces.shape[1], dt, offsets.min(), offsets.max(),
                     stem + "_gather.png"))
        else:
            print("gather: none in this file")

        # The last snapshot: /snapshots/wavefield [n, nz, ny, nx]; reads only that one.
        if "snapshots" in f:
            snap = f["snapshots"]
            count = snap["wavefield"].shape[0]
            field = snap["wavefield"][count - 1]
            origin, spacing = snap.attrs["origin"], snap.attrs["spacing"]
            y = source[1] if source is not None else origin[1] + spacing[1] * (field.shape[1] // 2)
            j = nearest_index(y, origin[1], spacing[1], field.shape[1])
            time = float(snap["time"][count - 1])
            plot_xz(field, origin, spacing, j, "snapshot %d of %d, t = %.4f s" % (count - 1, count, time),
                    "pressure", "seismic", stem + "_snapshot.png", symmetric=True)
            print("snapshot: %d of %d, step %d, t = %.4f s, [nz, ny, nx] = %s -> %s"
                  % (count - 1, count, int(snap["step"][count - 1]), time, list(field.shape),
                     stem + "_snapshot.png"))
        else:
            print("snapshot: none in this file")

        # The velocity model, when this file holds it: /model/vp [nz, ny, nx].
        if "model/vp" in f:
            vp = f["model/vp"]
            origin = vp.attrs.get("origin", grid_origin)
            spacing = vp.attrs.get("spacing", grid_spacing)
            model = vp[()]
            y = source[1] if source is not None else origin[1] + spacing[1] * (model.shape[1] // 2)
            j = nearest_index(y, origin[1], spacing[1], model.shape[1])
            plot_xz(model, origin, spacing, j, "model vp", "vp (m/s)", "viridis",
                    stem + "_model.png", symmetric=False)
            print("model: vp [nz, ny, nx] = %s, %.0f to %.0f m/s -> %s"
                  % (list(model.shape), model.min(), model.max(), stem + "_model.png"))
        else:
            print("model: none in this file (written by a version that did not store it)")

    if args.segy:
        import segyio  # only needed for the SEG-Y part

        with segyio.open(args.segy, ignore_geometry=True) as s:
            records = s.attributes(segyio.TraceField.FieldRecord)[:]
            first = records[0]
            picked = np.flatnonzero(records == first)
            gather = np.stack([s.trace[int(t)] for t in picked])
            offsets = s.attributes(segyio.TraceField.offset)[:][picked]
            dt = segyio.tools.dt(s) * 1e-6
            plot_gather(gather, dt, offsets, "SEG-Y field record %d" % first, stem + "_segy.png")
            print("segy: %d traces, field records %s, %d samples of %g s -> %s"
                  % (s.tracecount, sorted(set(int(r) for r in records)), len(s.samples), dt,
                     stem + "_segy.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
