#pragma once
/// Per-point math of the acoustic TTI update (docs/physics.md section 5, docs/tti.md), shared by
/// the CPU reference (solver/tti.cpp) and the TTI GPU kernels, so that all of them compute one
/// function.
///
/// Fields p and q advance together. With s = p + q, L the 8th-order Laplacian and
/// H = (n . grad)^2 for the unit symmetry axis n:
///   p^{n+1} = 2p - p^{n-1} + vp2dt2 [ L s + 2 delta (L - H) s - H q ]
///   q^{n+1} = 2q - q^{n-1} + vp2dt2 [ 2 (epsilon - delta) (L - H) s ]
/// which is the paper's (1 + 2 delta)(L - H)(p + q) + H p written so that epsilon = delta = 0 and
/// q = 0 give exactly the isotropic L p (no cancelling -H p + H p in float).

#include "core/grid.hpp"
#include "core/host_device.hpp"
#include "kernels/stencil_K.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace minimod {

struct TtiCpmlView; // kernels/tti_cpml.hpp

// ---- The compact medium (docs/tti.md, "Medium layout and the TTI floor") ----------------------
//
// Besides vp2dt2 (a float, as in the isotropic update) a point's medium is four or five 16-bit
// numbers: 2 delta and 2 (epsilon - delta) as IEEE binary16 (11 significant bits), the unit
// symmetry axis as fixed point with 14 fraction bits (steps of 2^-14, exact at 0 and +-1). Two of
// them share a 32-bit word, the first in the low half, so that a point reads each pair with one
// 4-byte load: `aniso` (2 delta, 2 (epsilon - delta)) and `axis_xz` (n_x, n_z); n_y, present only
// with azimuth, is a 16-bit array of its own.

/// The step of the axis' fixed point (2^-14).
inline constexpr float kTtiAxisStep = 1.0f / 16384.0f;

/// The float a binary16 holds (bits in the low 16 bits of h; every binary16 is a float).
MINIMOD_HD float tti_half_to_float(std::uint32_t h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(h)));
  return f;
#else
  // Integer selects and one unconditional float subtraction, no branch, so that the CPU kernels'
  // x loops vectorise (a float operation under a condition is not if-converted: it may trap).
  const std::uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu,
                      mantissa = h & 0x3ffu;
  // Zero or subnormal: mantissa * 2^-24, exact, as 2^-14 (1 + mantissa / 1024) - 2^-14.
  const std::uint32_t biased = (113u << 23) | (mantissa << 13);
  float shifted;
  std::memcpy(&shifted, &biased, sizeof shifted);
  const float small = shifted - 6.103515625e-05f;
  std::uint32_t small_bits;
  std::memcpy(&small_bits, &small, sizeof small_bits);
  // Normal: rebias 15 -> 127; infinities and NaNs (never encoded) stay what they are, as on GPUs.
  const std::uint32_t magnitude = exponent == 0u ? small_bits
                                  : exponent == 0x1fu
                                      ? 0x7f800000u | (mantissa << 13)
                                      : ((exponent + 112u) << 23) | (mantissa << 13);
  const std::uint32_t bits = sign | magnitude;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

/// The low and the high binary16 of a pair.
MINIMOD_HD float tti_pair_lo_half(std::uint32_t w) {
  return tti_half_to_float(w & 0xffffu);
}
MINIMOD_HD float tti_pair_hi_half(std::uint32_t w) {
  return tti_half_to_float(w >> 16);
}
/// An axis component from its fixed point.
MINIMOD_HD float tti_axis_value(std::int32_t fixed) {
  return static_cast<float>(fixed) * kTtiAxisStep;
}
/// The low and the high axis component of a pair (each a signed 16-bit number).
MINIMOD_HD float tti_pair_lo_axis(std::uint32_t w) {
  return tti_axis_value(static_cast<std::int32_t>(w << 16) >> 16);
}
MINIMOD_HD float tti_pair_hi_axis(std::uint32_t w) {
  return tti_axis_value(static_cast<std::int32_t>(w) >> 16);
}

