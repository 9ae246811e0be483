#pragma once
/// The float16 storage's device code (core/precision.hpp, IsoFields16): binary16 conversions, and a
/// one-thread-a-point float16 update of either region kind (the layer regions of every float16 run,
/// and gmem_3d_f4's inner pieces; st_reg_shft_25d's inner form is in streaming_25d_kernels.cuh). A
/// point reads u^{n-1} as u^n - d^n, updates in float32 with stencil_K.hpp and stores u^{n+1}, the
/// step u^{n+1} - u^n and, in Minimod's layer, phi^{n+1}, each rounded to binary16.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "core/precision.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/launch_limits.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <string>

namespace minimod::gpu {

/// The float of binary16 bits (exact), through the device's conversion instruction.
__device__ __forceinline__ float half_bits_to_float(std::uint16_t h) {
  return __half2float(__ushort_as_half(h));
}

/// x rounded to binary16, nearest with ties to even (core/precision.hpp's float_to_half).
__device__ __forceinline__ std::uint16_t float_to_half_bits(float x) {
  return __half_as_ushort(__float2half_rn(x));
}

/// binary16 value at `at` through the read-only path.
__device__ __forceinline__ float load_half_ro(const std::uint16_t* __restrict__ f,
                                              std::int64_t at) {
  return half_bits_to_float(__ldg(f + at));
}

/// Queue the float16 update of `region` (either kind) one thread a point, on `stream`.
void launch_half_points(const IsoFields16& f, const FieldLayout& layout, const StencilCoefs& coefs,
                        const Region& region, gpuStream_t stream, const std::string& name);

} // namespace minimod::gpu
