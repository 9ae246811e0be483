#!/usr/bin/env bash
# The portability layer against the tree before it, on the NVIDIA GPU machine, in one call: build
# this tree and the earlier one (side by side), run this tree's GPU tests (every portable family
# compiled through kernels/gpu/gpu_runtime.hpp by nvcc, against the CPU reference), then
# `bench --kernel all` of both binaries, acoustic and TTI, each with its own memory floor, and
# compare them family by family (scripts/bench_compare.py: none may be more than 2 % slower).
#
# The earlier tree comes from BEFORE_TAR, a `git archive` of it made where the repository is
# (the file is git-ignored: name it in the device call's carry):
#
#   git archive -o portability-before.tar 5e37550     # on the build machine, in the repo root
#   bash scripts/device_portability.sh                 # on the GPU machine, in the repo root
#
# PHASES picks the steps (default all four: build tests acoustic tti). The builds stay in
# build-before/ and build-portability/, so on a machine kept warm between calls the steps can be
# split over calls that each fit the time limit, e.g. PHASES="build tests", then "acoustic", then
# "tti" (about 4, 1, 6 and 3 minutes on one H100 at the default sizes).
#
# Results go to $OUT when set, else to out/device-portability: build-*.log, tests.log,
# bench-{before,after}-{acoustic,tti}.json and .log, compare-{acoustic,tti}.txt and .json.
# The exit status is non-zero when a build, a test or a comparison failed; each step runs even
# when an earlier one failed, so that one call shows everything.
#
# Environment: PHASES, BEFORE_TAR (portability-before.tar), JOBS (16), GRID (acoustic N^3, 1000),
# TTI_GRID (N^3, 900), STEPS (50), TTI_STEPS (20), TEST_FILTER (gtest filter, '*').
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

PHASES=${PHASES:-build tests acoustic tti}
BEFORE_TAR=${BEFORE_TAR:-portability-before.tar}
JOBS=${JOBS:-16}
GRID=${GRID:-1000}
TTI_GRID=${TTI_GRID:-900}
STEPS=${STEPS:-50}
TTI_STEPS=${TTI_STEPS:-20}
TEST_FILTER=${TEST_FILTER:-*}
RESULTS=${OUT:-out/device-portability}
mkdir -p "$RESULTS"
status=0
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*"; }

has_phase() { [[ " $PHASES " == *" $1 "* ]]; }
BEFORE_SRC=build-before/src
BEFORE_BIN=build-before/build/minimod-gpu
AFTER_BIN=build-portability/minimod-gpu

# The two builds share the cores: half each, in parallel; the earlier tree builds its program only.
half=$(((JOBS + 1) / 2))
configure_and_build() { # SRC BUILD COMMIT TARGETS...
  local src=$1 build=$2 commit=$3
  shift 3
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DMINIMOD_CUDA=ON -DMINIMOD_HIP=OFF -DMINIMOD_SEGYIO=OFF -DMINIMOD_GIT_COMMIT="$commit" &&
    cmake --build "$build" -j"$half" --target "$@"
}
if has_phase build; then
  if [ ! -f "$BEFORE_TAR" ]; then
    echo "device_portability: $BEFORE_TAR not found: make it with 'git archive -o $BEFORE_TAR <commit>'" >&2
    exit 2
  fi
  rm -rf build-before && mkdir -p "$BEFORE_SRC" && tar -xf "$BEFORE_TAR" -C "$BEFORE_SRC" || exit 2
  stamp "building both trees"
  configure_and_build "$BEFORE_SRC" build-before/build before minimod-gpu \
    >"$RESULTS/build-before.log" 2>&1 &
  pid_before=$!
  configure_and_build . build-portability after minimod-gpu minimod_gpu_tests \
    >"$RESULTS/build-after.log" 2>&1 &
  pid_after=$!
  wait "$pid_before" || { tail -n 30 "$RESULTS/build-before.log"; echo "build of the earlier tree failed" >&2; status=1; }
  wait "$pid_after" || { tail -n 30 "$RESULTS/build-after.log"; echo "build of this tree failed" >&2; exit 1; }
  stamp "built"
fi

if has_phase tests; then
  stamp "GPU tests ($TEST_FILTER)"
  OMP_NUM_THREADS=$JOBS build-portability/tests/minimod_gpu_tests --gtest_filter="$TEST_FILTER" \
    >"$RESULTS/tests.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$RESULTS/tests.log" | tail -n 20
  grep -E "^\[  FAILED  \]" "$RESULTS/tests.log" | head -n 20
  stamp "tests done"
fi

# Before and after alternate, so that drift of the device falls on both alike.
bench() { # NAME BIN ARGS...
  local name=$1 bin=$2
  shift 2
  "$bin" bench --json "$RESULTS/bench-$name.json" "$@" >"$RESULTS/bench-$name.log" 2>&1 || {
    tail -n 5 "$RESULTS/bench-$name.log"
    echo "bench $name failed" >&2
    status=1
  }
}
for phys in acoustic tti; do
  has_phase "$phys" || continue
  if [ ! -x "$BEFORE_BIN" ] || [ ! -x "$AFTER_BIN" ]; then
    echo "device_portability: $phys: build first (PHASES=build)" >&2
    status=1
    continue
  fi
  {
    if [ "$phys" = acoustic ]; then
      args=(--kernel all --grid "$GRID" --steps "$STEPS")
    else
      args=(--physics tti --kernel all --grid "$TTI_GRID" --steps "$TTI_STEPS")
    fi
    stamp "bench $phys: before"
    bench "before-$phys" "$BEFORE_BIN" "${args[@]}"
    stamp "bench $phys: after"
    bench "after-$phys" "$AFTER_BIN" "${args[@]}"
    python3 scripts/bench_compare.py "$RESULTS/bench-before-$phys.json" \
      "$RESULTS/bench-after-$phys.json" --json "$RESULTS/compare-$phys.json" \
      >"$RESULTS/compare-$phys.txt" 2>&1 || status=1
    cat "$RESULTS/compare-$phys.txt"
  }
done
stamp "done, status $status"
exit "$status"
