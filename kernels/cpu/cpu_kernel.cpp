/// The CPU reference kernel `cpu`: the per-point math of stencil_K.hpp over any list of region
/// pieces in one OpenMP parallel region (cpu_sweep: (y, z) tiles, dynamic schedule, rows in memory
/// order), vectorised along x: intrinsics where the build has AVX-512, omp simd loops elsewhere.
/// Every point computes exactly the expressions of stencil_K.hpp in their order, its fmaf as fused
/// multiply-adds and nothing else fused (the build's -ffp-contract=off holds for the intrinsics
/// too), so results do not depend on the tiling, the thread count, the vector width or the path.
/// Under a C-PML the layer pieces take the C-PML row update (kernels/cpu/cpu_cpml.cpp) in the same
/// sweep.
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_pass.hpp"
#include "kernels/cpu/cpu_sweep.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace minimod {
namespace {

/// Points a row goes in whole vectors (a 512-bit vector of floats; two 256-bit ones with AVX2).
constexpr int kRowVector = 16;

/// eta around the points of one row (j, k), each pointer indexed by i: the row itself (read at
/// i - 1, i, i + 1) and the rows at j - 1, j + 1, k - 1 and k + 1 (read at i).
struct EtaRowSet {
  const float* c;
  const float* ym;
  const float* yp;
  const float* zm;
  const float* zp;
};

#if defined(__AVX512F__)
/// The AVX-512 row sweep. The same expressions as stencil_K.hpp in the same order, written with
/// intrinsics (results are the same bits as the portable loops below, which the build keeps when
/// AVX-512 is absent), for two things the compiler does not do by itself:
/// - a segment's last vector, when it is not whole, is computed with masked loads and stores
///   instead of an overlapping vector through a buffer (a 27-point layer slab is one whole vector
///   and one of 11 points, with no scalar copy of the remainder);
/// - the row's own values are rolled through three registers (u[p - 16 ..], u[p ..], u[p + 16 ..])
///   and the x neighbours u[p +- m] are register permutes of them (valignd): one load of u's row a
///   vector instead of nine, eight of which split cache lines.

/// The coefficients broadcast into vectors, once a row segment.
struct Coefs512 {
  __m512 c0, cx[kHalo + 1], cy[kHalo + 1], cz[kHalo + 1], px, py, pz;
  explicit Coefs512(const StencilCoefs& c) {
    c0 = _mm512_set1_ps(c.c0);
    for (int m = 1; m <= kHalo; ++m) {
      cx[m] = _mm512_set1_ps(c.cx[m]);
      cy[m] = _mm512_set1_ps(c.cy[m]);
      cz[m] = _mm512_set1_ps(c.cz[m]);
    }
    px = _mm512_set1_ps(c.px);
    py = _mm512_set1_ps(c.py);
    pz = _mm512_set1_ps(c.pz);
  }
};

/// The first n lanes of a vector (none for n <= 0, all for n >= 16).
inline __mmask16 first_lanes(int n) {
  return n >= kRowVector ? static_cast<__mmask16>(0xFFFF)
                         : static_cast<__mmask16>(n <= 0 ? 0u : (1u << n) - 1u);
}

/// Loads the vector at a; only the lanes of `mask` when Partial (the others read as zero and are
/// not touched, so a partial vector reads nothing beyond its segment).
template <bool Partial> inline __m512 load(const float* a, __mmask16 mask) {
  if constexpr (Partial)
    return _mm512_maskz_loadu_ps(mask, a);
  else
    return _mm512_loadu_ps(a);
}

template <bool Partial> inline void store(float* a, __mmask16 mask, __m512 x) {
  if constexpr (Partial)
    _mm512_mask_storeu_ps(a, mask, x);
  else
    _mm512_storeu_ps(a, x);
}

/// u[p + S ..] from lo = u[p - 16 ..], mid = u[p ..] and hi = u[p + 16 ..], S in -4 .. 4.
template <int S> inline __m512 shifted(__m512 lo, __m512 mid, __m512 hi) {
  static_assert(S >= -kHalo && S <= kHalo && S != 0, "a shift within the halo");
  // The maskz form with every lane set is the plain valignd; gcc 12's plain intrinsic trips
  // -Wmaybe-uninitialized on its undefined merge operand.
  if constexpr (S > 0)
    return _mm512_castsi512_ps(
        _mm512_maskz_alignr_epi32(0xFFFF, _mm512_castps_si512(hi), _mm512_castps_si512(mid), S));
  else
    return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(0xFFFF, _mm512_castps_si512(mid),
                                                         _mm512_castps_si512(lo), 16 + S));
}

