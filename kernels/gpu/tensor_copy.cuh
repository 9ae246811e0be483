#pragma once
/// Device side of the Hopper tensor memory accelerator (TMA): transaction-counting mbarriers and
/// 3D bulk tensor copies global -> shared (PTX ISA 8.0, sm_90). One thread issues a copy of a
/// whole box; the threads that read it wait on the mbarrier that the copy's bytes complete. On
/// older architectures these trap: tensor_copy_unavailable() keeps such launches from happening.
/// Host side: kernels/gpu/tensor_map.hpp.

#include "kernels/gpu/gpu_runtime.hpp"

#include <cstdint>

#if MINIMOD_GPU_TENSOR_COPY && defined(__CUDACC__)

namespace minimod::gpu {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MINIMOD_TMA_PTX(...) asm volatile(__VA_ARGS__)
#else
#define MINIMOD_TMA_PTX(...) __trap()
#endif

/// Shared-window address of a shared-memory object.
__device__ __forceinline__ unsigned tma_smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// Initialise the mbarrier at shared address `bar` for `count` arriving threads, and make it
/// visible to the tensor copies (the caller then synchronises the block before anyone uses it).
__device__ __forceinline__ void tma_barrier_init(unsigned bar, unsigned count) {
  MINIMOD_TMA_PTX("mbarrier.init.shared::cta.b64 [%0], %1;\n"
                  "fence.mbarrier_init.release.cluster;\n"
                  "fence.proxy.async.shared::cta;\n" ::"r"(bar),
                  "r"(count)
                  : "memory");
}

/// The issuing thread arrives on `bar` and announces `bytes` of tensor copies to come.
__device__ __forceinline__ void tma_expect_bytes(unsigned bar, unsigned bytes) {
  MINIMOD_TMA_PTX("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                  : "memory");
}

/// Copy the box at padded coordinates (x, y, z) of the tensor `map` (a CUtensorMap in parameter,
/// constant or global memory) to shared address `dst` (128-byte aligned); its bytes complete on
/// `bar`. x must be a multiple of 16 bytes' worth of elements: other starts fault.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const void* map, int x, int y, int z,
                                            unsigned bar) {
  MINIMOD_TMA_PTX("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                  " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                  "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(bar)
                  : "memory");
}

/// Wait until phase `parity` (0 or 1) of the mbarrier at `bar` has completed.
__device__ __forceinline__ void tma_wait(unsigned bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile("{\n"
                 ".reg .pred ready;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, ready;\n"
                 "}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (done == 0);
#else
  (void)bar;
  (void)parity;
  __trap();
#endif
}

#undef MINIMOD_TMA_PTX

} // namespace minimod::gpu

#endif
