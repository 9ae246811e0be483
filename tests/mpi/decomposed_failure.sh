#!/bin/sh
# A decomposed run that loses a shot, and one that is killed, resume to the one-process output.
# - 4 ranks, 2 a shot: rank 1 of the group modelling shot 1 fails at step 10
#   (MINIMOD_FAULT_INJECT). Shot 1 fails, named with the rank; the other group carries on and
#   shots 0, 2 and 3 are complete in OUT.parts; --resume models shot 1 alone and the output
#   equals the one-process run's (h5diff).
# - A run on 2 ranks given SIGTERM (to mpirun) once its first shot is complete: the ranks stop,
#   the complete shots are kept, and --resume finishes it, with the one-process output.
# - An input error that every rank meets is printed once, by rank 0.
# Usage: decomposed_failure.sh MINIMOD_BINARY SOURCE_DIR WORK_DIR. Exit 77 (skip) without mpirun
# or h5diff.
set -u
bin=$1 src=$2 work=$3
. "$src/tests/mpi/mpi_common.sh"

acoustic=$src/input/decomposed.yaml
common="--backend cpu --steps 60"
"$bin" run "$acoustic" $common -q --decompose 1x1x1 -o one.h5 || fail "one-process run"

# One rank of one group fails.
injected_failure 4 rank=1,shot=1,step=10 \
  "shot 1 failed on ranks [0-9]-[0-9]: rank [0-9]: injected failure \(MINIMOD_FAULT_INJECT\): shot 1, step 10, rank 1 of the shot" \
  /shots /snapshots

# The run killed (SIGTERM to mpirun) once a shot is complete.
# mpirun itself (not a subshell) gets the signal, and passes it on to the ranks. One group of 2
# ranks models the shots one after another: the signal comes with 3 shots still to go. The shots
# are 25 times longer than above (about 1 s each on 2 cores), so that the signal lands inside the
# run on a fast machine too, and on one loaded by other tests (600 steps left a window of about
# 1 s, which a CI run under load once missed: the run ended first).
long="--backend cpu --steps 1500"
"$bin" run "$acoustic" $long -q --decompose 1x1x1 -o one_long.h5 || fail "one-process long run"
"$mpirun" --oversubscribe -np 2 -x OMP_NUM_THREADS=1 "$bin" run "$acoustic" $long -q \
  -o killed.h5 >killed.out 2>killed.err &
pid=$!
waited=0
until ls killed.h5.parts/shot-*.h5 >/dev/null 2>&1 || [ $waited -ge 600 ]; do
  sleep 0.1
  waited=$((waited + 1))
done
kill -TERM $pid
wait $pid
code=$?
[ $code -ne 0 ] || fail "SIGTERM: mpirun exited 0 (the run finished before the signal?)"
[ ! -f killed.h5 ] || fail "SIGTERM: an output was assembled (exit $code): $(cat killed.err)"
grep -q "interrupted by SIGTERM" killed.err || fail "SIGTERM: no rank reports it: $(cat killed.err)"
[ -f killed.h5.parts/shot-0000.h5 ] || fail "SIGTERM: shot 0 not kept in killed.h5.parts"
mpi 2 run "$acoustic" $long -o killed.h5 --resume >resume_killed.out 2>resume_killed.err ||
  fail "resume after SIGTERM: $(cat resume_killed.err)"
grep -Eq "[1-3] skipped \(resume\)" resume_killed.out ||
  fail "resume after SIGTERM: no shot kept: $(cat resume_killed.out)"
same one_long.h5 killed.h5 /shots /snapshots

# An input error that every rank meets is printed once (by rank 0), with exit 2.
mpi 4 run "$acoustic" $common --decompose 3x1x1 -o refused.h5 >refused.out 2>refused.err
code=$?
[ $code -eq 2 ] || fail "--decompose 3x1x1 on 4 ranks: exit $code, expected 2"
[ "$(grep -c '^error: ' refused.err)" -eq 1 ] ||
  fail "--decompose 3x1x1 on 4 ranks: the error not printed once: $(cat refused.err)"

[ $failures -eq 0 ] && echo "the failed and the killed decomposed runs resume to the one-process output"
exit $((failures > 0))
