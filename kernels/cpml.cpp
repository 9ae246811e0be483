#include "kernels/cpml.hpp"
#include "kernels/tti_cpml.hpp"

#include <cmath>
#include <stdexcept>

namespace minimod {

CpmlProfile make_cpml_profile(const Grid& grid, const LayerWidths& layer, double dt, double vmax,
                              const CpmlParams& params) {
  if (!(params.reflection > 0 && params.reflection < 1))
    throw std::invalid_argument("C-PML reflection " + std::to_string(params.reflection) +
                                " outside (0, 1)");
  if (!(params.power >= 0)) throw std::invalid_argument("C-PML power must be >= 0");
  if (!(params.alpha >= 0)) throw std::invalid_argument("C-PML alpha must be >= 0");
  if (!(params.kappa >= 1)) throw std::invalid_argument("C-PML kappa must be >= 1");
  if (!(dt > 0) || !(vmax > 0))
    throw std::invalid_argument("C-PML profile needs dt > 0 and vmax > 0");
  CpmlProfile p;
  p.params = params;
  for (int axis = 0; axis < 3; ++axis) {
    const int n = grid.extent(axis);
    const double h = grid.spacing(axis);
    auto& a = p.a[axis];
    auto& b = p.b[axis];
    auto& ik = p.ik[axis];
    auto& dik = p.dik[axis];
    a.assign(static_cast<std::size_t>(n), 0.0f);
    b.assign(static_cast<std::size_t>(n), 1.0f);
    ik.assign(static_cast<std::size_t>(n), 1.0f);
    dik.assign(static_cast<std::size_t>(n), 0.0f);
    for (int m = 0; m <= kHalo; ++m)
      p.d1[axis][m] = static_cast<float>(kFirstDerivativeWeights[m] / h);
    for (int i = 0; i < n; ++i) {
      // Depth into the layer in points, as Minimod's profile counts it: 1 at the first layer
      // point, the width at the outermost one; `sign` is d(depth)/d(index).
      int depth = 0, width = 0;
      double sign = 0;
      if (i < layer.on(axis, false)) {
        width = layer.on(axis, false);
        depth = width - i;
        sign = -1;
      } else if (i >= n - layer.on(axis, true)) {
        width = layer.on(axis, true);
        depth = i - (n - 1 - width);
        sign = 1;
      }
      if (width == 0) continue;
      const double r = static_cast<double>(depth) / width;
      const double length = width * h;
      const double d0 = -(params.power + 1) * vmax * std::log(params.reflection) / (2 * length);
      const double rp = std::pow(r, params.power);
      const double d = d0 * rp;
      const double al = params.alpha * (1 - r);
      const double kappa = 1 + (params.kappa - 1) * rp;
      const double bb = std::exp(-(d / kappa + al) * dt);
      const double aa = d > 0 ? d * (bb - 1) / (kappa * (d + kappa * al)) : 0.0;
      // d(1/kappa)/dx = -kappa' / kappa^2, kappa' = (kappa - 1) power r^(power - 1) dr/dx.
      const double dkappa =
          params.power > 0 && params.kappa != 1
              ? (params.kappa - 1) * params.power * std::pow(r, params.power - 1) * sign / length
              : 0.0;
      a[i] = static_cast<float>(aa);
      b[i] = static_cast<float>(bb);
      ik[i] = static_cast<float>(1 / kappa);
      dik[i] = static_cast<float>(-dkappa / (kappa * kappa));
    }
  }
  return p;
}

std::size_t cpml_slab_points(const Grid& grid, const LayerWidths& layer, int axis, bool hi,
                             int pad) {
  const int width = layer.on(axis, hi);
  const auto w = static_cast<std::size_t>(width == 0 ? 0 : width + 2 * pad);
  std::size_t cross = 1;
  for (int a = 0; a < 3; ++a)
    if (a != axis) cross *= static_cast<std::size_t>(grid.extent(a));
  return w * cross;
}

std::size_t cpml_memory_points(const Grid& grid, const LayerWidths& layer) {
  std::size_t n = 0;
  for (int axis = 0; axis < 3; ++axis)
    for (const bool hi : {false, true})
      n += cpml_slab_points(grid, layer, axis, hi, 0) +
           cpml_slab_points(grid, layer, axis, hi, kHalo);
  return n;
}

std::size_t cpml_device_floats(const Grid& grid, const LayerWidths& layer) {
  std::size_t psi = 0;
  for (int axis = 0; axis < 3; ++axis)
    for (const bool hi : {false, true})
      psi += cpml_slab_points(grid, layer, axis, hi, kHalo);
  return cpml_memory_points(grid, layer) + psi +
         (4 + kCpmlTaps) * static_cast<std::size_t>(grid.nx + grid.ny + grid.nz);
}

std::size_t tti_cpml_memory_points(const Grid& grid, const LayerWidths& layer) {
  std::size_t mix = 0;
  for (int axis = 0; axis < 3; ++axis)
    for (const bool hi : {false, true})
      mix += cpml_slab_points(grid, layer, axis, hi, 0) * kTtiCpmlMix;
  return 2 * cpml_memory_points(grid, layer) + mix;
}

std::vector<float> cpml_psi_taps(const CpmlProfile& profile, const LayerWidths& layer, int axis) {
  const int n = static_cast<int>(profile.a[static_cast<std::size_t>(axis)].size());
  const std::vector<float>& a = profile.a[static_cast<std::size_t>(axis)];
  const std::vector<float>& b = profile.b[static_cast<std::size_t>(axis)];
  const auto& d1 = profile.d1[static_cast<std::size_t>(axis)];
  const int lo = layer.on(axis, false), hi = layer.on(axis, true);
  const auto face = [&](int c) { return c >= 0 && c < lo ? 0 : (c >= n - hi && c < n ? 1 : -1); };
  std::vector<float> taps(static_cast<std::size_t>(n) * kCpmlTaps, 0.0f);
  for (int c = 0; c < n; ++c) {
    const int f = face(c);
    if (f < 0) continue;
    double t[kCpmlTaps] = {};
    for (int m = 1; m <= kHalo; ++m) {
      for (const int s : {1, -1}) {
        // +-w_m psi^n(q) at q = c + s m, with psi^n(q) = b(q) psi^(n-1)(q) + a(q) d_a u(q).
        const int q = c + s * m;
        if (face(q) != f) continue;
        const double wm = s * static_cast<double>(d1[static_cast<std::size_t>(m)]);
        t[4 * kHalo + 1 + (s > 0 ? 0 : kHalo) + m - 1] =
            static_cast<double>(d1[static_cast<std::size_t>(m)]) * b[static_cast<std::size_t>(q)];
        const double aq = a[static_cast<std::size_t>(q)];
        for (int mm = 1; mm <= kHalo; ++mm) {
          const double w = wm * aq * d1[static_cast<std::size_t>(mm)];
          t[2 * kHalo + s * m + mm] += w;
          t[2 * kHalo + s * m - mm] -= w;
        }
      }
    }
    for (int o = 0; o < kCpmlTaps; ++o)
      taps[static_cast<std::size_t>(c) * kCpmlTaps + static_cast<std::size_t>(o)] =
          static_cast<float>(t[o]);
  }
  return taps;
}

CpmlView make_cpml_view(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile) {
  CpmlView v;
  for (int axis = 0; axis < 3; ++axis) {
    v.n[axis] = grid.extent(axis);
    v.lo[axis] = layer.on(axis, false);
    v.hi[axis] = layer.on(axis, true);
    for (int m = 0; m <= kHalo; ++m)
      v.d1[axis][m] = profile.d1[axis][m];
    v.a[axis] = profile.a[axis].data();
    v.b[axis] = profile.b[axis].data();
    v.ik[axis] = profile.ik[axis].data();
    v.dik[axis] = profile.dik[axis].data();
  }
  return v;
}

} // namespace minimod