/// The binary16 nearest to v (ties to even), as bits. Throws std::invalid_argument, naming `what`,
/// for a value that is not finite or beyond the largest binary16 (65504).
inline std::uint32_t tti_half_bits(double v, const char* what) {
  if (!std::isfinite(v) || std::fabs(v) >= 65520.0) { // 65520 and above round to infinity
    throw std::invalid_argument(std::string(what) + " = " + std::to_string(v) +
                                " does not fit the medium's 16-bit floats (|value| < 65520)");
  }
  const std::uint32_t sign = std::signbit(v) ? 0x8000u : 0u;
  const double a = std::fabs(v);
  if (a < 0x1p-14) // subnormal: steps of 2^-24 (1024 steps round up to the smallest normal)
    return sign | static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, 24)));
  int e = 0;
  (void)std::frexp(a, &e); // a in [2^(e-1), 2^e): binary16 exponent e - 1, 10 fraction bits
  auto m = static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, 11 - e)));
  if (m == 2048u) { // rounded up to the next power of two
    m = 1024u;
    ++e;
  }
  return sign | (static_cast<std::uint32_t>(e - 1 + 15) << 10) | (m - 1024u);
}

/// An axis component (|v| <= 1) in fixed point, to the nearest step.
inline std::int16_t tti_axis_fixed(double v) {
  if (!(std::fabs(v) <= 1.0))
    throw std::invalid_argument("symmetry axis component " + std::to_string(v) +
                                " outside [-1, 1]");
  return static_cast<std::int16_t>(std::lround(v * 16384.0));
}

/// Two 16-bit values in one word, `lo` in the low half.
inline std::uint32_t tti_pair(std::uint32_t lo, std::uint32_t hi) {
  return (lo & 0xffffu) | ((hi & 0xffffu) << 16);
}

/// Stencil coefficients of the 73-point TTI operator, scaled by the grid spacing. Passed to kernels
/// by value (constant bank on GPUs).
struct TtiCoefs {
  float xx[kHalo + 1]; ///< c_m / dx^2, m = 0..4 (index 0: the centre weight c0 / dx^2)
  float yy[kHalo + 1]; ///< c_m / dy^2
  float zz[kHalo + 1]; ///< c_m / dz^2
  float xy[kHalo + 1]; ///< c_m / (4 dx dy), m = 1..4 (index 0 unused)
  float xz[kHalo + 1]; ///< c_m / (4 dx dz)
  float yz[kHalo + 1]; ///< c_m / (4 dy dz)
  float centre;        ///< c0 (1/dx^2 + 1/dy^2 + 1/dz^2), as StencilCoefs::c0
  float px, py, pz;    ///< 1 / (4 h^2) per axis, for the layer's phi drives
};

/// Coefficients for a grid's spacing. The mixed derivatives use the same c1..c4 as the second
/// derivatives: sum_m c_m m^2 = 1 makes the diagonal difference exact for u = x z.
inline TtiCoefs make_tti_coefs(const Grid& g) {
  TtiCoefs c{};
  const double ix = 1.0 / (g.dx * g.dx), iy = 1.0 / (g.dy * g.dy), iz = 1.0 / (g.dz * g.dz);
  for (int m = 0; m <= kHalo; ++m) {
    const double w = kLaplacianWeights[m];
    c.xx[m] = static_cast<float>(w * ix);
    c.yy[m] = static_cast<float>(w * iy);
    c.zz[m] = static_cast<float>(w * iz);
    c.xy[m] = m == 0 ? 0.0f : static_cast<float>(w / (4.0 * g.dx * g.dy));
    c.xz[m] = m == 0 ? 0.0f : static_cast<float>(w / (4.0 * g.dx * g.dz));
    c.yz[m] = m == 0 ? 0.0f : static_cast<float>(w / (4.0 * g.dy * g.dz));
  }
  c.centre = static_cast<float>(kLaplacianWeights[0] * (ix + iy + iz));
  c.px = static_cast<float>(0.25 * ix);
  c.py = static_cast<float>(0.25 * iy);
  c.pz = static_cast<float>(0.25 * iz);
  return c;
}

/// The six second derivatives of a field at one point, and their Laplacian xx + yy + zz summed in
/// the order of laplacian_25 and with its fused multiply-adds (so that an isotropic medium gives
/// the isotropic update bit for bit).
struct SecondDerivatives {
  float xx, yy, zz, xy, xz, yz;
  float lap;
};

