#!/usr/bin/env python3
"""Compare two `minimod-gpu bench --json` files, before and after a change.

Each file carries the memory floor measured in its own process (floor_ms_per_step). A kernel's
time is compared both as measured and relative to its file's floor, which takes out what moved
the whole device between the two runs (clocks, temperature, another tenant). A family is the
kernel name without its tile (`st_reg_shft_25d_32x16` -> `st_reg_shft_25d`); its change is the
median of its tiles' floor-relative changes. A family slower than the threshold fails.

  python3 scripts/bench_compare.py BEFORE.json AFTER.json [--threshold 2] [--json OUT.json]

Exit status: 0 when no family is slower by more than the threshold, 1 when one is, 2 on bad
input (unreadable file, no record in common).
"""

import argparse
import json
import re
import statistics
import sys

TILE = re.compile(r"_\d+x\d+(x\d+)?$")


def family_of(spec):
    """`gmem_3d_32x4x4` -> `gmem_3d`; a full spec (inner=...,pml=...) is its own family."""
    return spec if "=" in spec else TILE.sub("", spec)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"bench_compare: {path}: {e}")
    records = doc.get("records")
    if not isinstance(records, list):
        raise SystemExit(f"bench_compare: {path}: no 'records' list (not a bench --json file)")
    out = {}
    for r in records:
        if r.get("status") != "ok" or r.get("ms_per_step") is None:
            continue
        floor = r.get("floor_ms_per_step") or 0.0
        out[r["kernel"]] = {"ms": float(r["ms_per_step"]), "floor": float(floor),
                            "gpu": r.get("gpu", "")}
    return doc, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--threshold", type=float, default=2.0,
                    help="largest allowed slowdown of a family, percent (default 2)")
    ap.add_argument("--json", help="write the comparison here as JSON")
    a = ap.parse_args()

    doc_b, before = load(a.before)
    doc_a, after = load(a.after)
    common = [k for k in before if k in after]
    if not common:
        print("bench_compare: no kernel measured ok in both files", file=sys.stderr)
        return 2
    gpus = {v["gpu"] for v in before.values()} | {v["gpu"] for v in after.values()}
    if len(gpus) > 1:
        print(f"bench_compare: warning: the files name different GPUs: {sorted(gpus)}",
              file=sys.stderr)

    rows, families = [], {}
    for k in common:
        b, n = before[k], after[k]
        raw = 100.0 * (n["ms"] / b["ms"] - 1.0)
        rel = None
        if b["floor"] > 0 and n["floor"] > 0:
            rel = 100.0 * ((n["ms"] / n["floor"]) / (b["ms"] / b["floor"]) - 1.0)
        change = rel if rel is not None else raw
        rows.append({"kernel": k, "family": family_of(k), "before_ms": b["ms"],
                     "after_ms": n["ms"], "change_percent": raw,
                     "floor_relative_change_percent": rel})
        families.setdefault(family_of(k), []).append(change)

    print(f"before: {a.before} (commit {doc_b.get('commit', '?')}), "
          f"after: {a.after} (commit {doc_a.get('commit', '?')})")
    fb = {v["floor"] for v in before.values()}
    fa = {v["floor"] for v in after.values()}
    print(f"floor ms/step: before {', '.join(f'{x:.3f}' for x in sorted(fb))}; "
          f"after {', '.join(f'{x:.3f}' for x in sorted(fa))}")
    print(f"{'kernel':44} {'before':>9} {'after':>9} {'change':>8} {'vs floor':>9}")
    for r in rows:
        rel = r["floor_relative_change_percent"]
        print(f"{r['kernel']:44} {r['before_ms']:9.3f} {r['after_ms']:9.3f} "
              f"{r['change_percent']:+7.2f}% " + (f"{rel:+8.2f}%" if rel is not None else "      n/a"))

    fam_rows, failed = [], []
    print(f"\n{'family':32} {'tiles':>5} {'median':>8} {'worst':>8}")
    for fam in sorted(families):
        ch = families[fam]
        med, worst = statistics.median(ch), max(ch)
        fam_rows.append({"family": fam, "tiles": len(ch), "median_change_percent": med,
                         "worst_change_percent": worst})
        flag = "  SLOWER" if med > a.threshold else ""
        if med > a.threshold:
            failed.append(fam)
        print(f"{fam:32} {len(ch):5d} {med:+7.2f}% {worst:+7.2f}%{flag}")
    only_b = sorted(set(before) - set(after))
    only_a = sorted(set(after) - set(before))
    if only_b:
        print(f"\nmeasured before only: {', '.join(only_b)}")
    if only_a:
        print(f"measured after only: {', '.join(only_a)}")
    verdict = (f"FAIL: {len(failed)} families slower than {a.threshold}%: {', '.join(failed)}"
               if failed else f"ok: no family slower than {a.threshold}% (median of its tiles, "
               "relative to each run's floor)")
    print("\n" + verdict)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"before": a.before, "after": a.after, "threshold_percent": a.threshold,
                       "kernels": rows, "families": fam_rows, "only_before": only_b,
                       "only_after": only_a, "failed_families": failed}, f, indent=2)
            f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
