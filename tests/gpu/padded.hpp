#pragma once
/// The padded-field loops of the GPU tests that launch a kernel once per region on fields
/// poisoned with NaN outside the grid, and check every slot afterwards.

#include "core/field_layout.hpp"
#include "kernels/stencil_K.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace minimod::test_support {

/// f(i, j, k) for every padded slot of layout l, in grid coordinates (ghosts and padding
/// included), z slowest.
template <class F> void for_each_padded(const FieldLayout& l, F&& f) {
  for (int k = -kHalo; k < l.nz + kHalo; ++k)
    for (int j = -kHalo; j < l.ny + kHalo; ++j)
      for (int i = -l.x_offset; i < l.pitch - l.x_offset; ++i)
        f(i, j, k);
}

/// An array of layout l with value(i, j, k) in every padded slot and `beyond` in any slot beyond
/// them.
template <class T, class F>
void fill_padded(const FieldLayout& l, std::vector<T>& field, F&& value, T beyond) {
  field.assign(static_cast<std::size_t>(l.size), beyond);
  for_each_padded(l, [&](int i, int j, int k) {
    field[static_cast<std::size_t>(l.index(i, j, k))] = value(i, j, k);
  });
}
/// A field of layout l with value(i, j, k) in every padded slot (NaN in any slot beyond them).
template <class F> void fill_padded(const FieldLayout& l, std::vector<float>& field, F&& value) {
  fill_padded(l, field, value, std::numeric_limits<float>::quiet_NaN());
}

/// Whether a kernel's `got` matches the host's `want` at one slot: NaN where want is NaN (nothing
/// written there), else finite and within rel_tol * max(1, |want|).
inline bool matches_slot(float got, float want, float rel_tol) {
  if (std::isnan(want)) return std::isnan(got);
  return std::isfinite(got) && std::abs(got - want) <= rel_tol * std::max(1.0f, std::abs(want));
}

} // namespace minimod::test_support
