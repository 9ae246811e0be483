#!/usr/bin/python3
"""Files of the field and hostile files, through the real program (exit code, message, and what is
left on disk):

  shots_csv  shots from a CSV file as from a line, and CSV files with bad rows, missing or a folder
  segy_in    little-endian and revision-2 SEG-Y models give the gathers of their big-endian twin;
             headers that lie about sizes are refused
  merge      `merge` writes the merged SEG-Y (equal to one run's), and refuses a damaged input
  xml_path   outputs whose path holds & < " ' give a valid XDMF sidecar that names the file
  tti_npy    a TTI anisotropy file ending in .npy is read as NumPy

Usage: hostile_files.py BINARY CASE
"""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def skip(reason):
    """Exit 77 (CTest's skip), except under CI=true, where every module must be installed."""
    if os.environ.get("CI", "").lower() == "true":
        print("FAIL: %s (CI=true: .ci/run installs it)" % reason)
        sys.exit(1)
    print("skip: " + reason)
    sys.exit(77)


try:
    import h5py
    import numpy as np
except ImportError as error:
    skip("%s (Debian packages python3-h5py, python3-numpy)" % error)

BINARY = os.path.abspath(sys.argv[1])
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def run(args, cwd):
    p = subprocess.run([BINARY] + args, cwd=cwd, env=ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def listing(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def gathers(path):
    with h5py.File(path, "r") as f:
        return {name: (f["shots"][name]["traces"][()], f["shots"][name]["source_positions"][()])
                for name in f["shots"]}


def same_gathers(a, b):
    return sorted(a) == sorted(b) and all(
        a[k][0].tobytes() == b[k][0].tobytes() and a[k][1].tobytes() == b[k][1].tobytes()
        for k in a)


GRID = "grid: {shape: [24, 20, 18], spacing: 10}\n"
TAIL = ("time: {steps: 60}\n"
        "boundary: {width: 4}\n"
        "receivers: {lines: [{start: [40, 100, 30], end: [190, 100, 30], count: 6}]}\n"
        "output: {dt_out: 0.002}\n")
WAVELET = "  wavelet: {type: ricker, frequency: 15}\n"


def refused(work, survey, code, patterns, what):
    """`run` of `survey` exits `code`, the message matches every pattern, nothing is written."""
    with open(os.path.join(work, "s.yaml"), "w") as f:
        f.write(survey)
    shutil.rmtree(os.path.join(work, "o"), ignore_errors=True)
    got, out = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--quiet"], work)
    check(got == code, "%s: exit %d, expected %d:\n%s" % (what, got, code, out))
    for pattern in patterns:
        check(re.search(pattern, out) is not None, "%s: '%s' not in:\n%s" % (what, pattern, out))
    check(listing(os.path.join(work, "o")) == [], "%s: left %s" % (what,
                                                                   listing(os.path.join(work, "o"))))
    print("ok: %s" % what)


# ---- shots from a CSV file -------------------------------------------------------------------

def case_shots_csv(work):
    model = "model: {type: constant, velocity: 2000}\n"
    line = GRID + model + "shots:\n" + WAVELET + (
        "  positions: {lines: [{start: [60, 100, 40], end: [160, 100, 40], count: 3}]}\n") + TAIL
    with open(os.path.join(work, "line.yaml"), "w") as f:
        f.write(line)
    code, out = run(["run", "line.yaml", "-o", "line.h5", "--backend", "cpu", "--quiet"], work)
    check(code == 0, "shots from a line: %s" % out)
    with open(os.path.join(work, "shots.csv"), "w") as f:
        f.write("x,y,z\n60, 100, 40\n\n110 100 40\r\n160,100,40\n")
    csv = GRID + model + "shots:\n" + WAVELET + "  positions: {csv: shots.csv}\n" + TAIL
    with open(os.path.join(work, "csv.yaml"), "w") as f:
        f.write(csv)
    code, out = run(["run", "csv.yaml", "-o", "csv.h5", "--backend", "cpu", "--quiet"], work)
    check(code == 0, "shots from a CSV file: %s" % out)
    check(same_gathers(gathers(os.path.join(work, "line.h5")), gathers(os.path.join(work, "csv.h5"))),
          "shots from a CSV file differ from the same shots on a line")
    print("ok: shots from a CSV file equal the same shots on a line")

    def bad(name, text, patterns, what, key=r"shots\.positions\.csv: "):
        if text is not None:
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        survey = GRID + model + "shots:\n" + WAVELET + "  positions: {csv: %s}\n" % name + TAIL
        refused(work, survey, 2, [r"s\.yaml:\d+: " + key] + patterns, what)

    bad("b1.csv", "x,y,z\n60,100,40\n110,abc,40\n",
        [r"b1\.csv line 3: '110 abc 40' \(column 2, y: 'abc' is no finite number\)",
         "is not allowed: rows of three finite numbers"], "shots CSV: a word in column y")
    bad("b2.csv", "60,100,40\n110,100\n", [r"b2\.csv line 2: '110 100' \(2 fields\)"],
        "shots CSV: a row of two fields")
    bad("b3.csv", "60,100,40,7\n", [r"b3\.csv line 1: '60 100 40 7' \(4 fields\)"],
        "shots CSV: a row of four fields")
    bad("b4.csv", "x,y,z\n60,100,nan\n", [r"b4\.csv line 2: '60 100 nan' \(column 3, z: 'nan'"],
        "shots CSV: NaN")
    bad("b5.csv", "x,y,z\n60,100,40\n900,100,40\n", [r"b5\.csv line 3 \[900, 100, 40\]",
                                                    "x = 900 lies outside the grid"],
        "shots CSV: a shot outside the grid")
    bad("none.csv", None, [r"a readable CSV file \(looked for .*none\.csv\)"],
        "shots CSV: a missing file")
    os.makedirs(os.path.join(work, "folder.csv"))
    bad("folder.csv", None, [r"a CSV file \(.*folder\.csv is a folder\)"],
        "shots CSV: a folder")
    bad("empty.csv", "x,y,z\n\n", [r"\{csv: empty\.csv\} is not allowed: at least one source"],
        "shots CSV: a header and no row", key=r"shots\.positions: ")


# ---- SEG-Y models in other byte orders and revisions -----------------------------------------

def segy_bytes(values, little, revision=1, extended_samples=None, extended_interval=None,
               short_samples=None, interval_us=2000):
    """A post-stack SEG-Y cube of IEEE floats, values[z, y, x]: inline j + 1, crossline i + 1."""
    nz, ny, nx = values.shape
    e = "<" if little else ">"
    binary = bytearray(400)

    def put(buf, at, fmt, value):
        struct.pack_into(e + fmt, buf, at, value)

    put(binary, 16, "h", interval_us if extended_interval is None else 0)
    put(binary, 20, "H", nz if short_samples is None else short_samples)
    put(binary, 24, "h", 5)
    put(binary, 54, "h", 1)
    if revision >= 2:
        put(binary, 68, "i", extended_samples if extended_samples is not None else 0)
        put(binary, 72, "d", extended_interval if extended_interval is not None else 0.0)
        put(binary, 96, "i", 16909060)
    binary[300] = revision
    put(binary, 302, "h", 1)
    out = bytearray(b" " * 3200) + binary
    for j in range(ny):
        for i in range(nx):
            header = bytearray(240)
            put(header, 188, "i", j + 1)
            put(header, 192, "i", i + 1)
            put(header, 114, "H", min(nz, 65535) if short_samples is None else short_samples)
            put(header, 116, "h", interval_us if extended_interval is None else 0)
            out += header + values[:, j, i].astype(e + "f4").tobytes()
    return bytes(out)


def case_segy_in(work):
    z = np.arange(18, dtype=np.float32)[:, None, None]
    x = np.arange(24, dtype=np.float32)[None, None, :]
    vp = np.broadcast_to(1800 + 25 * z + 2 * x, (18, 20, 24)).astype(np.float32)
    surveys = {}
    for name, data in (("be.sgy", segy_bytes(vp, False)), ("le.sgy", segy_bytes(vp, True)),
                       ("rev2-le.sgy", segy_bytes(vp, True, 2, 18, 2000.0, 0)),
                       ("rev2-be.sgy", segy_bytes(vp, False, 2, 18, 2000.0, 0))):
        with open(os.path.join(work, name), "wb") as f:
            f.write(data)
        survey = GRID + "model: {type: file, file: %s, spacing: 10}\n" % name + (
            "sources: [{position: [110, 100, 40], wavelet: {type: ricker, frequency: 15}}]\n") + TAIL
        surveys[name] = survey
        with open(os.path.join(work, name + ".yaml"), "w") as f:
            f.write(survey)
        code, out = run(["run", name + ".yaml", "-o", name + ".h5", "--backend", "cpu", "--quiet"],
                        work)
        if code == 2 and "without SEG-Y support" in out:
            skip("this build has no segyio")
        check(code == 0, "%s: exit %d:\n%s" % (name, code, out))
    reference = gathers(os.path.join(work, "be.sgy.h5"))
    for name in ("le.sgy", "rev2-le.sgy", "rev2-be.sgy"):
        check(same_gathers(gathers(os.path.join(work, name + ".h5")), reference),
              "%s: gathers differ from the big-endian revision 1 file's" % name)
    print("ok: little-endian and revision-2 SEG-Y models give the big-endian file's gathers")

    def lying(data, patterns, what):
        with open(os.path.join(work, "lie.sgy"), "wb") as f:
            f.write(data)
        survey = surveys["be.sgy"].replace("be.sgy", "lie.sgy")
        refused(work, survey, 2, [r"s\.yaml:\d+: model\.file: .*lie\.sgy"] + patterns, what)

    lying(segy_bytes(vp, True, 2, 10 ** 7, 2000.0, 0),
          ["cannot hold one trace of the 10000000 samples", "bytes 3269-3272"],
          "SEG-Y: an extended sample count longer than the file")
    lying(segy_bytes(vp, True, 2, 5000, 2000.0, 0),
          ["truncated or damaged", r"5000 samples of format 5, from binary header bytes 3269-3272"],
          "SEG-Y: an extended sample count that does not divide the file")
    lying(segy_bytes(vp, True, 2, 18, float("nan"), 0),
          ["extended sample interval nan in binary header bytes 3273-3280"],
          "SEG-Y: a NaN extended interval")
    lying(segy_bytes(vp, False, short_samples=60000),
          ["cannot hold one trace of the 60000 samples", "bytes 3221-3222"],
          "SEG-Y: a 2-byte sample count longer than the file")
    lying(segy_bytes(vp, True)[:-3], ["truncated or damaged", "309 bytes are left over"],
          "SEG-Y: a little-endian file cut short")


# ---- merge with SEG-Y ------------------------------------------------------------------------

def case_merge(work):
    for layout in ("one_file", "per_shot"):
        folder = os.path.join(work, layout)
        os.makedirs(folder)
        survey = GRID + "model: {type: constant, velocity: 2000}\n" + "shots:\n" + WAVELET + (
            "  positions: {lines: [{start: [60, 100, 40], end: [160, 100, 40], count: 4}]}\n") + \
            TAIL.replace("output: {dt_out: 0.002}",
                         "output: {dt_out: 0.002, segy: g.sgy, segy_layout: %s}" % layout)
        with open(os.path.join(folder, "s.yaml"), "w") as f:
            f.write(survey)
        code, out = run(["run", "s.yaml", "-o", "ref/all.h5", "--backend", "cpu", "--quiet"],
                        folder)
        if code == 2 and "without segyio" in out:
            skip("this build has no segyio")
        check(code == 0, "reference run: %s" % out)
        for shots, name in (("0,2", "a"), ("1,3", "b")):
            code, out = run(["run", "s.yaml", "--shots", shots, "-o", "parts/%s.h5" % name,
                             "--backend", "cpu", "--quiet"], folder)
            check(code == 0, "run --shots %s: %s" % (shots, out))
        code, out = run(["merge", "m/all.h5", "parts/a.h5", "parts/b.h5"], folder)
        check(code == 0, "merge: %s" % out)
        sgy = ["all.sgy"] if layout == "one_file" else ["all-shot%d.sgy" % k for k in range(4)]
        check(listing(os.path.join(folder, "m")) == sorted(["all.h5", "all.xmf"] + sgy),
              "%s: merge left %s" % (layout, listing(os.path.join(folder, "m"))))
        for name in sgy:
            with open(os.path.join(folder, "m", name), "rb") as a, \
                    open(os.path.join(folder, "ref", name), "rb") as b:
                check(a.read() == b.read(), "%s: merged %s differs from one run's" % (layout, name))
        check(re.search(r"into m/all\.h5 and ", out) is not None, "merge names no SEG-Y: " + out)
        print("ok: merge writes the SEG-Y of one run (%s)" % layout)

    # An input with a flipped bit in a gather is refused; nothing is written.
    folder = os.path.join(work, "one_file")
    with h5py.File(os.path.join(folder, "parts", "b.h5"), "r") as f:
        offset = f["shots/0003/traces"].id.get_offset()
    with open(os.path.join(folder, "parts", "b.h5"), "r+b") as f:
        f.seek(offset + 4 * 30 + 1)
        byte = f.read(1)
        f.seek(offset + 4 * 30 + 1)
        f.write(bytes([byte[0] ^ 0x01]))
    code, out = run(["merge", "d/all.h5", "parts/a.h5", "parts/b.h5"], folder)
    check(code == 2, "merge of a damaged input: exit %d:\n%s" % (code, out))
    check(re.search(r"merge: 'parts/b\.h5' /shots/0003 is damaged: the CRC-32 of its content is "
                    r"[0-9a-f]{8}, but [0-9a-f]{8} was recorded", out) is not None, out)
    check("nothing was written" in out, out)
    check(listing(os.path.join(folder, "d")) == [], "damaged merge left %s"
          % listing(os.path.join(folder, "d")))
    print("ok: merge refuses a damaged input")


# ---- paths with XML characters ---------------------------------------------------------------

def case_xml_path(work):
    try:
        from lxml import etree
    except ImportError as error:
        skip("%s (Debian package python3-lxml)" % error)
    survey = GRID + "model: {type: constant, velocity: 2000}\n" + (
        "sources: [{position: [110, 100, 40], wavelet: {type: ricker, frequency: 15}}]\n") + \
        TAIL.replace("output: {dt_out: 0.002}", "output: {dt_out: 0.002, snapshots: {every: 20}}")
    with open(os.path.join(work, "s.yaml"), "w") as f:
        f.write(survey)
    name = "a&b <c> \"d\" 'e'"
    code, out = run(["run", "s.yaml", "-o", "o/%s.h5" % name, "--backend", "cpu", "--quiet"], work)
    check(code == 0, "run: %s" % out)
    xmf = os.path.join(work, "o", name + ".xmf")
    check(sorted(os.listdir(os.path.join(work, "o"))) == sorted([name + ".h5", name + ".xmf"]),
          "left %s" % os.listdir(os.path.join(work, "o")))
    tree = etree.parse(xmf)  # raises on invalid XML
    items = [e.text.strip() for e in tree.iter("DataItem")
             if e.get("Format") == "HDF"]
    check(items, "no HDF data items in the sidecar")
    for item in items:
        file_name, dataset = item.rsplit(":", 1)
        check(file_name == name + ".h5", "sidecar names '%s', not the file" % file_name)
        with h5py.File(os.path.join(work, "o", file_name), "r") as f:
            check(dataset in f, "sidecar names %s, which the file does not hold" % dataset)
    print("ok: a path with & < > \" ' gives a valid XDMF sidecar naming the file")


# ---- TTI anisotropy from .npy files ----------------------------------------------------------

def case_tti_npy(work):
    shape = (18, 20, 24)  # z, y, x: numpy's natural layout for v[z, y, x]
    np.save(os.path.join(work, "eps.npy"), np.full(shape, 0.2, dtype=np.float32))
    np.save(os.path.join(work, "theta.npy"), np.full(shape, 30.0, dtype=np.float64))
    common = GRID + "physics: tti\nmodel: {type: constant, velocity: 2000}\n" + (
        "sources: [{position: [110, 100, 40], wavelet: {type: ricker, frequency: 15}}]\n") + \
        TAIL.replace("steps: 60", "steps: 30")
    files = common + ("anisotropy: {angle_unit: degrees, epsilon: {type: file, file: eps.npy}, "
                      "delta: 0.1, theta: {type: file, file: theta.npy}}\n")
    constants = common + "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, theta: 30}\n"
    for name, text in (("files", files), ("constants", constants)):
        with open(os.path.join(work, name + ".yaml"), "w") as f:
            f.write(text)
        code, out = run(["run", name + ".yaml", "-o", name + ".h5", "--backend", "cpu",
                         "--quiet"], work)
        check(code == 0, "%s: exit %d:\n%s" % (name, code, out))
    check(same_gathers(gathers(os.path.join(work, "files.h5")),
                       gathers(os.path.join(work, "constants.h5"))),
          "anisotropy from .npy files differs from the same constants")
    print("ok: TTI anisotropy files ending in .npy are read as NumPy")


CASES = {"shots_csv": case_shots_csv, "segy_in": case_segy_in, "merge": case_merge,
         "xml_path": case_xml_path, "tti_npy": case_tti_npy}

if __name__ == "__main__":
    work = tempfile.mkdtemp(prefix="minimod_hostile_%s_" % sys.argv[2])
    try:
        CASES[sys.argv[2]](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
