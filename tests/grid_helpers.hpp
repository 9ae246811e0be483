#pragma once
/// Grids and layer widths for tests, written as one call.

#include "core/field_layout.hpp"
#include "core/grid.hpp"

#include <cstddef>
#include <random>
#include <vector>

namespace minimod::test_support {

/// A grid of nx x ny x nz points, spacings dx, dy, dz (m) and origin (ox, oy, oz).
inline Grid make_grid(int nx, int ny, int nz, double dx, double dy, double dz, double ox = 0,
                      double oy = 0, double oz = 0) {
  Grid g;
  g.nx = nx;
  g.ny = ny;
  g.nz = nz;
  g.dx = dx;
  g.dy = dy;
  g.dz = dz;
  g.ox = ox;
  g.oy = oy;
  g.oz = oz;
  return g;
}

/// Absorbing-layer widths in points: low and high side of x, then y, then z.
inline LayerWidths widths(int xl, int xh, int yl, int yh, int zl, int zh) {
  LayerWidths w;
  w.x_lo = xl;
  w.x_hi = xh;
  w.y_lo = yl;
  w.y_hi = yh;
  w.z_lo = zl;
  w.z_hi = zh;
  return w;
}

/// Random values in [lo, hi) at the grid points of a padded field (the ghosts stay zero).
inline std::vector<float> random_field(const FieldLayout& l, std::mt19937& rng, float lo,
                                       float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> f(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j)
      for (int i = 0; i < l.nx; ++i)
        f[static_cast<std::size_t>(l.index(i, j, k))] = d(rng);
  return f;
}

} // namespace minimod::test_support
