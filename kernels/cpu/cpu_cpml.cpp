#include "kernels/cpu/cpu_cpml.hpp"

#include <algorithm>

namespace minimod {

void CpmlHostMemory::setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile) {
  m_view = make_cpml_view(grid, layer, profile);
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const std::size_t n = cpml_slab_points(grid, layer, axis, face == 1, 0);
      m_psi[axis][face].assign(cpml_slab_points(grid, layer, axis, face == 1, kHalo), 0.0f);
      m_zeta[axis][face].assign(n, 0.0f);
      m_view.psi[axis][face] = n ? m_psi[axis][face].data() : nullptr;
      m_view.zeta[axis][face] = n ? m_zeta[axis][face].data() : nullptr;
    }
  }
}

void CpmlHostMemory::reset() {
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      std::fill(m_psi[axis][face].begin(), m_psi[axis][face].end(), 0.0f);
      std::fill(m_zeta[axis][face].begin(), m_zeta[axis][face].end(), 0.0f);
    }
  }
}

void cpml_memory_pass_reference(const CpmlView& v, const float* u, const FieldLayout& l) {
  const std::int64_t stride[3] = {1, l.pitch, l.plane};
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const int w = face == 0 ? v.lo[axis] : v.hi[axis];
      if (w == 0) continue;
      const int start = face == 0 ? 0 : v.n[axis] - w;
      int lo[3] = {0, 0, 0}, hi[3] = {v.n[0], v.n[1], v.n[2]};
      lo[axis] = start;
      hi[axis] = start + w;
      const std::int64_t s = stride[axis];
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = lo[2]; k < hi[2]; ++k) {
        for (int j = lo[1]; j < hi[1]; ++j) {
          const std::int64_t row = l.index(0, j, k);
          for (int i = lo[0]; i < hi[0]; ++i)
            cpml_memory_point(v, axis, face, u, row + i, s, i, j, k);
        }
      }
    }
  }
}

void cpml_update_layer_reference(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                                 const Box& b) {
  const CpmlView& v = *f.cpml;
  const std::int64_t sy = l.pitch, sz = l.plane;
  const float* __restrict__ u = f.u;
  float* __restrict__ next = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = b.z0; k < b.z1; ++k) {
    for (int j = b.y0; j < b.y1; ++j) {
      const std::int64_t row = l.index(0, j, k);
      for (int i = b.x0; i < b.x1; ++i) {
        const std::int64_t p = row + i;
        float sum = cpml_axis_term(v, 0, u, p, 1, i, j, k, cpml_second_derivative(u, p, 1, c.cx));
        sum += cpml_axis_term(v, 1, u, p, sy, i, j, k, cpml_second_derivative(u, p, sy, c.cy));
        sum += cpml_axis_term(v, 2, u, p, sz, i, j, k, cpml_second_derivative(u, p, sz, c.cz));
        next[p] = inner_update(u[p], next[p], vp2dt2[p], sum);
      }
    }
  }
}