/// Second derivatives at linear index p of a field with strides sy, sz (floats): the 25-point star
/// for xx, yy, zz and 16 points along the two diagonals of each plane for the mixed ones,
///   d_ab u = sum_m c_m [u(+m,+m) + u(-m,-m) - u(+m,-m) - u(-m,+m)] / (4 h_a h_b).
/// kAzimuth = false skips xy and yz (they are weighted by n_y = 0): 41 points instead of 73.
template <bool kAzimuth>
MINIMOD_HD SecondDerivatives second_derivatives_73(const float* __restrict__ u, std::int64_t p,
                                                   std::int64_t sy, std::int64_t sz,
                                                   const TtiCoefs& c) {
  const float centre = u[p];
  SecondDerivatives d{c.xx[0] * centre, c.yy[0] * centre, c.zz[0] * centre, 0.0f, 0.0f, 0.0f,
                      c.centre * centre};
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m) {
    const std::int64_t ox = m, oy = m * sy, oz = m * sz;
    const float pair_x = u[p + ox] + u[p - ox], pair_y = u[p + oy] + u[p - oy],
                pair_z = u[p + oz] + u[p - oz];
    d.lap = fmaf(c.xx[m], pair_x, d.lap);
    d.lap = fmaf(c.yy[m], pair_y, d.lap);
    d.lap = fmaf(c.zz[m], pair_z, d.lap);
    d.xx += c.xx[m] * pair_x;
    d.yy += c.yy[m] * pair_y;
    d.zz += c.zz[m] * pair_z;
    d.xz += c.xz[m] * ((u[p + ox + oz] + u[p - ox - oz]) - (u[p + ox - oz] + u[p - ox + oz]));
    if constexpr (kAzimuth) {
      d.xy += c.xy[m] * ((u[p + ox + oy] + u[p - ox - oy]) - (u[p + ox - oy] + u[p - ox + oy]));
      d.yz += c.yz[m] * ((u[p + oy + oz] + u[p - oy - oz]) - (u[p + oy - oz] + u[p - oy + oz]));
    }
  }
  return d;
}

/// Weights of H = (n . grad)^2 = sum_ab w_ab d_ab for the unit symmetry axis n:
/// n_x^2 = sin^2(theta) cos^2(phi), ..., 2 n_x n_z = sin(2 theta) cos(phi), ...
struct TtiWeights {
  float xx, yy, zz, xy, xz, yz;
};

/// H weights from the symmetry axis (n_x, n_y, n_z).
MINIMOD_HD TtiWeights tti_weights(float nx, float ny, float nz) {
  return TtiWeights{nx * nx, ny * ny, nz * nz, 2.0f * nx * ny, 2.0f * nx * nz, 2.0f * ny * nz};
}

/// H u from the second derivatives of u.
MINIMOD_HD float apply_h(const TtiWeights& w, const SecondDerivatives& d) {
  return w.xx * d.xx + w.yy * d.yy + w.zz * d.zz + w.xy * d.xy + w.xz * d.xz + w.yz * d.yz;
}

/// Spatial operators of the two fields at one point (what the isotropic update calls `lap`).
struct TtiOperators {
  float p; ///< L s + 2 delta (L - H) s - H q = (1 + 2 delta)(L - H) s + H p
  float q; ///< 2 (epsilon - delta) (L - H) s
};

/// The operators from L s, H s and H q and the point's medium.
MINIMOD_HD TtiOperators tti_operators_from(float lap_s, float h_s, float h_q, float two_delta,
                                           float two_eps_minus_delta) {
  const float perp_s = lap_s - h_s; // (L - H) s
  return TtiOperators{lap_s + two_delta * perp_s - h_q, two_eps_minus_delta * perp_s};
}

/// The operators from the derivatives of p and q and the point's medium.
MINIMOD_HD TtiOperators tti_operators(const SecondDerivatives& dp, const SecondDerivatives& dq,
                                      const TtiWeights& w, float two_delta,
                                      float two_eps_minus_delta) {
  const SecondDerivatives ds{dp.xx + dq.xx, dp.yy + dq.yy, dp.zz + dq.zz,  dp.xy + dq.xy,
                             dp.xz + dq.xz, dp.yz + dq.yz, dp.lap + dq.lap};
  return tti_operators_from(ds.lap, apply_h(w, ds), apply_h(w, dq), two_delta, two_eps_minus_delta);
}

