#include "kernels/gpu/half_host.hpp"

#include "core/precision.hpp"

#include <cstddef>

namespace minimod {

void unpad_half_field(const FieldLayout& l, const std::uint16_t* padded, float inv_scale,
                      float* dense) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < l.nz; ++k) {
    for (int j = 0; j < l.ny; ++j) {
      const std::uint16_t* src = padded + l.index(0, j, k);
      float* dst = dense + (static_cast<std::size_t>(k) * l.ny + j) * l.nx;
      for (int i = 0; i < l.nx; ++i)
        dst[i] = half_to_float(src[i]) * inv_scale;
    }
  }
}

} // namespace minimod
