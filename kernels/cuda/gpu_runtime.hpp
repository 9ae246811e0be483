#pragma once
/// The one portability header of the GPU code: it maps a vendor-neutral `gpu*` spelling of the
/// runtime API onto CUDA, or onto HIP when compiled for AMD (hipcc, or a host compiler given
/// `-D__HIP_PLATFORM_AMD__`). Everything under kernels/cuda/ uses these names only, so that the
/// `hip` backend is the same sources compiled by hipcc; no other file may test the platform macros.
/// Besides the runtime calls it names what differs between the vendors' hardware: the width of a
/// warp (kGpuWarpSize) and the NVIDIA-only copy engines (MINIMOD_GPU_CP_ASYNC,
/// MINIMOD_GPU_TENSOR_COPY), whose kernel families only the CUDA build registers.
///
/// Types and constants are aliases; functions are macros (as hipify writes them) so that the
/// runtime's own overloads and default arguments keep working.

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)

#include <hip/hip_runtime.h>

#define MINIMOD_GPU_HIP 1

using gpuError_t = hipError_t;               ///< status code of every runtime call
using gpuStream_t = hipStream_t;             ///< an in-order queue of device work
using gpuEvent_t = hipEvent_t;               ///< a marker in a stream
using gpuDeviceProp_t = hipDeviceProp_t;     ///< device properties
using gpuMemcpyKind = hipMemcpyKind;         ///< direction of a copy
using gpuFuncAttributes = hipFuncAttributes; ///< per-kernel resource usage
using gpuIpcMemHandle_t = hipIpcMemHandle_t; ///< device memory shared with another process

inline constexpr gpuError_t gpuSuccess = hipSuccess;
inline constexpr gpuMemcpyKind gpuMemcpyHostToDevice = hipMemcpyHostToDevice;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToHost = hipMemcpyDeviceToHost;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToDevice = hipMemcpyDeviceToDevice;
inline constexpr unsigned gpuStreamNonBlocking = hipStreamNonBlocking;
inline constexpr unsigned gpuIpcMemLazyEnablePeerAccess = hipIpcMemLazyEnablePeerAccess;
inline constexpr unsigned gpuEventDisableTiming = hipEventDisableTiming;
inline constexpr hipFuncAttribute gpuFuncAttributeMaxDynamicSharedMemorySize =
    hipFuncAttributeMaxDynamicSharedMemorySize;
inline constexpr hipDeviceAttribute_t gpuDevAttrComputeCapabilityMajor =
    hipDeviceAttributeComputeCapabilityMajor;
inline constexpr hipDeviceAttribute_t gpuDevAttrComputeCapabilityMinor =
    hipDeviceAttributeComputeCapabilityMinor;

#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuMemGetInfo hipMemGetInfo
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuFuncGetAttributes hipFuncGetAttributes
#define gpuFuncSetAttribute(kernel, attr, value)                                                   \
  hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), (attr), (value))
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemset hipMemset
#define gpuMemsetAsync hipMemsetAsync
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventQuery hipEventQuery
#define gpuEventElapsedTime hipEventElapsedTime

/// Name of the runtime in messages.
inline constexpr const char* kGpuRuntimeName = "HIP";

/// Lanes of a wavefront: 64 on the data-centre GPUs (CDNA: MI100, MI200, MI300), which the HIP
/// build targets (MINIMOD_HIP_ARCHITECTURES). The consumer RDNA GPUs run 32-lane wavefronts; the
/// kernels only use this for occupancy and shape checks, never for lane arithmetic.
inline constexpr int kGpuWarpSize = 64;

/// Whether cp.async (Ampere's asynchronous global-to-shared copies) exists: semi+b+a.
#define MINIMOD_GPU_CP_ASYNC 0

#if defined(__HIP__)
/// CUDA's evict-first load and store, which HIP lacks for float: non-temporal accesses.
__device__ __forceinline__ float __ldcs(const float* p) {
  return __builtin_nontemporal_load(p);
}
__device__ __forceinline__ void __stcs(float* p, float x) {
  __builtin_nontemporal_store(x, p);
}
#endif

namespace minimod::gpu {
/// CUDA's "at least `blocks` resident blocks of `threads` threads per SM" as AMD's "at least this
/// many wavefronts per SIMD" (a compute unit has 4 SIMDs); 0 blocks asks nothing.
constexpr int launch_waves_per_eu(int threads, int blocks) {
  const int waves = (blocks * threads + 4 * kGpuWarpSize - 1) / (4 * kGpuWarpSize);
  return waves < 1 ? 1 : (waves > 8 ? 8 : waves);
}
} // namespace minimod::gpu

