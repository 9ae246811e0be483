#pragma once
/// Launch-grid arithmetic shared by the CUDA kernel families (host code).

#include <limits>
#include <string>

namespace minimod::gpu {

/// Largest grid extents a launch may have: 2^31 - 1 blocks along x, 65535 along y and z.
inline constexpr long long kMaxGridX = std::numeric_limits<int>::max();
inline constexpr long long kMaxGridYZ = 65535;

/// a / b rounded up, for positive b.
constexpr long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
}

/// Empty when a grid of gx x gy x gz blocks can be launched; otherwise why not (for can_run).
inline std::string launch_grid_limit(long long gx, long long gy, long long gz = 1) {
  if (gx <= kMaxGridX && gy <= kMaxGridYZ && gz <= kMaxGridYZ) return {};
  return "the region needs a launch grid of " + std::to_string(gx) + "x" + std::to_string(gy) +
         "x" + std::to_string(gz) + " blocks; x is limited to 2147483647, y and z to 65535";
}

/// launch_grid_limit for a box cut into Dx x Dy x Dz tiles, one block a tile.
inline std::string tile_grid_limit(long long nx, long long ny, long long nz, int dx, int dy,
                                   int dz) {
  return launch_grid_limit(ceil_div(nx, dx), ceil_div(ny, dy), ceil_div(nz, dz));
}

} // namespace minimod::gpu
