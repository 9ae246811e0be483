#pragma once
/// A small, self-contained builder of AcousticProblems for tests (header-only, host C++): a
/// velocity that varies in space, dt from the Gershgorin bound, the Minimod PML eta of
/// docs/physics.md section 3, a Ricker source with physical weights at an off-grid point and
/// receivers with trilinear taps. It computes everything from docs/physics.md itself rather than
/// through the solver, so that a test built on it checks the backends, not the solver's problem
/// setup.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/backend.hpp"
#include "kernels/stencil_K.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace minimod::test_support {

/// What to build. Defaults: the GPU tests' 131 x 97 x 83 grid, 8-point layers, 200 steps.
struct ProblemSpec {
  int nx = 131, ny = 97, nz = 83; ///< grid points, layers included
  double h = 10.0;                ///< dx = dy = dz in metres
  int n_layer = 8;                ///< absorbing-layer width on every face (0: none)
  int steps = 200;                ///< time steps
  double peak_hz = 15.0;          ///< Ricker peak frequency
  double cfl = 0.8;               ///< dt = cfl * (the Gershgorin bound at cfl = 1)
  int random_receivers = 4;       ///< receivers at random places, besides the 6 placed ones
  std::uint32_t seed = 20240611;  ///< seed of every random choice
  bool eta_profiles = false;      ///< also set eta's 1D profiles (eta_axes), as the solver does
};

/// Velocity in m/s at grid point (i, j, k): depth gradient, a smooth lateral wobble and a little
/// noise (`noise` in [-1, 1]), so that no two neighbours share vp2dt2.
inline double test_velocity(const ProblemSpec& s, int i, int j, int k, double noise) {
  constexpr double kPi = 3.14159265358979323846;
  const double depth = static_cast<double>(k) / std::max(1, s.nz - 1);
  const double wobble = std::sin(2.0 * kPi * i / s.nx) * std::cos(2.0 * kPi * j / s.ny);
  return 1500.0 + 800.0 * depth + 150.0 * wobble + 40.0 * noise;
}

/// Stable dt (docs/physics.md section 2): 2 cfl / (vmax sqrt(sum_axis (|c0| + 2 sum |c_m|) / h^2)).
inline double gershgorin_dt(const Grid& g, double vmax, double cfl) {
  double row = std::abs(kLaplacianWeights[0]);
  for (int m = 1; m <= kHalo; ++m)
    row += 2.0 * std::abs(kLaplacianWeights[m]);
  double sum = 0.0;
  for (int a = 0; a < 3; ++a)
    sum += row / (g.spacing(a) * g.spacing(a));
  return 2.0 * cfl / (vmax * std::sqrt(sum));
}

/// Ricker wavelet of peak frequency f at time t, delayed by t0.
inline double ricker(double t, double f, double t0) {
  constexpr double kPi = 3.14159265358979323846;
  const double a = kPi * kPi * f * f * (t - t0) * (t - t0);
  return (1.0 - 2.0 * a) * std::exp(-a);
}

/// Eta along one axis at index idx in [-1, n] (the ghost on either side included), for layers of
/// n_lo and n_hi points: A (d / n_face)^2 with d = 1 at the layer's inner edge, n_face at the
/// outermost point and n_face + 1 at the ghost; A = dt 3 vmax ln(1000) / (2 n_face h).
inline double eta_axis(int idx, int n, int n_lo, int n_hi, double h, double dt, double vmax) {
  auto profile = [&](int d, int width) {
    const double a = dt * 3.0 * vmax * std::log(1000.0) / (2.0 * width * h);
    const double r = static_cast<double>(d) / width;
    return a * r * r;
  };
  if (idx < n_lo) return n_lo > 0 ? profile(n_lo - idx, n_lo) : 0.0;
  if (idx >= n - n_hi) return n_hi > 0 ? profile(idx - (n - n_hi) + 1, n_hi) : 0.0;
  return 0.0;
}

/// Append one owner's trilinear taps at (x, y, z) metres (from the grid origin) to `table`; each
/// weight is the trilinear weight times scale(i, j, k). Throws std::out_of_range outside the grid.
template <class Scale>
void append_trilinear(const Grid& g, const FieldLayout& l, double x, double y, double z,
                      Scale scale, TapTable& table) {
  const double f[3] = {(x - g.ox) / g.dx, (y - g.oy) / g.dy, (z - g.oz) / g.dz};
  int base[3];
  double frac[3];
  for (int a = 0; a < 3; ++a) {
    if (!(f[a] >= 0.0 && f[a] <= g.extent(a) - 1))
      throw std::out_of_range("test position outside the grid");
    base[a] = std::min(static_cast<int>(std::floor(f[a])), g.extent(a) - 2);
    frac[a] = f[a] - base[a];
  }
  if (table.begin.empty()) table.begin.push_back(0);
  for (int c = 0; c < 2; ++c)
    for (int b = 0; b < 2; ++b)
      for (int a = 0; a < 2; ++a) {
        const double w = (a ? frac[0] : 1.0 - frac[0]) * (b ? frac[1] : 1.0 - frac[1]) *
                         (c ? frac[2] : 1.0 - frac[2]);
        const int i = base[0] + a, j = base[1] + b, k = base[2] + c;
        table.index.push_back(l.index(i, j, k));
        table.weight.push_back(static_cast<float>(w * scale(i, j, k)));
      }
  table.begin.push_back(static_cast<std::int64_t>(table.index.size()));
}

