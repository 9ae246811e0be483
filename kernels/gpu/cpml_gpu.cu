#include "kernels/gpu/cpml_gpu.cuh"

#include "kernels/gpu/gmem_3d_f4.cuh"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_support.cuh"
#include "kernels/gpu/launch_limits.hpp"
#include "kernels/gpu/streaming_25d.cuh"

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace minimod::gpu {
namespace {

constexpr int kBx = 32, kBy = 4, kBz = 2;

/// psi of the slab (axis, face), whose box is [x0, x0 + nx) x ... (one thread a point).
__global__ void cpml_memory_kernel(const CpmlView v, int axis, int face,
                                   const float* __restrict__ u, const FieldLayout l, Box b) {
  const int i = b.x0 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = b.y0 + static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int k = b.z0 + static_cast<int>(blockIdx.z * blockDim.z + threadIdx.z);
  if (i >= b.x1 || j >= b.y1 || k >= b.z1) return;
  const std::int64_t stride = axis == 0 ? 1 : (axis == 1 ? l.pitch : l.plane);
  cpml_memory_point(v, axis, face, u, l.index(i, j, k), stride, i, j, k);
}

// The fused layer update's block, at most: 4 x points a thread, deep along z, where the z slabs'
// psi is read at 9 planes (the block's own planes and 4 on each side come from L1 and L2 once).
// 3 blocks an SM (80 registers): more registers, other tiles or block extents fitted to the slab
// depth measured no faster (docs/kernels.md, "C-PML").
constexpr int kFx = 8, kFy = 4, kFz = 8, kFmin = 3;

/// u(i0 - 8 .. i0 + 11) of the quad at p (its own quad u_c, already loaded, and two on each side),
/// for cpml_x_terms.
__device__ __forceinline__ void load_x_row(const float* __restrict__ u, std::int64_t p,
                                           const float4& u_c, float (&ux)[5 * kQuad]) {
  MINIMOD_UNROLL
  for (int qd = 0; qd < 5; ++qd) {
    const float4 q = qd == 2 ? u_c : load_quad_ro(u, p + (qd - 2) * kQuad);
    MINIMOD_UNROLL
    for (int ln = 0; ln < kQuad; ++ln)
      ux[qd * kQuad + ln] = quad_lane(q, ln);
  }
}

/// The x term of the C-PML at the quad's lanes: d~_xx u where the lane is in an x slab, the plain
/// d_xx u elsewhere. ux holds u(i0 - 8 .. i0 + 11); psi^n of x is formed at the 12 points
/// i0 - 4 .. i0 + 7 from psi^(n-1) (the reference's memory pass, the same expression), its
/// derivative read from them, and psi^n of the lanes written to psi_next.
template <bool Slab>
__device__ __forceinline__ void cpml_x_terms(const CpmlView& v, const float* ux, int i0, int j,
                                             int k, int lo, int hi, const float* cx, float* term) {
  const float* w = v.d1[0];
  float d2[kQuad];
  MINIMOD_UNROLL
  for (int l = 0; l < kQuad; ++l) {
    float d = cx[0] * ux[8 + l];
    MINIMOD_UNROLL
    for (int m = 1; m <= kHalo; ++m)
      d += cx[m] * (ux[8 + l + m] + ux[8 + l - m]);
    d2[l] = d;
    term[l] = d;
  }
  if constexpr (!Slab) return;
  // The slab faces of the 12 points (-1 outside both slabs and outside the grid).
  int fq[3 * kQuad];
  bool any = false;
  MINIMOD_UNROLL
  for (int t = 0; t < 3 * kQuad; ++t) {
    fq[t] = cpml_face(v, 0, i0 - kHalo + t);
    any |= fq[t] >= 0;
  }
  if (!any) return;
  float psin[3 * kQuad], du[3 * kQuad];
  MINIMOD_UNROLL
  for (int t = 0; t < 3 * kQuad; ++t) {
    psin[t] = 0.0f;
    du[t] = 0.0f;
    const int q = i0 - kHalo + t;
    float d = 0.0f;
    MINIMOD_UNROLL
    for (int m = 1; m <= kHalo; ++m)
      d += w[m] * (ux[t + kHalo + m] - ux[t + kHalo - m]);
    du[t] = d;
    if (fq[t] >= 0) {
      const float old = v.psi[0][fq[t]][cpml_slab_index(v, 0, fq[t], q, j, k, kHalo)];
      psin[t] = v.b[0][q] * old + v.a[0][q] * d;
    }
  }
  MINIMOD_UNROLL
  for (int l = 0; l < kQuad; ++l) {
    const int f = fq[kHalo + l];
    if (f < 0 || l < lo || l >= hi) continue;
    const int i = i0 + l;
    float dpsi = 0.0f;
    MINIMOD_UNROLL
    for (int m = 1; m <= kHalo; ++m)
      dpsi += w[m] * ((fq[kHalo + l + m] == f ? psin[kHalo + l + m] : 0.0f) -
                      (fq[kHalo + l - m] == f ? psin[kHalo + l - m] : 0.0f));
    v.psi_next[0][f][cpml_slab_index(v, 0, f, i, j, k, kHalo)] = psin[kHalo + l];
    const float ik = v.ik[0][i];
    const float g = ik * d2[l] + v.dik[0][i] * du[kHalo + l] + dpsi;
    float& zeta = v.zeta[0][f][cpml_slab_index(v, 0, f, i, j, k, 0)];
    const float z = v.b[0][i] * zeta + v.a[0][i] * g;
    zeta = z;
    term[l] = ik * g + z;
  }
}

/// The y (Axis 1) or z (Axis 2) term of the C-PML at the quad's lanes, added to sum: d~_aa u in
/// the axis's slabs, where d_a psi^n comes from the taps (cpml_psi_taps) and psi^n of the point
/// is written to psi_next; the plain d_aa u elsewhere. u_c: the quad's own u.
template <int Axis, bool Slab>
__device__ __forceinline__ void cpml_yz_terms(const CpmlView& v, const float* __restrict__ u,
                                              std::int64_t p, std::int64_t stride,
                                              const float4& u_c, int i0, int j, int k, int lo,
                                              int hi, const float* ca, float* sum) {
  const int c = Axis == 1 ? j : k;
  const int f = Slab ? cpml_face(v, Axis, c) : -1;
  if (f < 0) {
    float d2[kQuad];
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      d2[l] = ca[0] * quad_lane(u_c, l);
    MINIMOD_UNROLL
    for (int m = 1; m <= kHalo; ++m) {
      const float4 up = load_quad_ro(u, p + m * stride), um = load_quad_ro(u, p - m * stride);
      MINIMOD_UNROLL
      for (int l = 0; l < kQuad; ++l)
        d2[l] += ca[m] * (quad_lane(up, l) + quad_lane(um, l));
    }
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      sum[l] += d2[l];
    return;
  }
  const float* w = v.d1[Axis];
  const float* tap = v.taps[Axis] + static_cast<std::int64_t>(c) * kCpmlTaps;
  const int n = v.n[Axis];
  float d2[kQuad], d1[kQuad], tu[kQuad];
  MINIMOD_UNROLL
  for (int l = 0; l < kQuad; ++l) {
    d2[l] = ca[0] * quad_lane(u_c, l);
    d1[l] = 0.0f;
    tu[l] = __ldg(tap + 2 * kHalo) * quad_lane(u_c, l);
  }
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m) {
    const float4 up = load_quad_ro(u, p + m * stride), um = load_quad_ro(u, p - m * stride);
    const float tp = __ldg(tap + 2 * kHalo + m), tm = __ldg(tap + 2 * kHalo - m);
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l) {
      d2[l] += ca[m] * (quad_lane(up, l) + quad_lane(um, l));
      d1[l] += w[m] * (quad_lane(up, l) - quad_lane(um, l));
      tu[l] += tp * quad_lane(up, l) + tm * quad_lane(um, l);
    }
  }
  // The taps 5..8 away: rows outside the ghost have zero weight and are read at its edge.
  MINIMOD_UNROLL
  for (int m = kHalo + 1; m <= 2 * kHalo; ++m) {
    const int rp = min(c + m, n + kHalo - 1) - c, rm = max(c - m, -kHalo) - c;
    const float4 up = load_quad_ro(u, p + rp * stride), um = load_quad_ro(u, p + rm * stride);
    const float tp = __ldg(tap + 2 * kHalo + m), tm = __ldg(tap + 2 * kHalo - m);
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      tu[l] += tp * quad_lane(up, l) + tm * quad_lane(um, l);
  }
  const float* psi = v.psi[Axis][f];
  const std::int64_t ps = cpml_psi_stride(v, Axis);
  const float ac = __ldg(v.a[Axis] + c), bc = __ldg(v.b[Axis] + c);
  const float ik = __ldg(v.ik[Axis] + c), dik = __ldg(v.dik[Axis] + c);
  MINIMOD_UNROLL
  for (int l = 0; l < kQuad; ++l) {
    if (l < lo || l >= hi) continue;
    const int i = i0 + l;
    const std::int64_t q = cpml_slab_index(v, Axis, f, i, j, k, kHalo);
    float dpsi = tu[l];
    MINIMOD_UNROLL
    for (int m = 1; m <= kHalo; ++m)
      dpsi += __ldg(tap + 4 * kHalo + m) * psi[q + m * ps] -
              __ldg(tap + 5 * kHalo + m) * psi[q - m * ps];
    v.psi_next[Axis][f][q] = bc * psi[q] + ac * d1[l];
    const float g = ik * d2[l] + dik * d1[l] + dpsi;
    float& zeta = v.zeta[Axis][f][cpml_slab_index(v, Axis, f, i, j, k, 0)];
    const float z = bc * zeta + ac * g;
    zeta = z;
    sum[l] += ik * g + z;
  }
}

