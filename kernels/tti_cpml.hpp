#pragma once
/// The C-PML of the TTI equation (docs/physics.md, "C-PML of the TTI equation"): the per-point
/// layer update shared by the CPU reference and the GPU layer kernel, and the storage of its
/// memory variables.
///
/// Every second derivative of the 73-point operator is stretched. The pure ones, d_aa p and
/// d_aa q, as the acoustic C-PML stretches d_aa u (kernels/cpml.hpp): psi and zeta of p and of q
/// per axis, in that axis' slabs. The mixed ones need no stencil of their own: the stretching of
/// axis b, 1/s_b, is a convolution in time whose coefficients depend on the b coordinate only, so
/// it commutes with d_a (a != b) and
///   d~_a d~_b u = (1/s_a) d_a ((1/s_b) d_b u) = (1/s_a)(1/s_b) d_ab u,
/// two recursive convolutions of the plain mixed derivative at the point itself. The medium's
/// weights are constant in time, so the convolutions act on the mixed part of each field's
/// operator (one pair ab of p's and of q's) rather than on d_ab p and d_ab q: one memory variable
/// of each of the two fields per pair and per axis of the pair whose slab holds the point, stored
/// in that axis' slabs (`mix`, four a slab point: two pairs times two fields).
///
/// Where the medium is anelliptic (epsilon != delta) the stretched operators alone grow in a
/// tilted medium (measured; the growing field is the pseudo-acoustic shear artefact's, whose
/// slowness curve has backward modes about a tilted axis). Those points also damp both fields,
/// Minimod's layer update without phi at an eta that is a fraction (kTtiCpmlSponge) of the C-PML's
/// own damping, weighted per slab by how oblique the axis is to its normal (tti_cpml_sponge_eta).
/// Elliptic and isotropic points keep the plain C-PML (no artefact, no growth), so an isotropic
/// medium still gives the acoustic C-PML's field; so does an axis along or across every slab's
/// normal (vertical, or horizontal at azimuth 0 or 90).

#include "core/host_device.hpp"
#include "kernels/cpml.hpp"
#include "kernels/tti_K.hpp"

#include <cstddef>
#include <cstdint>

