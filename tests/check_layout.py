#!/usr/bin/env python3
"""The include rules that keep the source layout's floors (docs/architecture.md, "Layout").

    check_layout.py ROOT          check the tree at ROOT; exit 1 and name every include that
                                  breaks a rule
    check_layout.py --self-test   build small trees, each with one include that breaks one rule
                                  (and one that keeps them all), and check that the checker tells

Rules, on the include as the compiler resolves it (a quoted name beside the including file first,
then from the repository root, where every project include is written):
  1. core/ includes nothing of the project outside core/ (the standard library and third-party
     headers are outside the project, so allowed);
  2. kernels/, models/ and io/ include nothing of solver/ or app/;
  3. kernels/gpu/ (the sources both GPU backends compile) includes nothing of kernels/cuda/ or
     kernels/hip/, except kernels/gpu/gpu_runtime.hpp, which picks the vendor's runtime mapping;
  4. kernels/cuda/ and kernels/hip/ include nothing of each other.
"""

import os
import re
import sys
import tempfile

SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
TOP_FOLDERS = ("core", "solver", "kernels", "models", "io", "app", "tests")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
# The one place where portable GPU code names a vendor: the runtime mapping.
VENDOR_MAPPING = {
    "kernels/gpu/gpu_runtime.hpp": {"kernels/cuda/runtime_cuda.hpp", "kernels/hip/runtime_hip.hpp"}
}


def resolve(root, including, name, quoted):
    """The repository path the include names, or None for a header outside the project."""
    if quoted:
        beside = os.path.normpath(os.path.join(os.path.dirname(including), name))
        if os.path.isfile(os.path.join(root, beside)):
            return beside.replace(os.sep, "/")
    path = os.path.normpath(name).replace(os.sep, "/")
    if path.split("/")[0] in TOP_FOLDERS:
        return path
    return None


def under(path, folder):
    return path == folder or path.startswith(folder + "/")


def violations(root):
    found = []
    for top in ("core", "kernels", "models", "io"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                with open(os.path.join(root, rel), encoding="utf-8") as f:
                    lines = f.read().splitlines()
                for number, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = resolve(root, rel, m.group(2), m.group(1) == '"')
                    if target is None:
                        continue
                    rule = rule_broken(rel, target)
                    if rule:
                        found.append(f"{rel}:{number}: includes {target}: {rule}")
    return found


def rule_broken(source, target):
    if under(source, "core") and not under(target, "core"):
        return "core/ is the floor and includes nothing of the project outside core/"
    if any(under(source, top) for top in ("kernels", "models", "io")):
        if under(target, "solver") or under(target, "app"):
            return "kernels/, models/ and io/ stand below solver/ and app/"
    if under(source, "kernels/gpu"):
        if under(target, "kernels/cuda") or under(target, "kernels/hip"):
            if target not in VENDOR_MAPPING.get(source, set()):
                return ("kernels/gpu/ is portable: only gpu_runtime.hpp includes a vendor's "
                        "runtime mapping")
    if under(source, "kernels/cuda") and under(target, "kernels/hip"):
        return "kernels/cuda/ includes nothing of kernels/hip/"
    if under(source, "kernels/hip") and under(target, "kernels/cuda"):
        return "kernels/hip/ includes nothing of kernels/cuda/"
    return None


def self_test():
    """Each case: files to write, and whether the tree keeps every rule."""
    base = {
        "core/grid.hpp": "#include <array>\n",
        "core/field_layout.hpp": '#include "core/grid.hpp"\n#include "grid.hpp"\n',
        "solver/plan.hpp": '#include "core/grid.hpp"\n#include "kernels/kernel.hpp"\n',
        "app/main.cpp": '#include "solver/plan.hpp"\n',
        "kernels/kernel.hpp": '#include "core/grid.hpp"\n',
        "kernels/gpu/gpu_runtime.hpp": ('#include "kernels/cuda/runtime_cuda.hpp"\n'
                                        '#include "kernels/hip/runtime_hip.hpp"\n'),
        "kernels/gpu/family.cu": '#include "kernels/gpu/gpu_runtime.hpp"\n',
        "kernels/cuda/runtime_cuda.hpp": "#include <cuda_runtime.h>\n",
        "kernels/cuda/only.cu": '#include "kernels/gpu/gpu_runtime.hpp"\n',
        "kernels/hip/runtime_hip.hpp": "#include <hip/hip_runtime.h>\n",
        "models/velocity.hpp": '#include "core/grid.hpp"\n',
        "io/survey.hpp": '#include "core/errors.hpp"\n',
    }
    bad = {
        "core up into kernels/": ("core/field_layout.hpp", '#include "kernels/kernel.hpp"\n'),
        "core up into solver/": ("core/grid.hpp", '#include "solver/plan.hpp"\n'),
        "core up, with angle brackets": ("core/grid.hpp", "#include <io/survey.hpp>\n"),
        "kernels/ into solver/": ("kernels/kernel.hpp", '#include "solver/plan.hpp"\n'),
        "kernels/gpu/ into app/": ("kernels/gpu/family.cu", '# include "app/main.cpp"\n'),
        "models/ into solver/": ("models/velocity.hpp", '#include "solver/plan.hpp"\n'),
        "io/ into app/": ("io/survey.hpp", '#include "app/main.cpp"\n'),
        "io/ into solver/, from beside": ("io/survey.hpp", '#include "../solver/plan.hpp"\n'),
        "kernels/gpu/ into kernels/cuda/": ("kernels/gpu/family.cu",
                                            '#include "kernels/cuda/runtime_cuda.hpp"\n'),
        "kernels/gpu/ into kernels/hip/": ("kernels/gpu/family.cu",
                                           '#include "kernels/hip/runtime_hip.hpp"\n'),
        "kernels/cuda/ into kernels/hip/": ("kernels/cuda/only.cu",
                                            '#include "kernels/hip/runtime_hip.hpp"\n'),
    }
    failures = []
    cases = [("the layout as meant", None)] + sorted(bad.items())
    for label, change in cases:
        with tempfile.TemporaryDirectory() as root:
            files = dict(base)
            if change:
                files[change[0]] = files[change[0]] + change[1]
            for path, text in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write(text)
            found = violations(root)
            if change is None and found:
                failures.append(f"{label}: flagged {found}")
            if change is not None and len(found) != 1:
                failures.append(f"{label}: expected one violation, found {found}")
    for line in failures:
        print("self-test:", line)
    print(f"self-test: {len(cases) - len(failures)} of {len(cases)} cases told right")
    return 1 if failures else 0


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0])
        print("usage: check_layout.py ROOT | --self-test")
        return 2
    if argv[1] == "--self-test":
        return self_test()
    root = argv[1]
    if not os.path.isdir(os.path.join(root, "core")):
        print(f"check_layout.py: {root} has no core/ folder: not the repository root")
        return 2
    found = violations(root)
    for line in found:
        print(line)
    print(f"check_layout.py: {len(found)} include(s) break the layout's rules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
