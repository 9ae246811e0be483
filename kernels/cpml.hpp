#pragma once
/// The convolutional PML (C-PML) of the second-order scheme (docs/physics.md, "C-PML"): its
/// profile along each axis, the compact storage of its memory variables (the layer slabs of each
/// axis only), and the per-point math shared by the CPU reference and the GPU kernels.
///
/// Each axis a is stretched by s_a = kappa_a + d_a / (alpha_a + i omega), and the second
/// derivative becomes d~_aa u = (1/s_a) d_a ((1/s_a) d_a u). The inverse stretching is a
/// multiplication by 1/kappa plus a recursive convolution (Komatitsch & Martin 2007):
///   (1/s) f  ->  f / kappa + psi,   psi^n = b psi^(n-1) + a f^n,
///   b = exp(-(d / kappa + alpha) dt),   a = d (b - 1) / (kappa (d + kappa alpha)).
/// Applied twice (Pasalic & McGarry 2010, second-order form):
///   psi_a  = conv(d_a u)                          memory of the first derivative
///   G_a    = (1/kappa) d_aa u + (1/kappa)' d_a u + d_a psi_a
///   zeta_a = conv(G_a)
///   d~_aa u = G_a / kappa + zeta_a
/// psi_a is updated for every point of the axis' slabs first (cpml memory pass), because G_a
/// reads it at the stencil's neighbours along a; the layer update then reads psi_a, updates zeta_a
/// at its point and steps u with sum_a d~_aa u (plain d_aa u on axes whose slabs the point is not
/// in). There is no phi and no eta: the memory variables carry all of the absorption.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "core/host_device.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minimod {

/// Unit-spacing weights of the 8th-order first derivative: d1..d4 (index 0 unused).
inline constexpr double kFirstDerivativeWeights[kHalo + 1] = {0.0, 4.0 / 5.0, -1.0 / 5.0,
                                                              4.0 / 105.0, -1.0 / 280.0};

/// The C-PML profile's parameters (survey `boundary:`; docs/physics.md for the defaults). With r
/// the depth into the layer over its width (0 at the inner edge, 1 at the outer face):
///   d(r) = d0 r^power, d0 = -(power + 1) vmax ln(reflection) / (2 width h)
///   alpha(r) = alpha (1 - r),  kappa(r) = 1 + (kappa - 1) r^power.
struct CpmlParams {
  double reflection = 1e-4; ///< the theoretical normal-incidence reflection that sets d0
  double power = 2;         ///< grading exponent of d and kappa
  double alpha = 0;         ///< frequency shift at the inner edge (1/s)
  double kappa = 1;         ///< real stretching at the outer face (>= 1)
};

/// What a backend needs to run a C-PML: the coefficients of each axis, one value per grid index
/// along it (zero a, b outside its slabs), and the first-derivative weights over the spacing.
struct CpmlProfile {
  CpmlParams params;
  std::array<std::vector<float>, 3> a, b, ik, dik;  ///< a, b, 1/kappa, d(1/kappa)/dx per index
  std::array<std::array<float, kHalo + 1>, 3> d1{}; ///< d_m / h_a
};

/// The profile of a grid with `layer` for time step dt and velocity vmax (sets d0).
/// Throws std::invalid_argument for parameters outside their ranges.
CpmlProfile make_cpml_profile(const Grid& grid, const LayerWidths& layer, double dt, double vmax,
                              const CpmlParams& params);

/// Points of the slab of `axis` on its low (`hi == false`) or high face: the layer width (plus
/// `pad` points on both sides, none without a layer) times the grid's whole cross-section (the
/// memory variables of that axis live there only).
std::size_t cpml_slab_points(const Grid& grid, const LayerWidths& layer, int axis, bool hi,
                             int pad = 0);
/// Floats of the memory variables of all six slabs: zeta, and psi with its zero padding.
std::size_t cpml_memory_points(const Grid& grid, const LayerWidths& layer);
/// Floats of one field's C-PML on a GPU: zeta, psi twice (the fused update reads psi^(n-1) and
/// writes psi^n), and the profile and taps of every axis (4 + kCpmlTaps floats an index).
std::size_t cpml_device_floats(const Grid& grid, const LayerWidths& layer);

/// Pointers (host or device) to a run's C-PML: the profile arrays and the memory variables psi
/// and zeta of each axis and face (null where the face has no layer). Passed to kernels by value.
struct CpmlView {
  int n[3] = {0, 0, 0};  ///< grid extent per axis
  int lo[3] = {0, 0, 0}; ///< slab width on the low face of each axis
  int hi[3] = {0, 0, 0}; ///< slab width on the high face
  float d1[3][kHalo + 1] = {};
  const float* a[3] = {nullptr, nullptr, nullptr};
  const float* b[3] = {nullptr, nullptr, nullptr};
  const float* ik[3] = {nullptr, nullptr, nullptr};
  const float* dik[3] = {nullptr, nullptr, nullptr};
  float* psi[3][2] = {};
  float* zeta[3][2] = {};
  /// The fused update only (GPU, cpml_psi_taps): psi^n written here while psi above holds
  /// psi^(n-1), the two swapped after each step; and each axis's taps, kCpmlTaps an index.
  float* psi_next[3][2] = {};
  const float* taps[3] = {nullptr, nullptr, nullptr};
};

/// Floats an index of cpml_psi_taps: the 4 kHalo + 1 weights of u, then the 2 kHalo of psi.
inline constexpr int kCpmlTaps = 6 * kHalo + 1;