/// u^(n+1) of the quad at p from u^n (u_c), u^(n-1) (in next) and the C-PML's sum_a d~_aa u,
/// written to the lanes [lo, hi) inside the box.
__device__ __forceinline__ void step_quad(float* __restrict__ next,
                                          const float* __restrict__ vp2dt2, std::int64_t p,
                                          const float4& u_c, const float* sum, int lo, int hi) {
  const float4 v_c = load_quad_rw(next, p);
  const float4 m_c = load_quad_ro(vp2dt2, p);
  float out[kQuad];
  MINIMOD_UNROLL
  for (int ln = 0; ln < kQuad; ++ln)
    out[ln] = inner_update(quad_lane(u_c, ln), quad_lane(v_c, ln), quad_lane(m_c, ln), sum[ln]);
  store_quad(next, p, make_float4(out[0], out[1], out[2], out[3]), lo, hi);
}

/// The fused acoustic C-PML layer update of `box` point by point, for the x slabs (the left and
/// right regions) and the edges of the z slabs: 4 x points a thread (gmem_3d_f4's quads and block
/// reshape), psi^n and zeta^(n+1) of every slab the point is in, and u^(n+1).
/// The block is kFx x kFy x kFz threads (4 kFx x points), reshaped like gmem_3d_f4's.
/// \tparam X, Y, Z whether the box meets the slabs of that axis (if not, its plain d_aa u only).
template <bool X, bool Y, bool Z>
__global__ void MINIMOD_LAUNCH_BOUNDS(kFx* kFy* kFz, kFmin)
    cpml_fused_kernel(const CpmlView v, const float* __restrict__ u, float* __restrict__ next,
                      const float* __restrict__ vp2dt2, const FieldLayout l, const StencilCoefs c,
                      const Box box, const int quad_x0, const int x_shift) {
  const QuadPoint qp = quad_point<kFx, kFy, kFz>(box, quad_x0, x_shift);
  const int i0 = qp.i0, j = qp.j, k = qp.k;
  if (i0 >= box.x1 || j >= box.y1 || k >= box.z1) return;
  const int lo = box.x0 - i0, hi = box.x1 - i0;
  const std::int64_t p = l.index(i0, j, k);

  float sum[kQuad];
  const float4 u_c = load_quad_ro(u, p);
  {
    float ux[5 * kQuad];
    load_x_row(u, p, u_c, ux);
    cpml_x_terms<X>(v, ux, i0, j, k, lo, hi, c.cx, sum);
  }
  cpml_yz_terms<1, Y>(v, u, p, l.pitch, u_c, i0, j, k, lo, hi, c.cy, sum);
  cpml_yz_terms<2, Z>(v, u, p, l.plane, u_c, i0, j, k, lo, hi, c.cz, sum);

  step_quad(next, vp2dt2, p, u_c, sum, lo, hi);
}

