#pragma once
/// Host/device qualifiers that compile in plain C++ translation units too.

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
// __host__, __device__, __forceinline__ come from the vendor's runtime header itself (nvcc
// includes it on its own; hipcc needs it named), so that this floor of the layout includes nothing
// of kernels/: the gpu* mapping of the runtime API is kernels/gpu/gpu_runtime.hpp's.
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif
#define MINIMOD_HD __host__ __device__ __forceinline__
#define MINIMOD_DEVICE_COMPILER 1
#else
#define MINIMOD_HD inline
#define MINIMOD_DEVICE_COMPILER 0
#endif

/// Unroll the next loop fully (nvcc/hipcc) or by 4 (GCC), without unknown-pragma warnings.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define MINIMOD_UNROLL _Pragma("unroll")
#elif MINIMOD_DEVICE_COMPILER // host pass of nvcc/hipcc: it warns on either pragma
#define MINIMOD_UNROLL
#elif defined(__clang__)
#define MINIMOD_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define MINIMOD_UNROLL _Pragma("GCC unroll 4")
#else
#define MINIMOD_UNROLL
#endif
