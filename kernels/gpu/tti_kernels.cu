/// Registration of the TTI kernels (tti_kernel_class.cuh has their class, tti_kernels.cuh the
/// device code).

#include "kernels/gpu/tti_kernel_class.cuh"

namespace minimod::gpu {

void register_tti_kernels(KernelRegistry& registry) {
  // The paper's tiles (Table III) that fit 48 KB of static shared memory, family default first.
  add<TtiMethod::Gmem3d, 32, 4, 4>(registry, true);
  add<TtiMethod::Gmem3d, 8, 8, 8>(registry);
  add<TtiMethod::Gmem3d, 32, 8, 2>(registry);
  add<TtiMethod::Smem3d, 32, 4, 4>(registry, true);
  add<TtiMethod::Smem3d, 8, 8, 8>(registry);
  add<TtiMethod::Smem3d, 16, 8, 4>(registry);
  add<TtiMethod::Smem25d, 16, 16, 1>(registry, true);
  add<TtiMethod::Smem25d, 16, 8, 1>(registry);
  add<TtiMethod::Smem25d, 32, 8, 1>(registry);
  // The semi-stencil kernels keep about 60-70 partial sums a thread in registers (capped at 128
  // by the launch bounds). semi+b+a_32x8 is the CUDA default where semi+b+tma cannot run
  // (kernels/selection.cpp); semi+b+a_32x16 is the paper's A100 best.
  add<TtiMethod::Semi, 32, 8, 1>(registry, true);
  add<TtiMethod::Semi, 32, 16, 1>(registry);
  add<TtiMethod::Semi, 16, 16, 1>(registry);
  add<TtiMethod::Semi, 16, 8, 1>(registry);
  register_tti_semib_kernels(registry);
#if MINIMOD_GPU_CP_ASYNC
  add<TtiMethod::SemiBA, 32, 8, 1>(registry, true);
  add<TtiMethod::SemiBA, 32, 16, 1>(registry);
  add<TtiMethod::SemiBA, 16, 16, 1>(registry);
  add<TtiMethod::SemiBA, 64, 8, 1>(registry);
#endif
  add<TtiMethod::Semi2z, 32, 8, 1>(registry, true);
  add<TtiMethod::Semi2z, 32, 16, 1>(registry);
  add<TtiMethod::Semi2z, 16, 16, 1>(registry);
  add<TtiMethod::Semi2z, 16, 8, 1>(registry);
#if MINIMOD_GPU_TENSOR_COPY
  register_tti_tma_kernels(registry); // CUDA only (tti_kernels_tma.cu)
#endif
}

} // namespace minimod::gpu