namespace minimod {

/// Floats of the mixed memory a slab point: the two pairs ab that hold the slab's axis a (the
/// other axis b in increasing order) times the two fields' operators (p, q).
inline constexpr int kTtiCpmlMix = 4;

/// A TTI C-PML's memory variables (host or device): psi and zeta of p and of q (each a CpmlView
/// of one profile) and the mixed memory of each slab, kTtiCpmlMix arrays of `slab` points.
struct TtiCpmlView {
  CpmlView p, q;
  float* mix[3][2] = {};        ///< [slot][slab point] of axis and face; null: no slab
  std::int64_t slab[3][2] = {}; ///< points of the slab (width times the cross-section)
};

/// Floats of a TTI C-PML's memory variables on `grid` with `layer`: psi and zeta of p and of q
/// (cpml_memory_points each) and the mixed memory of every slab.
std::size_t tti_cpml_memory_points(const Grid& grid, const LayerWidths& layer);

/// The damping of the layer's anelliptic points as a fraction of the C-PML's own damping d dt,
/// at an axis 45 degrees off the slab's normal (docs/physics.md, "C-PML of the TTI equation").
inline constexpr float kTtiCpmlSponge = 0.2f;

/// How oblique the symmetry axis is to the normal of a slab of axis a, from its component n_a
/// there: sin(2 angle) = 2 |n_a| sqrt(1 - n_a^2), 1 at 45 degrees, 0 along the normal or across
/// it (where the artefact's slowness curve is symmetric about the normal and the C-PML alone
/// decays).
MINIMOD_HD float tti_cpml_obliquity(float n) {
  return 2.0f * fabsf(n) * sqrtf(fmaxf(0.0f, 1.0f - n * n));
}

/// The eta of Minimod's layer update (kernels/stencil_K.hpp: layer_update) at (i, j, k) of a TTI
/// C-PML for the symmetry axis (nx, ny, nz): kTtiCpmlSponge times the sum over the axes of the
/// axis' obliquity to that axis times -a kappa = d (1 - b) / (d + kappa alpha), about d dt /
/// kappa of the axes whose slabs hold the point (a is zero elsewhere). From the profile and the
/// medium alone, so the GPU layer kernel computes it as the CPU reference does.
MINIMOD_HD float tti_cpml_sponge_eta(const CpmlView& v, int i, int j, int k, float nx, float ny,
                                     float nz) {
  const float d = tti_cpml_obliquity(nx) * (v.a[0][i] / v.ik[0][i]) +
                  tti_cpml_obliquity(ny) * (v.a[1][j] / v.ik[1][j]) +
                  tti_cpml_obliquity(nz) * (v.a[2][k] / v.ik[2][k]);
  return -kTtiCpmlSponge * d;
}

/// The slot of the mixed memory of pair (a, b) in a's slabs, for field `field` (0 p, 1 q).
MINIMOD_HD int tti_cpml_mix_slot(int a, int b, int field) {
  return (b - (b > a ? 1 : 0)) * 2 + field;
}

/// One recursive convolution (1/s_a) of the value h at point (i, j, k), if the point is in a slab
/// of axis a: m^n = b m^(n-1) + a h^n, (1/s_a) h = h / kappa + m. Elsewhere h.
MINIMOD_HD float tti_cpml_stretch(const TtiCpmlView& v, int a, int b, int field, int i, int j,
                                  int k, float h) {
  const int c = a == 0 ? i : (a == 1 ? j : k);
  const int face = cpml_face(v.p, a, c);
  if (face < 0) return h;
  float& m = v.mix[a][face][tti_cpml_mix_slot(a, b, field) * v.slab[a][face] +
                            cpml_slab_index(v.p, a, face, i, j, k, 0)];
  const float next = v.p.b[a][c] * m + v.p.a[a][c] * h;
  m = next;
  return v.p.ik[a][c] * h + next;
}

/// The stretched mixed term d~_a d~_b of a field's operator: (1/s_b)(1/s_a) h, a < b.
MINIMOD_HD float tti_cpml_mixed(const TtiCpmlView& v, int a, int b, int field, int i, int j, int k,
                                float h) {
  return tti_cpml_stretch(v, b, a, field, i, j, k, tti_cpml_stretch(v, a, b, field, i, j, k, h));
}

/// The C-PML layer update of both TTI fields at point (i, j, k), linear index idx (strides sy,
/// sz), after the memory pass of the step (psi of p and q from p^n and q^n in every slab). The
/// point's own memory variables (zeta, mix) advance; p_next and q_next get the inner update of
/// the stretched operators; at anelliptic points with Minimod's damping at tti_cpml_sponge_eta as
/// well (no phi), elsewhere without damping (the memory variables carry the absorption).
template <bool kAzimuth>
MINIMOD_HD void tti_cpml_update_point(const TtiFields& f, const TtiCpmlView& v, std::int64_t idx,
                                      std::int64_t sy, std::int64_t sz, const TtiCoefs& c, int i,
                                      int j, int k) {
  SecondDerivatives dp = second_derivatives_73<kAzimuth>(f.p, idx, sy, sz, c);
  SecondDerivatives dq = second_derivatives_73<kAzimuth>(f.q, idx, sy, sz, c);
  dp.xx = cpml_axis_term(v.p, 0, f.p, idx, 1, i, j, k, dp.xx);
  dp.yy = cpml_axis_term(v.p, 1, f.p, idx, sy, i, j, k, dp.yy);
  dp.zz = cpml_axis_term(v.p, 2, f.p, idx, sz, i, j, k, dp.zz);
  dq.xx = cpml_axis_term(v.q, 0, f.q, idx, 1, i, j, k, dq.xx);
  dq.yy = cpml_axis_term(v.q, 1, f.q, idx, sy, i, j, k, dq.yy);
  dq.zz = cpml_axis_term(v.q, 2, f.q, idx, sz, i, j, k, dq.zz);

  float ny = 0.0f;
  if constexpr (kAzimuth) ny = tti_axis_value(f.axis_y[idx]);
  const std::uint32_t axis = f.axis_xz[idx];
  const float nx = tti_pair_lo_axis(axis), nz = tti_pair_hi_axis(axis);
  const TtiWeights w = tti_weights(nx, ny, nz);
  const std::uint32_t aniso = f.aniso[idx];
  const float two_delta = tti_pair_lo_half(aniso);
  const float two_emd = tti_pair_hi_half(aniso);

  // The pure part: (L - H) and H of s = p + q and q from the stretched d_aa.
  const float sxx = dp.xx + dq.xx, syy = dp.yy + dq.yy, szz = dp.zz + dq.zz;
  const float lap_s = sxx + syy + szz;
  const float h_s = w.xx * sxx + w.yy * syy + w.zz * szz;
  const float h_q = w.xx * dq.xx + w.yy * dq.yy + w.zz * dq.zz;
  TtiOperators op = tti_operators_from(lap_s, h_s, h_q, two_delta, two_emd);
  // The mixed part of each pair: p gets -(2 delta H s + H q), q gets -2 (epsilon - delta) H s.
  auto add_pair = [&](int a, int b, float weight, float ds, float dqab) {
    const float hp = -weight * (two_delta * ds + dqab);
    const float hq = -two_emd * weight * ds;
    op.p += tti_cpml_mixed(v, a, b, 0, i, j, k, hp);
    op.q += tti_cpml_mixed(v, a, b, 1, i, j, k, hq);
  };
  add_pair(0, 2, w.xz, dp.xz + dq.xz, dq.xz);
  if constexpr (kAzimuth) {
    add_pair(0, 1, w.xy, dp.xy + dq.xy, dq.xy);
    add_pair(1, 2, w.yz, dp.yz + dq.yz, dq.yz);
  }
  const float vp2dt2 = f.vp2dt2[idx];
  if (two_emd != 0.0f) {
    const float eta = tti_cpml_sponge_eta(v.p, i, j, k, nx, ny, nz);
    float unused = 0.0f;
    f.p_next[idx] = layer_update(f.p[idx], f.p_next[idx], vp2dt2, op.p, 0.0f, eta, 0.0f, &unused);
    f.q_next[idx] = layer_update(f.q[idx], f.q_next[idx], vp2dt2, op.q, 0.0f, eta, 0.0f, &unused);
  } else {
    f.p_next[idx] = inner_update(f.p[idx], f.p_next[idx], vp2dt2, op.p);
    f.q_next[idx] = inner_update(f.q[idx], f.q_next[idx], vp2dt2, op.q);
  }
}

} // namespace minimod