/// A vector's four nearest neighbours along y and z, which both updates' Laplacian reads and the
/// layer's eta gradient reads again: loaded once.
struct Near512 {
  __m512 yp, ym, zp, zm;
};

template <bool Partial>
[[gnu::always_inline]] inline Near512 near_512(const float* q, std::int64_t sy, std::int64_t sz,
                                               __mmask16 mask) {
  return Near512{load<Partial>(q + sy, mask), load<Partial>(q - sy, mask),
                 load<Partial>(q + sz, mask), load<Partial>(q - sz, mask)};
}

/// laplacian_25 of the vector at q = u + p, in its order: c0 u, then for m = 1..4 the x, y and z
/// pairs (m = 1 from `near`).
template <bool Partial>
[[gnu::always_inline]] inline __m512
laplacian_512(const float* q, __m512 lo, __m512 mid, __m512 hi, const Near512& near,
              std::int64_t sy, std::int64_t sz, const Coefs512& k, __mmask16 mask) {
  __m512 lap = _mm512_mul_ps(k.c0, mid);
  auto terms = [&](auto mc) {
    constexpr int M = decltype(mc)::value;
    lap = _mm512_fmadd_ps(k.cx[M], _mm512_add_ps(shifted<M>(lo, mid, hi), shifted<-M>(lo, mid, hi)),
                          lap);
    if constexpr (M == 1) {
      lap = _mm512_fmadd_ps(k.cy[1], _mm512_add_ps(near.yp, near.ym), lap);
      lap = _mm512_fmadd_ps(k.cz[1], _mm512_add_ps(near.zp, near.zm), lap);
    } else {
      lap = _mm512_fmadd_ps(
          k.cy[M], _mm512_add_ps(load<Partial>(q + M * sy, mask), load<Partial>(q - M * sy, mask)),
          lap);
      lap = _mm512_fmadd_ps(
          k.cz[M], _mm512_add_ps(load<Partial>(q + M * sz, mask), load<Partial>(q - M * sz, mask)),
          lap);
    }
  };
  terms(std::integral_constant<int, 1>{});
  terms(std::integral_constant<int, 2>{});
  terms(std::integral_constant<int, 3>{});
  terms(std::integral_constant<int, 4>{});
  return lap;
}

/// Calls vec.template operator()<Partial>(i, q, lo, mid, hi, mask) for the vectors of [x0, x1) of
/// the row whose x = 0 is at urow, q the vector's first point in u and the row's values around it
/// in lo, mid and hi. Loads of the row stop at x1 + 4, the segment's halo.
///
/// Everything here is inlined into the row function, whose functor is then a local object that
/// the compiler keeps in registers: the coefficients, the pointers and the strides. Reached
/// through a pointer (an out-of-line call), every member was read again after each vector's
/// store, since an intrinsic's store may alias anything, and each of the 16 neighbour addresses
/// was computed anew at every vector: 140-190 instructions a vector, against 73 (inner) and 112
/// (layer) now. The whole vectors whose next vector lies within the halo run in a loop of their
/// own, without the masks, so that its body is one straight run of code.
template <class Vector>
[[gnu::always_inline]] inline void sweep_row_512(const float* urow, int x0, int x1,
                                                 const Vector& vec) {
  const float* q = urow + x0;
  __m512 lo = _mm512_maskz_loadu_ps(0xF000, q - kRowVector); // u[x0 - 4 .. x0 - 1]
  __m512 mid = _mm512_maskz_loadu_ps(first_lanes(x1 + kHalo - x0), q);
  int i = x0;
  for (; i + 2 * kRowVector <= x1 + kHalo; i += kRowVector, q += kRowVector) {
    const __m512 hi = _mm512_loadu_ps(q + kRowVector);
    vec.template operator()<false>(i, q, lo, mid, hi, first_lanes(kRowVector));
    lo = mid;
    mid = hi;
  }
  // The last one or two vectors: the next vector's load stops at the halo.
  for (; i < x1; i += kRowVector, q += kRowVector) {
    const __m512 hi =
        _mm512_maskz_loadu_ps(first_lanes(x1 + kHalo - i - kRowVector), q + kRowVector);
    if (x1 - i >= kRowVector)
      vec.template operator()<false>(i, q, lo, mid, hi, first_lanes(kRowVector));
    else
      vec.template operator()<true>(i, q, lo, mid, hi, first_lanes(x1 - i));
    lo = mid;
    mid = hi;
  }
}

