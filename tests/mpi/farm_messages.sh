#!/bin/sh
# What a run over MPI ranks says, and how it stops on a signal.
# - The plan's warnings (receivers inside the absorbing layer and near the free surface) are
#   printed once, by rank 0, the same lines as one process prints.
# - The start says what runs the shots (CPU ranks here, no GPU); the progress lines carry the
#   shot number, the shots done and the survey's time left.
# - SIGINT to mpirun (Ctrl-C): Open MPI sends SIGTERM to every rank; rank 0 keeps the complete
#   shots and prints the resume command, no rank calls MPI_Abort (no abort banner), and --resume
#   gives the one-process output. mpirun itself then ends with 1, whatever its ranks return.
# - SIGINT to every rank (a batch system signalling the job's processes): each rank ends with 130,
#   and so does mpirun, with the same kept shots and resume command.
# - output.snapshots.shots: the snapshots of the shots named, modelled by rank 0, equal one
#   process's; --shots without any of them says so once; a --shots past the last is refused once.
# Usage: farm_messages.sh MINIMOD_BINARY SOURCE_DIR WORK_DIR. Exit 77 (skip) without mpirun or
# h5diff.
set -u
bin=$1 src=$2 work=$3
. "$src/tests/mpi/mpi_common.sh"

# Six small shots; the receiver line starts inside the absorbing layer, one grid point below the
# free surface.
cat >farm.yaml <<'EOF'
name: farm
grid: {shape: [40, 32, 32], spacing: 10}
model: {type: constant, velocity: 1500}
time: {duration: 0.2}
boundary: {width: 6, free_surface: true}
shots:
  wavelet: {type: ricker, frequency: 15}
  positions:
    points: [[150, 150, 100], [180, 150, 100], [210, 150, 100], [240, 150, 100],
             [150, 180, 120], [210, 180, 120]]
receivers:
  lines:
    - {start: [20, 150, 10], end: [380, 150, 10], count: 37}
output: {file: farm.h5}
EOF
short="--backend cpu --steps 40"
py=$(command -v /usr/bin/python3 || command -v python3)

"$bin" run farm.yaml $short -o one.h5 >one.out 2>one.err || fail "one process: $(cat one.err)"
grep '^warning: ' one.err | sort >one.warnings
[ "$(wc -l <one.warnings)" -ge 2 ] || fail "one process: the plan's warnings are missing: $(cat one.err)"
grep -q "absorbing layer" one.warnings || fail "one process: no warning of the layer: $(cat one.err)"
grep -q "free surface" one.warnings || fail "one process: no warning of the free surface: $(cat one.err)"

mpi 2 run farm.yaml $short -o two.h5 >two.out 2>two.err || fail "2 ranks: $(cat two.err)"
grep '^warning: ' two.err | sort >two.warnings
cmp -s one.warnings two.warnings ||
  fail "2 ranks: the warnings are not one process's, once each: $(cat two.err)"
same one.h5 two.h5 /shots
grep -q "^MPI: 2 ranks model shots (on the CPU: 2 CPU ranks, no GPU); " two.err ||
  fail "2 ranks: the start does not say what runs the shots: $(cat two.err)"
! grep -q GPUs two.err || fail "2 ranks: GPUs named on a CPU run: $(cat two.err)"
# Log-style progress lines (stderr is no terminal): the shot, shots done of six, the survey's eta.
grep -Eq "step 40/40 \(100%\) elapsed .*, shot [0-5], [0-5]/6 done, survey eta " two.err ||
  fail "2 ranks: no progress line with the shot and the survey's time left: $(cat two.err)"

# The snapshots of shots 1 and 4 (output.snapshots.shots), taken by rank 0's group, equal one
# process's; a selection without a snapshot shot says so once and writes none.
sed 's/^output: {file: farm.h5}$/output: {file: farm.h5, snapshots: {every: 10, shots: [4, 1]}}/' \
  farm.yaml >snap.yaml
grep -q "shots: \[4, 1\]" snap.yaml || fail "no survey with snapshot shots"
"$bin" run snap.yaml $short -q -o snap_one.h5 2>/dev/null || fail "snapshot shots, one process"
mpi 2 run snap.yaml $short -o snap_two.h5 >snap_two.out 2>snap_two.err ||
  fail "snapshot shots, 2 ranks: $(cat snap_two.err)"
same snap_one.h5 snap_two.h5 /shots /snapshots
grep -Eq "^shot 1 done on rank 0 " snap_two.err && grep -Eq "^shot 4 done on rank 0 " snap_two.err ||
  fail "snapshot shots, 2 ranks: not modelled by rank 0: $(cat snap_two.err)"
"$py" - snap_two.h5 <<'PY' || fail "snapshot shots, 2 ranks: /snapshots/shot"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    shots = list(f["snapshots/shot"][()])
    assert shots == [1] * 4 + [4] * 4, shots
    assert list(f["snapshots/step"][()]) == [10, 20, 30, 40] * 2, f["snapshots/step"][()]