/// Drive of the layer's phi for p (docs/tti.md, "Layer"). The isotropic phi is driven by
/// sum_a deta_a du_a / (4 h_a^2), the first-order term that the stretched coordinate of axis a adds
/// to d_aa. Each field's operator weighs d_aa differently, so the drive carries the field's
/// weights:
///   p: (1 + 2 delta)(1 - w_aa) d_a s + w_aa d_a p = d_a p + (1 - w_aa) d_a q + 2 delta (1 - w_aa)
///   d_a s q: 2 (epsilon - delta)(1 - w_aa) d_a s
/// This corrected layer grows exponentially in tilted anelliptic media (docs/tti.md measures it),
/// so the drive is applied only where the medium is elliptic (epsilon = delta, isotropic included:
/// tti_layer_driven) and is zero elsewhere, which leaves Minimod's damping alone there. The q drive
/// therefore vanishes everywhere and q needs no phi array. With delta = 0 and q = 0 the p drive is
/// the isotropic eta_gradient_term (same operations in the same order, each axis's term added with
/// fmaf as eta_gradient_sum does; the first to a zero sum, which is exact).
MINIMOD_HD float tti_layer_drive(const float* __restrict__ p, const float* __restrict__ q,
                                 const float* __restrict__ eta, std::int64_t i, std::int64_t sy,
                                 std::int64_t sz, const TtiCoefs& c, const TtiWeights& w,
                                 float two_delta) {
  const std::int64_t stride[3] = {1, sy, sz};
  const float w_aa[3] = {w.xx, w.yy, w.zz};
  const float scale[3] = {c.px, c.py, c.pz};
  float drive = 0.0f;
  MINIMOD_UNROLL
  for (int a = 0; a < 3; ++a) {
    const std::int64_t s = stride[a];
    const float deta = eta[i + s] - eta[i - s];
    const float dp = p[i + s] - p[i - s];
    const float dq = q[i + s] - q[i - s];
    const float perp = 1.0f - w_aa[a];
    drive = fmaf(deta * (dp + perp * dq + two_delta * perp * (dp + dq)), scale[a], drive);
  }
  return drive;
}

/// Whether the layer's phi of p is driven at a point of anisotropy 2 (epsilon - delta): only where
/// the medium is elliptic (tti_layer_drive). Elsewhere the drive is zero at every step, so phi,
/// zero at the start, stays zero: (0 - 0) / (1 + eta). The layer update therefore neither reads
/// nor writes phi there (8 bytes a point; docs/tti.md), nor the drive's 18 neighbour values.
MINIMOD_HD bool tti_layer_driven(float two_eps_minus_delta) {
  return two_eps_minus_delta == 0.0f;
}

/// Pointers (host or device) to the TTI fields, all in one FieldLayout. p and q are the fields at
/// step n; p_next and q_next hold step n - 1 on entry and step n + 1 on exit. The medium is stored
/// per point as vp2dt2 and the compact 16-bit pairs above: 2 delta and 2 (epsilon - delta), the
/// symmetry axis (n_x, n_y, n_z) with n_z >= 0 (docs/tti.md: 12 bytes, 14 with azimuth; axis_y is
/// null without it). eta may be null when no layer point is updated; phi_p (the layer's phi of p;
/// q has none, see tti_layer_drive) is read and written only where tti_layer_driven, and may be
/// null when no updated layer point is driven (tti_needs_phi): the backends then run the layer
/// forms without phi (tti_layer_store's kPhi). A driven point with a null phi_p is a caller's
/// error that no kernel checks (it would scan the medium): it would get no drive.
struct TtiFields {
  const float* p = nullptr;
  float* p_next = nullptr;
  const float* q = nullptr;
  float* q_next = nullptr;
  const float* vp2dt2 = nullptr;
  const std::uint32_t* aniso = nullptr;   ///< 2 delta (low), 2 (epsilon - delta) (high): binary16
  const std::uint32_t* axis_xz = nullptr; ///< n_x (low), n_z (high): fixed point
  const std::int16_t* axis_y = nullptr;   ///< n_y, fixed point; null: no azimuth (n_y = 0)
  float* phi_p = nullptr;
  const float* eta = nullptr;
  /// Set: the layer regions are C-PML regions (kernels/tti_cpml.hpp), eta and phi_p are unused,
  /// and the backend has run the memory pass of the step before any layer region.
  const TtiCpmlView* cpml = nullptr;
};