/// Inner update of a row's vectors; v and vp2dt2 point at the row's x = 0.
struct InnerVector512 {
  float* __restrict__ v;
  const float* __restrict__ vp2dt2;
  std::int64_t sy, sz;
  Coefs512 k;
  template <bool Partial>
  [[gnu::always_inline]] void operator()(int i, const float* q, __m512 lo, __m512 mid, __m512 hi,
                                         __mmask16 mask) const {
    const __m512 lap =
        laplacian_512<Partial>(q, lo, mid, hi, near_512<Partial>(q, sy, sz, mask), sy, sz, k, mask);
    // inner_update: fma(vp2dt2, lap, 2 u - v)
    const __m512 next = _mm512_fmadd_ps(
        load<Partial>(vp2dt2 + i, mask), lap,
        _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(2.0f), mid), load<Partial>(v + i, mask)));
    store<Partial>(v + i, mask, next);
  }
};

/// Absorbing-layer update (u and phi) of a row's vectors: layer_update and eta_gradient_term of
/// stencil_K.hpp, eta from the row set; v, vp2dt2 and phi point at the row's x = 0.
struct LayerVector512 {
  float* __restrict__ v;
  const float* __restrict__ vp2dt2;
  float* __restrict__ phi;
  EtaRowSet e;
  std::int64_t sy, sz;
  Coefs512 k;
  template <bool Partial>
  [[gnu::always_inline]] void operator()(int i, const float* q, __m512 lo, __m512 mid, __m512 hi,
                                         __mmask16 mask) const {
    const Near512 near = near_512<Partial>(q, sy, sz, mask);
    const __m512 lap = laplacian_512<Partial>(q, lo, mid, hi, near, sy, sz, k, mask);
    // eta_gradient_sum: fma(de_z du_z, pz, fma(de_y du_y, py, de_x du_x px))
    const __m512 gx = _mm512_mul_ps(
        _mm512_mul_ps(
            _mm512_sub_ps(load<Partial>(e.c + i + 1, mask), load<Partial>(e.c + i - 1, mask)),
            _mm512_sub_ps(shifted<1>(lo, mid, hi), shifted<-1>(lo, mid, hi))),
        k.px);
    const __m512 dy =
        _mm512_mul_ps(_mm512_sub_ps(load<Partial>(e.yp + i, mask), load<Partial>(e.ym + i, mask)),
                      _mm512_sub_ps(near.yp, near.ym));
    const __m512 dz =
        _mm512_mul_ps(_mm512_sub_ps(load<Partial>(e.zp + i, mask), load<Partial>(e.zm + i, mask)),
                      _mm512_sub_ps(near.zp, near.zm));
    const __m512 grad = _mm512_fmadd_ps(dz, k.pz, _mm512_fmadd_ps(dy, k.py, gx));
    const __m512 eta = load<Partial>(e.c + i, mask);
    const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    const __m512 two_eta = _mm512_mul_ps(two, eta);
    const __m512 ph = load<Partial>(phi + i, mask);
    // layer_update: fma(vp2dt2, lap + phi, fma(a, u, -v)) / (1 + 2 eta),
    // a = fma(-eta, eta, 2 + 2 eta)
    const __m512 a = _mm512_fnmadd_ps(eta, eta, _mm512_add_ps(two, two_eta));
    const __m512 num = _mm512_fmadd_ps(load<Partial>(vp2dt2 + i, mask), _mm512_add_ps(lap, ph),
                                       _mm512_fmsub_ps(a, mid, load<Partial>(v + i, mask)));
    store<Partial>(v + i, mask, _mm512_div_ps(num, _mm512_add_ps(one, two_eta)));
    // (phi - grad) / (1 + eta)
    store<Partial>(phi + i, mask, _mm512_div_ps(_mm512_sub_ps(ph, grad), _mm512_add_ps(one, eta)));
  }
};

inline void inner_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& c) {
  sweep_row_512(f.u + row, x0, x1, InnerVector512{f.v + row, f.vp2dt2 + row, sy, sz, Coefs512(c)});
}

