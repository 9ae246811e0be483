/// Registration of every GPU kernel family built into this binary. A new family adds one
/// `register_<family>_kernels` call here (explicit calls: static registration objects in a static
/// library can be dropped by the linker).

#include "kernels/gpu/gmem_3d.cuh"
#include "kernels/gpu/gmem_3d_f4.cuh"
#include "kernels/gpu/semi_25d.cuh"
#include "kernels/gpu/smem_3d.cuh"
#include "kernels/gpu/smem_eta.cuh"
#include "kernels/gpu/streaming_25d.cuh"
#include "kernels/gpu/tti_kernels.cuh"
#include "kernels/kernel.hpp"

namespace minimod {

void register_cuda_kernels(KernelRegistry& registry) {
  gpu::register_gmem_3d_kernels(registry);
  gpu::register_gmem_3d_f4_kernels(registry);
  gpu::register_smem_3d_kernels(registry);
  gpu::register_smem_eta_kernels(registry);
  gpu::register_streaming_25d_kernels(registry);
  gpu::register_semi_25d_kernels(registry);
  gpu::register_tti_kernels(registry);
}

} // namespace minimod
