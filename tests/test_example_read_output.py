"""examples/read_output.py on the output of a small run: exit code, PNG files, printed summary.

Usage: test_example_read_output.py MINIMOD_BINARY SOURCE_DIR WORK_FOLDER

Runs a two-shot survey with snapshots and SEG-Y output, then the example on that file (its stored
model must be read and plotted), on a copy without /model (it must say so and write no model
plot) and on a copy given another /model/vp dataset (it must
plot it). Every PNG must be a real image of some size whose pixels are not all one colour, and
each summary line must give the numbers of the run.

Exits 77 (CTest's skip) when h5py, numpy, segyio or matplotlib is missing, unless CI is "true".
"""

import os
import re
import shutil
import subprocess
import sys

SKIP = 77

try:
    import h5py
    import matplotlib
    import numpy as np
    import segyio  # noqa: F401  (the example needs it)

    matplotlib.use("Agg")
    import matplotlib.image
except ImportError as e:
    reason = "%s (Debian: python3-h5py python3-numpy python3-segyio python3-matplotlib)" % e
    if os.environ.get("CI", "").lower() == "true":
        print("FAIL: " + reason)
        sys.exit(1)
    print("SKIP: " + reason)
    sys.exit(SKIP)

SURVEY = """name: example
grid: {shape: [41, 21, 31], spacing: 10}
model: {type: layered, layers: [{top: 0, velocity: 1800}, {top: 180, velocity: 2600}]}
time: {duration: 0.12}
boundary: {width: 6}
shots:
  wavelet: {type: ricker, frequency: 20}
  positions: {lines: [{start: [150, 100, 80], end: [250, 100, 80], count: 2}]}
receivers:
  lines: [{start: [70, 100, 70], end: [330, 100, 70], count: 27}]
output:
  dt_out: 0.002
  snapshots: {every: 50}
  segy: SEGY_PATH
"""

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def check_png(path):
    """A PNG of at least 300 x 200 pixels that is not one flat colour."""
    if not os.path.isfile(path):
        failures.append("missing " + path)
        return
    with open(path, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", path + " is not a PNG")
    image = matplotlib.image.imread(path)
    check(image.shape[0] >= 200 and image.shape[1] >= 300, "%s is %s" % (path, image.shape))
    colours = np.unique(image.reshape(-1, image.shape[2]), axis=0)
    check(len(colours) >= 20, "%s has %d colours" % (path, len(colours)))
    check(os.path.getsize(path) > 5000, "%s has %d bytes" % (path, os.path.getsize(path)))


def run_example(source_dir, h5, sgy, out_dir):
    script = os.path.join(source_dir, "examples", "read_output.py")
    done = subprocess.run([sys.executable, script, h5, "--segy", sgy, "--out-dir", out_dir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(done.returncode == 0, "example exited %d: %s" % (done.returncode, done.stderr))
    return done.stdout


def main():
    binary, source_dir, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    h5, sgy = os.path.join(work, "run.h5"), os.path.join(work, "run.sgy")
    survey = os.path.join(work, "s.yaml")
    with open(survey, "w") as f:
        f.write(SURVEY.replace("SEGY_PATH", sgy))
    done = subprocess.run([binary, "run", survey, "-o", h5, "--backend", "cpu", "--quiet"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout)
        print("FAIL: minimod-gpu run exited %d" % done.returncode)
        sys.exit(1)
    with h5py.File(h5, "r") as f:
        samples = f["shots/0000/traces"].shape[1]
        snapshots = f["snapshots/wavefield"].shape[0]
        last_time = float(f["snapshots/time"][-1])

    # The run's own file: the layered model it used, stored as /model/vp.
    out = os.path.join(work, "plots")
    printed = run_example(source_dir, h5, sgy, out)
    print(printed)
    check(re.search(r"^gather: shot 0, 27 receivers x %d samples, dt 0.002 s, offsets -80 to 180 m"
                    % samples, printed, re.M), "gather line")
    check(re.search(r"^snapshot: %d of %d, step \d+, t = %.4f s, \[nz, ny, nx\] = \[31, 21, 41\]"
                    % (snapshots - 1, snapshots, last_time), printed, re.M), "snapshot line")
    check(re.search(r"^model: vp \[nz, ny, nx\] = \[31, 21, 41\], 1800 to 2600 m/s", printed,
                    re.M), "model line of the run's file: " + printed)
    check(re.search(r"^segy: 54 traces, field records \[1, 2\], %d samples of 0.002 s" % samples,
                    printed, re.M), "segy line")
    for name in ("run_gather.png", "run_snapshot.png", "run_segy.png", "run_model.png"):
        check_png(os.path.join(out, name))

    # A file without a model (as older versions wrote): said so, no model plot.
    bare = os.path.join(work, "bare.h5")
    shutil.copy(h5, bare)
    with h5py.File(bare, "a") as f:
        del f["model"]
    printed = run_example(source_dir, bare, sgy, out)
    check(re.search(r"^model: none in this file", printed, re.M), "model line: " + printed)
    check(not os.path.exists(os.path.join(out, "bare_model.png")), "a model plot without a model")

    # With a model: vp = 1500 + 10 z.
    with_model = os.path.join(work, "model.h5")
    shutil.copy(h5, with_model)
    with h5py.File(with_model, "a") as f:
        del f["model"]
        z = np.arange(31) * 10.0
        vp = np.broadcast_to((1500 + 10 * z)[:, None, None], (31, 21, 41)).astype("f4")
        d = f.create_dataset("model/vp", data=vp)
        d.attrs["origin"] = [0.0, 0.0, 0.0]
        d.attrs["spacing"] = [10.0, 10.0, 10.0]
    printed = run_example(source_dir, with_model, sgy, out)
    check(re.search(r"^model: vp \[nz, ny, nx\] = \[31, 21, 41\], 1500 to 4500 m/s", printed, re.M),
          "model line: " + printed)
    check_png(os.path.join(out, "model_model.png"))

    # A missing file is an error, exit 2.
    done = subprocess.run([sys.executable, os.path.join(source_dir, "examples", "read_output.py"),
                           os.path.join(work, "missing.h5")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(done.returncode == 2 and "no such file" in done.stderr, "missing file: %d %s"
          % (done.returncode, done.stderr))

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