// The streaming layer update's block: kSx quads along x by kSy rows along z, each thread one column
// along y.
constexpr int kSx = 32, kSy = 4;

/// The streaming acoustic C-PML layer update of `box`, for the boxes that meet the y slabs and no
/// z slab: each thread walks one column of 4 x points (a quad) along y through the box and keeps
/// in registers u at the 13 rows c - 4 .. c + 8 and psi^n of y at the 9 rows c - 4 .. c + 4 of its
/// point c. Each row costs one load of u (c + 8) and of psi^(n-1) (c + 4), from which psi^n
/// (c + 4) is formed with the reference's expression; d_y psi^n at c reads the queue (neighbours
/// in the slab of c's face only), so y needs neither taps nor stencil loads. x takes its term
/// point by point as in cpml_fused_kernel, z its plain d_zz u. Columns start 12 rows before the box
/// (16 where the plane before it is in a slab, whose psi^n the first points read), loads clamped to
/// the ghost; the next plane's loads are issued one step ahead. 3 blocks an SM (168 registers):
/// at 2 (176) and 4 (128, spilling) the H200 measured slower (docs/kernels.md, "C-PML").
/// \tparam X whether the box meets the x slabs
template <bool X>
__global__ void MINIMOD_LAUNCH_BOUNDS(kSx* kSy, 3)
    cpml_stream_kernel(const CpmlView v, const float* __restrict__ u, float* __restrict__ next,
                       const float* __restrict__ vp2dt2, const FieldLayout l, const StencilCoefs c,
                       const Box box, const int quad_x0) {
  constexpr int S = 1; // the stream's axis, y
  const int i0 = quad_x0 + kQuad * static_cast<int>(blockIdx.x * kSx + threadIdx.x);
  const int o = box.z0 + static_cast<int>(blockIdx.y * kSy + threadIdx.y);
  if (i0 >= box.x1 || o >= box.z1) return;
  const int lo = box.x0 - i0, hi = box.x1 - i0;
  const int c0 = box.y0, c1 = box.y1;
  const int n = v.n[S];
  const std::int64_t ss = l.pitch;
  const std::int64_t cs = l.plane;
  const std::int64_t col = l.index(i0, 0, o);
  const float* w = v.d1[S];
  const float* ca = c.cy;
  const float* cc = c.cz;

  float4 uq[3 * kHalo + 1]; // u at c - 4 .. c + 8
  float4 pq[2 * kHalo + 1]; // psi^n of S at c - 4 .. c + 4 (zero outside the slabs)
  MINIMOD_UNROLL
  for (int t = 0; t < 3 * kHalo + 1; ++t)
    uq[t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  MINIMOD_UNROLL
  for (int t = 0; t < 2 * kHalo + 1; ++t)
    pq[t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const int start = c0 - 3 * kHalo - (cpml_face(v, S, c0 - 1) >= 0 ? kHalo : 0);
  // Plane cp + 8 of u, and psi^(n-1) of S at q = cp + 4 with its face, for the walk's step cp:
  // loaded one step ahead, so that they are in flight during the step before.
  const auto u_at = [&](int cp) {
    return load_quad_ro(u, col + max(min(cp + 2 * kHalo, n + kHalo - 1), -kHalo) * ss);
  };
  const auto face_at = [&](int cp) {
    return cp + kHalo >= start + 3 * kHalo ? cpml_face(v, S, cp + kHalo) : -1;
  };
  const auto psi_at = [&](int cp, int face) {
    float old[kQuad];
    const int q = cp + kHalo;
    MINIMOD_UNROLL
    for (int ln = 0; ln < kQuad; ++ln)
      old[ln] = face >= 0 && ln >= lo && ln < hi
                    ? v.psi[S][face][cpml_slab_index(v, S, face, i0 + ln, q, o, kHalo)]
                    : 0.0f;
    return make_float4(old[0], old[1], old[2], old[3]);
  };
  float4 u_ahead = u_at(start);
  int f_ahead = face_at(start);
  float4 psi_ahead = psi_at(start, f_ahead);
  for (int cp = start; cp < c1; ++cp) {
    // Shift the queues and take plane cp + 8 of u and psi^n at cp + 4.
    MINIMOD_UNROLL
    for (int t = 0; t < 3 * kHalo; ++t)
      uq[t] = uq[t + 1];
    MINIMOD_UNROLL
    for (int t = 0; t < 2 * kHalo; ++t)
      pq[t] = pq[t + 1];
    uq[3 * kHalo] = u_ahead;
    const int q = cp + kHalo;
    const int fnew = f_ahead;
    const float4 old = psi_ahead;
    if (cp + 1 < c1) {
      u_ahead = u_at(cp + 1);
      f_ahead = face_at(cp + 1);
      psi_ahead = psi_at(cp + 1, f_ahead);
    }
    float4 pn = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (fnew >= 0) {
      // psi^n(q) = b psi^(n-1) + a d_S u(q), u(q -+ m) at uq[8 -+ m].
      const float aq = __ldg(v.a[S] + q), bq = __ldg(v.b[S] + q);
      float out[kQuad];
      MINIMOD_UNROLL
      for (int ln = 0; ln < kQuad; ++ln) {
        float d = 0.0f;
        MINIMOD_UNROLL
        for (int m = 1; m <= kHalo; ++m)
          d += w[m] * (quad_lane(uq[2 * kHalo + m], ln) - quad_lane(uq[2 * kHalo - m], ln));
        out[ln] = bq * quad_lane(old, ln) + aq * d;
      }
      pn = make_float4(out[0], out[1], out[2], out[3]);
    }
    pq[2 * kHalo] = pn;
    if (cp < c0) continue;

    // The point c = cp: u(c -+ m) at uq[4 -+ m], psi^n(c -+ m) at pq[4 -+ m].
    const int j = cp, k = o;
    const std::int64_t p = col + cp * ss;
    const float4 u_c = uq[kHalo];
    float sum[kQuad];
    {
      float ux[5 * kQuad];
      load_x_row(u, p, u_c, ux);
      cpml_x_terms<X>(v, ux, i0, j, k, lo, hi, c.cx, sum);
    }
    cpml_yz_terms<2, false>(v, u, p, cs, u_c, i0, j, k, lo, hi, cc, sum);
    const int f = cpml_face(v, S, cp);
    float d2[kQuad], d1[kQuad];
    MINIMOD_UNROLL
    for (int ln = 0; ln < kQuad; ++ln) {
      d2[ln] = ca[0] * quad_lane(u_c, ln);
      d1[ln] = 0.0f;
    }
    MINIMOD_UNROLL
    for (int m = 1; m <= kHalo; ++m) {
      MINIMOD_UNROLL
      for (int ln = 0; ln < kQuad; ++ln) {
        const float up = quad_lane(uq[kHalo + m], ln), um = quad_lane(uq[kHalo - m], ln);
        d2[ln] += ca[m] * (up + um);
        d1[ln] += w[m] * (up - um);
      }
    }
    if (f < 0) {
      MINIMOD_UNROLL
      for (int ln = 0; ln < kQuad; ++ln)
        sum[ln] += d2[ln];
    } else {
      const float ac = __ldg(v.a[S] + cp), bc = __ldg(v.b[S] + cp);
      const float ik = __ldg(v.ik[S] + cp), dik = __ldg(v.dik[S] + cp);
      MINIMOD_UNROLL
      for (int ln = 0; ln < kQuad; ++ln) {
        if (ln < lo || ln >= hi) continue;
        const int i = i0 + ln;
        float dpsi = 0.0f;
        MINIMOD_UNROLL
        for (int m = 1; m <= kHalo; ++m)
          dpsi += w[m] * ((cpml_face(v, S, cp + m) == f ? quad_lane(pq[kHalo + m], ln) : 0.0f) -
                          (cpml_face(v, S, cp - m) == f ? quad_lane(pq[kHalo - m], ln) : 0.0f));
        v.psi_next[S][f][cpml_slab_index(v, S, f, i, j, k, kHalo)] = quad_lane(pq[kHalo], ln);
        const float g = ik * d2[ln] + dik * d1[ln] + dpsi;
        float& zeta = v.zeta[S][f][cpml_slab_index(v, S, f, i, j, k, 0)];
        const float z = bc * zeta + ac * g;
        zeta = z;
        sum[ln] += ik * g + z;
      }
    }
    step_quad(next, vp2dt2, p, u_c, sum, lo, hi);
  }
}

} // namespace

void CpmlDevice::setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile,
                       gpuStream_t stream, bool fused) {
  release();
  m_view = make_cpml_view(grid, layer, profile);
  m_fused = fused;
  const char* names[4] = {"C-PML a", "C-PML b", "C-PML 1/kappa", "C-PML d(1/kappa)"};
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<float>* arrays[4] = {&profile.a[axis], &profile.b[axis], &profile.ik[axis],
                                           &profile.dik[axis]};
    for (int n = 0; n < 4; ++n)
      m_profile[axis][n] = upload_new(*arrays[n], names[n], stream);
    m_view.a[axis] = m_profile[axis][0].as<const float>();
    m_view.b[axis] = m_profile[axis][1].as<const float>();
    m_view.ik[axis] = m_profile[axis][2].as<const float>();
    m_view.dik[axis] = m_profile[axis][3].as<const float>();
    if (fused) {
      m_taps[axis] = upload_new(cpml_psi_taps(profile, layer, axis), "C-PML taps", stream);
      m_view.taps[axis] = m_taps[axis].as<const float>();
    }
    for (int face = 0; face < 2; ++face) {
      const std::size_t psi = cpml_slab_points(grid, layer, axis, face == 1, kHalo);
      const std::size_t zeta = cpml_slab_points(grid, layer, axis, face == 1, 0);
      m_psi[axis][face] = psi ? DeviceBuffer(psi * sizeof(float), "C-PML psi") : DeviceBuffer();
      m_zeta[axis][face] = zeta ? DeviceBuffer(zeta * sizeof(float), "C-PML zeta") : DeviceBuffer();
      if (psi) m_psi_next[axis][face] = DeviceBuffer(psi * sizeof(float), "C-PML psi (next step)");
      m_view.psi[axis][face] = m_psi[axis][face].as<float>();
      m_view.psi_next[axis][face] = m_psi_next[axis][face].as<float>();
      m_view.zeta[axis][face] = m_zeta[axis][face].as<float>();
    }
  }
  m_on = true;
  zero(stream);
  // The profile's host arrays may go once setup returns.
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(stream));
}

