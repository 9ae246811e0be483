/// Registration of semi+b+tma, the semi-stencil kernels whose planes the Hopper tensor memory
/// accelerator copies (tti_kernel_class.cuh says why they have a file of their own).

#include "kernels/gpu/tti_kernel_class.cuh"

namespace minimod::gpu {

void register_tti_tma_kernels(KernelRegistry& registry) {
#if MINIMOD_GPU_TENSOR_COPY
  // 32x4 first: the fastest on the H100 with azimuth (900^3: 15.49 ms a step), and within 0.3% of
  // 32x6 without (12.19 against 12.16; docs/perf/README.md, the TTI tables). Small
  // blocks let more of them share a SM within the kernel's register need (tti_semi_min_blocks):
  // 20 warps with azimuth, 24 without.
  add<TtiMethod::SemiBT, 32, 4, 1>(registry, true);
  add<TtiMethod::SemiBT, 32, 6, 1>(registry);
  add<TtiMethod::SemiBT, 32, 8, 1>(registry);
  add<TtiMethod::SemiBT, 32, 16, 1>(registry);
  add<TtiMethod::SemiBT, 16, 16, 1>(registry);
  add<TtiMethod::SemiBT, 64, 8, 1>(registry);
#else
  (void)registry;
#endif
}

} // namespace minimod::gpu
