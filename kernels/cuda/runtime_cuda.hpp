#pragma once
/// The CUDA (NVIDIA) side of kernels/gpu/gpu_runtime.hpp: the `gpu*` names of the runtime API as
/// CUDA's, and the NVIDIA-only copy engines. Included by gpu_runtime.hpp alone, which picks it
/// unless compiled for AMD.

#include <cuda.h>      // CUtensorMap (no driver-API calls are linked; tensor_map.cpp looks one up)
#include <cuda_fp16.h> // binary16 conversions of the float16 storage (kernels/gpu/half_kernels.cuh)
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
/// copies and transaction-counting mbarriers (kernels/gpu/tensor_map.hpp).
#define MINIMOD_GPU_TENSOR_COPY 1