namespace {

/// One axis of a row run: where its memory variables of the row start (psi with its padding, so
/// that psi[psi_at + c] is the point of coordinate c along x, or the row's point for y and z), its
/// psi stride, and for y and z the coefficients at the row's coordinate.
struct CpmlRowAxis {
  const float* psi = nullptr;
  float* zeta = nullptr;
  std::int64_t psi_at = 0, zeta_at = 0, psi_stride = 0;
  float a = 0, b = 1, ik = 1, dik = 0;
};

/// The row offsets of the slab (axis, face) for row (j, k): the slab index of the row's point
/// x = 0 in the padded psi layout and in zeta's (cpml_slab_index, without its per-point sums).
CpmlRowAxis cpml_row_axis(const CpmlView& v, int axis, int face, int j, int k) {
  CpmlRowAxis r;
  r.psi = v.psi[axis][face];
  r.zeta = v.zeta[axis][face];
  r.psi_at = cpml_slab_index(v, axis, face, 0, j, k, kHalo);
  r.zeta_at = cpml_slab_index(v, axis, face, 0, j, k, 0);
  r.psi_stride = cpml_psi_stride(v, axis);
  if (axis > 0) {
    const int c = axis == 1 ? j : k;
    r.a = v.a[axis][c];
    r.b = v.b[axis][c];
    r.ik = v.ik[axis][c];
    r.dik = v.dik[axis][c];
  }
  return r;
}

/// What an axis's loop of a row run does with its term t: sum = t (x), sum += t (y), or the
/// update of u with sum + t (z).
enum class CpmlSum { Store, Add, Update };

/// The term of one axis for points [b0, b1) of a row run (cpml_axis_term, the same expressions in
/// the same order): d_aa u, in the slab (Slab) the C-PML's form with zeta updated. `sum` holds
/// the run's partial sums from b0. One loop an axis keeps few values live, so that the loop
/// vectorises without spilling (the three axes' coefficients and pointers in one loop do not fit
/// the registers of AVX2).
template <int Axis, bool Slab, CpmlSum Mode>
void cpml_axis_loop(float* __restrict__ sum, const IsoFields& f, const float* coefs,
                    const CpmlView& v, const CpmlRowAxis& r, std::int64_t row, std::int64_t stride,
                    int b0, int b1) {
  const float* __restrict__ u = f.u;
  float* __restrict__ next = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  float c[kHalo + 1], w[kHalo + 1];
  for (int m = 0; m <= kHalo; ++m) {
    c[m] = coefs[m];
    w[m] = v.d1[Axis][m];
  }
  const float* __restrict__ xa = v.a[0];
  const float* __restrict__ xb = v.b[0];
  const float* __restrict__ xik = v.ik[0];
  const float* __restrict__ xdik = v.dik[0];
  const float* __restrict__ psi = r.psi;
  float* __restrict__ zeta = r.zeta;
  const std::int64_t pa = r.psi_at, za = r.zeta_at, ps = r.psi_stride;
  const float ra = r.a, rb = r.b, rik = r.ik, rdik = r.dik;
#pragma omp simd
  for (int i = b0; i < b1; ++i) {
    const std::int64_t p = row + i;
    float t = cpml_second_derivative(u, p, stride, c);
    if constexpr (Slab) {
      const float dpsi = cpml_first_derivative(psi, pa + i, ps, w);
      const float ik = Axis == 0 ? xik[i] : rik;
      const float dik = Axis == 0 ? xdik[i] : rdik;
      const float g = ik * t + dik * cpml_first_derivative(u, p, stride, w) + dpsi;
      const float z = (Axis == 0 ? xb[i] : rb) * zeta[za + i] + (Axis == 0 ? xa[i] : ra) * g;
      zeta[za + i] = z;
      t = ik * g + z;
    }
    if constexpr (Mode == CpmlSum::Store)
      sum[i - b0] = t;
    else if constexpr (Mode == CpmlSum::Add)
      sum[i - b0] += t;
    else
      next[p] = inner_update(u[p], next[p], vp2dt2[p], sum[i - b0] + t);
  }
}

/// The y and z terms of points [b0, b1) of a row run in neither the y nor the z slabs, and the
/// update of u: cpml_axis_loop's Add of y then Update of z in one loop (plain second
/// derivatives, the same expressions in the same order), which keeps few values live.
void cpml_plain_yz_update(const float* __restrict__ sum, const IsoFields& f,
                          const StencilCoefs& coefs, std::int64_t row, std::int64_t sy,
                          std::int64_t sz, int b0, int b1) {
  const float* __restrict__ u = f.u;
  float* __restrict__ next = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  float cy[kHalo + 1], cz[kHalo + 1];
  for (int m = 0; m <= kHalo; ++m) {
    cy[m] = coefs.cy[m];
    cz[m] = coefs.cz[m];
  }
#pragma omp simd
  for (int i = b0; i < b1; ++i) {
    const std::int64_t p = row + i;
    const float s = sum[i - b0] + cpml_second_derivative(u, p, sy, cy);
    next[p] = inner_update(u[p], next[p], vp2dt2[p], s + cpml_second_derivative(u, p, sz, cz));
  }
}

/// Points [i0, i1) of the row at `row` (linear index of x = 0), all in the x slab X or not, the
/// row in the y slab Y or not and the z slab Z or not: cpml_axis_term per axis and the update of
/// cpml_update_layer_reference, the same expressions in the same order, with the slab tests and
/// indices taken once a run; the axes in loops of their own over blocks of the run, the partial
/// sums in a buffer.
template <bool X, bool Y, bool Z>
void cpml_run(const IsoFields& f, const StencilCoefs& coefs, const CpmlView& v, std::int64_t row,
              int i0, int i1, std::int64_t sy, std::int64_t sz, const CpmlRowAxis& rx,
              const CpmlRowAxis& ry, const CpmlRowAxis& rz) {
  constexpr int kBlock = 256;
  alignas(64) float sum[kBlock];
  for (int b0 = i0; b0 < i1; b0 += kBlock) {
    const int b1 = std::min(b0 + kBlock, i1);
    cpml_axis_loop<0, X, CpmlSum::Store>(sum, f, coefs.cx, v, rx, row, 1, b0, b1);
    if constexpr (!Y && !Z) {
      cpml_plain_yz_update(sum, f, coefs, row, sy, sz, b0, b1);
    } else {
      cpml_axis_loop<1, Y, CpmlSum::Add>(sum, f, coefs.cy, v, ry, row, sy, b0, b1);
      cpml_axis_loop<2, Z, CpmlSum::Update>(sum, f, coefs.cz, v, rz, row, sz, b0, b1);
    }
  }
}

template <bool Y, bool Z>
void cpml_run_x(bool x, const IsoFields& f, const StencilCoefs& c, const CpmlView& v,
                std::int64_t row, int i0, int i1, std::int64_t sy, std::int64_t sz,
                const CpmlRowAxis& rx, const CpmlRowAxis& ry, const CpmlRowAxis& rz) {
  if (x)
    cpml_run<true, Y, Z>(f, c, v, row, i0, i1, sy, sz, rx, ry, rz);
  else
    cpml_run<false, Y, Z>(f, c, v, row, i0, i1, sy, sz, rx, ry, rz);
}

/// The psi update of points [i0, i1) of one row of a slab (psi[at + i] the point at x = i, u at
/// the row's x = 0): b and a from the arrays bb and aa at i
/// (x slabs) or at index 0 (the row's value, y and z slabs).
template <bool PerPoint>
void cpml_memory_run(float* __restrict__ psi, std::int64_t at, const float* __restrict__ u,
                     const float* aa, const float* bb, const float* d1, std::int64_t stride, int i0,
                     int i1) {
  float w[kHalo + 1];
  for (int m = 0; m <= kHalo; ++m)
    w[m] = d1[m];
  const float a0 = aa[0], b0 = bb[0];
#pragma omp simd simdlen(16)
  for (int i = i0; i < i1; ++i) {
    const float b = PerPoint ? bb[i] : b0, a = PerPoint ? aa[i] : a0;
    psi[at + i] = b * psi[at + i] + a * cpml_first_derivative(u, i, stride, w);
  }
}

/// Points a vector of the x slabs' short runs covers (one AVX2 register of floats).
constexpr int kSlabVector = 8;

/// cpml_memory_run of an x slab's row in whole vectors of kSlabVector points, the same bits: a
/// run of at least a vector whose length is no multiple of it takes its last vector (ending at
/// i1, overlapping the one before) into a buffer first, from the values before any store, and
/// stores it last; shorter runs go as cpml_memory_run. An x slab row is the slab's width long (10
/// to 27 points), where the loop's remainder in scalar code cost as much as its vectors.
void cpml_memory_run_x(float* __restrict__ psi, std::int64_t at, const float* __restrict__ u,
                       const float* aa, const float* bb, const float* d1, int i0, int i1) {
  const int n = i1 - i0;
  if (n < kSlabVector) {
    cpml_memory_run<true>(psi, at, u, aa, bb, d1, 1, i0, i1);
    return;
  }
  float w[kHalo + 1];
  for (int m = 0; m <= kHalo; ++m)
    w[m] = d1[m];
  alignas(32) float tail[kSlabVector];
  const int t0 = i1 - kSlabVector;
#pragma omp simd
  for (int t = 0; t < kSlabVector; ++t) {
    const int i = t0 + t;
    tail[t] = bb[i] * psi[at + i] + aa[i] * cpml_first_derivative(u, i, 1, w);
  }
  const int whole = i0 + n / kSlabVector * kSlabVector;
  for (int c = i0; c < whole; c += kSlabVector) {
#pragma omp simd
    for (int t = 0; t < kSlabVector; ++t) {
      const int i = c + t;
      psi[at + i] = bb[i] * psi[at + i] + aa[i] * cpml_first_derivative(u, i, 1, w);
    }
  }
  for (int t = 0; t < kSlabVector; ++t)
    psi[at + t0 + t] = tail[t];
}

} // namespace