PY
mpi 2 run snap.yaml $short --shots 2-3 -o nosnap.h5 >nosnap.out 2>nosnap.err ||
  fail "no snapshot shot, 2 ranks: $(cat nosnap.err)"
[ "$(grep -c "^warning: snap.yaml:[0-9]*: output.snapshots.shots: the snapshots are of shots 1,4, none of them among the shots of this run (--shots 2-3): it writes no snapshots" nosnap.err)" -eq 1 ] ||
  fail "no snapshot shot, 2 ranks: not said once: $(cat nosnap.err)"
"$py" -c 'import sys, h5py; sys.exit("snapshots" in h5py.File(sys.argv[1], "r"))' nosnap.h5 ||
  fail "no snapshot shot, 2 ranks: snapshots written"
# A --shots past the survey's last under mpirun: refused once, exit 2.
mpi 2 run snap.yaml $short --shots 5-6 -o past.h5 >past.out 2>past.err
code=$?
[ $code -eq 2 ] || fail "--shots 5-6 of 6 shots: exit $code, expected 2"
[ "$(grep -c '^error: --shots: .5-6.: shot 6 is past the survey.s last (6 shots)' past.err)" -eq 1 ] ||
  fail "--shots 5-6 of 6 shots: not printed once: $(cat past.err)"

# Longer shots, so that a signal lands with shots still to go: mpirun passes its SIGINT on as
# SIGTERM a second after it (SIGCONT at once, SIGKILL a second later), so each rank's two shots
# after the first must outlast that second. 4000 steps are about 1.3 s a shot on an idle core,
# 3 s on 2 busy ones.
long="--backend cpu --steps 4000"
"$bin" run farm.yaml $long -q -o one_long.h5 2>/dev/null || fail "one-process long run"

# interrupted NAME HOW: the 2-rank run into NAME.h5, signalled as HOW says (mpirun: SIGINT to
# mpirun; ranks: SIGINT to each rank) once a shot is complete; sets code to mpirun's exit code.
interrupted() {
  name=$1 how=$2
  "$mpirun" --oversubscribe -np 2 -x OMP_NUM_THREADS=1 "$bin" run farm.yaml $long -q \
    -o "$name.h5" >"$name.out" 2>"$name.err" &
  pid=$!
  waited=0
  until ls "$name.h5.parts"/shot-*.h5 >/dev/null 2>&1 || [ $waited -ge 600 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if [ "$how" = mpirun ]; then
    kill -INT $pid
  else
    kill -INT $(pgrep -P $pid)
  fi
  wait $pid
  code=$?
  [ ! -f "$name.h5" ] || fail "$name: an output was assembled (exit $code): $(cat "$name.err")"
  grep -q "MPI_ABORT" "$name.err" && fail "$name: a rank called MPI_Abort: $(cat "$name.err")"
  grep -Eq "^[1-5] of 6 shots are complete and kept in '$name.h5.parts'; resume with: mpirun -np 2 .* run farm.yaml -o $name.h5 --resume --steps 4000 --backend cpu$" \
    "$name.err" || fail "$name: no resume command: $(cat "$name.err")"
  kept=$(ls "$name.h5.parts"/shot-*.h5 2>/dev/null | wc -l)
  grep -q "^$kept of 6 shots are complete" "$name.err" ||
    fail "$name: $kept shots kept in $name.h5.parts, not the number said: $(cat "$name.err")"
  mpi 2 run farm.yaml $long -o "$name.h5" --resume >"resume_$name.out" 2>"resume_$name.err" ||
    fail "$name: the resume failed: $(cat "resume_$name.err")"
  grep -Eq "[1-5] skipped \(resume\)" "resume_$name.out" ||
    fail "$name: the resume kept no shot: $(cat "resume_$name.out")"
  same one_long.h5 "$name.h5" /shots
}

interrupted ctrl_c mpirun
[ $code -ne 0 ] || fail "SIGINT to mpirun: exit 0"
[ "$(grep -c '^error: interrupted by SIGTERM; stopped$' ctrl_c.err)" -eq 1 ] ||
  fail "SIGINT to mpirun: the ranks' SIGTERM not said once: $(cat ctrl_c.err)"

interrupted ranks_int ranks
[ $code -eq 130 ] || fail "SIGINT to every rank: mpirun exit $code, expected 130: $(cat ranks_int.err)"
[ "$(grep -c '^error: interrupted by SIGINT; stopped$' ranks_int.err)" -eq 1 ] ||
  fail "SIGINT to every rank: not said once: $(cat ranks_int.err)"

[ $failures -eq 0 ] && echo "MPI runs warn once, say what runs and where the survey stands, and stop on a signal with the resume command"
exit $((failures > 0))
