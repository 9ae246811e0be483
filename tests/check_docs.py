#!/usr/bin/env python3
"""The docs against the program: every survey they show validates, every README command runs.

    check_docs.py BINARY ROOT [--build-dir DIR]   check the tree at ROOT with the built program
    check_docs.py --self-test BINARY              check small trees with one broken block, command
                                                  or option each, and a tree with none

What is checked (exit 1 naming each failure by file and line, 0 when all pass):
  1. Every file input/*.yaml, and every ```yaml block of README.md and docs/*.md, is a survey that
     `minimod-gpu validate` accepts (exit 0). A block that is not a whole survey says so in an
     HTML comment on the lines right before its fence:
       <!-- docs-check: snippet of input/demo.yaml -->   its top-level keys replace (or add to)
                                                         those of that survey, then validate
       <!-- docs-check: snippet of input/demo.yaml without receivers, output -->
                                                         the same, those keys of it dropped
       <!-- docs-check: skip: REASON -->                  not checked; the reason is printed
     and either may add files the survey names, copied beside it from the tree:
       <!-- docs-check: with wavelet.txt = tests/data/docs/wavelet.txt -->
  2. Every command of README.md's ```sh blocks runs and exits 0, in order, in a scratch copy of
     the tree (links to ROOT's folders; out/ and $HOME are the scratch's own), with `minimod-gpu`
     the built program. Those that cannot run as written on a CI machine run in a stated form:
       make demo     the demo target's command, `minimod-gpu run input/demo.yaml` (its deps and
                     build steps are what built this program)
       make install  `cmake --install BUILD_DIR --prefix $HOME/.local` ($HOME is the scratch's)
       make test     skipped: it runs this check (CI runs it as its own step)
       mpirun        as written, oversubscribed and allowed as root; skipped without mpirun
       GPU commands  (`--backend cuda|hip`, `bench` without `--backend cpu`) skipped where the
                     program finds no GPU (`validate` says its backend is cpu)
       sudo, apt-get, docker   skipped: they change the machine
     A command repeated later (`build/minimod-gpu X` and `minimod-gpu X` alike) runs once.
  3. Every `minimod-gpu SUBCOMMAND ...` in README.md's inline code names a subcommand, and each
     `--option` in it is one that `minimod-gpu SUBCOMMAND --help` lists; inline code that starts
     with an option (`--backend cpu`) names one that some subcommand lists.
Standard library only.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
DIRECTIVE = re.compile(r"<!--\s*docs-check:(.*?)-->", re.S)
TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
VALIDATE_TIMEOUT_S = 60
COMMAND_TIMEOUT_S = 120


class Block:
    """One fenced block of a markdown file: its language, text, line and directive."""

    def __init__(self, path, line, lang, text, directive):
        self.path, self.line, self.lang, self.text, self.directive = (path, line, lang, text,
                                                                      directive)

    def where(self, root):
        return "%s:%d" % (os.path.relpath(self.path, root), self.line)


def blocks_of(path):
    """The fenced blocks of a markdown file, each with the docs-check comment right before it."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found, n = [], 0
    while n < len(lines):
        m = FENCE.match(lines[n])
        if not m:
            n += 1
            continue
        indent, lang, start = m.group(1), m.group(2), n
        body, n = [], n + 1
        while n < len(lines) and not re.match(r"^\s*```\s*$", lines[n]):
            line = lines[n]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            n += 1
        n += 1
        # The comment may span lines; it must end on the line before the fence.
        above, k = "", start - 1
        if k >= 0 and lines[k].strip().endswith("-->"):
            while k >= 0:
                above = lines[k] + "\n" + above
                if "<!--" in lines[k]:
                    break
                k -= 1
        d = DIRECTIVE.search(above)
        found.append(Block(path, start + 1, lang, "\n".join(body) + "\n",
                           " ".join(d.group(1).split()) if d else None))
    return found


