"""SEG-Y gathers read back by segyio and by ObsPy, checked against the HDF5 copy of the same run.

Usage: test_segy_readers.py MINIMOD_BINARY WORK_FOLDER

Runs a small two-shot survey with receivers on two lines (so CDP numbers vary along x and y) at
positions that are not whole metres, writing the gathers to HDF5 and to one SEG-Y file, then reads
the SEG-Y with both readers and compares, trace by trace: sample count and interval, samples,
source, receiver and CDP (midpoint) coordinates with their scalars, depths and elevations, signed
offsets, field record (= the shot number of /shots/NNNN + 1), trace number, ensemble (CDP) number,
inline and crossline numbers.

Exits 77 (CTest's skip) when a reader is not installed, unless the environment variable CI is
"true": a CI machine must have them (.ci/run installs ObsPy), so there a missing reader fails.
"""

import os
import re
import shutil
import subprocess
import sys

SKIP = 77


def missing(reason):
    if os.environ.get("CI", "").lower() == "true":
        print("FAIL: " + reason + " (CI=true: every reader must be installed)")
        sys.exit(1)
    print("SKIP: " + reason)
    sys.exit(SKIP)


try:
    import h5py
    import numpy as np
    import segyio
except ImportError as e:
    missing("%s (Debian: python3-h5py python3-numpy python3-segyio)" % e)
try:
    import obspy
except ImportError as e:
    missing("%s (pip install obspy; .ci/run does it)" % e)

