set -e
cmake -S . -B build-gpu -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release -DMINIMOD_WERROR=ON -DMINIMOD_GIT_COMMIT=fdb9070f0429 > /dev/null
cmake --build build-gpu -j16 --target minimod-gpu minimod_gpu_tests 2>&1 | tail -1
build-gpu/tests/minimod_gpu_tests --gtest_filter='*Tti*' 2>&1 | grep -E 'FAILED|PASSED|tests ran' | head
P='inner=semi+b+a_32x16,pml=smem_25d_32x8;semi+b+a_32x16;semi+b+a_32x8;semi+2z_32x8;semi+b_32x8;semi_25d_32x8'
build-gpu/minimod-gpu bench --physics tti --kernel "$P" --steps 20 --warmup 5 --repeats 3 --json $OUT/fold.json 2>&1 | grep -E '^(semi|inner)|floor:'
build-gpu/minimod-gpu bench --physics tti --no-azimuth --kernel 'inner=semi+b+a_32x16,pml=smem_25d_32x8;semi+b+a_32x16;semi+b+a_32x8' --steps 20 --warmup 5 --repeats 3 --json $OUT/fold-noaz.json 2>&1 | grep -E '^(semi|inner)|floor:'