inline void layer_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& c, const EtaRowSet& e) {
  sweep_row_512(f.u + row, x0, x1,
                LayerVector512{f.v + row, f.vp2dt2 + row, f.phi + row, e, sy, sz, Coefs512(c)});
}

#else
/// Calls body(s) for vectors of kRowVector points that cover [x0, x1) when the segment is at
/// least a vector long and not a whole number of them: the vectors from x0 in place, the last two
/// (the second ending at x1, so overlapping the first) through tail(s, slot) into a buffer of
/// 2 kRowVector, which `flush(first, count)` then stores. A segment's remainder runs in vector
/// code instead of the compiler's scalar epilogue (a 27-point layer slab has 11 such points, an
/// inner segment of 202 has 10). The overlapping points are computed twice from the same inputs,
/// none of which is written before the flush, so they get the same values.
/// Returns false (nothing done) for the other segments, which the caller sweeps with one loop.
template <class Body, class Tail, class Flush>
inline bool sweep_with_vector_tail(int x0, int x1, Body&& body, Tail&& tail, Flush&& flush) {
  const int n = x1 - x0, rest = n % kRowVector;
  if (n < kRowVector || rest == 0) return false;
  const int last = x1 - kRowVector - rest; // [x0, last): whole vectors, in place
  body(x0, last);
  tail(last, 0);
  tail(x1 - kRowVector, rest);
  flush(last, kRowVector + rest);
  return true;
}

/// Points [x0, x1) of the row starting at `row` (the linear index of x = 0), inner update.
inline void inner_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& coefs) {
  // A local copy: its coefficients stay in vector registers across the loop, where the caller's
  // (captured by reference) are broadcast from memory at every use.
  const StencilCoefs c = coefs;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  auto body = [&](int b0, int b1) {
#pragma omp simd
    for (int i = b0; i < b1; ++i) {
      const std::int64_t p = row + i;
      v[p] = inner_update(u[p], v[p], vp2dt2[p], laplacian_25(u, p, sy, sz, c));
    }
  };
  alignas(64) float out[2 * kRowVector];
  auto tail = [&](int s, int slot) {
#pragma omp simd
    for (int t = 0; t < kRowVector; ++t) {
      const std::int64_t p = row + s + t;
      out[slot + t] = inner_update(u[p], v[p], vp2dt2[p], laplacian_25(u, p, sy, sz, c));
    }
  };
  auto flush = [&](int first, int count) {
    for (int t = 0; t < count; ++t)
      v[row + first + t] = out[t];
  };
  if (!sweep_with_vector_tail(x0, x1, body, tail, flush)) body(x0, x1);
}

/// eta_gradient_term of stencil_K.hpp, the same expression in the same order, with eta from a
/// row set instead of the padded array.
inline float eta_gradient_rows(const float* __restrict__ u, const EtaRowSet& e, std::int64_t p,
                               int i, std::int64_t sy, std::int64_t sz, const StencilCoefs& c) {
  return eta_gradient_sum(e.c[i + 1] - e.c[i - 1], u[p + 1] - u[p - 1], e.yp[i] - e.ym[i],
                          u[p + sy] - u[p - sy], e.zp[i] - e.zm[i], u[p + sz] - u[p - sz], c);
}

/// Points [x0, x1) of the row starting at `row`, absorbing-layer update (u and phi), eta from `e`.
inline void layer_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& coefs, const EtaRowSet& eta_rows) {
  const StencilCoefs c = coefs;
  const EtaRowSet e = eta_rows;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  float* __restrict__ phi = f.phi;
  auto body = [&](int b0, int b1) {
#pragma omp simd
    for (int i = b0; i < b1; ++i) {
      const std::int64_t p = row + i;
      const float lap = laplacian_25(u, p, sy, sz, c);
      const float grad = eta_gradient_rows(u, e, p, i, sy, sz, c);
      float phi_next;
      v[p] = layer_update(u[p], v[p], vp2dt2[p], lap, phi[p], e.c[i], grad, &phi_next);
      phi[p] = phi_next;
    }
  };
  alignas(64) float out_v[2 * kRowVector];
  alignas(64) float out_phi[2 * kRowVector];
  auto tail = [&](int s, int slot) {
#pragma omp simd
    for (int t = 0; t < kRowVector; ++t) {
      const int i = s + t;
      const std::int64_t p = row + i;
      const float lap = laplacian_25(u, p, sy, sz, c);
      const float grad = eta_gradient_rows(u, e, p, i, sy, sz, c);
      float phi_next;
      out_v[slot + t] = layer_update(u[p], v[p], vp2dt2[p], lap, phi[p], e.c[i], grad, &phi_next);
      out_phi[slot + t] = phi_next;
    }
  };
  auto flush = [&](int first, int count) {
    for (int t = 0; t < count; ++t) {
      v[row + first + t] = out_v[t];
      phi[row + first + t] = out_phi[t];
    }
  };
  if (!sweep_with_vector_tail(x0, x1, body, tail, flush)) body(x0, x1);
}

