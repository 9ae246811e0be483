#!/usr/bin/env bash
# Multi-GPU scaling of the domain decomposition and of the shot farm, on a machine of several GPUs
# of one host (Open MPI; one rank a GPU, chosen by the rank on the node). From the repository root:
#
#   bash scripts/device_scaling.sh                       # build, weak, strong, farm; results in $OUT
#   STAGES="weak" GPUS="1 2" bash scripts/device_scaling.sh
#
# Stages:
#   build   configure and compile BUILD_DIR (build-gpu) with CUDA and -Werror (the program only).
#   weak    the same subgrid a GPU (WEAK_ACOUSTIC^3 acoustic, WEAK_TTI^3 TTI), the grid grown along
#           z (1x1xN): ms a step on 1, 2 and 4 GPUs, efficiency t(1)/t(N).
#   strong  the seeds' 1000^3 acoustic problem on 1, 2 and 4 GPUs (1x1xN), each split run once
#           per STRONG_MODES ("auto staged"): auto (GPU to GPU peer copies on one node), peer, mpi
#           (device buffers to a CUDA-aware MPI, else staged), staged (MINIMOD_HALO_HOST_STAGING=1);
#           speed-up and the halo exchange's share of the stepping.
#   farm    a 16-shot survey (FARM_GRID^3, FARM_STEPS steps a shot) on 1, 2 and 4 GPUs, one rank a
#           GPU and one shot a rank: shots an hour and the speed-up. FARM_KEEP (a folder) keeps
#           each run's gathers and wall time, so that the one-GPU run and the others may run in
#           separate calls (GPUS=1, then GPUS="2 4" with the same FARM_KEEP); FARM_T1 gives the
#           one-GPU wall time of an earlier run instead.
# Every split run's gathers are compared with the one-GPU run's (bit for bit: the decomposition
# reproduces one process exactly). Writes $OUT/scaling.json (else out/device-scaling/) and the
# logs beside it; exits non-zero when a run or a comparison fails.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

STAGES=${STAGES:-"build weak strong farm"}
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
RESULTS=${OUT:-out/device-scaling}
BIN="$PWD/$BUILD_DIR/minimod-gpu"
STEPS=${STEPS:-300}
WEAK_ACOUSTIC=${WEAK_ACOUSTIC:-800}
WEAK_TTI=${WEAK_TTI:-560}
STRONG=${STRONG:-1000}
STRONG_MODES=${STRONG_MODES:-"auto staged"}
FARM_GRID=${FARM_GRID:-400}
BACKEND=${BACKEND:-cuda}
FARM_STEPS=${FARM_STEPS:-1500}
available=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ -z "${GPUS:-}" ]; then
  GPUS="1"
  [ "$available" -ge 2 ] && GPUS="$GPUS 2"
  [ "$available" -ge 4 ] && GPUS="$GPUS 4"
fi
mkdir -p "$RESULTS"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink multicast stays off on these machines (the GPUs are shared).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
MPIRUN=$(command -v mpirun || command -v mpiexec)
. scripts/device_common.sh

failures=0
declare -a weak=() strong=() farm=()


# launch N SUMMARY OUTPUT [ENV=VALUE...] -- ARGS...: N ranks (N = 1: one process), one GPU each;
# ranks bound to no core (their host threads pack and copy halos).
launch() {
  local n=$1 summary=$2 output=$3
  shift 3
  local -a env=()
  while [ "$1" != "--" ]; do
    env+=("$1")
    shift
  done
  shift
  if [ "$n" -eq 1 ]; then
    env "${env[@]+"${env[@]}"}" OMP_NUM_THREADS=4 "$BIN" run "$@" --backend "$BACKEND" -q \
      -o "$output" --summary "$summary"
  else
    local -a exports=(-x OMP_NUM_THREADS=4)
    for e in "${env[@]+"${env[@]}"}"; do exports+=(-x "$e"); done
    env "${env[@]+"${env[@]}"}" "$MPIRUN" -np "$n" --bind-to none "${exports[@]}" "$BIN" run \
      "$@" --backend "$BACKEND" -q -o "$output" --summary "$summary"
  fi
}


# fields SUMMARY: ms a step (median over the shots), halo ms and stepping ms of the first shot
fields() {
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["shots"][0]
print(j["ms_per_step_median"], s.get("halo_ms", 0), s["step_ms"], s.get("halo_transport", "unknown"))
PY
}