void CpmlDevice::zero(gpuStream_t stream) {
  for (int axis = 0; axis < 3; ++axis)
    for (int face = 0; face < 2; ++face)
      for (DeviceBuffer* b : {&m_psi[axis][face], &m_psi_next[axis][face], &m_zeta[axis][face]})
        if (!b->empty())
          MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b->as<void>(), 0, b->bytes(), stream),
                                 "zeroing " + std::to_string(b->bytes()) + " B of C-PML memory");
}

void CpmlDevice::release() {
  m_on = false;
  for (int axis = 0; axis < 3; ++axis) {
    for (auto& b : m_profile[axis])
      b = DeviceBuffer();
    m_taps[axis] = DeviceBuffer();
    for (int face = 0; face < 2; ++face) {
      m_psi[axis][face] = DeviceBuffer();
      m_psi_next[axis][face] = DeviceBuffer();
      m_zeta[axis][face] = DeviceBuffer();
    }
  }
  m_view = CpmlView{};
  m_fused = false;
}

void CpmlDevice::end_step() {
  if (!m_on || !m_fused) return;
  for (int axis = 0; axis < 3; ++axis)
    for (int face = 0; face < 2; ++face)
      std::swap(m_view.psi[axis][face], m_view.psi_next[axis][face]);
}