#endif

/// Points [r.box.x0, r.box.x1) of row (j, k) of piece r: the inner or the layer update.
inline void update_segment(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                           const Region& r, int j, int k) {
  const std::int64_t sy = l.pitch, sz = l.plane;
  const std::int64_t row = l.index(0, j, k);
  if (r.kind() == RegionKind::Inner) {
    inner_row(f, row, r.box.x0, r.box.x1, sy, sz, c);
  } else if (f.eta_rows) {
    if (r.box.x1 - r.box.x0 < 64) {
      const float* nphi = f.phi + row + sy;
      for (int i = r.box.x0; i < r.box.x1 + 16; i += 16)
        __builtin_prefetch(nphi + i, 1, 3);
    }
    const EtaRows& t = *f.eta_rows;
    layer_row(
        f, row, r.box.x0, r.box.x1, sy, sz, c,
        EtaRowSet{t.row(j, k), t.row(j - 1, k), t.row(j + 1, k), t.row(j, k - 1), t.row(j, k + 1)});
  } else {
    const float* e = f.eta + row;
    layer_row(f, row, r.box.x0, r.box.x1, sy, sz, c, EtaRowSet{e, e - sy, e + sy, e - sz, e + sz});
  }
}

/// Every piece of regions[0, count) in one parallel region.
void update_regions(const IsoFields& f, const FieldLayout& l, const StencilCoefs& coefs,
                    const Region* regions, int count) {
  cpu_sweep(regions, count, CpuTile{},
            [&](const Region& r, int j, int k) { update_segment(f, l, coefs, r, j, k); });
}

/// The tile edges along one axis of [a0, a1) for cpml_fused_step_cpu: the slabs' inner edges
/// (lo and n - hi) are edges, a slab is one tile, and the rest is cut into tiles of at most
/// `tile` (as equal as they come).
std::vector<int> cpml_tile_edges(int a0, int a1, int lo, int hi, int n, int tile) {
  std::vector<int> fixed = {a0, std::clamp(lo, a0, a1), std::clamp(n - hi, a0, a1), a1};
  std::vector<int> edges = {a0};
  for (int s = 0; s < 3; ++s) {
    const int b0 = fixed[s], b1 = fixed[s + 1];
    if (b1 <= b0) continue;
    const int parts = s == 1 ? (b1 - b0 + tile - 1) / tile : 1;
    for (int t = 1; t <= parts; ++t)
      edges.push_back(b0 + static_cast<int>(static_cast<std::int64_t>(b1 - b0) * t / parts));
  }
  return edges;
}

/// Row (j, k) of piece r in a C-PML step, once the row's psi^n is up to date: the inner update or
/// the C-PML's layer update.
void cpml_piece_row(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                    const Region& r, int j, int k) {
  if (r.kind() == RegionKind::Inner)
    inner_row(f, l.index(0, j, k), r.box.x0, r.box.x1, l.pitch, l.plane, c);
  else
    cpml_layer_segment(f, l, c, j, k, r.box.x0, r.box.x1);
}

} // namespace

