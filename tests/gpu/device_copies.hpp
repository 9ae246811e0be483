#pragma once
/// Host <-> device copies of whole arrays for the GPU tests that launch kernels directly (the
/// one-launch tests of the acoustic and TTI kernels). CUDA builds only.

#include "kernels/gpu/device_buffer.hpp"

#include <cstddef>
#include <vector>

namespace minimod::test_support {

/// A device copy of host array h (an empty buffer for an empty h).
template <class T> gpu::DeviceBuffer upload_copy(const std::vector<T>& h, const char* what) {
  if (h.empty()) return {};
  const std::size_t bytes = h.size() * sizeof(T);
  gpu::DeviceBuffer b(bytes, what);
  b.upload(h.data(), bytes);
  return b;
}

/// A device float array back on the host.
inline std::vector<float> download_floats(const gpu::DeviceBuffer& b) {
  std::vector<float> h(b.bytes() / sizeof(float));
  b.download(h.data(), h.size() * sizeof(float));
  return h;
}

} // namespace minimod::test_support
