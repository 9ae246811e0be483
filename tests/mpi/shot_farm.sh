#!/bin/sh
# Shots over ranks that each model whole shots (ranks_per_shot 1), and input errors under MPI.
# - 3 ranks, --decompose 1x1x1: every rank models shots, rank 0 also hands them out (between
#   every two of its steps) and writes; the gathers and shot 0's snapshots (modelled by rank 0)
#   equal the one-process run's (h5diff); the summary says where the wall time went (MPI_Init,
#   each shot's wait on its rank, the farm, the assembly).
# - The same with shot 1 failing as its rank reaches step 10 (MINIMOD_FAULT_INJECT): shot 1 fails,
#   named with the rank; the other shots are done and kept; --resume models shot 1 alone and the
#   output equals the one-process run's.
# - Input errors: a bad survey on every rank, a survey that only rank 2 cannot read, and a bad
#   MINIMOD_FAULT_INJECT or a device memory cap are each
#   printed once (by rank 0), exit 2; the first two take well under 3 s more than mpirun and one process refusing them.
# Usage: shot_farm.sh MINIMOD_BINARY SOURCE_DIR WORK_DIR. Exit 77 (skip) without mpirun or h5diff.
set -u
bin=$1 src=$2 work=$3
. "$src/tests/mpi/mpi_common.sh"
now() { date +%s.%N; }
seconds() { echo "$1 $2" | awk '{printf "%.2f", $2 - $1}'; } # seconds START END
errors() { grep -c '^error: ' "$1"; }                         # the error lines of a stderr file

# The injected failure's step below assumes the CPU backend's default passes.
unset MINIMOD_CPU_PASS_STEPS
acoustic=$src/input/decomposed.yaml
common="--backend cpu --steps 60 --decompose 1x1x1"
"$bin" run "$acoustic" $common -q -o one.h5 || fail "one-process run"

mpi 3 run "$acoustic" $common -o farm.h5 --summary farm.json >farm.out 2>farm.err ||
  fail "3 ranks: $(cat farm.err)"
grep -q "3 ranks model shots" farm.err || fail "3 ranks: no workers named: $(cat farm.err)"
[ "$(grep -Ec 'shot [0-3] done on rank [012] ' farm.err)" -eq 4 ] ||
  fail "3 ranks: not every shot done: $(cat farm.err)"
grep -q "shot 0 done on rank 0 " farm.err || fail "3 ranks: shot 0 not modelled by rank 0: $(cat farm.err)"
same one.h5 farm.h5 /shots
same one.h5 farm.h5 /snapshots
python3 - farm.json <<'PY' || fail "3 ranks: the summary's wall-time split"
import json, sys
j = json.load(open(sys.argv[1]))
w, shots = j["wall"], j["shots"]
assert j["startup"]["mpi_init_ms"] > 0, "MPI_Init not timed"
assert w["farm_ms"] > 0 and w["assemble_ms"] > 0, w
assert w["program_ms"] >= w["farm_ms"] + w["assemble_ms"], w
assert sorted(s["shot"] for s in shots) == [0, 1, 2, 3], shots
# Each rank other than 0 asked rank 0 for each of its shots and waited for the answer.
assert all(s["wait_ms"] >= 0 for s in shots), shots
assert all(s["wait_ms"] > 0 for s in shots if s["rank"] != 0), shots
PY

# One rank fails one shot; the others go on. The failure comes at the first progress call at or
# after step 10: the CPU backend's passes of up to 4 steps end at step 12.
injected_failure 3 rank=0,shot=1,step=10 \
  "shot 1 failed on rank [012]: injected failure \(MINIMOD_FAULT_INJECT\): shot 1, step 1[0-3], rank 0 of the shot" \
  /shots

# mpirun's own start and end of a job that fails, taken out of the times below: the slowest of
# three. Open MPI's end of a failed job moves in steps of about 1 s (1.1 or 2.1 s here, more on a
# loaded machine), so one sample can be a step short of the run it is compared with.
mpirun_s=0
mpirun_all=""
for _ in 1 2 3; do
  t0=$(now)
  "$mpirun" --oversubscribe -np 3 sh -c 'exit 2' >/dev/null 2>&1
  t1=$(now)
  sample=$(seconds "$t0" "$t1")
  mpirun_all="$mpirun_all $sample"
  mpirun_s=$(echo "$mpirun_s $sample" | awk '{print ($2 > $1) ? $2 : $1}')