void cpml_fused_step_cpu(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                         const Region* regions, int count) {
  const CpmlView& v = *f.cpml;
  int y0, y1, z0, z1;
  if (!cpu_pieces_box(regions, count, y0, y1, z0, z1)) return;
  std::int64_t points = 0;
  for (int n = 0; n < count; ++n)
    points += static_cast<std::int64_t>(regions[n].box.points());
  if (points != static_cast<std::int64_t>(v.n[0]) * v.n[1] * v.n[2])
    throw std::logic_error("cpml_fused_step_cpu: the pieces are not the whole grid");
  const CpuTile tile{};
  const std::vector<int> ye = cpml_tile_edges(y0, y1, v.lo[1], v.hi[1], v.n[1], tile.y);
  const std::vector<int> ze = cpml_tile_edges(z0, z1, v.lo[2], v.hi[2], v.n[2], tile.z);
  const int nty = static_cast<int>(ye.size()) - 1, ntz = static_cast<int>(ze.size()) - 1;
  const int tiles = nty * ntz;
#pragma omp parallel
  {
    std::vector<int> list;
#pragma omp for schedule(dynamic, 1) nowait
    for (int t = 0; t < tiles; ++t) {
      const int j0 = ye[static_cast<std::size_t>(t % nty)],
                j1 = ye[static_cast<std::size_t>(t % nty + 1)];
      const int k0 = ze[static_cast<std::size_t>(t / nty)],
                k1 = ze[static_cast<std::size_t>(t / nty + 1)];
      list.clear();
      for (int n = 0; n < count; ++n) {
        const Box& b = regions[n].box;
        if (b.empty() || b.y1 <= j0 || b.y0 >= j1 || b.z1 <= k0 || b.z0 >= k1) continue;
        list.push_back(n);
      }
      std::sort(list.begin(), list.end(),
                [&](int a, int b) { return regions[a].box.x0 < regions[b].box.x0; });
      // The tile lies in one slab of each axis or in none (its edges include the slabs').
      const int fy = cpml_face(v, 1, j0), fz = cpml_face(v, 2, k0);
      const bool x_lo = v.lo[0] > 0, x_hi = v.hi[0] > 0;
      int z_done = k0; // psi_z^n is up to date on planes [k0, z_done)
      for (int k = k0; k < k1; ++k) {
        if (fz >= 0) {
          for (; z_done < std::min(k + kHalo + 1, k1); ++z_done)
            for (int j = j0; j < j1; ++j)
              cpml_memory_row(v, 2, fz, f.u, l, j, z_done);
        }
        int y_done = j0; // psi_y^n on rows [j0, y_done) of plane k
        for (int j = j0; j < j1; ++j) {
          if (fy >= 0) {
            for (; y_done < std::min(j + kHalo + 1, j1); ++y_done)
              cpml_memory_row(v, 1, fy, f.u, l, y_done, k);
          }
          if (x_lo) cpml_memory_row(v, 0, 0, f.u, l, j, k);
          if (x_hi) cpml_memory_row(v, 0, 1, f.u, l, j, k);
          for (const int n : list) {
            const Box& b = regions[n].box;
            if (j < b.y0 || j >= b.y1 || k < b.z0 || k >= b.z1) continue;
            cpml_piece_row(f, l, c, regions[n], j, k);
          }
        }
      }
    }
  }
}

/// A layer point's cost in inner points, for the pass's bands: at 256^3 with 27-point layers, in
/// passes of 4 on one thread, a step took 29.5 ms, 21.7 ms with the layer pieces given the inner
/// update, and the layer pieces hold 8.5 of the 16.8 million points. Measured before the row
/// sweep was inlined and fused; the threads' rates (CpuPassRates) correct what it misses.
constexpr double kLayerWeight = 1.7;

