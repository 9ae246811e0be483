/// Tensor maps for the Hopper tensor memory accelerator (tensor_map.hpp).

#include "kernels/gpu/tensor_map.hpp"

#include "core/errors.hpp"
#include "kernels/gpu/gpu_check.hpp"

#if MINIMOD_GPU_TENSOR_COPY

#include <cudaTypedefs.h>

#include <cstdint>
#include <sstream>

namespace minimod::gpu {
namespace {

/// The driver's cuTensorMapEncodeTiled, looked up through the runtime: linking the driver
/// library itself would keep the program from starting on machines without a GPU driver.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    MINIMOD_GPU_CHECK_WHAT(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                            cudaEnableDefault, &found),
                           "looking up the driver's cuTensorMapEncodeTiled");
#else
    MINIMOD_GPU_CHECK_WHAT(
        cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &found),
        "looking up the driver's cuTensorMapEncodeTiled");
#endif
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw RuntimeFailure("the CUDA driver has no cuTensorMapEncodeTiled (tensor copies need a "
                           "driver for CUDA 12.0 or newer)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

} // namespace

CUtensorMap plane_tile_map(const float* field, const FieldLayout& l, int w, int h,
                           const std::string& what) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(l.pitch),
                              static_cast<cuuint64_t>(l.ny + 2 * kHalo),
                              static_cast<cuuint64_t>(l.nz + 2 * kHalo)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(l.pitch) * sizeof(float),
                                 static_cast<cuuint64_t>(l.plane) * sizeof(float)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(w), static_cast<cuuint32_t>(h), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  CUtensorMap map{};
  const CUresult r = tensor_map_encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<float*>(field), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::ostringstream msg;
    msg << "cuTensorMapEncodeTiled refused the tensor map of " << what << " (CUDA driver error "
        << static_cast<int>(r) << "): field at " << static_cast<const void*>(field)
        << ", padded extents " << dims[0] << " x " << dims[1] << " x " << dims[2]
        << " floats, row pitch " << strides[0] << " B, plane " << strides[1] << " B, box " << w
        << " x " << h << " x 1 (the address and pitches must be multiples of 16 bytes, the box "
        << "row too, and box sides at most 256)";
    throw RuntimeFailure(msg.str());
  }
  return map;
}

std::string tensor_copy_unavailable(const void* kernel, const std::string& name) {
  int device = 0, major = 0, minor = 0;
  if (gpuGetDevice(&device) != gpuSuccess ||
      gpuDeviceGetAttribute(&major, gpuDevAttrComputeCapabilityMajor, device) != gpuSuccess ||
      gpuDeviceGetAttribute(&minor, gpuDevAttrComputeCapabilityMinor, device) != gpuSuccess) {
    (void)gpuGetLastError();
    return {};
  }
  if (major < 9)
    return name +
           " copies planes with the tensor memory accelerator, which needs a GPU of "
           "compute capability 9.0 or newer; device " +
           std::to_string(device) + " is " + std::to_string(major) + "." + std::to_string(minor);
  gpuFuncAttributes attr{};
  if (const gpuError_t err = gpuFuncGetAttributes(&attr, kernel); err != gpuSuccess) {
    (void)gpuGetLastError();
    return name + " has no code this device can load (" + error_text(err) + ")";
  }
  if (attr.ptxVersion < 90)
    return name + " was compiled for compute_" + std::to_string(attr.ptxVersion) +
           ", without the tensor copies (build with CMAKE_CUDA_ARCHITECTURES=90 or newer)";
  return {};
}

} // namespace minimod::gpu

#endif
