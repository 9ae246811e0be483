# Shared by the scripts that run on the GPU machine (device_decomposition.sh,
# device_scaling.sh); sourced, with RESULTS, BUILD_DIR and JOBS set.

# stage_build: configure and compile BUILD_DIR with CUDA and -Werror (the program only); exit on
# failure with the log's end.
stage_build() {
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DMINIMOD_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DMINIMOD_WERROR=ON >"$RESULTS/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j"$JOBS" --target minimod-gpu >>"$RESULTS/build.log" 2>&1 ||
    {
      echo "build failed: see $RESULTS/build.log"
      tail -30 "$RESULTS/build.log"
      exit 1
    }
}

# same_group A B GROUP: every dataset under GROUP of A and B has the same shape and bytes
# (h5diff, or h5py where the machine has no hdf5-tools).
same_group() {
  if h5diff --version >/dev/null 2>&1; then
    h5diff "$1" "$2" "$3" "$3"
    return
  fi
  python3 - "$@" <<'PY'
import sys
import h5py
import numpy as np
a, b, group = sys.argv[1:4]
with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
    names = []
    fa[group].visit(lambda n: names.append(n) if isinstance(fa[group][n], h5py.Dataset) else None)
    bad = 0
    for n in names:
        x, y = fa[group][n][()], fb[group][n][()]
        if x.shape != y.shape or x.tobytes() != y.tobytes():
            diff = int(np.count_nonzero(x != y)) if x.shape == y.shape else -1
            print(f"{group}/{n}: differs ({diff} values)")
            bad += 1
    print(f"{len(names)} datasets compared, {bad} differ")
    sys.exit(1 if bad or not names else 0)
PY
}

# run_stages: each stage_NAME of STAGES in order, under a "== NAME" line.
run_stages() {
  for stage in $STAGES; do
    echo "== $stage"
    "stage_$stage"
  done
}

# join ITEM...: the items separated by commas (a JSON array's body).
join() {
  local IFS=,
  echo "$*"
}

# gpu_name: the first GPU's name (empty without nvidia-smi).
gpu_name() {
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1
}