/// The fused C-PML update's weights along `axis` (kCpmlTaps floats per grid index c): with them
/// d_a psi^n at c comes from psi^(n-1) and u^n alone, without psi^n of the neighbours,
///   d_a psi^n(c) = sum_{o=-8..8} T[o + 8] u(c + o)
///                + sum_{m=1..4} (T[17 + m - 1] psi^(n-1)(c + m) - T[21 + m - 1] psi^(n-1)(c - m)),
/// which is sum_m w_m (psi^n(c + m) - psi^n(c - m)) with psi^n(q) = b(q) psi^(n-1)(q) + a(q)
/// d_a u(q) written out (T[o] = sum over m, m' of w_m w_m' a(q) at q = c +- m, o = +-m +- m').
/// Only neighbours q in the slab of c's face count (the reference reads psi of that slab, zero
/// outside it); rows of indices outside the slabs are zero. Weights computed in double.
std::vector<float> cpml_psi_taps(const CpmlProfile& profile, const LayerWidths& layer, int axis);

/// The view of `profile` (its arrays at `a`, `b`, `ik`, `dik`, per axis, on the backend's device)
/// with memory variables at psi/zeta[axis][face]; the sizes from grid and layer.
CpmlView make_cpml_view(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile);

/// The face (0 low, 1 high) whose slab of `axis` holds coordinate c, or -1.
MINIMOD_HD int cpml_face(const CpmlView& v, int axis, int c) {
  if (c >= 0 && c < v.lo[axis]) return 0;
  if (c < v.n[axis] && c >= v.n[axis] - v.hi[axis]) return 1;
  return -1;
}

/// Index in the slab of (axis, face) of point (i, j, k), which must lie in it, for a slab with
/// `pad` extra points on both sides along the axis. x slabs are [nz][ny][w] with the slab's x
/// fastest, y slabs [nz][w][nx], z slabs [w][ny][nx]. zeta is stored without padding (pad 0);
/// psi with kHalo zero points on each side, never written, so that the stencil of d_a psi reads
/// its neighbours along the axis without a test: psi is zero outside the slab (a = 0 there).
MINIMOD_HD std::int64_t cpml_slab_index(const CpmlView& v, int axis, int face, int i, int j, int k,
                                        int pad) {
  const int w = (face == 0 ? v.lo[axis] : v.hi[axis]) + 2 * pad;
  const int start = (face == 0 ? 0 : v.n[axis] - (w - 2 * pad)) - pad;
  if (axis == 0) return (static_cast<std::int64_t>(k) * v.n[1] + j) * w + (i - start);
  if (axis == 1) return (static_cast<std::int64_t>(k) * w + (j - start)) * v.n[0] + i;
  return (static_cast<std::int64_t>(k - start) * v.n[1] + j) * v.n[0] + i;
}

/// The stride along `axis` of a padded psi slab, in floats.
MINIMOD_HD std::int64_t cpml_psi_stride(const CpmlView& v, int axis) {
  return axis == 0 ? 1 : (axis == 1 ? v.n[0] : static_cast<std::int64_t>(v.n[0]) * v.n[1]);
}

/// The 8th-order first derivative along a stride, weights over the spacing.
MINIMOD_HD float cpml_first_derivative(const float* __restrict__ u, std::int64_t p,
                                       std::int64_t stride, const float* w) {
  float d = 0.0f;
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m)
    d += w[m] * (u[p + m * stride] - u[p - m * stride]);
  return d;
}

/// The memory pass at point (i, j, k) of the slab (axis, face), linear index p in the padded
/// layout of u (stride of the axis in floats): psi^n = b psi^(n-1) + a d_a u^n.
MINIMOD_HD void cpml_memory_point(const CpmlView& v, int axis, int face,
                                  const float* __restrict__ u, std::int64_t p, std::int64_t stride,
                                  int i, int j, int k) {
  const int c = axis == 0 ? i : (axis == 1 ? j : k);
  float& psi = v.psi[axis][face][cpml_slab_index(v, axis, face, i, j, k, kHalo)];
  psi = v.b[axis][c] * psi + v.a[axis][c] * cpml_first_derivative(u, p, stride, v.d1[axis]);
}

/// d~_aa u at point (i, j, k) (linear index p, stride of the axis) for axis `axis`, given the
/// plain second derivative d2 = d_aa u there: updates zeta of the axis where the point is in its
/// slabs; elsewhere returns d2.
MINIMOD_HD float cpml_axis_term(const CpmlView& v, int axis, const float* __restrict__ u,
                                std::int64_t p, std::int64_t stride, int i, int j, int k,
                                float d2) {
  const int c = axis == 0 ? i : (axis == 1 ? j : k);
  const int face = cpml_face(v, axis, c);
  if (face < 0) return d2;
  const float* w = v.d1[axis];
  const float dpsi =
      cpml_first_derivative(v.psi[axis][face], cpml_slab_index(v, axis, face, i, j, k, kHalo),
                            cpml_psi_stride(v, axis), w);
  const float ik = v.ik[axis][c];
  const float g = ik * d2 + v.dik[axis][c] * cpml_first_derivative(u, p, stride, w) + dpsi;
  float& zeta = v.zeta[axis][face][cpml_slab_index(v, axis, face, i, j, k, 0)];
  const float z = v.b[axis][c] * zeta + v.a[axis][c] * g;
  zeta = z;
  return ik * g + z;
}

/// The plain second derivative of u along one axis (c: c_m / h^2, c[0] the centre weight).
MINIMOD_HD float cpml_second_derivative(const float* __restrict__ u, std::int64_t p,
                                        std::int64_t stride, const float* c) {
  float d = c[0] * u[p];
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m)
    d += c[m] * (u[p + m * stride] + u[p - m * stride]);
  return d;
}

} // namespace minimod