# survey FILE PHYSICS NX NY NZ STEPS [SHOTS]: constant medium, 10 m, a 16-point layer; one source
# (or SHOTS sources in a line, one shot each) near the middle and a line of receivers across z.
survey() {
  local file=$1 physics=$2 nx=$3 ny=$4 nz=$5 steps=$6 shots=${7:-1}
  local cx=$((nx * 5)) cy=$((ny * 5)) cz=$((nz * 5))
  {
    echo "physics: $physics"
    [ "$physics" = tti ] &&
      echo "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, theta: 30, phi: 20}"
    echo "grid: {shape: [$nx, $ny, $nz], spacing: 10}"
    echo "model: {type: constant, velocity: 2000}"
    echo "time: {steps: $steps}"
    echo "boundary: {width: 16}"
    if [ "$shots" -eq 1 ]; then
      echo "sources: [{position: [$cx, $cy, $cz], wavelet: {type: ricker, frequency: 10}}]"
    else
      echo "shots:"
      echo "  wavelet: {type: ricker, frequency: 10}"
      echo "  positions:"
      echo "    lines: [{start: [$((nx * 2)), $cy, 200], end: [$((nx * 8)), $cy, 200], count: $shots}]"
    fi
    echo "receivers:"
    echo "  lines: [{start: [$cx, $cy, 200], end: [$cx, $cy, $((nz * 10 - 200))], count: 64}]"
  } >"$file"
}

# wall_parts SUMMARY SECONDS: a farm run's wall time split (JSON): outside the program (the
# launcher, MPI_Finalize, exit), the program before its shots (MPI_Init, the model; rank 0's first
# set-up is in its first shot's), the
# busiest rank's stepping, set-up and output of its shots and its waits between them, and the
# assembly of the output.
wall_parts() {
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
wall = float(sys.argv[2])
w = j["wall"]
ranks = {}
for s in j["shots"]:
    r = ranks.setdefault(s["rank"], {"stepping_s": 0.0, "shot_setup_output_s": 0.0, "waits_s": 0.0})
    r["stepping_s"] += s["step_ms"] / 1e3
    r["shot_setup_output_s"] += (s["setup_ms"] + s["output_ms"]) / 1e3
    r["waits_s"] += s["wait_ms"] / 1e3
busiest = max(ranks.values(), key=lambda r: sum(r.values()))
# Rank 0's first set-up (problem and device) is charged to its first shot's setup_ms.
first_setup_ms = j["startup"]["problem_ms"] + j["startup"]["device_setup_ms"]
parts = {"outside_program_s": wall - w["program_ms"] / 1e3,
         "before_shots_s": (w["program_ms"] - w["farm_ms"] - w["assemble_ms"] - first_setup_ms) / 1e3,
         "mpi_init_s": j["startup"]["mpi_init_ms"] / 1e3,
         **busiest,
         "assemble_s": w["assemble_ms"] / 1e3,
         "farm_s": w["farm_ms"] / 1e3}
print(json.dumps({k: round(v, 3) for k, v in parts.items()}))
PY
}

efficiency() { python3 -c "print(round($1 / $2, 4))"; }

# measured SUMMARY GPUS RATIO: a run's figures against the stage's one-GPU run (t1, set by the
# one-GPU run itself): `line` for the terminal, `record` for the JSON (RATIO names t(1)/t(N)).
measured() {
  local ms halo step transport ratio=null
  read -r ms halo step transport < <(fields "$1")
  [ "$2" -eq 1 ] && t1=$ms
  [ -n "$t1" ] && ratio=$(efficiency "$t1" "$ms")
  line="halos $transport: $ms ms a step, $3 $ratio, halo $halo ms of $step ms"
  record="\"gpus\": $2, \"steps\": $STEPS, \"halo_transport\": \"$transport\", \"ms_per_step\": $ms, \"$3\": $ratio, \"halo_ms_rank0\": $halo, \"step_ms_rank0\": $step"
}

# one_case NAME N FILE REF [ENV...]: run FILE on N GPUs (1x1xN); when REF is given (a one-GPU
# run's name), compare the gathers with its.
one_case() {
  local name=$1 n=$2 file=$3 ref=$4
  shift 4
  local summary="$RESULTS/${name}_${n}gpu.json" out="$WORK/${name}_${n}.h5"
  local -a decompose=()
  [ "$n" -gt 1 ] && decompose=(--decompose "1x1x$n")
  if ! launch "$n" "$summary" "$out" "$@" -- "$file" "${decompose[@]+"${decompose[@]}"}" \
    >"$RESULTS/${name}_${n}gpu.log" 2>&1; then
    echo "FAILED: $name on $n GPUs"
    tail -20 "$RESULTS/${name}_${n}gpu.log"
    failures=$((failures + 1))
    return 1
  fi
  if [ -n "$ref" ] && [ "$n" -gt 1 ] && ! same_group "$WORK/${ref}_1.h5" "$out" /shots; then
    echo "DIFFERS: $name on $n GPUs against one GPU"
    failures=$((failures + 1))
  fi
}

stage_weak() {
  for spec in "acoustic $WEAK_ACOUSTIC" "tti $WEAK_TTI"; do
    read -r physics n <<<"$spec"
    local t1=""
    for g in $GPUS; do
      local file="$WORK/weak_${physics}_$g.yaml"
      survey "$file" "$physics" "$n" "$n" $((n * g)) "$STEPS"
      # The grid grows with N: no one-GPU run of the same grid to compare with.
      one_case "weak_$physics" "$g" "$file" "" || continue
      measured "$RESULTS/weak_${physics}_${g}gpu.json" "$g" efficiency
      echo "weak $physics ${n}^3 a GPU, $g GPU(s): $line"
      weak+=("{\"physics\": \"$physics\", \"subgrid\": [$n, $n, $n], \"grid\": [$n, $n, $((n * g))], $record}")
    done
  done
}