/// The frame of the problem described by `s`: grid, layer widths, regions, layout, coefficients,
/// step count (no medium, dt, layer damping or taps).
inline AcousticProblem problem_frame(const ProblemSpec& s) {
  AcousticProblem p;
  p.grid.nx = s.nx;
  p.grid.ny = s.ny;
  p.grid.nz = s.nz;
  p.grid.dx = p.grid.dy = p.grid.dz = s.h;
  p.layer = LayerWidths{s.n_layer, s.n_layer, s.n_layer, s.n_layer, s.n_layer, s.n_layer};
  p.regions = make_regions(p.grid, p.layer);
  p.layout = make_field_layout(s.nx, s.ny, s.nz, p.layer.x_lo);
  p.coefs = make_stencil_coefs(p.grid);
  p.steps = s.steps;
  return p;
}

/// The problem described by `s`.
inline AcousticProblem build_acoustic_problem(const ProblemSpec& s) {
  AcousticProblem p = problem_frame(s);
  const FieldLayout& l = p.layout;

  // Velocity, then dt from its maximum.
  std::mt19937 rng(s.seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> c(p.grid.points());
  double vmax = 0.0;
  for (int k = 0; k < s.nz; ++k)
    for (int j = 0; j < s.ny; ++j)
      for (int i = 0; i < s.nx; ++i) {
        const double v = test_velocity(s, i, j, k, unit(rng));
        c[(static_cast<std::size_t>(k) * s.ny + j) * s.nx + i] = v;
        vmax = std::max(vmax, v);
      }
  p.dt = gershgorin_dt(p.grid, vmax, s.cfl);

  p.vp2dt2.assign(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = 0; k < s.nz; ++k)
    for (int j = 0; j < s.ny; ++j)
      for (int i = 0; i < s.nx; ++i) {
        const double cdt = c[(static_cast<std::size_t>(k) * s.ny + j) * s.nx + i] * p.dt;
        p.vp2dt2[l.index(i, j, k)] = static_cast<float>(cdt * cdt);
      }

  // Eta on the grid and its one-point ghost ring; zero beyond.
  if (p.layer.any()) {
    p.eta.assign(static_cast<std::size_t>(l.size), 0.0f);
    for (int k = -1; k <= s.nz; ++k)
      for (int j = -1; j <= s.ny; ++j)
        for (int i = -1; i <= s.nx; ++i) {
          const double e = eta_axis(i, s.nx, p.layer.x_lo, p.layer.x_hi, s.h, p.dt, vmax) +
                           eta_axis(j, s.ny, p.layer.y_lo, p.layer.y_hi, s.h, p.dt, vmax) +
                           eta_axis(k, s.nz, p.layer.z_lo, p.layer.z_hi, s.h, p.dt, vmax);
          p.eta[l.index(i, j, k)] = static_cast<float>(e);
        }
    if (s.eta_profiles) {
      auto profile = [&](int n, int lo, int hi) {
        std::vector<double> out;
        for (int idx = -1; idx <= n; ++idx)
          out.push_back(eta_axis(idx, n, lo, hi, s.h, p.dt, vmax));
        return out;
      };
      p.eta_axes.x = profile(s.nx, p.layer.x_lo, p.layer.x_hi);
      p.eta_axes.y = profile(s.ny, p.layer.y_lo, p.layer.y_hi);
      p.eta_axes.z = profile(s.nz, p.layer.z_lo, p.layer.z_hi);
    }
  }

  // One Ricker source at an off-grid point, physical injection: vp2dt2 / (dx dy dz) per tap.
  const double xs = 0.41 * (s.nx - 1) * s.h + 0.37 * s.h;
  const double ys = 0.45 * (s.ny - 1) * s.h + 0.29 * s.h;
  const double zs = 0.30 * (s.nz - 1) * s.h + 0.61 * s.h;
  const double cell = s.h * s.h * s.h;
  append_trilinear(
      p.grid, l, xs, ys, zs,
      [&](int i, int j, int k) { return static_cast<double>(p.vp2dt2[l.index(i, j, k)]) / cell; },
      p.sources);
  p.source_samples.resize(static_cast<std::size_t>(s.steps));
  for (int n = 0; n < s.steps; ++n)
    p.source_samples[n] = static_cast<float>(ricker(n * p.dt, s.peak_hz, 1.5 / s.peak_hz));

  // Receivers: a line through the source, one in the top layer, the rest at random places.
  auto unit_weight = [](int, int, int) { return 1.0; };
  auto clamp_to = [&](double x, int axis) {
    return std::clamp(x, 0.0, (p.grid.extent(axis) - 1) * s.h);
  };
  for (const double dx_points : {-12.3, -5.6, 4.4, 11.7, 19.2})
    append_trilinear(p.grid, l, clamp_to(xs + dx_points * s.h, 0), ys, zs, unit_weight,
                     p.receivers);
  append_trilinear(p.grid, l, xs + 1.3 * s.h, ys - 2.2 * s.h, 0.45 * s.n_layer * s.h, unit_weight,
                   p.receivers);
  // The random ones within 25 points of the source, where the wave gets to in 200 steps.
  std::uniform_real_distribution<double> offset(-25.0 * s.h, 25.0 * s.h);
  for (int r = 0; r < s.random_receivers; ++r) {
    const double x = clamp_to(xs + offset(rng), 0);
    const double y = clamp_to(ys + offset(rng), 1);
    const double z = clamp_to(zs + offset(rng), 2);
    append_trilinear(p.grid, l, x, y, z, unit_weight, p.receivers);
  }
  return p;
}

} // namespace minimod::test_support