void cpml_memory_row(const CpmlView& v, int axis, int face, const float* u, const FieldLayout& l,
                     int j, int k) {
  const std::int64_t row = l.index(0, j, k);
  const std::int64_t at = cpml_slab_index(v, axis, face, 0, j, k, kHalo);
  float* psi = v.psi[axis][face];
  if (axis == 0) {
    const int i0 = face == 0 ? 0 : v.n[0] - v.hi[0], i1 = face == 0 ? v.lo[0] : v.n[0];
    cpml_memory_run_x(psi, at, u + row, v.a[0], v.b[0], v.d1[0], i0, i1);
  } else {
    const int c = axis == 1 ? j : k;
    cpml_memory_run<false>(psi, at, u + row, v.a[axis] + c, v.b[axis] + c, v.d1[axis],
                           axis == 1 ? l.pitch : l.plane, 0, v.n[0]);
  }
}

void cpml_memory_pass_cpu(const CpmlView& v, const float* u, const FieldLayout& l) {
#pragma omp parallel
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const int w = face == 0 ? v.lo[axis] : v.hi[axis];
      if (w == 0) continue;
      const int start = face == 0 ? 0 : v.n[axis] - w;
      int lo[3] = {0, 0, 0}, hi[3] = {v.n[0], v.n[1], v.n[2]};
      lo[axis] = start;
      hi[axis] = start + w;
#pragma omp for collapse(2) schedule(static) nowait
      for (int k = lo[2]; k < hi[2]; ++k)
        for (int j = lo[1]; j < hi[1]; ++j)
          cpml_memory_row(v, axis, face, u, l, j, k);
    }
  }
}