/// What the update of one point reads besides the stencil: the fields' centre values, the
/// previous steps, the medium, and in the layer eta (phi is read with the drive's neighbours, where
/// the point is driven). Kernels that hide memory latency load
/// it early (tti_load_point) and finish the point later (tti_finish_loaded or, having formed the
/// operators themselves, tti_apply_operators). The medium stays in its 16-bit words until used:
/// decoding at the load would wait for the load there, and hold five floats instead of 2-3 words.
struct TtiPointIn {
  float p, q, p_prev, q_prev, vp2dt2;
  std::uint32_t aniso, axis_xz; ///< as stored (TtiFields)
  std::int32_t axis_y;          ///< n_y's fixed point; 0 without azimuth
  float eta;
  MINIMOD_HD float two_delta() const { return tti_pair_lo_half(aniso); }
  MINIMOD_HD float two_emd() const { return tti_pair_hi_half(aniso); }
  MINIMOD_HD float nx() const { return tti_pair_lo_axis(axis_xz); }
  MINIMOD_HD float ny() const { return tti_axis_value(axis_y); }
  MINIMOD_HD float nz() const { return tti_pair_hi_axis(axis_xz); }
};

template <bool kAzimuth, bool kLayer>
MINIMOD_HD TtiPointIn tti_load_point(const TtiFields& f, std::int64_t i) {
  TtiPointIn in{};
  in.p = f.p[i];
  in.q = f.q[i];
  in.p_prev = f.p_next[i];
  in.q_prev = f.q_next[i];
  in.vp2dt2 = f.vp2dt2[i];
  in.aniso = f.aniso[i];
  in.axis_xz = f.axis_xz[i];
  in.axis_y = 0;
  if constexpr (kAzimuth) in.axis_y = f.axis_y[i];
  if constexpr (kLayer) in.eta = f.eta[i];
  return in;
}

/// Minimod's layer update of both fields at linear index i from their operators there and the
/// point's values: phi for p where tti_layer_driven (its drive reads the 1-point neighbours of p,
/// q and eta from f), damping alone for q. kPhi = false: the caller knows that no point of the
/// layer is driven (tti_needs_phi; the backends then have no phi_p array), so phi stays zero
/// everywhere and neither the test nor the drive is compiled. That code, never run in such a
/// medium, costs most kernel families 1-3% of the step on the H100 at 900^3 (docs/kernels.md,
/// "TTI").
template <bool kPhi = true>
MINIMOD_HD void tti_layer_store(const TtiFields& f, std::int64_t i, std::int64_t sy,
                                std::int64_t sz, const TtiCoefs& c, const TtiWeights& w,
                                const TtiOperators& op, float p, float p_prev, float q,
                                float q_prev, float vp2dt2, float two_delta, float two_emd,
                                float eta) {
  float phi_next;
  if constexpr (kPhi) {
    const bool driven = tti_layer_driven(two_emd);
    float phi = 0.0f, drive = 0.0f;
    if (driven) {
      phi = f.phi_p[i];
      drive = tti_layer_drive(f.p, f.q, f.eta, i, sy, sz, c, w, two_delta);
    }
    f.p_next[i] = layer_update(p, p_prev, vp2dt2, op.p, phi, eta, drive, &phi_next);
    if (driven) f.phi_p[i] = phi_next;
  } else {
    (void)sy;
    (void)sz;
    (void)c;
    (void)w;
    (void)two_delta;
    (void)two_emd;
    f.p_next[i] = layer_update(p, p_prev, vp2dt2, op.p, 0.0f, eta, 0.0f, &phi_next);
  }
  f.q_next[i] = layer_update(q, q_prev, vp2dt2, op.q, 0.0f, eta, 0.0f, &phi_next);
}

/// The update of both fields at linear index i from their operators there (w: the point's H
/// weights, for the layer's phi drive) and the point's loaded values: inner form (kLayer = false)
/// or Minimod's layer form (tti_layer_store, with or without phi: kPhi).
template <bool kLayer, bool kPhi = true>
MINIMOD_HD void tti_apply_operators(const TtiFields& f, std::int64_t i, std::int64_t sy,
                                    std::int64_t sz, const TtiCoefs& c, const TtiWeights& w,
                                    const TtiOperators& op, const TtiPointIn& in) {
  if constexpr (!kLayer) {
    (void)sy;
    (void)sz;
    f.p_next[i] = inner_update(in.p, in.p_prev, in.vp2dt2, op.p);
    f.q_next[i] = inner_update(in.q, in.q_prev, in.vp2dt2, op.q);
  } else {
    tti_layer_store<kPhi>(f, i, sy, sz, c, w, op, in.p, in.p_prev, in.q, in.q_prev, in.vp2dt2,
                          in.two_delta(), in.two_emd(), in.eta);
  }
}

