#!/usr/bin/env bash
# The temporally blocked family tb2_25d on the GPU machine, in one call: build only the GPU test
# binary, run the family's correctness tests (every variant against the CPU reference), then the
# timing of every variant on the seeds' grid with the memory floor and the single-pass default
# pair measured in the same process. From the repository root:
#
#   bash scripts/device_tblock.sh
#   TBLOCK_GRID=512 bash scripts/device_tblock.sh      # a smaller grid for the timing
#
# Results go to $OUT when set, else to out/device-tblock: build.log, tests.log, timing.log,
# tblock.json. The exit status is non-zero
# when the build, the tests or the timing failed; the timing runs even when a test failed.
#
# Environment: BUILD_DIR (build-gpu), JOBS (16), TBLOCK_GRID (1000); MINIMOD_TBLOCK_ONLY=TEXT (time
# only the variants whose name holds TEXT) and MINIMOD_TBLOCK_LAYER=W (layers of W points, 0 for
# none; the seeds' 27 by default) pass through to the timing.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-16}
GRID=${TBLOCK_GRID:-1000}
RESULTS=${OUT:-out/device-tblock}
mkdir -p "$RESULTS"
status=0

start=$(date +%s)
if ! {
  cmake -S . -B "$BUILD_DIR" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
    -DMINIMOD_SEGYIO=OFF &&
    cmake --build "$BUILD_DIR" -j"$JOBS" --target minimod_gpu_tests
} >"$RESULTS/build.log" 2>&1; then
  tail -n 40 "$RESULTS/build.log"
  echo "device_tblock: the build failed (log: $RESULTS/build.log)" >&2
  exit 1
fi
echo "build: $(($(date +%s) - start)) s"

start=$(date +%s)
OMP_NUM_THREADS=16 "$BUILD_DIR/tests/minimod_gpu_tests" --gtest_filter='Tiles/TblockVsCpu.*' \
  >"$RESULTS/tests.log" 2>&1 || status=1
tail -n 15 "$RESULTS/tests.log"
echo "tests: $(($(date +%s) - start)) s"

start=$(date +%s)
MINIMOD_TBLOCK_BENCH="$GRID" MINIMOD_TBLOCK_BENCH_JSON="$RESULTS/tblock.json" \
  "$BUILD_DIR/tests/minimod_gpu_tests" --gtest_filter='TblockTiming.*' \
  >"$RESULTS/timing.log" 2>&1 || status=1
cat "$RESULTS/timing.log"
echo "timing: $(($(date +%s) - start)) s"
exit "$status"
