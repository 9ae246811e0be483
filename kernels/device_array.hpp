#pragma once
/// What the GPU does with a velocity model handed over in GPU memory (io/memory_file.hpp,
/// DeviceArray; docs/python.md, "GPU arrays"): its values are checked, ranged and summed on the
/// device when it is registered, the medium (c dt)^2 is built from it in the backend's padded
/// layout on the device, and the few values the host needs (the sources' taps, the decimated
/// /model) are gathered on the device and copied back alone. The host never holds the model.
/// In a build without a GPU backend each function throws RuntimeFailure saying so.

#include "core/field_layout.hpp"
#include "io/memory_file.hpp"

#include <cstdint>
#include <vector>

namespace minimod {

/// Fill `array`'s vmin, vmax, first_bad, bad_value and checksum from its values (float32, a
/// float64 value rounded to nearest as a model file's is), on its device.
void scan_device_array(DeviceArray& array);

/// (c dt)^2 of every model point into `medium` (device memory of `layout.size` floats, on the
/// array's device, ghosts and padding set to zero), in the order of the host's medium
/// (solver/problem.cpp): float((double(c) dt)^2). Enqueued on `stream` (a gpuStream_t).
void device_array_medium(const DeviceArray& array, double dt, const FieldLayout& layout,
                         float* medium, void* stream);

/// The values at x-fastest model indices `points`, gathered on the device.
std::vector<float> device_array_values(const DeviceArray& array,
                                       const std::vector<std::int64_t>& points);

} // namespace minimod
