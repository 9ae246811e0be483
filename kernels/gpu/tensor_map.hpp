#pragma once
/// Host side of the Hopper tensor memory accelerator (TMA): tensor maps over the padded fields,
/// and whether a kernel can issue tensor copies on the current device. The device side is
/// kernels/gpu/tensor_copy.cuh.

#include "core/field_layout.hpp"
#include "kernels/gpu/gpu_runtime.hpp"

#include <string>

namespace minimod::gpu {

#if MINIMOD_GPU_TENSOR_COPY

/// A tensor map that copies boxes of w x h x 1 floats out of `field`, a padded field of layout
/// `l`. Its coordinates are the padded indices (x from the row's start, y and z from the first
/// ghost row and plane); boxes reaching past the padded field are filled with zeros. `what`
/// names the field in errors. Throws RuntimeFailure when the driver has no tensor maps or
/// refuses this one (the field's address and the row pitch must be multiples of 16 bytes, w * 4
/// too, and w, h at most 256). A copy's x must be a multiple of 4 (16 bytes): on the H100 any other
/// start faults with "an illegal instruction was encountered".
CUtensorMap plane_tile_map(const float* field, const FieldLayout& l, int w, int h,
                           const std::string& what);

/// Empty when `kernel` (named `name` in the answer) can issue tensor copies on the current
/// device: compute capability 9.0 or newer, and the kernel compiled for it. Otherwise why not.
/// Also empty when no device can be queried: the launch reports that.
std::string tensor_copy_unavailable(const void* kernel, const std::string& name);

#endif

} // namespace minimod::gpu