def parse_directive(text):
    """(kind, base or reason, {name: source}) of a docs-check comment; kind is survey, snippet,
    skip or an error message."""
    files = {}
    if text is None:
        return "survey", None, files
    m = re.search(r"\bwith\s+(.*)$", text)
    if m:
        for item in m.group(1).split(","):
            name, eq, source = item.partition("=")
            if not eq or not name.strip() or not source.strip():
                return "bad 'with' item %r: NAME = PATH" % item.strip(), None, files
            files[name.strip()] = source.strip()
        text = text[:m.start()].strip()
    if text.startswith("skip:") and text[5:].strip():
        return "skip", text[5:].strip(), files
    m = re.match(r"^snippet of (\S+)(?:\s+without\s+(.+))?$", text)
    if m:
        dropped = [k.strip() for k in (m.group(2) or "").split(",") if k.strip()]
        return "snippet", (m.group(1), dropped), files
    if text == "":
        return "survey", None, files
    return ("unknown docs-check %r: 'snippet of FILE', 'skip: REASON', 'with NAME = PATH'" % text,
            None, files)


def top_level_chunks(text):
    """[(key or None, lines)] of a YAML document: each top-level key with the lines under it."""
    chunks = [(None, [])]
    for line in text.split("\n"):
        m = TOP_KEY.match(line)
        if m:
            chunks.append((m.group(1), [line]))
        else:
            chunks[-1][1].append(line)
    return chunks


def merge_snippet(base, snippet, dropped=()):
    """The base survey with the snippet's top-level keys in place of its own (new ones added),
    and the keys `dropped` left out."""
    ours = {key: lines for key, lines in top_level_chunks(snippet) if key}
    out, used = [], set()
    for key, lines in top_level_chunks(base):
        if key in dropped and key not in ours:
            continue
        if key in ours:
            out.extend(ours[key])
            used.add(key)
        else:
            out.extend(lines)
    for key, lines in top_level_chunks(snippet):
        if key and key not in used:
            out.extend(lines)
    return "\n".join(out) + "\n"


