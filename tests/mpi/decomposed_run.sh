#!/bin/sh
# The program end to end with its grid split over MPI ranks (CPU backend): the example surveys
# under mpirun give the one-process output's gathers and snapshots (h5diff), shots over two groups
# of two ranks included; a device memory cap refuses the whole grid on one rank and admits the
# same run split over two, and validate refuses and admits the same with run's figure; a rank
# count the split does not divide is refused (exit 2).
# Usage: decomposed_run.sh MINIMOD_BINARY SOURCE_DIR WORK_DIR. Exit 77 (skip) without mpirun or
# h5diff.
set -u
bin=$1 src=$2 work=$3
. "$src/tests/mpi/mpi_common.sh"

acoustic=$src/input/decomposed.yaml tti=$src/input/tti_decomposed.yaml
common="--backend cpu -q --steps 60"
"$bin" run "$acoustic" $common --decompose 1x1x1 -o one.h5 || fail "one-process acoustic run"
mpi 2 run "$acoustic" $common -o two.h5 || fail "2 ranks, one shot at a time"
same one.h5 two.h5 /shots /snapshots
mpi 4 run "$acoustic" $common -o four.h5 --summary four.json || fail "4 ranks, 2 a shot"
same one.h5 four.h5 /shots /snapshots
grep -q '"ranks": 2' four.json || fail "four.json names no shot of 2 ranks"
grep -q '"halo_ms"' four.json || fail "four.json has no halo_ms"
mpi 4 run "$acoustic" $common --decompose 1x2x2 -o split.h5 || fail "--decompose 1x2x2"
same one.h5 split.h5 /shots /snapshots

"$bin" run "$tti" $common --decompose 1x1x1 -o tti_one.h5 || fail "one-process TTI run"
mpi 4 run "$tti" $common -o tti_four.h5 || fail "TTI on 4 ranks"
same tti_one.h5 tti_four.h5 /shots

# The C-PML: its slabs whole on each rank (profile sliced to the subgrid) give the same output;
# a cut inside a slab is refused, naming the cut.
sed 's/^  width: 10/  width: 10\n  type: cpml/' "$acoustic" >cpml.yaml
sed 's/^  width: 8/  width: 8\n  type: cpml/' "$tti" >tti_cpml.yaml
grep -q "type: cpml" cpml.yaml && grep -q "type: cpml" tti_cpml.yaml || fail "no C-PML surveys"
"$bin" run cpml.yaml $common --decompose 1x1x1 -o cpml_one.h5 || fail "one-process C-PML run"
mpi 4 run cpml.yaml $common --decompose 1x2x2 -o cpml_split.h5 || fail "C-PML on 1x2x2"
same cpml_one.h5 cpml_split.h5 /shots /snapshots
"$bin" run tti_cpml.yaml $common --decompose 1x1x1 -o tti_cpml_one.h5 || fail "TTI C-PML run"
mpi 4 run tti_cpml.yaml $common -o tti_cpml_four.h5 || fail "TTI C-PML on 4 ranks"
same tti_cpml_one.h5 tti_cpml_four.h5 /shots
mpi 8 run cpml.yaml $common --decompose 8x1x1 -o cpml_cut.h5 2>cpml_cut.err
code=$?
[ $code -eq 2 ] || fail "a cut inside a C-PML slab: exit $code, expected 2"
grep -q "cuts x at point 9, inside the C-PML slab of 10 points on the low x face" cpml_cut.err ||
  fail "a cut inside a C-PML slab: $(cat cpml_cut.err)"

# The cap: the whole grid needs about 10.6 MiB, each half about 8 MiB.
"$bin" run "$acoustic" $common --decompose 1x1x1 --max-device-memory 9MB -o cap1.h5 2>cap1.err
code=$?
[ $code -eq 2 ] || fail "cap on one rank: exit $code, expected 2"
grep -q "needs .* of device memory" cap1.err || fail "cap on one rank: $(cat cap1.err)"
mpi 2 run "$acoustic" $common --max-device-memory 9MB -o cap2.h5 || fail "cap on two ranks"
same one.h5 cap2.h5 /shots
# validate refuses what run refuses, with run's own figure, and admits what run admits.
"$bin" validate "$acoustic" --steps 60 --decompose 1x1x1 --max-device-memory 9MB \
  >cap1.validate 2>cap1.validate.err
code=$?
[ $code -eq 2 ] || fail "validate, cap on one rank: exit $code, expected 2"
run_figure=$(grep -o "needs [^ ]* [^ ]* of device memory" cap1.err)
validate_figure=$(grep -o "needs [^ ]* [^ ]* of device memory" cap1.validate.err)
[ -n "$run_figure" ] && [ "$run_figure" = "$validate_figure" ] ||
  fail "validate's figure '$validate_figure' is not run's '$run_figure'"
"$bin" validate "$acoustic" --steps 60 --max-device-memory 9MB >cap2.validate ||
  fail "validate, cap on two ranks: $(cat cap2.validate)"
grep -q "max-device-memory .*: fits" cap2.validate || fail "validate, cap on two ranks: no fit"

mpi 3 run "$acoustic" $common -o three.h5 2>three.err
code=$?
[ $code -eq 2 ] || fail "3 ranks for 2 a shot: exit $code, expected 2"
grep -q "multiple of 2" three.err || fail "3 ranks for 2 a shot: $(cat three.err)"

[ $failures -eq 0 ] && echo "all decomposed runs equal the one-process run"
exit $((failures > 0))