/// The update of both fields at linear index i from the second derivatives of p and q there and
/// the point's loaded values.
template <bool kAzimuth, bool kLayer, bool kPhi = true>
MINIMOD_HD void tti_finish_loaded(const TtiFields& f, std::int64_t i, std::int64_t sy,
                                  std::int64_t sz, const TtiCoefs& c, const SecondDerivatives& dp,
                                  const SecondDerivatives& dq, const TtiPointIn& in) {
  const TtiWeights w = tti_weights(in.nx(), in.ny(), in.nz());
  tti_apply_operators<kLayer, kPhi>(f, i, sy, sz, c, w,
                                    tti_operators(dp, dq, w, in.two_delta(), in.two_emd()), in);
}

/// The update of both fields at linear index i from the second derivatives of p and q there
/// (what tti_load_point then tti_finish_loaded compute). Every GPU kernel computes dp and dq its
/// own way (global memory, shared tiles, semi-stencil partial sums) and finishes with this update,
/// the CPU reference's, or with tti_finish_loaded (the streaming kernels, which load a point's
/// values early; semi+b+a with azimuth folds first and calls tti_apply_operators). kAzimuth must
/// be false exactly when axis_y is null; kPhi (tti_layer_store) false only where no layer point is
/// driven.
template <bool kAzimuth, bool kLayer, bool kPhi = true>
MINIMOD_HD void tti_finish_point(const TtiFields& f, std::int64_t i, std::int64_t sy,
                                 std::int64_t sz, const TtiCoefs& c, const SecondDerivatives& dp,
                                 const SecondDerivatives& dq) {
  // The update of tti_finish_loaded, each value loaded where it is first needed: the load order
  // with which the kernels that finish a point at once (gmem_3d, smem_3d, smem_25d) are timed in
  // docs/kernels.md. Loading the point's values first (tti_load_point) is not known to pay there.
  float ny = 0.0f;
  if constexpr (kAzimuth) ny = tti_axis_value(f.axis_y[i]);
  const std::uint32_t axis = f.axis_xz[i];
  const TtiWeights w = tti_weights(tti_pair_lo_axis(axis), ny, tti_pair_hi_axis(axis));
  const std::uint32_t aniso = f.aniso[i];
  const float two_delta = tti_pair_lo_half(aniso);
  const float two_emd = tti_pair_hi_half(aniso);
  const TtiOperators op = tti_operators(dp, dq, w, two_delta, two_emd);
  const float vp2dt2 = f.vp2dt2[i];
  if constexpr (!kLayer) {
    (void)sy;
    (void)sz;
    f.p_next[i] = inner_update(f.p[i], f.p_next[i], vp2dt2, op.p);
    f.q_next[i] = inner_update(f.q[i], f.q_next[i], vp2dt2, op.q);
  } else {
    tti_layer_store<kPhi>(f, i, sy, sz, c, w, op, f.p[i], f.p_next[i], f.q[i], f.q_next[i], vp2dt2,
                          two_delta, two_emd, f.eta[i]);
  }
}

/// Calls f(az, layer, phi), three std::bool_constant tags, with the compile-time form of the
/// update that a TTI launch needs: the azimuth terms or not (kAzimuth), the inner or the layer
/// update (kLayer), and for the layer its form with phi or without (tti_layer_store's kPhi). The
/// inner update has no phi, and gets kPhi = true, so no inner form is compiled twice. Host code
/// (the GPU launchers, the CPU solver, the tests) picks the kernel or loop this way.
template <class F> void tti_with_form(bool azimuth, bool layer, bool phi, F&& f) {
  auto with_az = [&](auto az) {
    if (!layer)
      f(az, std::false_type{}, std::true_type{});
    else if (phi)
      f(az, std::true_type{}, std::true_type{});
    else
      f(az, std::true_type{}, std::false_type{});
  };
  azimuth ? with_az(std::true_type{}) : with_az(std::false_type{});
}

/// The whole update of both fields at linear index i, every stencil point read from f.p and f.q
/// (the CPU reference and the gmem_3d kernel).
template <bool kAzimuth, bool kLayer, bool kPhi = true>
MINIMOD_HD void tti_update_point(const TtiFields& f, std::int64_t i, std::int64_t sy,
                                 std::int64_t sz, const TtiCoefs& c) {
  const SecondDerivatives dp = second_derivatives_73<kAzimuth>(f.p, i, sy, sz, c);
  const SecondDerivatives dq = second_derivatives_73<kAzimuth>(f.q, i, sy, sz, c);
  tti_finish_point<kAzimuth, kLayer, kPhi>(f, i, sy, sz, c, dp, dq);
}

} // namespace minimod