def validate(binary, root, survey_text, files, scratch):
    """(ok, message): `validate` of the survey written into a folder of its own."""
    folder = tempfile.mkdtemp(dir=scratch)
    for name, source in files.items():
        src = os.path.join(root, source)
        if not os.path.isfile(src):
            return False, "file %s for %s is not in the tree" % (source, name)
        dest = os.path.join(folder, name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(src, dest)
    with open(os.path.join(folder, "survey.yaml"), "w", encoding="utf-8") as f:
        f.write(survey_text)
    try:
        p = subprocess.run([binary, "validate", "survey.yaml"], cwd=folder, capture_output=True,
                           text=True, timeout=VALIDATE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, "validate took more than %d s" % VALIDATE_TIMEOUT_S
    if p.returncode != 0:
        return False, "validate exit %d: %s" % (p.returncode, p.stderr.strip()[-600:])
    warnings = [l for l in (p.stdout + p.stderr).splitlines() if l.startswith("warning:")]
    return True, "; ".join(warnings)


def markdown_files(root):
    found = [os.path.join(root, "README.md")] if os.path.isfile(os.path.join(root,
                                                                              "README.md")) else []
    return found + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def check_surveys(binary, root, scratch, report):
    failures = []
    for path in sorted(glob.glob(os.path.join(root, "input", "*.yaml"))):
        base = os.path.dirname(path)
        # input/ surveys name their files relative to input/: validate them in place.
        p = subprocess.run([binary, "validate", os.path.basename(path)], cwd=base,
                           capture_output=True, text=True, timeout=VALIDATE_TIMEOUT_S)
        rel = os.path.relpath(path, root)
        if p.returncode != 0:
            failures.append("%s: validate exit %d: %s" % (rel, p.returncode, p.stderr.strip()))
        else:
            report("ok    %s" % rel)
    for path in markdown_files(root):
        for block in blocks_of(path):
            if block.lang not in ("yaml", "yml"):
                if block.directive is not None:
                    failures.append("%s: a docs-check comment before a %s block, not yaml" %
                                    (block.where(root), block.lang or "plain"))
                continue
            kind, arg, files = parse_directive(block.directive)
            where = block.where(root)
            if kind == "skip":
                report("skip  %s: %s" % (where, arg))
                continue
            if kind == "snippet":
                arg, dropped = arg
                base_path = os.path.join(root, arg)
                if not os.path.isfile(base_path):
                    failures.append("%s: snippet of %s: no such survey in the tree" % (where, arg))
                    continue
                with open(base_path, encoding="utf-8") as f:
                    text = merge_snippet(f.read(), block.text, dropped)
            elif kind == "survey":
                text = block.text
            else:
                failures.append("%s: %s" % (where, kind))
                continue
            ok, message = validate(binary, root, text, files, scratch)
            if not ok:
                what = "snippet of " + arg if kind == "snippet" else "survey"
                failures.append("%s: %s: %s" % (where, what, message))
            else:
                label = " (snippet of %s)" % arg if kind == "snippet" else ""
                report("ok    %s%s%s" % (where, label, ": " + message if message else ""))
    return failures


def strip_comment(line):
    """The command without a trailing shell comment (a # after a blank, outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def commands_of(block):
    """(line offset, command) of each logical line of a shell block."""
    out, pending, first = [], "", 0
    for n, raw in enumerate(block.text.split("\n")):
        line = strip_comment(raw)
        if not pending:
            first = n
        if line.endswith("\\"):
            pending += (line[:-1].strip() if pending else line[:-1].rstrip()) + " "
            continue
        command = (pending + (line.strip() if pending else line)).strip()
        pending = ""
        if command:
            out.append((first, command))
    return out


def needs_gpu(command):
    words = command.split()
    if re.search(r"--backend[ =](cuda|hip|gpu)\b", command):
        return True
    if "bench" in words and not re.search(r"--backend[ =]cpu\b", command):
        return words.index("bench") > 0 and words[words.index("bench") - 1].endswith("minimod-gpu")
    return False


def stand_in(command, build_dir, have_gpu=True):
    """(command to run or None, note): what runs for a README command on this machine."""
    words = command.split()
    if needs_gpu(command) and not have_gpu:
        return None, "needs a GPU, and the program finds none here"
    if words[:2] == ["make", "demo"]:
        return "minimod-gpu run input/demo.yaml", "make demo runs its recipe's command"
    if words[:2] == ["make", "test"]:
        return None, "make test runs this check itself (CI runs it as its own step)"
    if words[:2] == ["make", "install"]:
        if not build_dir:
            return None, "make install: no --build-dir given"
        return ("cmake --install %s --prefix \"$HOME/.local\"" % build_dir,
                "make install into the scratch $HOME/.local")
    if "make build" in command or (" pip " in " %s " % command and
                                   ("install" in words or "wheel" in words) and
                                   words[-1] in (".", "./")) or words[:2] == ["cmake", "--build"]:
        return None, "builds the project (CI builds it once: make test, pip wheel in .ci/run)"
    if command.startswith("PYTHONPATH=build/python python3 "):
        if not build_dir:
            return None, "the module of the build: no --build-dir given"
        return ("PYTHONPATH=%s %s %s" % (os.path.join(build_dir, "python"), sys.executable,
                                         command[len("PYTHONPATH=build/python python3 "):]),
                "the module of the build, with this check's python3")
    if words[0] == "mpirun" and not shutil.which("mpirun"):
        return None, "mpirun is not installed here"
    if words[0] in ("sudo", "apt-get", "docker"):
        return None, "%s changes the machine" % words[0]
    return command, ""


def scratch_tree(root, scratch):
    """A working folder whose entries link to ROOT's (out/ and home/ its own)."""
    tree = os.path.join(scratch, "tree")
    os.makedirs(tree)
    for name in os.listdir(root):
        if name in ("out", ".git") or name.startswith("build"):
            continue
        os.symlink(os.path.join(root, name), os.path.join(tree, name))
    os.makedirs(os.path.join(scratch, "home"))
    return tree


def run_readme(binary, root, build_dir, scratch, report):
    readme = os.path.join(root, "README.md")
    if not os.path.isfile(readme):
        return []
    tree = scratch_tree(root, scratch)
    shim = os.path.join(scratch, "shim")
    os.makedirs(shim)
    os.symlink(os.path.abspath(binary), os.path.join(shim, "minimod-gpu"))
    # build/minimod-gpu as the README writes it: the built program.
    os.symlink(os.path.dirname(os.path.abspath(binary)), os.path.join(tree, "build"))
    env = dict(os.environ)
    env.update({
        "HOME": os.path.join(scratch, "home"),
        # The built program is found last, so that an installed one on PATH comes first.
        "PATH": env.get("PATH", "/usr/bin:/bin") + os.pathsep + shim,
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
    })
    # Where `validate` says run --backend auto would take the CPU, there is no GPU to run on.
    surveys = sorted(glob.glob(os.path.join(root, "input", "*.yaml")))
    have_gpu = False
    if surveys:
        probe = subprocess.run([binary, "validate", surveys[0]], capture_output=True, text=True,
                               timeout=VALIDATE_TIMEOUT_S)
        have_gpu = re.search(r"^backend\s+(cuda|hip)\b", probe.stdout, re.M) is not None
    failures, done = [], {}
    for block in blocks_of(readme):
        if block.lang not in ("sh", "bash", "shell"):
            continue
        for offset, command in commands_of(block):
            where = "README.md:%d" % (block.line + 1 + offset)
            to_run, note = stand_in(command, build_dir, have_gpu)
            if to_run is None:
                report("skip  %s: %s: %s" % (where, command, note))
                continue
            key = re.sub(r"(^|\s)build/minimod-gpu\b", r"\1minimod-gpu", to_run)
            if key in done:
                report("same  %s: %s (ran at %s)" % (where, command, done[key]))
                continue
            start = time.monotonic()
            # export lines change the environment of the commands after them.
            script = to_run + "\nstatus=$?\nenv -0 > \"$MINIMOD_DOCS_ENV\"\nexit $status\n"
            env_file = os.path.join(scratch, "env")
            env["MINIMOD_DOCS_ENV"] = env_file
            try:
                p = subprocess.run(["bash", "-c", script], cwd=tree, env=env, text=True,
                                   capture_output=True, timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                failures.append("%s: %s: more than %d s" % (where, command, COMMAND_TIMEOUT_S))
                continue
            seconds = time.monotonic() - start
            if p.returncode != 0:
                tail = (p.stdout + p.stderr).strip()[-800:]
                failures.append("%s: %s: exit %d%s\n%s" % (where, command, p.returncode,
                                                            " (ran: %s)" % to_run
                                                            if to_run != command else "", tail))
                continue
            if os.path.isfile(env_file):
                with open(env_file, encoding="utf-8", errors="replace") as f:
                    pairs = [e.partition("=") for e in f.read().split("\0") if "=" in e]
                env = {k: v for k, _, v in pairs}
            done[key] = where
            report("ok    %s: %s (%.1f s%s)" % (where, command, seconds,
                                                "; " + note if note else ""))
    return failures


def check_inline_options(binary, root, report):
    """Each `minimod-gpu SUB --opt ...` of README.md's text names options SUB takes."""
    readme = os.path.join(root, "README.md")
    if not os.path.isfile(readme):
        return []
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    listed = p.stdout.split("Subcommands:", 1)[-1]
    subcommands = set(re.findall(r"^\s+([a-z]+)\s", listed, re.M))
    helps, failures, fenced, checked = {}, [], False, 0
    for sub in subcommands:
        p = subprocess.run([binary, sub, "--help"], capture_output=True, text=True, timeout=30)
        helps[sub] = p.stdout if p.returncode == 0 else None
    # Inline code that starts with an option (`--backend cpu`) names one some subcommand takes.
    any_option = set(OPTION.findall(" ".join(h for h in helps.values() if h)))
    for number, line in enumerate(lines, 1):
        if re.match(r"^\s*```", line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for code in INLINE_CODE.findall(line):
            words = code.split()
            if not words or words[0] not in ("minimod-gpu", "build/minimod-gpu"):
                if not words or not words[0].startswith("--"):
                    continue  # another program's command, or no option at all
                for option in OPTION.findall(code):
                    if option not in any_option:
                        failures.append("README.md:%d: `%s`: no subcommand takes %s" %
                                        (number, code, option))
                continue
            sub = next((w for w in words[1:] if not w.startswith("-")), None)
            if sub is None or not re.match(r"^[a-z]+$", sub):
                continue
            if sub not in subcommands:
                failures.append("README.md:%d: `%s`: no subcommand %s (there are %s)" %
                                (number, code, sub, ", ".join(sorted(subcommands))))
                continue
            if helps[sub] is None:
                failures.append("README.md:%d: `%s`: no subcommand %s" % (number, code, sub))
                continue
            known = set(OPTION.findall(helps[sub])) | {"--help"}
            for option in OPTION.findall(code):
                if option not in known:
                    failures.append("README.md:%d: `%s`: %s is not an option of %s" %
                                    (number, code, option, sub))
            checked += 1
    if not failures:
        report("ok    README.md: %d inline minimod-gpu commands, their subcommands and options" %
               checked)
    return failures


def check(binary, root, build_dir=None, report=print):
    scratch = tempfile.mkdtemp(prefix="check_docs.")
    try:
        failures = check_surveys(binary, root, scratch, report)
        failures += check_inline_options(binary, root, report)
        failures += run_readme(binary, root, build_dir, scratch, report)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return failures


SELF_TEST_SURVEY = """grid: {shape: [20, 20, 20], spacing: 10}
model: {type: constant, velocity: 2000}
time: {steps: 5}
boundary: {width: 4}
sources:
  - position: [100, 100, 100]
    wavelet: {type: ricker, frequency: 10}
"""


def self_test(binary):
    """Each case: a tree with one thing broken, and the failure the checker must name."""
    good_doc = ("# Doc\n\n```yaml\n" + SELF_TEST_SURVEY + "```\n\n"
                "<!-- docs-check: snippet of input/small.yaml -->\n```yaml\n"
                "time: {steps: 3}\n```\n\n"
                "<!-- docs-check: skip: a fragment -->\n```yaml\nnot: a survey\n```\n\n"
                "<!-- docs-check: with w.txt = data/w.txt -->\n```yaml\n" +
                SELF_TEST_SURVEY.replace("{type: ricker, frequency: 10}",
                                         "{type: file, file: w.txt, dt: 0.001}") + "```\n")
    good_readme = ("# R\n\nUse `minimod-gpu validate survey.yaml --steps N`.\n"
                   "`--backend cpu`: the CPU.\n\n```sh\n"
                   "minimod-gpu validate input/small.yaml   # a comment\n"
                   "export MINIMOD_DOCS_TEST=1\n"
                   "test \"$MINIMOD_DOCS_TEST\" = 1 && minimod-gpu \\\n  kernels\n"
                   "build/minimod-gpu validate input/small.yaml\n"
                   "make test\n```\n")
    base = {
        "README.md": good_readme,
        "docs/doc.md": good_doc,
        "input/small.yaml": SELF_TEST_SURVEY,
        "data/w.txt": "0\n1\n0\n-1\n0\n",
    }
    broken = {
        "a misspelt key in a survey block": (
            "docs/doc.md", good_doc.replace("grid: {shape", "grdi: {shape", 1),
            "docs/doc.md:3: survey: validate exit 2"),
        "a snippet with a bad value": (
            "docs/doc.md", good_doc.replace("time: {steps: 3}", "time: {steps: -3}"),
            "docs/doc.md:14: snippet of input/small.yaml: validate exit 2"),
        "a snippet of a survey not in the tree": (
            "docs/doc.md", good_doc.replace("snippet of input/small.yaml",
                                            "snippet of input/none.yaml"),
            "docs/doc.md:14: snippet of input/none.yaml: no such survey"),
        "an unknown docs-check word": (
            "docs/doc.md", good_doc.replace("skip: a fragment", "skp: a fragment"),
            "docs/doc.md:19: unknown docs-check"),
        "a file the block needs left out": (
            "docs/doc.md", good_doc.replace("w.txt = data/w.txt", "w.txt = data/gone.txt"),
            "file data/gone.txt for w.txt is not in the tree"),
        "a broken survey in input/": (
            "input/other.yaml", SELF_TEST_SURVEY.replace("velocity: 2000", "velocity: -1"),
            "input/other.yaml: validate exit 2"),
        "a README command that fails": (
            "README.md", good_readme.replace("build/minimod-gpu validate input/small.yaml",
                                             "minimod-gpu validate input/missing.yaml"),
            "README.md:11: minimod-gpu validate input/missing.yaml: exit 2"),
        "a README command continued over lines that fails": (
            "README.md", good_readme.replace("  kernels", "  kernelz"),
            "README.md:9: test \"$MINIMOD_DOCS_TEST\" = 1 && minimod-gpu kernelz: exit"),
        "an option the program does not take": (
            "README.md", good_readme.replace("--steps N", "--stepz N"),
            "README.md:3: `minimod-gpu validate survey.yaml --stepz N`: --stepz is not an option"),
        "an option no subcommand takes": (
            "README.md", good_readme.replace("`--backend cpu`", "`--backnd cpu`"),
            "README.md:4: `--backnd cpu`: no subcommand takes --backnd"),
        "a subcommand the program does not have": (
            "README.md", good_readme.replace("minimod-gpu validate survey.yaml",
                                             "minimod-gpu validat survey.yaml"),
            "no subcommand validat"),
    }
    problems = []

    def run_case(files):
        with tempfile.TemporaryDirectory() as root:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
                with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            lines = []
            return check(binary, root, None, lines.append), lines

    failures, lines = run_case(base)
    if failures:
        problems.append("the good tree failed: %s" % failures)
    for expected in ("skip  docs/doc.md:19: a fragment", "same  README.md:11",
                     "skip  README.md:12: make test"):
        if not any(l.startswith(expected) for l in lines):
            problems.append("the good tree's report lacks %r: %s" % (expected, lines))
    for name, (rel, text, expected) in broken.items():
        files = dict(base)
        files[rel] = text
        failures, _ = run_case(files)
        if len(failures) != 1 or expected not in failures[0]:
            problems.append("%s: expected one failure with %r, got %s" % (name, expected, failures))
    for command, gpu in (("minimod-gpu bench", True), ("minimod-gpu bench --backend cpu", False),
                         ("minimod-gpu run s.yaml --backend hip", True), ("make bench", False),
                         ("minimod-gpu run input/demo.yaml", False)):
        if needs_gpu(command) != gpu:
            problems.append("needs_gpu(%r) is not %s" % (command, gpu))
    merged = merge_snippet("a: 1\nb:\n  c: 2\n# x\nd: 3\nf: 6\n", "b: {c: 4}\ne: 5\n", ["f"])
    if merged != "a: 1\nb: {c: 4}\nd: 3\ne: 5\n\n":
        problems.append("merge_snippet gave %r" % merged)
    for problem in problems:
        print("self-test: " + problem)
    print("self-test: %s (%d broken trees)" % ("FAILED" if problems else "ok", len(broken)))
    return 1 if problems else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        return self_test(os.path.abspath(argv[2]))
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--build-dir"):
        print(__doc__)
        return 2
    binary, root = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    build_dir = os.path.abspath(argv[4]) if len(argv) == 5 else None
    failures = check(binary, root, build_dir)
    for failure in failures:
        print("FAIL  " + failure)
    print("check_docs: %s" % ("%d failure(s)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