SURVEY = """name: segy_readers
grid: {shape: [41, 21, 21], spacing: 10}
model: {type: constant, velocity: 2000}
time: {duration: 0.1}
boundary: {width: 6}
shots:
  wavelet: {type: ricker, frequency: 25}
  positions: {lines: [{start: [150, 100, 80], end: [250, 100, 80], count: 2}]}
receivers:
  lines:
    - {start: [100.25, 80, 70.5], end: [300.25, 80, 70.5], count: 11}
    - {start: [100.25, 120, 70.5], end: [300.25, 120, 70.5], count: 11}
output:
  dt_out: 0.002
  segy: SEGY_PATH
"""

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sgy = os.path.join(work, "g.sgy")
    h5 = os.path.join(work, "g.h5")
    survey = os.path.join(work, "s.yaml")
    with open(survey, "w") as f:
        f.write(SURVEY.replace("SEGY_PATH", sgy))
    run = subprocess.run([binary, "run", survey, "-o", h5, "--backend", "cpu", "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        print(run.stdout)
        if "without segyio" in run.stdout or "without SEG-Y" in run.stdout:
            print("SKIP: this build has no segyio")
            sys.exit(SKIP)
        print("FAIL: minimod-gpu run exited %d" % run.returncode)
        sys.exit(1)

    # The reference: every trace of the HDF5 file, in shot then receiver order.
    expected = []
    with h5py.File(h5, "r") as f:
        names = sorted(f["shots"].keys())
        check(len(names) == 2, "HDF5 shots %s" % names)
        for name in names:
            g = f["shots"][name]
            shot = int(g.attrs["shot"])
            check(name == "%04d" % shot, "group %s holds shot %d" % (name, shot))
            dt = float(g.attrs["dt_out"])
            src = g["source_positions"][0]
            for r, (trace, rec) in enumerate(zip(g["traces"][()], g["receiver_positions"][()])):
                expected.append(dict(shot=shot, number=r + 1, trace=trace, src=src, rec=rec, dt=dt))
    samples = expected[0]["trace"].shape[0]
    dt_us = round(expected[0]["dt"] * 1e6)

    with segyio.open(sgy, ignore_geometry=True) as s:
        text = segyio.tools.wrap(s.text[0])
        check(s.tracecount == len(expected), "segyio: %d traces, HDF5 %d" % (s.tracecount, len(expected)))
        check(s.bin[segyio.BinField.Samples] == samples, "binary header samples")
        check(s.bin[segyio.BinField.Interval] == dt_us, "binary header interval")
        check(s.bin[segyio.BinField.Format] == 5, "binary header format")
        check(s.bin[segyio.BinField.MeasurementSystem] == 1, "binary header: metres")
        check(len(s.samples) == samples and abs(s.samples[1] - s.samples[0] - dt_us / 1000) < 1e-9,
              "segyio sample axis %s" % s.samples[:2])
        segyio_headers = [dict(s.header[t]) for t in range(s.tracecount)]
        segyio_traces = [s.trace[t].copy() for t in range(s.tracecount)]

    # The CDP bins the file states in its textual header (the writer's SegyWriteOptions).
    m = re.search(r"CDP \(byte 21\) = 1 \+ i \+ (\d+) j", text)
    b = re.search(r"bin \(i, j\) centred at x (-?[\d.]+) \+ i \* ([\d.]+), y (-?[\d.]+) \+ j \* ([\d.]+) m",
                  text)
    check(m is not None and b is not None, "textual header states no CDP bins:\n" + text)
    columns = int(m.group(1))
    x0, bx, y0, by = (float(v) for v in b.groups())

    stream = obspy.read(sgy, format="SEGY", unpack_trace_headers=True)
    check(len(stream) == len(expected), "ObsPy: %d traces" % len(stream))
    binary_header = stream.stats.binary_file_header
    check(binary_header.number_of_samples_per_data_trace == samples, "ObsPy binary samples")
    check(binary_header.sample_interval_in_microseconds == dt_us, "ObsPy binary interval")

    T = segyio.TraceField
    cdp_of_midpoint = {}
    for n, (e, sh, st) in enumerate(zip(expected, segyio_headers, stream)):
        where = "trace %d (shot %d, receiver %d)" % (n, e["shot"], e["number"] - 1)
        th = st.stats.segy.trace_header
        mid = (e["src"][:2] + e["rec"][:2]) / 2
        dx, dy = e["rec"][0] - e["src"][0], e["rec"][1] - e["src"][1]
        sign = -1 if (dx < -1e-6 or (abs(dx) <= 1e-6 and dy < -1e-6)) else 1
        offset = round(sign * float(np.hypot(dx, dy)))
        i, j = round((mid[0] - x0) / bx), round((mid[1] - y0) / by)
        cdp = 1 + i + columns * j

        # The same fields through both readers' names.
        pairs = [
            ("field record", sh[T.FieldRecord], th.original_field_record_number, e["shot"] + 1),
            ("trace number", sh[T.TraceNumber], th.trace_number_within_the_original_field_record,
             e["number"]),
            ("ensemble (CDP) number", sh[T.CDP], th.ensemble_number, cdp),
            ("inline", sh[T.INLINE_3D], th.for_3d_poststack_data_this_field_is_for_in_line_number,
             j + 1),
            ("crossline", sh[T.CROSSLINE_3D],
             th.for_3d_poststack_data_this_field_is_for_cross_line_number, i + 1),
            ("offset", sh[T.offset],
             th.distance_from_center_of_the_source_point_to_the_center_of_the_receiver_group, offset),
            ("samples", sh[T.TRACE_SAMPLE_COUNT], th.number_of_samples_in_this_trace, samples),
            ("interval", sh[T.TRACE_SAMPLE_INTERVAL], th.sample_interval_in_ms_for_this_trace, dt_us),
            ("energy source point", sh[T.EnergySourcePoint], th.energy_source_point_number,
             e["shot"] + 1),
            ("trace sequence", sh[T.TRACE_SEQUENCE_FILE], th.trace_sequence_number_within_segy_file,
             n + 1),
        ]
        for what, a, o, want in pairs:
            check(a == want and o == want, "%s: %s segyio %s, ObsPy %s, expected %s" % (where, what, a, o, want))

        # Coordinates with their scalars: negative divides. Whole centimetres keep 5 mm.
        scalar = sh[T.SourceGroupScalar]
        check(scalar == th.scalar_to_be_applied_to_all_coordinates == -100, "%s: coordinate scalar %s" % (where, scalar))
        elev_scalar = sh[T.ElevationScalar]
        check(elev_scalar == th.scalar_to_be_applied_to_all_elevations_and_depths == -100,
              "%s: elevation scalar %s" % (where, elev_scalar))
        coords = [
            ("source x", sh[T.SourceX], th.source_coordinate_x, e["src"][0], scalar),
            ("source y", sh[T.SourceY], th.source_coordinate_y, e["src"][1], scalar),
            ("group x", sh[T.GroupX], th.group_coordinate_x, e["rec"][0], scalar),
            ("group y", sh[T.GroupY], th.group_coordinate_y, e["rec"][1], scalar),
            ("CDP x", sh[T.CDP_X], th.x_coordinate_of_ensemble_position_of_this_trace, mid[0], scalar),
            ("CDP y", sh[T.CDP_Y], th.y_coordinate_of_ensemble_position_of_this_trace, mid[1], scalar),
            ("source depth", sh[T.SourceDepth], th.source_depth_below_surface, e["src"][2], elev_scalar),
            ("receiver elevation", sh[T.ReceiverGroupElevation], th.receiver_group_elevation,
             -e["rec"][2], elev_scalar),
        ]
        for what, a, o, metres, sc in coords:
            value = a / -sc if sc < 0 else a * sc
            check(a == o and abs(value - metres) <= 0.005 + 1e-9,
                  "%s: %s segyio %s, ObsPy %s, scalar %s; expected %.4f m" % (where, what, a, o, sc, metres))

        # Samples: bit for bit through both readers.
        check(np.array_equal(segyio_traces[n], e["trace"]), "%s: segyio samples differ" % where)
        check(np.array_equal(st.data, e["trace"]), "%s: ObsPy samples differ" % where)
        check(abs(st.stats.delta - e["dt"]) < 1e-9 and st.stats.npts == samples, "%s: ObsPy delta/npts" % where)

        # One CDP per midpoint, and different midpoints get different CDPs.
        key = (round(mid[0] * 100), round(mid[1] * 100))
        check(cdp_of_midpoint.setdefault(key, sh[T.CDP]) == sh[T.CDP], "%s: same midpoint, another CDP" % where)
    check(len(set(cdp_of_midpoint.values())) == len(cdp_of_midpoint), "two midpoints share a CDP")
    check(len(cdp_of_midpoint) > 30, "only %d distinct midpoints" % len(cdp_of_midpoint))

    if failures:
        print("FAIL: %d checks failed, the first 20:" % len(failures))
        for line in failures[:20]:
            print("  " + line)
        sys.exit(1)
    print("ok: %d traces of %d shots, %d samples of %d us, %d CDPs; segyio %s, ObsPy %s agree with the HDF5 file"
          % (len(expected), len(names), samples, dt_us, len(cdp_of_midpoint),
             getattr(segyio, "__version__", "?"), obspy.__version__))


if __name__ == "__main__":
    main()
