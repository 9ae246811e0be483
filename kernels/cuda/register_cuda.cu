/// Registration of every CUDA kernel family built into this binary. A new family adds one
/// `register_<family>_kernels` call here (explicit calls: static registration objects in a static
/// library can be dropped by the linker).

#include "kernels/cuda/gmem_3d.cuh"
#include "kernels/cuda/gmem_3d_f4.cuh"
#include "kernels/cuda/semi_25d.cuh"
#include "kernels/cuda/smem_3d.cuh"
#include "kernels/cuda/smem_eta.cuh"
#include "kernels/cuda/streaming_25d.cuh"
#include "kernels/cuda/tti_kernels.cuh"
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
