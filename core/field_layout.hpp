#pragma once
/// Memory layout shared by every backend: x fastest, a zero ghost of kHalo points on every face,
/// rows padded so that the first inner-region point of every row sits on a 128-byte boundary.

#include "core/grid.hpp"
#include "core/host_device.hpp"

#include <cstddef>
#include <cstdint>

namespace minimod {

/// Floats per 128-byte cache line.
inline constexpr int kAlignFloats = 32;

/// Index arithmetic of a padded field. Plain data so that it can be passed to kernels by value.
struct FieldLayout {
  int nx = 0, ny = 0, nz = 0; ///< grid points per axis (no ghosts)
  int x_offset = 0;           ///< position of x = 0 inside a padded row (>= kHalo)
  int pitch = 0;              ///< floats per padded row (multiple of kAlignFloats)
  std::int64_t plane = 0;     ///< floats per padded xy plane: pitch * (ny + 2 kHalo)
  std::int64_t size = 0;      ///< floats in the whole padded field: plane * (nz + 2 kHalo)

  /// Linear index of grid point (i, j, k); valid for -kHalo <= i < nx + kHalo, likewise j, k.
  MINIMOD_HD std::int64_t index(int i, int j, int k) const {
    return static_cast<std::int64_t>(k + kHalo) * plane +
           static_cast<std::int64_t>(j + kHalo) * pitch + (i + x_offset);
  }
};

/// Layout for an nx x ny x nz grid whose point x = align_x is 128-byte aligned in every row
/// (align_x is the first x of the inner region, so the inner kernel's rows start on a line).
inline FieldLayout make_field_layout(int nx, int ny, int nz, int align_x) {
  FieldLayout l;
  l.nx = nx;
  l.ny = ny;
  l.nz = nz;
  // Smallest offset >= kHalo with (offset + align_x) % 32 == 0.
  int off = (kAlignFloats - (align_x % kAlignFloats)) % kAlignFloats;
  while (off < kHalo)
    off += kAlignFloats;
  l.x_offset = off;
  const int row = off + nx + kHalo;
  l.pitch = ((row + kAlignFloats - 1) / kAlignFloats) * kAlignFloats;
  l.plane = static_cast<std::int64_t>(l.pitch) * (ny + 2 * kHalo);
  l.size = l.plane * (nz + 2 * kHalo);
  return l;
}

} // namespace minimod
