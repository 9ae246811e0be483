#!/usr/bin/python3
"""Output that survives a kill at any moment (docs/output.md, "How a run survives a kill").

Runs the real program on tiny surveys and checks exit codes, messages and what is left on disk:

  kill      SIGKILL at write system calls spread over a whole multi-shot run (strace fault
            injection), then --resume: the result equals an uninterrupted run bit for bit
  signals   SIGINT and SIGTERM during one-shot and multi-shot runs
  damaged   a part with a flipped bit in its traces and a truncated part: --resume models them
            again, and the result equals an uninterrupted run bit for bit
  writers   two runs on the same output: the second is refused and touches nothing
  mismatch  --resume with another survey, model file, wavelet file, --steps, --kernel, --backend
  paths     -o that is an input, a folder, in a read-only or missing folder
  diskfull  ENOSPC injected into the writes: exit 4, no crash, complete shots intact

Usage: output_robustness.py BINARY CASE [WORKDIR]
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

def skip(reason):
    """Exit 77 (CTest's skip), except under CI=true, where every tool must be installed."""
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
# Passes of 4 steps, fixed: unset, the CPU backend times passes against single steps on the run's
# first steps and keeps the faster, and with it how many progress lines (write calls) a run makes,
# so a kill point counted in one run could lie beyond the last write of the next.
ENV = dict(os.environ, OMP_NUM_THREADS="1", MINIMOD_CPU_PASS_STEPS="4")


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def run(args, cwd, strace=None, timeout=120):
    """Run the program (under strace when given); returns (code, stderr)."""
    command = [BINARY] + args
    if strace:
        command = ["strace", "-f", "-o", "/dev/null"] + strace + command
    p = subprocess.run(command, cwd=cwd, env=ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p.returncode, p.stderr


def survey_text(shots, steps, snapshots=True, segy=True, extra=""):
    wavelet = "{type: file, file: wavelet.txt, dt: 0.001}"
    if shots == 1:
        sources = "sources: [{position: [150, 140, 60], wavelet: %s}]\n" % wavelet
    else:
        sources = ("shots:\n  wavelet: %s\n  positions: {lines: [{start: [110, 140, 60], "
                   "end: [190, 140, 60], count: %d}]}\n" % (wavelet, shots))
    text = ("grid: {shape: [30, 28, 26], spacing: 10}\n"
            "model: {type: file, file: model.bin, format: raw}\n"
            "time: {steps: %d}\n"
            "boundary: {width: 5}\n"
            "%s"
            "receivers: {lines: [{start: [60, 140, 30], end: [240, 140, 30], count: 8}]}\n"
            "output:\n"
            "  dt_out: 0.002\n" % (steps, sources))
    if snapshots:
        text += "  snapshots: {every: 10}\n"
    if segy:
        text += "  segy: gathers.sgy\n"
    return text + extra


def make_inputs(folder, shots, steps, snapshots=True, segy=True):
    os.makedirs(folder, exist_ok=True)
    z = np.arange(26, dtype=np.float32)[:, None, None]
    model = np.broadcast_to(1800.0 + 20.0 * z, (26, 28, 30)).astype("<f4")
    model.tofile(os.path.join(folder, "model.bin"))
    t = np.arange(200) * 0.001
    arg = (np.pi * 15.0 * (t - 0.08)) ** 2
    wavelet = (1 - 2 * arg) * np.exp(-arg)
    with open(os.path.join(folder, "wavelet.txt"), "w") as f:
        f.write("".join("%.9g\n" % v for v in wavelet))
    with open(os.path.join(folder, "s.yaml"), "w") as f:
        f.write(survey_text(shots, steps, snapshots, segy))


def read_result(path):
    """Every gather and the snapshots of an output file, as numpy arrays (bit-exact compare)."""
    out = {}
    with h5py.File(path, "r") as f:
        for name in f["shots"]:
            for item in ("traces", "receiver_positions", "source_positions"):
                out["shots/%s/%s" % (name, item)] = f["shots"][name][item][()]
        if "snapshots" in f:
            for item in ("wavefield", "step", "time"):
                out["snapshots/" + item] = f["snapshots"][item][()]
    return out


def same_result(a, b):
    if sorted(a) != sorted(b):
        return "objects differ: %s vs %s" % (sorted(a), sorted(b))
    for key in a:
        if a[key].dtype != b[key].dtype or a[key].shape != b[key].shape or \
                a[key].tobytes() != b[key].tobytes():
            return "%s differs" % key
    return None


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def tree(folder):
    """Every file under folder with its content: "nothing touched" compares two of these."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            p = os.path.join(root, name)
            files[os.path.relpath(p, folder)] = file_bytes(p)
    return files


def listing(folder):
    return sorted(os.listdir(folder))


class Case:
    def __init__(self, work, shots=4, steps=50, snapshots=True, segy=True):
        self.dir = work
        self.shots = shots
        make_inputs(work, shots, steps, snapshots, segy)
        # The reference: one uninterrupted run.
        code, err = run(["run", "s.yaml", "-o", "ref/ref.h5", "--backend", "cpu"], work)
        if segy and code == 2 and "without segyio" in err:
            print("note: this build has no segyio; the survey writes no SEG-Y", flush=True)
            segy = False
            make_inputs(work, shots, steps, snapshots, segy)
            code, err = run(["run", "s.yaml", "-o", "ref/ref.h5", "--backend", "cpu"], work)
        self.segy = segy
        check(code == 0, "reference run failed (%d): %s" % (code, err))
        self.reference = read_result(os.path.join(work, "ref/ref.h5"))
        self.reference_segy = file_bytes(os.path.join(work, "ref/ref.sgy")) if segy else None
        check(len([k for k in self.reference if k.endswith("/traces")]) == shots,
              "reference has the wrong shot count")

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def finals(self, name):
        names = [name + ".h5", name + ".xmf"]  # the sidecar shows the model, always stored
        if self.segy:
            names.append(name + ".sgy")
        return sorted(names)

    def check_final(self, out_dir, name, what):
        """out_dir holds exactly the final outputs, equal to the reference."""
        check(listing(self.path(out_dir)) == self.finals(name),
              "%s: left in %s: %s" % (what, out_dir, listing(self.path(out_dir))))
        diff = same_result(read_result(self.path(out_dir, name + ".h5")), self.reference)
        check(diff is None, "%s: %s" % (what, diff))
        if self.segy:
            check(file_bytes(self.path(out_dir, name + ".sgy")) == self.reference_segy,
                  "%s: the SEG-Y differs from the reference" % what)


def count_calls(log, call):
    """The 'calls' column of `strace -c` for one system call."""
    for line in open(log):
        fields = line.split()
        if fields and fields[-1] == call and len(fields) >= 5:
            return int(fields[3])
    fail("no %s calls counted:\n%s" % (call, open(log).read()))


def parts_of(folder):
    if not os.path.isdir(folder):
        return set()
    return {int(m.group(1)) for m in (re.match(r"shot-(\d+)\.h5$", n) for n in os.listdir(folder))
            if m}


# ---- kill at every write ---------------------------------------------------------------------

def case_kill(work):
    c = Case(work)
    # Count the run's system calls of each kind, uninjected.
    counts = {}
    for call in ("pwrite64", "write", "rename", "fsync"):
        log = c.path("count-%s.txt" % call)
        code = subprocess.run(["strace", "-f", "-c", "-e", "trace=" + call, "-o", log, BINARY,
                               "run", "s.yaml", "-o", "count/x.h5", "--backend", "cpu"],
                              cwd=work, env=ENV, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode
        check(code == 0, "counting run failed")
        counts[call] = count_calls(log, call)
        shutil.rmtree(c.path("count"))
    print("calls of an uninterrupted run:", counts, flush=True)
    points = []
    for call, n in counts.items():
        # Every rename and fsync (they commit parts and the final file), and writes spread
        # over the whole run, the first and the last included.
        wanted = n if call in ("rename", "fsync") else 16
        picks = sorted({1, n} | {1 + (n - 1) * k // (wanted - 1) for k in range(wanted)})
        points += [(call, k) for k in picks]
    print("%d kill points" % len(points), flush=True)
    killed_with_output = 0
    for call, k in points:
        what = "SIGKILL at %s #%d" % (call, k)
        out = c.path("k")
        shutil.rmtree(out, ignore_errors=True)
        code, err = run(["run", "s.yaml", "-o", "k/x.h5", "--backend", "cpu"], work,
                        strace=["-e", "trace=" + call,
                                "-e", "inject=%s:signal=KILL:when=%d" % (call, k)])
        check(code in (-9, 128 + 9, 137), "%s: the run was not killed (exit %d): %s"
              % (what, code, err[-500:]))
        done = {int(s) for s in re.findall(r"^shot (\d+) done \(\d+/\d+ done\)$", err, re.M)}
        final = os.path.join(out, "x.h5")
        if os.path.exists(final):
            # Killed after the final rename: the file there is complete.
            diff = same_result(read_result(final), c.reference)
            check(diff is None, "%s: the file at OUT is incomplete: %s" % (what, diff))
            killed_with_output += 1
        else:
            kept = parts_of(final + ".parts")
            check(done <= kept, "%s: shots %s were done but only %s are kept"
                  % (what, sorted(done), sorted(kept)))
        code, err = run(["run", "s.yaml", "-o", "k/x.h5", "--backend", "cpu", "--resume"], work)
        check(code == 0, "%s: --resume failed (%d): %s" % (what, code, err[-2000:]))
        c.check_final("k", "x", what + ", resumed")
    print("ok: %d kill points (%d after the final rename), each resumed to the reference"
          % (len(points), killed_with_output))


# ---- SIGINT and SIGTERM ----------------------------------------------------------------------

def start(c, args):
    log = open(c.path("run.log"), "w")
    p = subprocess.Popen([BINARY] + args, cwd=c.dir, env=ENV, stdout=subprocess.DEVNULL,
                         stderr=log)
    return p, log


def wait_for(c, pattern, p, seconds=60):
    end = time.time() + seconds
    while time.time() < end:
        text = open(c.path("run.log")).read()
        if re.search(pattern, text, re.M):
            return text
        if p.poll() is not None:
            fail("the run ended (%s) before '%s':\n%s" % (p.returncode, pattern, text))
        time.sleep(0.005)
    fail("timed out waiting for '%s'" % pattern)


def case_signals(work):
    # One shot: nothing is left behind, whatever the moment.
    # Long enough (about a second here) that the signal lands inside the time loop.
    one = Case(os.path.join(work, "one"), shots=1, steps=4000, snapshots=True, segy=False)
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        shutil.rmtree(one.path("o"), ignore_errors=True)
        p, log = start(one, ["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu"])
        wait_for(one, r"^(\S+ \S+ )?step \d+/4000", p)  # log lines start with date and time
        p.send_signal(sig)
        p.wait(60)
        log.close()
        err = open(one.path("run.log")).read()
        check(p.returncode == code, "one shot, %s: exit %s, expected %d:\n%s"
              % (sig.name, p.returncode, code, err))
        check("interrupted by %s" % sig.name in err, "one shot: no message:\n" + err)
        check(listing(one.path("o")) == [], "one shot, %s: left %s" % (sig.name,
                                                                       listing(one.path("o"))))
    # Many shots: complete shots kept, the resume command printed, the resumed run complete.
    many = Case(os.path.join(work, "many"), shots=4, steps=300)
    for sig, code, after in ((signal.SIGINT, 130, r"^shot 0 done \(1/4 done\)$"),
                             (signal.SIGTERM, 143, r"^shot 1 done \(2/4 done\)$"),
                             (signal.SIGTERM, 143, r"^shot 0 \(1 of 4\)$")):
        what = "%s after '%s'" % (sig.name, after)
        shutil.rmtree(many.path("o"), ignore_errors=True)
        p, log = start(many, ["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu",
                              "--steps", "300"])
        wait_for(many, after, p)
        p.send_signal(sig)
        p.wait(60)
        log.close()
        err = open(many.path("run.log")).read()
        check(p.returncode == code, "%s: exit %s, expected %d:\n%s"
              % (what, p.returncode, code, err))
        check(not os.path.exists(many.path("o", "x.h5")), what + ": a final file appeared")
        done = {int(s) for s in re.findall(r"^shot (\d+) done \(\d+/\d+ done\)$", err, re.M)}
        kept = parts_of(many.path("o", "x.h5.parts"))
        check(done == kept, "%s: shots done %s, kept %s" % (what, sorted(done), sorted(kept)))
        if not kept:
            # Stopped inside the first shot: nothing worth keeping, nothing left.
            check(listing(many.path("o")) == [], what + ": left " + str(listing(many.path("o"))))
            continue
        m = re.search(r"^%d of 4 shots are complete and kept in 'o/x.h5.parts'; resume with: "
                      r"(.*)$" % len(kept), err, re.M)
        check(m is not None, what + ": no resume command:\n" + err)
        command = m.group(1)
        check(command == "%s run s.yaml -o o/x.h5 --resume --steps 300 --backend cpu" % BINARY,
              what + ": resume command " + command)
        left = [n for n in listing(many.path("o", "x.h5.parts"))
                if n not in ("lock", "manifest") and not n.startswith(("shot-", "snapshots-"))]
        check(not left, what + ": temporaries left: %s" % left)
        p = subprocess.run(command, shell=True, cwd=many.dir, env=ENV, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        check(p.returncode == 0, what + ": the printed command failed:\n" + p.stderr)
        check("%d complete shot(s) of 4 kept" % len(kept) in p.stderr, p.stderr)
        # The reference ran the survey's 300 steps too: identical samples.
        many.check_final("o", "x", what + ", resumed")
    print("ok: SIGINT and SIGTERM, one shot and many")


# ---- parts damaged after they were written ----------------------------------------------------

def case_damaged(work):
    """A part with one flipped bit inside a gather's traces, and a truncated part: --resume says
    so, models those shots again, and the result equals the uninterrupted run bit for bit."""
    many = Case(os.path.join(work, "many"), shots=4, steps=300)
    p, log = start(many, ["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--steps", "300"])
    wait_for(many, r"^shot 2 done \(3/4 done\)$", p)
    p.send_signal(signal.SIGTERM)
    p.wait(60)
    log.close()
    check(p.returncode == 143, "stopped run: exit %s:\n%s" % (p.returncode,
                                                              open(many.path("run.log")).read()))
    folder = many.path("o", "x.h5.parts")
    kept = parts_of(folder)
    check({0, 1, 2} <= kept, "parts kept: %s" % sorted(kept))
    # Bit rot inside shot 1's samples: the file still opens, its values are wrong.
    part1 = os.path.join(folder, "shot-0001.h5")
    with h5py.File(part1, "r") as f:
        traces = f["shots/0001/traces"]
        offset = traces.id.get_offset()
        check(offset is not None, "traces of a part are stored contiguously")
        at = offset + 4 * (traces.shape[1] * 3 + traces.shape[1] // 2) + 2
    with open(part1, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x10]))
    with h5py.File(part1, "r") as f:
        damaged = f["shots/0001/traces"][()]
    check(damaged.tobytes() != many.reference["shots/0001/traces"].tobytes(),
          "the flipped bit is inside the traces")
    # A part cut short (a copy that ran out of space).
    part2 = os.path.join(folder, "shot-0002.h5")
    os.truncate(part2, os.path.getsize(part2) * 2 // 3)
    code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--resume", "--steps", "300",
                     "--backend", "cpu"], many.dir)
    check(code == 0, "resume: exit %d:\n%s" % (code, err))
    check(re.search(r"^resume: 'o/x.h5.parts/shot-0001.h5' is damaged: the CRC-32 of its "
                    r"content is [0-9a-f]{8}, but [0-9a-f]{8} was recorded .*; shot 1 is "
                    r"modelled again$", err, re.M) is not None, "no line for the flipped bit:\n" + err)
    check(re.search(r"^resume: 'o/x.h5.parts/shot-0002.h5' cannot be read.*; shot 2 is "
                    r"modelled again$", err, re.M) is not None, "no line for the cut part:\n" + err)
    many.check_final("o", "x", "damaged parts, resumed")
    print("ok: a flipped bit and a truncated part are modelled again")


# ---- two writers -----------------------------------------------------------------------------

def case_writers(work):
    c = Case(work, shots=4, steps=300)
    p, log = start(c, ["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu"])
    wait_for(c, r"^shot 0 \(1 of 4\)$", p)
    # Stopped while the second writer tries, so that it cannot finish before the second writer
    # starts (a small survey runs in a fraction of a second); its lock is held all the same.
    p.send_signal(signal.SIGSTOP)
    try:
        before = tree(c.path("o"))
        code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu"], work)
        code_resume, err_resume = run(
            ["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--resume"], work)
        after = tree(c.path("o"))
    finally:
        p.send_signal(signal.SIGCONT)
    check(code == 4, "second writer: exit %d, expected 4:\n%s" % (code, err))
    check("is being written by another run (process %d on " % p.pid in err, err)
    check("nothing was changed" in err, err)
    check(code_resume == 4 and "(process %d on " % p.pid in err_resume,
          "second writer with --resume: " + err_resume)
    # The first run goes on writing; what the second saw must still be there, unchanged.
    for name, content in before.items():
        if name.endswith("manifest") or name.endswith("lock"):
            check(after.get(name) == content, "the second writer changed " + name)
    p.wait(120)
    log.close()
    check(p.returncode == 0, "the first run failed:\n" + open(c.path("run.log")).read())
    c.check_final("o", "x", "first writer")
    print("ok: two writers")


# ---- resume mismatch -------------------------------------------------------------------------

def case_mismatch(work):
    c = Case(work, shots=4, steps=300, snapshots=False, segy=False)
    p, log = start(c, ["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--steps", "300"])
    wait_for(c, r"^shot 1 done \(2/4 done\)$", p)
    p.send_signal(signal.SIGINT)
    p.wait(60)
    log.close()
    check(p.returncode == 130, "interrupting the run: exit %s" % p.returncode)
    resume = ["run", "s.yaml", "-o", "o/x.h5", "--resume"]
    survey = open(c.path("s.yaml")).read()

    def refused(args, expected, what, change=None, undo=None):
        if change:
            change()
        before = tree(c.path("o"))
        code, err = run(args, work)
        if undo:
            undo()
        check(code == 2, "%s: exit %d, expected 2:\n%s" % (what, code, err))
        for text in expected:
            check(text in err, "%s: '%s' not in:\n%s" % (what, text, err))
        check("Nothing was changed" in err, what + ": " + err)
        check(tree(c.path("o")) == before, what + ": the parts were touched")

    def write(name, data):
        with open(c.path(name), "wb") as f:
            f.write(data)

    model, wavelet = file_bytes(c.path("model.bin")), file_bytes(c.path("wavelet.txt"))
    base = resume + ["--steps", "300", "--backend", "cpu"]
    refused(resume + ["--steps", "200", "--backend", "cpu"],
            ["--steps 200 vs 300 of the interrupted run"], "steps")
    refused(resume + ["--backend", "cpu"], ["--steps (not given) vs 300"], "no steps")
    refused(base[:-2], ["--backend auto vs cpu of the interrupted run"], "backend")
    refused(base + ["--kernel", "cpu"], ["--kernel cpu vs (not given) of the interrupted run"],
            "kernel")
    refused(base, ["the survey text differs (first at line 3: 'time: {steps: 301}' vs "
                   "'time: {steps: 300}' of the interrupted run)"], "survey",
            lambda: open(c.path("s.yaml"), "w").write(survey.replace("steps: 300", "steps: 301")),
            lambda: open(c.path("s.yaml"), "w").write(survey))
    changed = bytearray(model)
    changed[100] ^= 1
    refused(base, ["model.file 'model.bin' changed (%d bytes, CRC-32 " % len(model),
                   "when the interrupted run read it"], "model",
            lambda: write("model.bin", bytes(changed)), lambda: write("model.bin", model))
    refused(base, ["wavelet.file 'wavelet.txt' changed", "when the interrupted run read it"],
            "wavelet", lambda: write("wavelet.txt", wavelet + b"0\n"),
            lambda: write("wavelet.txt", wavelet))
    # A run without --resume does not drop the complete shots either.
    code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--steps", "300"], work)
    kept = len(parts_of(c.path("o", "x.h5.parts")))
    check(code == 2 and "%d complete shots of an interrupted run of 4" % kept in err and
          "--resume --steps 300 --backend cpu" in err and "rm -r 'o/x.h5.parts'" in err,
          "run without --resume over kept shots: %d\n%s" % (code, err))
    # And with everything as it was, the resume completes.
    code, err = run(base, work)
    check(code == 0, "the matching resume failed: " + err)
    c.check_final("o", "x", "resumed after refusals")
    print("ok: every mismatch refused, nothing touched")


# ---- output paths ----------------------------------------------------------------------------

def case_paths(work):
    make_inputs(work, 2, 1000, snapshots=False, segy=False)
    before = tree(work)
    for target in ("model.bin", "s.yaml", "wavelet.txt", "./sub/../model.bin"):
        os.makedirs(os.path.join(work, "sub"), exist_ok=True)
        code, err = run(["run", "s.yaml", "-o", target, "--backend", "cpu"], work)
        check(code == 2, "-o %s: exit %d, expected 2:\n%s" % (target, code, err))
        check("is the input file" in err and "writing it would destroy the input" in err, err)
        check("step " not in err, "-o %s: it computed before refusing" % target)
    os.rmdir(os.path.join(work, "sub"))
    check(tree(work) == before, "an input was touched")

    # --summary is an output too: never an input, never OUT; OUT never its own sidecar.
    for args, code_wanted, text in (
            (["-o", "x.h5", "--summary", "s.yaml"], 2, "is the input file"),
            (["-o", "x.h5", "--summary", "x.h5"], 2, "are one file"),
            (["-o", "x.xmf"], 2, "are one file"),
            (["-o", "x.h5", "--summary", "/dev/null"], 4, "no regular file")):
        code, err = run(["run", "s.yaml", "--backend", "cpu"] + args, work)
        check(code == code_wanted and text in err and "step " not in err,
              "%s: exit %d, expected %d with '%s':\n%s" % (args, code, code_wanted, text, err))
        check(tree(work) == before, "%s: the folder changed" % args)

    # More host memory than there is (traces of 2^31 steps): exit 3 before any step, naming both.
    code, err = run(["run", "s.yaml", "-o", "mem/x.h5", "--backend", "cpu", "--steps",
                     "2147483646"], work)
    check(code == 3 and "out of host memory" in err and "available" in err and "step " not in err,
          "--steps 2147483646: exit %d, expected 3:\n%s" % (code, err))
    check(listing(os.path.join(work, "mem")) == [], "--steps 2147483646 left files")

    os.makedirs(os.path.join(work, "folder.h5"))
    code, err = run(["run", "s.yaml", "-o", "folder.h5", "--backend", "cpu"], work)
    check(code == 4 and "is a folder" in err and "step " not in err, "-o folder: %d %s"
          % (code, err))
    check(listing(os.path.join(work, "folder.h5")) == [], "the folder was written to")

    with open(os.path.join(work, "plain"), "w") as f:
        f.write("x")
    code, err = run(["run", "s.yaml", "-o", "plain/sub/x.h5", "--backend", "cpu"], work)
    check(code == 4 and "cannot create the folder 'plain/sub'" in err and "step " not in err,
          "-o in a missing folder that cannot be created: %d %s" % (code, err))

    if os.geteuid() == 0:
        print("skip: -o in a read-only folder (running as root, who may write anywhere)")
    else:
        ro = os.path.join(work, "ro")
        os.makedirs(ro)
        os.chmod(ro, 0o555)
        code, err = run(["run", "s.yaml", "-o", "ro/x.h5", "--backend", "cpu"], work)
        os.chmod(ro, 0o755)
        check(code == 4 and "Permission denied" in err and "step " not in err,
              "-o in a read-only folder: %d %s" % (code, err))
        check(listing(ro) == [], "the read-only folder holds %s" % listing(ro))
    print("ok: output paths")


# ---- full disk -------------------------------------------------------------------------------

def case_diskfull(work):
    # One shot: exit 4 and the message; nothing left when the shot did not finish, and the shot's
    # part kept for --resume when the assembly failed after it.
    one = Case(os.path.join(work, "one"), shots=1, steps=50)
    count_log = one.path("count.txt")
    subprocess.run(["strace", "-f", "-c", "-e", "trace=pwrite64", "-o", count_log, BINARY, "run",
                    "s.yaml", "-o", "c/x.h5", "--backend", "cpu", "--quiet"], cwd=one.dir,
                   env=ENV, check=True)
    n = count_calls(count_log, "pwrite64")
    for k in sorted({1, n // 3, 2 * n // 3, n}):
        shutil.rmtree(one.path("o"), ignore_errors=True)
        code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--quiet"], one.dir,
                        strace=["-e", "trace=pwrite64",
                                "-e", "inject=pwrite64:error=ENOSPC:when=%d+" % k])
        check(code == 4, "one shot, ENOSPC from pwrite64 #%d: exit %d (a signal is negative or "
              "above 128):\n%s" % (k, code, err))
        check(re.search(r"^error: .*No space left on device", err, re.M) is not None, err)
        left = listing(one.path("o"))
        if left == []:
            continue
        check(left == ["x.h5.parts"] and parts_of(one.path("o", "x.h5.parts")) == {0},
              "one shot, ENOSPC #%d: left %s" % (k, left))
        check("--resume" in err, "one shot, ENOSPC #%d: no resume command:\n%s" % (k, err))
        code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--resume"], one.dir)
        check(code == 0, "one shot, ENOSPC #%d: resume: %s" % (k, err))
        one.check_final("o", "x", "one shot, ENOSPC #%d, resumed" % k)
    # Many shots: the complete shots stay intact, and a resume with room completes the run.
    many = Case(os.path.join(work, "many"), shots=4, steps=50)
    for call in ("pwrite64", "write"):
        count_log = many.path("count.txt")
        subprocess.run(["strace", "-f", "-c", "-e", "trace=" + call, "-o", count_log, BINARY,
                        "run", "s.yaml", "-o", "c/x.h5", "--backend", "cpu", "--quiet"],
                       cwd=many.dir, env=ENV, check=True)
        shutil.rmtree(many.path("c"))
        n = count_calls(count_log, call)
        # HDF5's writes fail from the k-th on; plain writes (manifest, SEG-Y, the terminal) fail
        # once, at the k-th, so that the message itself can still be written.
        picks = sorted({1 + (n - 1) * j // 7 for j in range(8)} if call == "write" else
                       {n // 4, n // 2, 3 * n // 4, n - 2})
        for k in picks:
            what = "ENOSPC from %s #%d%s" % (call, k, " on" if call == "pwrite64" else "")
            when = "%d+" % k if call == "pwrite64" else "%d" % k
            shutil.rmtree(many.path("o"), ignore_errors=True)
            code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--quiet"],
                            many.dir, strace=["-e", "trace=" + call,
                                              "-e", "inject=%s:error=ENOSPC:when=%s" % (call, when)])
            if call == "write" and code == 0:
                many.check_final("o", "x", what + " (a line to the terminal)")
                continue
            check(code == 4, "%s: exit %d:\n%s" % (what, code, err))
            # HDF5's failures name the cause; segyio's own message says which step failed.
            reason = "No space left on device" if call == "pwrite64" else "o/x."
            check(re.search(r"^error: .*" + re.escape(reason), err, re.M) is not None,
                  what + ": " + err)
            check(not os.path.exists(many.path("o", "x.h5")), what + ": a final file appeared")
            left = [n for n in listing(many.path("o")) if n != "x.h5.parts"]
            check(not left, "%s: left %s" % (what, left))
            kept = parts_of(many.path("o", "x.h5.parts"))
            for shot in kept:
                part = many.path("o", "x.h5.parts", "shot-%04d.h5" % shot)
                with h5py.File(part, "r") as f:
                    traces = f["shots/%04d/traces" % shot][()]
                check(traces.tobytes() == many.reference["shots/%04d/traces" % shot].tobytes(),
                      "%s: kept shot %d differs" % (what, shot))
            code, err = run(["run", "s.yaml", "-o", "o/x.h5", "--backend", "cpu", "--resume"],
                            many.dir)
            check(code == 0, what + ": resume: " + err)
            many.check_final("o", "x", what + ", resumed")
    print("ok: full disk")


CASES = {"kill": case_kill, "signals": case_signals, "damaged": case_damaged,
         "writers": case_writers,
         "mismatch": case_mismatch, "paths": case_paths, "diskfull": case_diskfull}

if __name__ == "__main__":
    name = sys.argv[2]
    if name in ("kill", "diskfull") and shutil.which("strace") is None:
        skip("strace is not installed (Debian package strace)")
    work = tempfile.mkdtemp(prefix="minimod_%s_" % name)
    try:
        CASES[name](work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
