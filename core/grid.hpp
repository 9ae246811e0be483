#pragma once
/// Grid geometry, absorbing-layer widths and the seven-region split of the seeds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace minimod {

/// Half-width of the 8th-order star stencil, and the zero ghost layer around every field.
inline constexpr int kHalo = 4;

/// The computational grid, absorbing layers included. Point (i, j, k) sits at
/// origin + (i*dx, j*dy, k*dz); z is depth, x is the fastest-varying index in memory.
struct Grid {
  int nx = 0, ny = 0, nz = 0;
  double dx = 0, dy = 0, dz = 0;
  double ox = 0, oy = 0, oz = 0;

  /// Number of grid points.
  std::size_t points() const {
    return static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny) *
           static_cast<std::size_t>(nz);
  }
  /// Spacing along axis a (0 = x, 1 = y, 2 = z).
  double spacing(int a) const { return a == 0 ? dx : (a == 1 ? dy : dz); }
  /// Extent along axis a.
  int extent(int a) const { return a == 0 ? nx : (a == 1 ? ny : nz); }
  /// Origin along axis a.
  double origin(int a) const { return a == 0 ? ox : (a == 1 ? oy : oz); }
};

/// Width in points of the absorbing layer on each of the six faces (0 = no layer on that face).
struct LayerWidths {
  int x_lo = 0, x_hi = 0; ///< left, right
  int y_lo = 0, y_hi = 0; ///< front, back
  int z_lo = 0, z_hi = 0; ///< top, bottom
  /// Width on the low (`hi == false`) or high face of axis a.
  int on(int a, bool hi) const {
    if (a == 0) return hi ? x_hi : x_lo;
    if (a == 1) return hi ? y_hi : y_lo;
    return hi ? z_hi : z_lo;
  }
  bool any() const { return x_lo || x_hi || y_lo || y_hi || z_lo || z_hi; }
};

/// The formulation of the absorbing layer (docs/physics.md): Minimod's damping with its phi
/// term, or the convolutional PML (kernels/cpml.hpp).
enum class BoundaryType : int { Minimod = 0, Cpml = 1 };
/// "minimod" / "cpml".
inline const char* boundary_type_name(BoundaryType t) {
  return t == BoundaryType::Cpml ? "cpml" : "minimod";
}

/// Half-open box [x0, x1) x [y0, y1) x [z0, z1) of grid points.
struct Box {
  int x0 = 0, x1 = 0, y0 = 0, y1 = 0, z0 = 0, z1 = 0;
  int nx() const { return x1 - x0; }
  int ny() const { return y1 - y0; }
  int nz() const { return z1 - z0; }
  bool empty() const { return x1 <= x0 || y1 <= y0 || z1 <= z0; }
  std::size_t points() const {
    return empty() ? 0
                   : static_cast<std::size_t>(nx()) * static_cast<std::size_t>(ny()) *
                         static_cast<std::size_t>(nz());
  }
  bool contains(int i, int j, int k) const {
    return i >= x0 && i < x1 && j >= y0 && j < y1 && k >= z0 && k < z1;
  }
};

/// The seven regions of the seeds' seven-domain decomposition.
enum class RegionId : int { Inner = 0, Top, Bottom, Front, Back, Left, Right };
inline constexpr int kRegionCount = 7;

/// Whether a region applies the plain update or the absorbing-layer update.
enum class RegionKind : int { Inner = 0, Layer = 1 };

/// User-facing name of a region ("inner", "top", ...).
const char* region_name(RegionId id);
/// Kind of update a region applies.
inline RegionKind region_kind(RegionId id) {
  return id == RegionId::Inner ? RegionKind::Inner : RegionKind::Layer;
}

/// One region of the split: its box (possibly empty) and identity.
struct Region {
  RegionId id = RegionId::Inner;
  Box box;
  RegionKind kind() const { return region_kind(id); }
};

/// The seven regions in RegionId order. Top/bottom take whole xy planes; front/back the y slabs of
/// the remaining z range; left/right the x slabs of what is left. Every grid point lies in exactly
/// one region. Throws std::invalid_argument when the layers leave no inner region.
std::array<Region, kRegionCount> make_regions(const Grid& grid, const LayerWidths& layer);

/// Calls f(i, j, k) for the points of the layer regions, region by region, each in memory order
/// (x fastest), until f returns true; returns whether it did.
template <class F> bool any_layer_point(const std::array<Region, kRegionCount>& regions, F&& f) {
  for (const Region& r : regions) {
    if (r.kind() != RegionKind::Layer || r.box.empty()) continue;
    const Box& b = r.box;
    for (int k = b.z0; k < b.z1; ++k)
      for (int j = b.y0; j < b.y1; ++j)
        for (int i = b.x0; i < b.x1; ++i)
          if (f(i, j, k)) return true;
  }
  return false;
}

} // namespace minimod
