# Sourced by the mpirun script tests after they set bin (the program), src (the source tree) and
# work (a scratch folder): skips (exit 77) without mpirun or h5diff, starts in an empty $work, and
# defines fail (count a failure), mpi NP ARGS... (the program on NP ranks) and same REFERENCE
# OUTPUT GROUP... (h5diff of each group).
mpirun=$(command -v mpirun || command -v mpiexec) || { echo "skipped: no mpirun"; exit 77; }
command -v h5diff >/dev/null || { echo "skipped: no h5diff (hdf5-tools)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mpi() { np=$1; shift; "$mpirun" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 "$bin" "$@"; }
same() { # same REFERENCE OUTPUT GROUP...
  ref=$1 out=$2; shift 2
  for g in "$@"; do
    h5diff "$ref" "$out" "$g" "$g" >/dev/null || fail "$out: $g differs from $ref"
  done
}