void cpml_layer_segment(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, int j,
                        int k, int x0, int x1) {
  const CpmlView& v = *f.cpml;
  const std::int64_t sy = l.pitch, sz = l.plane;
  const std::int64_t row = l.index(0, j, k);
  const int fy = cpml_face(v, 1, j), fz = cpml_face(v, 2, k);
  const CpmlRowAxis ry = fy < 0 ? CpmlRowAxis{} : cpml_row_axis(v, 1, fy, j, k);
  const CpmlRowAxis rz = fz < 0 ? CpmlRowAxis{} : cpml_row_axis(v, 2, fz, j, k);
  // The row's runs along x: the low x slab, the points between, the high x slab.
  const int cuts[4] = {x0, std::clamp(v.lo[0], x0, x1), std::clamp(v.n[0] - v.hi[0], x0, x1), x1};
  for (int run = 0; run < 3; ++run) {
    const int i0 = cuts[run], i1 = cuts[run + 1];
    if (i1 <= i0) continue;
    const bool in_x = run != 1;
    const CpmlRowAxis rx = in_x ? cpml_row_axis(v, 0, run == 0 ? 0 : 1, j, k) : CpmlRowAxis{};
    if (fy >= 0 && fz >= 0)
      cpml_run_x<true, true>(in_x, f, c, v, row, i0, i1, sy, sz, rx, ry, rz);
    else if (fy >= 0)
      cpml_run_x<true, false>(in_x, f, c, v, row, i0, i1, sy, sz, rx, ry, rz);
    else if (fz >= 0)
      cpml_run_x<false, true>(in_x, f, c, v, row, i0, i1, sy, sz, rx, ry, rz);
    else
      cpml_run_x<false, false>(in_x, f, c, v, row, i0, i1, sy, sz, rx, ry, rz);
  }
}

} // namespace minimod