done
# The time of the run on 3 ranks that wrote ERRFILE, begun at START, less mpirun's: well under 3 s
# more than one process refusing the same (ONE_S).
quick() { # quick WHAT START ERRFILE ONE_S
  three_s=$(seconds "$2" "$(now)")
  echo "$1: refused in $three_s s by 3 ranks, $4 s by one process (mpirun alone:$mpirun_all s)"
  awk "BEGIN { exit !($three_s - $mpirun_s - $4 < 2) }" ||
    fail "$1: $three_s s on 3 ranks, not well under 3 s more than mpirun and one process"
}

# A bad survey: every rank refuses it; rank 0 alone prints the error, every rank exits with 2.
sed 's/shape: \[72, 60, 56\]/shape: [72, 60, 0]/' "$acoustic" >bad.yaml
grep -q "shape: \[72, 60, 0\]" bad.yaml || fail "no bad survey"
t0=$(now)
"$bin" run bad.yaml $common -q -o bad_one.h5 2>bad_one.err
code=$?
one_s=$(seconds "$t0" "$(now)")
[ $code -eq 2 ] || fail "bad survey, one process: exit $code, expected 2"
t0=$(now)
mpi 3 run bad.yaml $common -o bad.h5 >bad.out 2>bad.err
code=$?
quick "bad survey" "$t0" bad.err "$one_s"
[ $code -eq 2 ] || fail "bad survey, 3 ranks: exit $code, expected 2"
[ "$(errors bad.err)" -eq 1 ] || fail "bad survey, 3 ranks: the error not printed once: $(cat bad.err)"
grep -qF "$(cat bad_one.err)" bad.err || fail "bad survey, 3 ranks: not one process's error: $(cat bad.err)"

# A survey that only rank 2 cannot read (its host, say): rank 0 prints rank 2's error.
t0=$(now)
"$bin" run missing.yaml $common -q -o missing_one.h5 2>/dev/null
one_s=$(seconds "$t0" "$(now)")
t0=$(now)
"$mpirun" --oversubscribe -np 3 -x OMP_NUM_THREADS=1 sh -c \
  'rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}; survey=$1; [ "$rank" = 2 ] && survey=missing.yaml
   shift; exec "$0" run "$survey" "$@"' "$bin" "$acoustic" $common -o missing.h5 \
  >missing.out 2>missing.err
code=$?
quick "survey missing on rank 2" "$t0" missing.err "$one_s"
[ $code -eq 2 ] || fail "survey missing on rank 2: exit $code, expected 2"
[ "$(errors missing.err)" -eq 1 ] && grep -q "^error: missing.yaml: cannot read" missing.err ||
  fail "survey missing on rank 2: not printed once: $(cat missing.err)"

# A bad MINIMOD_FAULT_INJECT: every rank refuses it, rank 0 alone prints it.
(
  export MINIMOD_FAULT_INJECT=rank=0
  mpi_env MINIMOD_FAULT_INJECT 3 run "$acoustic" $common -o badfault.h5 >badfault.out \
    2>badfault.err
)
code=$?
[ $code -eq 2 ] || fail "bad MINIMOD_FAULT_INJECT: exit $code, expected 2"
[ "$(errors badfault.err)" -eq 1 ] && grep -q "^error: MINIMOD_FAULT_INJECT='rank=0'" badfault.err ||
  fail "bad MINIMOD_FAULT_INJECT: not printed once: $(cat badfault.err)"

# A device memory cap that the ranks' problem exceeds: an input error that stops the run, not a
# failure of each shot.
mpi 3 run "$acoustic" $common --max-device-memory 1MB -o cap.h5 >cap.out 2>cap.err
code=$?
[ $code -eq 2 ] || fail "device memory cap: exit $code, expected 2"
[ "$(errors cap.err)" -eq 1 ] && grep -q "^error: --max-device-memory: .* needs .* of device memory" cap.err ||
  fail "device memory cap: not printed once: $(cat cap.err)"
! grep -q "failed" cap.err || fail "device memory cap: shots failed instead: $(cat cap.err)"

[ $failures -eq 0 ] && echo "shots over single ranks equal the one-process run; input errors are printed once"
exit $((failures > 0))
