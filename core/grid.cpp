#include "core/grid.hpp"

#include <stdexcept>
#include <string>

namespace minimod {

const char* region_name(RegionId id) {
  switch (id) {
  case RegionId::Inner:
    return "inner";
  case RegionId::Top:
    return "top";
  case RegionId::Bottom:
    return "bottom";
  case RegionId::Front:
    return "front";
  case RegionId::Back:
    return "back";
  case RegionId::Left:
    return "left";
  case RegionId::Right:
    return "right";
  }
  return "?";
}

std::array<Region, kRegionCount> make_regions(const Grid& g, const LayerWidths& w) {
  const int ix0 = w.x_lo, ix1 = g.nx - w.x_hi;
  const int iy0 = w.y_lo, iy1 = g.ny - w.y_hi;
  const int iz0 = w.z_lo, iz1 = g.nz - w.z_hi;
  if (ix1 <= ix0 || iy1 <= iy0 || iz1 <= iz0 || w.x_lo < 0 || w.x_hi < 0 || w.y_lo < 0 ||
      w.y_hi < 0 || w.z_lo < 0 || w.z_hi < 0) {
    throw std::invalid_argument(
        "absorbing layers (" + std::to_string(w.x_lo) + "," + std::to_string(w.x_hi) + " / " +
        std::to_string(w.y_lo) + "," + std::to_string(w.y_hi) + " / " + std::to_string(w.z_lo) +
        "," + std::to_string(w.z_hi) + " points) leave no inner region in a " +
        std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz) + " grid");
  }
  std::array<Region, kRegionCount> r;
  auto set = [&](RegionId id, Box b) { r[static_cast<int>(id)] = Region{id, b}; };
  set(RegionId::Inner, Box{ix0, ix1, iy0, iy1, iz0, iz1});
  // Top and bottom: whole xy planes.
  set(RegionId::Top, Box{0, g.nx, 0, g.ny, 0, iz0});
  set(RegionId::Bottom, Box{0, g.nx, 0, g.ny, iz1, g.nz});
  // Front and back: y slabs of the remaining z range, full x.
  set(RegionId::Front, Box{0, g.nx, 0, iy0, iz0, iz1});
  set(RegionId::Back, Box{0, g.nx, iy1, g.ny, iz0, iz1});
  // Left and right: x slabs of what is left.
  set(RegionId::Left, Box{0, ix0, iy0, iy1, iz0, iz1});
  set(RegionId::Right, Box{ix1, g.nx, iy0, iy1, iz0, iz1});
  return r;
}

} // namespace minimod