#define MINIMOD_LAUNCH_BOUNDS_1_(threads) __attribute__((amdgpu_flat_work_group_size(1, (threads))))
#define MINIMOD_LAUNCH_BOUNDS_2_(threads, blocks)                                                  \
  __attribute__((amdgpu_flat_work_group_size(1, (threads)),                                        \
                 amdgpu_waves_per_eu(::minimod::gpu::launch_waves_per_eu((threads), (blocks)))))
#define MINIMOD_LAUNCH_BOUNDS_PICK_(a, b, impl, ...) impl

/// Whether the Hopper tensor memory accelerator (TMA) can be used: CUtensorMap, bulk tensor
/// copies and transaction-counting mbarriers (kernels/cuda/tensor_map.hpp).
#define MINIMOD_GPU_TENSOR_COPY 0

/// A kernel's launch bounds, `MINIMOD_LAUNCH_BOUNDS(max threads a block[, min resident blocks])`:
/// CUDA's __launch_bounds__, or on HIP the work-group size and the wavefronts per SIMD that those
/// blocks need (launch_waves_per_eu). A single bound with template commas goes in parentheses.
#define MINIMOD_LAUNCH_BOUNDS(...)                                                                 \
  MINIMOD_LAUNCH_BOUNDS_PICK_(__VA_ARGS__, MINIMOD_LAUNCH_BOUNDS_2_, MINIMOD_LAUNCH_BOUNDS_1_, )   \
  (__VA_ARGS__)

/// Kernel parameters whose address is taken (CUDA's tensor maps) need no marker on HIP.
#ifndef __grid_constant__
#define __grid_constant__
#endif

#else

#include <cuda.h> // CUtensorMap (no driver-API calls are linked; tensor_map.cpp looks one up)
#include <cuda_runtime.h>

#define MINIMOD_GPU_HIP 0

using gpuError_t = cudaError_t;               ///< status code of every runtime call
using gpuStream_t = cudaStream_t;             ///< an in-order queue of device work
using gpuEvent_t = cudaEvent_t;               ///< a marker in a stream
using gpuDeviceProp_t = cudaDeviceProp;       ///< device properties
using gpuMemcpyKind = cudaMemcpyKind;         ///< direction of a copy
using gpuFuncAttributes = cudaFuncAttributes; ///< per-kernel resource usage
using gpuIpcMemHandle_t = cudaIpcMemHandle_t; ///< device memory shared with another process

inline constexpr gpuError_t gpuSuccess = cudaSuccess;
inline constexpr gpuMemcpyKind gpuMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
inline constexpr unsigned gpuStreamNonBlocking = cudaStreamNonBlocking;
inline constexpr unsigned gpuIpcMemLazyEnablePeerAccess = cudaIpcMemLazyEnablePeerAccess;
inline constexpr unsigned gpuEventDisableTiming = cudaEventDisableTiming;
inline constexpr cudaFuncAttribute gpuFuncAttributeMaxDynamicSharedMemorySize =
    cudaFuncAttributeMaxDynamicSharedMemorySize;
inline constexpr cudaDeviceAttr gpuDevAttrComputeCapabilityMajor =
    cudaDevAttrComputeCapabilityMajor;
inline constexpr cudaDeviceAttr gpuDevAttrComputeCapabilityMinor =
    cudaDevAttrComputeCapabilityMinor;

#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuMemGetInfo cudaMemGetInfo
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuFuncGetAttributes cudaFuncGetAttributes
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemset cudaMemset
#define gpuMemsetAsync cudaMemsetAsync
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventQuery cudaEventQuery
#define gpuEventElapsedTime cudaEventElapsedTime

/// Name of the runtime in messages.
inline constexpr const char* kGpuRuntimeName = "CUDA";

/// Lanes of a warp.
inline constexpr int kGpuWarpSize = 32;

/// Whether cp.async (Ampere's asynchronous global-to-shared copies) exists: semi+b+a.
#define MINIMOD_GPU_CP_ASYNC 1

#define MINIMOD_LAUNCH_BOUNDS(...) __launch_bounds__(__VA_ARGS__)

/// Whether the Hopper tensor memory accelerator (TMA) can be used: CUtensorMap, bulk tensor
/// copies and transaction-counting mbarriers (kernels/cuda/tensor_map.hpp).
#define MINIMOD_GPU_TENSOR_COPY 1

#endif
