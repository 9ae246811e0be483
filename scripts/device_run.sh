#!/usr/bin/env bash
# The one script to run on the GPU machine (Ubuntu 24.04, CUDA 13, sm_90, 16 cores; nothing can be
# installed there). From the repository root:
#
#   bash scripts/device_run.sh                          # build, test, demo, bench
#   STAGES="build test" bash scripts/device_run.sh      # a subset, in the order given
#   BENCH_ARGS="--kernel smem_3d_32x4x4 --size 512" bash scripts/device_run.sh
#
# Stages: build (configure + compile build-gpu with -Werror), test (ctest, GPU tests included),
# demo (input/demo.yaml on the CUDA backend), bench (only when the bench subcommand exists).
# Results go to $OUT when set (ctest.log, demo_summary.json, bench.json, stages.txt), else to
# out/device-run. A failed stage does not stop the later ones, except that nothing runs without
# a build; the exit status is non-zero when any stage failed.
#
# Environment: STAGES, BUILD_DIR (build-gpu), CUDA_ARCHITECTURES (90), JOBS (16), CMAKE_ARGS,
# BENCH_ARGS (split on spaces).
# shellcheck disable=SC2317 # the stage_* functions are called indirectly, by name
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

STAGES=${STAGES:-"build test demo bench"}
BUILD_DIR=${BUILD_DIR:-build-gpu}
CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-90}
JOBS=${JOBS:-16}
CMAKE_ARGS=${CMAKE_ARGS:-}
BENCH_ARGS=${BENCH_ARGS:-}
RESULTS=${OUT:-out/device-run}
BINARY="$BUILD_DIR/minimod-gpu"

mkdir -p "$RESULTS"

stage_build() {
  local -a extra=()
  read -r -a extra <<<"$CMAKE_ARGS"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES" \
    -DCMAKE_BUILD_TYPE=Release -DMINIMOD_WERROR=ON ${extra[@]+"${extra[@]}"}
  cmake --build "$BUILD_DIR" -j"$JOBS"
}

# Four tests at a time, four OpenMP threads each: the CPU references of the GPU tests with 16
# spinning threads in each of four processes made every test 25 times slower (35 s against 1.4 s).
stage_test() {
  local -a run=(env OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}" OMP_WAIT_POLICY=passive
    ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j4)
  if [ -n "${OUT:-}" ]; then
    "${run[@]}" 2>&1 | tee "$OUT/ctest.log"
  else
    "${run[@]}"
  fi
}

stage_demo() {
  "$BINARY" run input/demo.yaml --backend cuda --summary "$RESULTS/demo_summary.json"
}

stage_bench() {
  local -a args=()
  read -r -a args <<<"$BENCH_ARGS"
  "$BINARY" bench ${args[@]+"${args[@]}"} --json "$RESULTS/bench.json"
}

declare -a names=() statuses=() times=()
build_ok=1

for stage in $STAGES; do
  if ! declare -F "stage_$stage" >/dev/null; then
    echo "unknown stage '$stage' (known: build test demo bench)" >&2
    names+=("$stage") statuses+=("FAILED") times+=("-")
    continue
  fi
  skip_reason=""
  if [ "$stage" != build ] && { [ "$build_ok" -eq 0 ] || [ ! -x "$BINARY" ]; }; then
    skip_reason="no usable build in $BUILD_DIR"
  elif [ "$stage" = bench ] && ! "$BINARY" bench --help >/dev/null 2>&1; then
    skip_reason="'$BINARY bench' does not exist yet"
  fi
  if [ -n "$skip_reason" ]; then
    echo
    echo "== $stage: skipped, $skip_reason"
    names+=("$stage") statuses+=("skipped") times+=("-")
    continue
  fi

  echo
  echo "== $stage: $(date '+%H:%M:%S')"
  start=$(date +%s.%N)
  # A subshell outside any `if`, so that set -e inside it stops the stage at its first failure.
  set +e
  (
    set -euo pipefail
    "stage_$stage"
  )
  rc=$?
  set -e
  seconds=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

  status=ok
  if [ "$rc" -ne 0 ]; then status=FAILED; fi
  if [ "$stage" = build ] && [ "$rc" -ne 0 ]; then build_ok=0; fi
  echo "== $stage: $status (exit $rc) in $seconds s"
  names+=("$stage") statuses+=("$status") times+=("$seconds s")
done

echo
{
  printf '%-8s %-8s %s\n' stage status time
  for i in "${!names[@]}"; do
    printf '%-8s %-8s %s\n' "${names[$i]}" "${statuses[$i]}" "${times[$i]}"
  done
} | tee "$RESULTS/stages.txt"

for status in ${statuses[@]+"${statuses[@]}"}; do
  if [ "$status" = FAILED ]; then exit 1; fi
done
exit 0
