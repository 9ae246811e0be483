#pragma once
/// Host-side helpers of the GPU backend's float16 storage (core/precision.hpp), in a C++ file of
/// their own so that they run with the host's OpenMP threads.

#include "core/field_layout.hpp"

#include <cstdint>

namespace minimod {

/// The grid points of a padded binary16 field (a float16 run's u, times its field scale), dense
/// and x fastest, as float32 values times `inv_scale` (exact: a power of two).
void unpad_half_field(const FieldLayout& l, const std::uint16_t* padded, float inv_scale,
                      float* dense);

} // namespace minimod
