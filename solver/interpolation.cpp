#include "solver/interpolation.hpp"

#include "solver/kaiser.hpp"

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

constexpr double kPi = 3.14159265358979323846;

/// One axis of the windowed sinc: node indices and weights (normalised to sum to one).
void sinc_axis(double x, double origin, double h, int n, int radius, double beta,
               std::vector<int>* nodes, std::vector<double>* weights) {
  int i0;
  double frac;
  axis_cell(x, origin, h, n, &i0, &frac);
  nodes->clear();
  weights->clear();
  if (frac == 0) { // on a node: sinc vanishes at every other node
    nodes->push_back(i0);
    weights->push_back(1.0);
    return;
  }
  const double f = i0 + frac;
  double sum = 0;
  for (int i = i0 - radius + 1; i <= i0 + radius; ++i) {
    const double d = i - f;
    const double s = std::sin(kPi * d) / (kPi * d);
    const double w = kaiser_window(d / radius, beta);
    nodes->push_back(i);
    weights->push_back(s * w);
    sum += s * w;
  }
  for (double& w : *weights)
    w /= sum;
}

} // namespace

std::vector<GridTap> sinc_taps(const Grid& g, const Vec3& p, bool free_surface, int radius,
                               double beta) {
  std::vector<int> ni, nj, nk;
  std::vector<double> wi, wj, wk;
  sinc_axis(p[0], g.ox, g.dx, g.nx, radius, beta, &ni, &wi);
  sinc_axis(p[1], g.oy, g.dy, g.ny, radius, beta, &nj, &wj);
  sinc_axis(p[2], g.oz, g.dz, g.nz, radius, beta, &nk, &wk);
  std::vector<GridTap> taps;
  for (std::size_t c = 0; c < nk.size(); ++c) {
    int k = nk[c];
    double wz = wk[c];
    if (free_surface && k < 0) { // antisymmetric image across the surface
      k = -k;
      wz = -wz;
    }
    if (k < 0 || k >= g.nz || (free_surface && k == 0)) continue; // ghost, or the zero surface
    for (std::size_t b = 0; b < nj.size(); ++b) {
      if (nj[b] < 0 || nj[b] >= g.ny) continue;
      for (std::size_t a = 0; a < ni.size(); ++a) {
        if (ni[a] < 0 || ni[a] >= g.nx) continue;
        const double w = wi[a] * wj[b] * wz;
        if (w == 0) continue;
        // Mirrored taps may land on a node already listed: merge them.
        bool merged = false;
        if (free_surface) {
          for (auto& t : taps) {
            if (t.i == ni[a] && t.j == nj[b] && t.k == k) {
              t.weight += w;
              merged = true;
              break;
            }
          }
        }
        if (!merged) taps.push_back(GridTap{ni[a], nj[b], k, w});
      }
    }
  }
  return taps;
}

std::vector<GridTap> point_taps(const Grid& g, const Vec3& p, Interpolation kind,
                                bool free_surface) {
  return kind == Interpolation::Sinc ? sinc_taps(g, p, free_surface) : trilinear_taps(g, p);
}

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