void CpmlDevice::memory_pass(const float* u, const FieldLayout& l, gpuStream_t stream) const {
  if (!m_on) return;
  if (m_fused) throw std::logic_error("C-PML memory pass asked of a fused C-PML");
  const dim3 block(kBx, kBy, kBz);
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const int w = face == 0 ? m_view.lo[axis] : m_view.hi[axis];
      if (w == 0) continue;
      Box b{0, m_view.n[0], 0, m_view.n[1], 0, m_view.n[2]};
      int* lo[3] = {&b.x0, &b.y0, &b.z0};
      int* hi[3] = {&b.x1, &b.y1, &b.z1};
      *lo[axis] = face == 0 ? 0 : m_view.n[axis] - w;
      *hi[axis] = *lo[axis] + w;
      const dim3 grid(static_cast<unsigned>(ceil_div(b.nx(), kBx)),
                      static_cast<unsigned>(ceil_div(b.ny(), kBy)),
                      static_cast<unsigned>(ceil_div(b.nz(), kBz)));
      cpml_memory_kernel<<<grid, block, 0, stream>>>(m_view, axis, face, u, l, b);
      MINIMOD_GPU_CHECK_LAUNCH("cpml_memory_kernel", grid, block, 0);
    }
  }
}

namespace {

/// Which axes' slabs box b meets: bit 0 x, bit 1 y, bit 2 z.
int slab_mask(const CpmlView& v, const Box& b) {
  const int b0[3] = {b.x0, b.y0, b.z0}, b1[3] = {b.x1, b.y1, b.z1};
  int mask = 0;
  for (int a = 0; a < 3; ++a)
    if (b0[a] < v.lo[a] || b1[a] > v.n[a] - v.hi[a]) mask |= 1 << a;
  return mask;
}

/// Queue the update of box b (not empty): boxes in the z slabs that meet no x or y slab stream
/// along z in st_reg_shft_25d's tiles (launch_cpml_z_slab), boxes in the y slabs that meet no z
/// slab along y (cpml_stream_kernel), the others (the x slabs, and the edges of the z slabs) point
/// by point (cpml_fused_kernel).
void launch_layer_box(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Box& b,
                      gpuStream_t stream) {
  const CpmlView& v = *f.cpml;
  const QuadSpan quads = quad_span(b, l);
  const int mask = slab_mask(v, b);
  const bool x = (mask & 1) != 0;
  const bool z_stream = mask == 4, y_stream = (mask & 6) == 2;
  if (z_stream) {
    launch_cpml_z_slab(f, l, c, b, stream);
    return;
  }
  if (y_stream) {
    const dim3 block(kSx, kSy);
    const dim3 grid(static_cast<unsigned>(ceil_div(quads.count, kSx)),
                    static_cast<unsigned>(ceil_div(b.nz(), kSy)));
    if (x)
      cpml_stream_kernel<true>
          <<<grid, block, 0, stream>>>(v, f.u, f.v, f.vp2dt2, l, c, b, quads.x0);
    else
      cpml_stream_kernel<false>
          <<<grid, block, 0, stream>>>(v, f.u, f.v, f.vp2dt2, l, c, b, quads.x0);
    MINIMOD_GPU_CHECK_LAUNCH("cpml_stream_kernel (along y)", grid, block, 0);
    return;
  }
  using Kernel = void (*)(const CpmlView, const float* __restrict__, float* __restrict__,
                          const float* __restrict__, const FieldLayout, const StencilCoefs,
                          const Box, const int, const int);
  // Indexed by the mask: bit 0 x, bit 1 y, bit 2 z.
  static constexpr Kernel kernels[8] = {
      cpml_fused_kernel<false, false, false>, cpml_fused_kernel<true, false, false>,
      cpml_fused_kernel<false, true, false>,  cpml_fused_kernel<true, true, false>,
      cpml_fused_kernel<false, false, true>,  cpml_fused_kernel<true, false, true>,
      cpml_fused_kernel<false, true, true>,   cpml_fused_kernel<true, true, true>};
  static const char* const names[8] = {
      "cpml_fused_kernel (no slab axis)", "cpml_fused_kernel (x slab)",
      "cpml_fused_kernel (y slab)",       "cpml_fused_kernel (x, y slabs)",
      "cpml_fused_kernel (z slab)",       "cpml_fused_kernel (x, z slabs)",
      "cpml_fused_kernel (y, z slabs)",   "cpml_fused_kernel (x, y, z slabs)"};
  // The quad grid of the box (aligned on the padded row), reshaped for slabs a few quads wide.
  const int shift = quad_x_shift(kFx, quads.count);
  const dim3 block(kFx, kFy, kFz);
  const dim3 grid(static_cast<unsigned>(ceil_div(quads.count, kFx >> shift)),
                  static_cast<unsigned>(ceil_div(b.ny(), kFy << shift)),
                  static_cast<unsigned>(ceil_div(b.nz(), kFz)));
  kernels[mask]<<<grid, block, 0, stream>>>(v, f.u, f.v, f.vp2dt2, l, c, b, quads.x0, shift);
  MINIMOD_GPU_CHECK_LAUNCH(names[mask], grid, block, 0);
}

/// Box b cut along `axis` at the inner edges of that axis's slabs: the pieces in the low slab,
/// between and in the high slab (empty ones included).
std::array<Box, 3> split_at_slabs(const CpmlView& v, const Box& b, int axis) {
  std::array<Box, 3> p = {b, b, b};
  const int edge[2] = {v.lo[axis], v.n[axis] - v.hi[axis]};
  int *b0[3], *b1[3];
  for (int n = 0; n < 3; ++n) {
    b0[n] = axis == 0 ? &p[n].x0 : (axis == 1 ? &p[n].y0 : &p[n].z0);
    b1[n] = axis == 0 ? &p[n].x1 : (axis == 1 ? &p[n].y1 : &p[n].z1);
  }
  const int lo = *b0[0], hi = *b1[0];
  *b1[0] = std::min(hi, edge[0]);
  *b0[1] = std::max(lo, edge[0]);
  *b1[1] = std::min(hi, edge[1]);
  *b0[2] = std::max(lo, edge[1]);
  return p;
}

} // namespace

void cpml_layer_update_gpu(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                           const Box& b, gpuStream_t stream) {
  if (b.empty()) return;
  const CpmlView& v = *f.cpml;
  if (v.taps[0] == nullptr)
    throw std::logic_error("the acoustic C-PML layer update needs a fused CpmlDevice");
  if (!quad_aligned(f) || l.pitch % kQuad != 0 || l.x_offset < kQuad)
    throw std::invalid_argument(
        "C-PML layer update: float4 loads need 16-byte aligned fields, a pitch that is a multiple "
        "of 4 floats and 4 floats before x = 0 (pitch " +
        std::to_string(l.pitch) + ", x offset " + std::to_string(l.x_offset) + ")");
  if ((slab_mask(v, b) & 4) == 0) {
    launch_layer_box(f, l, c, b, stream);
    return;
  }
  // A box in the z slabs is cut at the x and y slabs' edges: most of it streams along z, with no x
  // or y memory terms; its edges, which carry those, go point by point.
  for (const Box& by : split_at_slabs(v, b, 1))
    for (const Box& bx : split_at_slabs(v, by, 0))
      if (!bx.empty()) launch_layer_box(f, l, c, bx, stream);
}

} // namespace minimod::gpu
