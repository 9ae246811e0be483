#include "solver/interpolation.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace minimod {
namespace {

/// Lower index and fractional offset of coordinate x along an axis of n points.
void axis_cell(double x, double origin, double h, int n, int* i0, double* frac) {
  const double f = (x - origin) / h;
  constexpr double kSnap = 1e-9; // positions within a nanometre-scale fraction snap to the node
  if (f < -kSnap || f > (n - 1) + kSnap) {
    throw std::out_of_range("position " + std::to_string(x) + " m is outside the grid [" +
                            std::to_string(origin) + ", " + std::to_string(origin + (n - 1) * h) +
                            "] m");
  }
  int i = static_cast<int>(std::floor(f + kSnap));
  double w = f - i;
  if (std::abs(w) < kSnap) w = 0;
  if (i >= n - 1) {
    i = n - 1;
    w = 0;
  }
  if (i < 0) i = 0;
  *i0 = i;
  *frac = w;
}

} // namespace

std::vector<GridTap> trilinear_taps(const Grid& g, const Vec3& p) {
  int i0, j0, k0;
  double fx, fy, fz;
  axis_cell(p[0], g.ox, g.dx, g.nx, &i0, &fx);
  axis_cell(p[1], g.oy, g.dy, g.ny, &j0, &fy);
  axis_cell(p[2], g.oz, g.dz, g.nz, &k0, &fz);
  std::vector<GridTap> taps;
  for (int c = 0; c < 8; ++c) {
    const int di = c & 1, dj = (c >> 1) & 1, dk = (c >> 2) & 1;
    const double w = (di ? fx : 1 - fx) * (dj ? fy : 1 - fy) * (dk ? fz : 1 - fz);
    if (w == 0) continue;
    taps.push_back(GridTap{i0 + di, j0 + dj, k0 + dk, w});
  }
  return taps;
}

} // namespace minimod