namespace {

/// The C-PML's memory update of step s ahead of its rows (cpml_multi_step_pass_cpu): psi^n of
/// rows [j0, j1) of plane k from u^n (f.u), each slab that holds the row.
void cpml_memory_rows(const IsoFields& f, const FieldLayout& l, int j0, int j1, int k) {
  const CpmlView& v = *f.cpml;
  const int fz = cpml_face(v, 2, k);
  for (int j = j0; j < j1; ++j) {
    if (fz >= 0) cpml_memory_row(v, 2, fz, f.u, l, j, k);
    const int fy = cpml_face(v, 1, j);
    if (fy >= 0) cpml_memory_row(v, 1, fy, f.u, l, j, k);
    if (v.lo[0] > 0) cpml_memory_row(v, 0, 0, f.u, l, j, k);
    if (v.hi[0] > 0) cpml_memory_row(v, 0, 1, f.u, l, j, k);
  }
}

/// A C-PML layer point's cost in inner points, for the bands of the C-PML's pass: at 256^3 in
/// passes of 4 on one thread an inner point took 1.8 ns, a layer point 10 ns with 10-point
/// layers and 7.2 ns with 27-point ones (perf's CPU time of the step's functions).
constexpr double kCpmlLayerWeight = 4.5;

/// The C-PML's pass (cpu_multi_step_pass with medium.cpml set): each step's memory update
/// kHalo planes and rows ahead of its update, in place, the steps 2 kHalo apart.
void cpml_multi_step_pass_cpu(float* u, float* v, const IsoFields& medium, const FieldLayout& l,
                              const StencilCoefs& coefs, const Region* regions, int count,
                              int steps, int band, const CpuPassPlaneHook& after_plane,
                              CpuPassRates* rates) {
  const CpmlView& cv = *medium.cpml;
  std::int64_t points = 0;
  for (int n = 0; n < count; ++n)
    points += static_cast<std::int64_t>(regions[n].box.points());
  if (points != static_cast<std::int64_t>(cv.n[0]) * cv.n[1] * cv.n[2])
    throw std::logic_error("cpu_multi_step_pass: under a C-PML the pieces must be the whole grid");
  IsoFields fields[2] = {medium, medium};
  fields[0].u = u;
  fields[0].v = v;
  fields[1].u = v;
  fields[1].v = u;
  cpu_pass_over_pieces_ahead(
      "cpu_multi_step_pass", fields, regions, count, steps, band, kCpmlLayerWeight,
      CpuPassSkew{2 * kHalo, kHalo},
      [&](const IsoFields& f, int, int j0, int j1, int k) { cpml_memory_rows(f, l, j0, j1, k); },
      [&](const IsoFields& f, const Region& r, int j, int k) {
        cpml_piece_row(f, l, coefs, r, j, k);
      },
      after_plane, rates);
}

} // namespace

void cpu_multi_step_pass(float* u, float* v, const IsoFields& medium, const FieldLayout& l,
                         const StencilCoefs& coefs, const Region* regions, int count, int steps,
                         int band, const CpuPassPlaneHook& after_plane, CpuPassRates* rates) {
  if (medium.cpml != nullptr) {
    cpml_multi_step_pass_cpu(u, v, medium, l, coefs, regions, count, steps, band, after_plane,
                             rates);
    return;
  }
  // Step s of the pass (n + s) reads u^(n+s) from one array and u^(n+s-1) at its own point from
  // the other, which it overwrites with u^(n+s+1): even steps write v, odd steps u. phi is
  // updated in place by each.
  IsoFields fields[2] = {medium, medium};
  fields[0].u = u;
  fields[0].v = v;
  fields[1].u = v;
  fields[1].v = u;
  cpu_pass_over_pieces(
      "cpu_multi_step_pass", fields, regions, count, steps, band, kLayerWeight,
      [&](const IsoFields& f, const Region& r, int j, int k) {
        update_segment(f, l, coefs, r, j, k);
      },
      after_plane, rates);
}

namespace {

/// The CPU reference: handles every region kind, any list of boxes.
class CpuKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference: one OpenMP region over (y, z) tiles of all pieces, SIMD along x";
  }
  BackendKind backend() const override { return BackendKind::Cpu; }
  Physics physics() const override { return Physics::Acoustic; }
  bool handles(RegionKind) const override { return true; }
  bool handles_cpml() const override { return true; }
  /// Float16 too: the CPU backend keeps binary16 values in float arrays and rounds around the
  /// float32 update (kernels/cpu/cpu_half.hpp).
  bool handles_precision(Precision) const override { return true; }
  void launch(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Region& r,
              void*) const override {
    launch_regions(f, l, c, &r, 1, nullptr);
  }
  void launch_regions(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                      const Region* regions, int count, void*) const override {
    if (f.cpml == nullptr) {
      update_regions(f, l, c, regions, count);
      return;
    }
    // Under a C-PML the layer pieces take its row update, in the same sweep as the inner ones.
    const std::int64_t sy = l.pitch, sz = l.plane;
    cpu_sweep(regions, count, CpuTile{}, [&](const Region& r, int j, int k) {
      if (r.kind() == RegionKind::Inner)
        inner_row(f, l.index(0, j, k), r.box.x0, r.box.x1, sy, sz, c);
      else
        cpml_layer_segment(f, l, c, j, k, r.box.x0, r.box.x1);
    });
  }
};

} // namespace

void register_cpu_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<CpuKernel>(), true);
  register_cpu_tti_kernels(registry);
}

} // namespace minimod
