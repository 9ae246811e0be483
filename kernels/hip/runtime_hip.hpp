#pragma once
/// The HIP (AMD) side of kernels/gpu/gpu_runtime.hpp: the `gpu*` names of the runtime API as
/// HIP's, and what AMD's hardware differs in. Included by gpu_runtime.hpp alone, which picks it
/// when compiled for AMD (hipcc, or a host compiler given `-D__HIP_PLATFORM_AMD__`).

#include <hip/hip_fp16.h> // binary16 conversions of the float16 storage (kernels/gpu/half_kernels.cuh)
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
/// copies and transaction-counting mbarriers (kernels/gpu/tensor_map.hpp).
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
