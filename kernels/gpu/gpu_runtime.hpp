#pragma once
/// The one portability header of the GPU code: it maps a vendor-neutral `gpu*` spelling of the
/// runtime API onto CUDA (kernels/cuda/runtime_cuda.hpp), or onto HIP when compiled for AMD
/// (hipcc, or a host compiler given `-D__HIP_PLATFORM_AMD__`: kernels/hip/runtime_hip.hpp).
/// Everything under kernels/gpu/ uses these names only, so that the `hip` backend is the same
/// sources compiled by hipcc; no other file may test the platform macros, and no other file of
/// kernels/gpu/ may include a vendor folder (tests/check_layout.py).
/// Besides the runtime calls the mappings name what differs between the vendors' hardware: the
/// width of a warp (kGpuWarpSize) and the NVIDIA-only copy engines (MINIMOD_GPU_CP_ASYNC,
/// MINIMOD_GPU_TENSOR_COPY), whose kernel families (kernels/cuda/) only the CUDA build registers.
///
/// Types and constants are aliases; functions are macros (as hipify writes them) so that the
/// runtime's own overloads and default arguments keep working.

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include "kernels/hip/runtime_hip.hpp"
#else
#include "kernels/cuda/runtime_cuda.hpp"
#endif
