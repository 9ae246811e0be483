# Sourced by the mpirun script tests after they set bin (the program), src (the source tree) and
# work (a scratch folder): skips (exit 77) without mpirun or h5diff, starts in an empty $work, and
# defines fail (count a failure), mpi NP ARGS... (the program on NP ranks), mpi_env NAME NP
# ARGS... (the same, passing the environment variable NAME to every rank), same REFERENCE
# OUTPUT GROUP... (h5diff of each group) and injected_failure NP FAULT NAMED GROUP... (a run of
# $acoustic whose shot 1 is made to fail, and its resume to one.h5).
mpirun=$(command -v mpirun || command -v mpiexec) || { echo "skipped: no mpirun"; exit 77; }
command -v h5diff >/dev/null || { echo "skipped: no h5diff (hdf5-tools)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mpi() { np=$1; shift; "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 "$bin" "$@"; }
mpi_env() { # mpi_env NAME NP ARGS...: with the environment variable NAME passed to every rank
  name=$1 np=$2; shift 2
  "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 -x "$name" "$bin" "$@"
}
same() { # same REFERENCE OUTPUT GROUP...
  ref=$1 out=$2; shift 2
  for g in "$@"; do
    h5diff "$ref" "$out" "$g" "$g" >/dev/null || fail "$out: $g differs from $ref"
  done
}
injected_failure() { # injected_failure NP FAULT NAMED GROUP...
  # The 4 shots of $acoustic ($common) on NP ranks into fault.h5, MINIMOD_FAULT_INJECT=FAULT failing
  # shot 1: exit 3, shot 1 named by a line that matches NAMED (grep -E), the other three done and
  # kept, nothing assembled; then --resume models shot 1 alone, and each GROUP equals one.h5's.
  np=$1 fault=$2 named=$3; shift 3
  (
    export MINIMOD_FAULT_INJECT="$fault"
    mpi_env MINIMOD_FAULT_INJECT "$np" run "$acoustic" $common -o fault.h5 >fault.out 2>fault.err
  )
  code=$?
  [ $code -eq 3 ] || fail "injected failure: exit $code, expected 3"
  grep -Eq "$named" fault.err || fail "injected failure: shot 1 not named with its rank: $(cat fault.err)"
  for s in 0 2 3; do
    grep -q "shot $s done" fault.err || fail "injected failure: shot $s not done"
    [ -f fault.h5.parts/shot-000$s.h5 ] || fail "injected failure: shot $s not kept in fault.h5.parts"
  done
  [ ! -f fault.h5.parts/shot-0001.h5 ] || fail "injected failure: the failed shot 1 was kept"
  [ ! -f fault.h5 ] || fail "injected failure: an output was assembled"
  mpi "$np" run "$acoustic" $common -o fault.h5 --resume >resume.out 2>resume.err ||
    fail "resume after the failure: $(cat resume.err)"
  grep -q "1 modelled, 3 skipped (resume)" resume.out || fail "resume after the failure: $(cat resume.out)"
  same one.h5 fault.h5 "$@"
}
