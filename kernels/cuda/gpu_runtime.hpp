#pragma once
/// The one portability header of the GPU code: it maps a vendor-neutral `gpu*` spelling of the
/// runtime API onto CUDA, or onto HIP when compiled for AMD (`__HIP_PLATFORM_AMD__`). Everything
/// under kernels/cuda/ uses these names only, so that a HIP port is this header plus a build flag;
/// no other file may test the platform macros.
///
/// Types and constants are aliases; functions are macros (as hipify writes them) so that the
/// runtime's own overloads and default arguments keep working.

#if defined(__HIP_PLATFORM_AMD__)

#include <hip/hip_runtime.h>

using gpuError_t = hipError_t;               ///< status code of every runtime call
using gpuStream_t = hipStream_t;             ///< an in-order queue of device work
using gpuEvent_t = hipEvent_t;               ///< a marker in a stream
using gpuDeviceProp_t = hipDeviceProp_t;     ///< device properties
using gpuMemcpyKind = hipMemcpyKind;         ///< direction of a copy
using gpuFuncAttributes = hipFuncAttributes; ///< per-kernel resource usage

inline constexpr gpuError_t gpuSuccess = hipSuccess;
inline constexpr gpuMemcpyKind gpuMemcpyHostToDevice = hipMemcpyHostToDevice;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToHost = hipMemcpyDeviceToHost;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToDevice = hipMemcpyDeviceToDevice;
inline constexpr unsigned gpuStreamNonBlocking = hipStreamNonBlocking;
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
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventQuery hipEventQuery

/// Name of the runtime in messages.
inline constexpr const char* kGpuRuntimeName = "HIP";

/// Whether the Hopper tensor memory accelerator (TMA) can be used: CUtensorMap, bulk tensor
/// copies and transaction-counting mbarriers (kernels/cuda/tensor_map.hpp).
#define MINIMOD_GPU_TENSOR_COPY 0

/// Kernel parameters whose address is taken (CUDA's tensor maps) need no marker on HIP.
#ifndef __grid_constant__
#define __grid_constant__
#endif

#else

#include <cuda.h> // CUtensorMap (no driver-API calls are linked; tensor_map.cpp looks one up)
#include <cuda_runtime.h>

using gpuError_t = cudaError_t;               ///< status code of every runtime call
using gpuStream_t = cudaStream_t;             ///< an in-order queue of device work
using gpuEvent_t = cudaEvent_t;               ///< a marker in a stream
using gpuDeviceProp_t = cudaDeviceProp;       ///< device properties
using gpuMemcpyKind = cudaMemcpyKind;         ///< direction of a copy
using gpuFuncAttributes = cudaFuncAttributes; ///< per-kernel resource usage

inline constexpr gpuError_t gpuSuccess = cudaSuccess;
inline constexpr gpuMemcpyKind gpuMemcpyHostToDevice = cudaMemcpyHostToDevice;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
inline constexpr gpuMemcpyKind gpuMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
inline constexpr unsigned gpuStreamNonBlocking = cudaStreamNonBlocking;
inline constexpr unsigned gpuEventDisableTiming = cudaEventDisableTiming;
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
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventQuery cudaEventQuery

/// Name of the runtime in messages.
inline constexpr const char* kGpuRuntimeName = "CUDA";

/// Whether the Hopper tensor memory accelerator (TMA) can be used: CUtensorMap, bulk tensor
/// copies and transaction-counting mbarriers (kernels/cuda/tensor_map.hpp).
#define MINIMOD_GPU_TENSOR_COPY 1

#endif