stage_strong() {
  local file="$WORK/strong.yaml" t1=""
  survey "$file" acoustic "$STRONG" "$STRONG" "$STRONG" "$STEPS"
  for g in $GPUS; do
    local modes="auto"
    [ "$g" -gt 1 ] && modes=$STRONG_MODES
    for mode in $modes; do
      local name=strong
      local -a env=()
      case $mode in
      staged) env=(MINIMOD_HALO_HOST_STAGING=1) ;;
      mpi | peer) env=(MINIMOD_HALO_TRANSPORT=$mode) ;;
      esac
      [ "$mode" != auto ] && name=strong_$mode
      one_case "$name" "$g" "$file" strong "${env[@]+"${env[@]}"}" || continue
      measured "$RESULTS/${name}_${g}gpu.json" "$g" speedup
      echo "strong ${STRONG}^3, $g GPU(s): $line"
      strong+=("{\"grid\": [$STRONG, $STRONG, $STRONG], $record}")
    done
  done
}

stage_farm() {
  local file="$WORK/farm.yaml" t1="" keep=${FARM_KEEP:-$WORK}
  mkdir -p "$keep"
  survey "$file" acoustic "$FARM_GRID" "$FARM_GRID" "$FARM_GRID" "$FARM_STEPS" 16
  # A one-GPU run of the same survey kept by an earlier call (or its wall time given as FARM_T1).
  local ref=""
  if [ -f "$keep/farm_1.seconds" ] && cmp -s "$file" "$keep/farm_1.yaml"; then
    t1=$(cat "$keep/farm_1.seconds")
    ref="$keep/farm_1.h5"
  fi
  [ -n "${FARM_T1:-}" ] && t1=$FARM_T1
  for g in $GPUS; do
    local out="$keep/farm_$g.h5" start end
    rm -rf "$out" "$out.parts" "$keep/farm_$g.seconds"
    [ "$g" -eq 1 ] && ref="" # the kept one-GPU output is being replaced
    start=$(date +%s.%N)
    if ! launch "$g" "$RESULTS/farm_${g}gpu.json" "$out" -- "$file" >"$RESULTS/farm_${g}gpu.log" 2>&1; then
      echo "FAILED: farm on $g GPUs"
      tail -20 "$RESULTS/farm_${g}gpu.log"
      failures=$((failures + 1))
      continue
    fi
    end=$(date +%s.%N)
    # Against the one-GPU run, else against this call's first run.
    if [ -z "$ref" ]; then
      ref=$out
    elif ! same_group "$ref" "$out" /shots; then
      echo "DIFFERS: farm on $g GPUs against $(basename "$ref")"
      failures=$((failures + 1))
    fi
    local seconds shots_per_hour speedup=null
    seconds=$(python3 -c "print(round($end - $start, 2))")
    shots_per_hour=$(python3 -c "print(round(16 * 3600 / $seconds, 1))")
    if [ "$g" -eq 1 ]; then
      t1=$seconds
      echo "$seconds" >"$keep/farm_1.seconds"
      cp "$file" "$keep/farm_1.yaml"
    fi
    [ -n "$t1" ] && speedup=$(efficiency "$t1" "$seconds")
    local parts
    parts=$(wall_parts "$RESULTS/farm_${g}gpu.json" "$seconds")
    echo "farm 16 shots of ${FARM_GRID}^3 x $FARM_STEPS steps, $g GPU(s): $seconds s, $shots_per_hour shots an hour, speed-up $speedup"
    echo "  where the wall time went: $parts"
    farm+=("{\"shots\": 16, \"grid\": [$FARM_GRID, $FARM_GRID, $FARM_GRID], \"steps\": $FARM_STEPS, \"gpus\": $g, \"wall_s\": $seconds, \"shots_per_hour\": $shots_per_hour, \"speedup\": $speedup, \"wall_parts_s\": $parts}")
  done
}

run_stages
gpu=$(gpu_name)
nvidia-smi topo -m >"$RESULTS/topology.txt" 2>&1 || true
cuda_aware=$(ompi_info --parsable --all 2>/dev/null | grep -m1 "mpi_built_with_cuda_support:value" |
  cut -d: -f7)
cat >"$RESULTS/scaling.json" <<JSON
{
  "date": "$(date -u +%Y-%m-%d)",
  "gpu": "$gpu",
  "gpus_on_host": $available,
  "mpi": "$("$MPIRUN" --version 2>/dev/null | head -1)",
  "mpi_built_with_cuda_support": "${cuda_aware:-unknown}",
  "weak": [$(join "${weak[@]+"${weak[@]}"}")],
  "strong": [$(join "${strong[@]+"${strong[@]}"}")],
  "farm": [$(join "${farm[@]+"${farm[@]}"}")],
  "failures": $failures
}
JSON
cat "$RESULTS/scaling.json"
exit $((failures > 0))
