/// The temporally blocked family `tb2_25d` (docs/kernels.md, "Temporal blocking"). A 2D block of
/// Dx x Dy threads owns a tile of output columns and streams along z through a chunk of the depth
/// range. One pass reads u^n, u^{n-1}, vp2dt2 (and phi^n in the layer), keeps u^{n+1} on chip and
/// writes u^{n+1} and u^{n+2} once:
///
/// - step 1 (u^{n+1}) is computed for the tile and for the R-point cross around it (the x/y
///   neighbours step 2 needs; the stencil is a star, so no corners): each thread owns its tile
///   column and at most one cross column, each with a register ring of the 2R+1 u^n values of its
///   z column; the x/y neighbours come from one shared plane of u^n with a 2R-point halo;
/// - step 2 (u^{n+2}) follows R planes behind, for the tile only: x/y neighbours of u^{n+1} from a
///   ring of R+1 shared planes, z neighbours from a second register ring of the thread's column.
///
/// Inner and layer points are told apart by the inner region's box; a layer point takes
/// layer_update with eta formed from its three 1D profiles (float sum, see tblock_eta) and phi
/// read and written only there. Sources of both steps are added inside the pass where the CPU
/// backend adds them (after the update, before the free surface), and the free surface (zero at
/// k = 0, mirrored ghost planes) is applied to both levels inside the pass.
///
/// The pass is compiled once a design variant (TblockOption bits, kTblockVariants): plane-stride
/// addressing, per-tile source flags, an inner-only path chosen per block, a 128-register cap.
///
/// The second design (kTblockSmemRing, ring_body) keeps u^n and u^{n+1} as rings of whole planes in
/// shared memory instead: u^n copied by cp.async one or two planes ahead, four x points a thread,
/// step 1 on the tile and its full R-point frame; its one-step passes run the same design.
///
/// The third design (kTblockRegQueue, queue_body) runs the two-step passes of the blocks that are
/// inside and hold no source tap: a thread's quad of the rect keeps its column's u^n in a register
/// queue, a double-buffered shared u^n plane and a ring of u^{n+1} planes read R + 1 planes behind
/// give one barrier a plane; the ring design's kernel runs the other blocks.

#include "kernels/gpu/tblock_25d.hpp"

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/gpu_support.cuh"
#include "kernels/gpu/streaming_25d_kernels.cuh"
#include "kernels/stencil_K.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace minimod::gpu {
namespace tb {

constexpr int R = kHalo;

/// Everything a pass reads and writes (passed by value: the constant bank).
struct PassArgs {
  const float* u0 = nullptr;      ///< u^n (ghost planes mirrored under a free surface)
  const float* um = nullptr;      ///< u^{n-1}
  const float* vp2dt2 = nullptr;  ///< (c dt)^2
  const float* phi_in = nullptr;  ///< phi^n (layer points only are read)
  float* u1 = nullptr;            ///< u^{n+1} out
  float* u2 = nullptr;            ///< u^{n+2} out (two-step passes)
  float* phi_out = nullptr;       ///< phi after the pass (layer points only are written)
  const float* eta_x = nullptr;   ///< eta profile along x, index i + 1 for i in [-1, nx]
  const float* eta_y = nullptr;   ///< along y
  const float* eta_z = nullptr;   ///< along z
  const int* tap_begin = nullptr; ///< source taps of plane k: [tap_begin[k], tap_begin[k + 1])
  const int* tap_i = nullptr;     ///< x of each tap
  const int* tap_j = nullptr;     ///< y of each tap
  const float* tap_weight = nullptr;
  const int* tap_owner = nullptr; ///< the source of each tap
  const int* tile_taps = nullptr; ///< per tile (x fastest): whether its tile and cross hold a tap
  const int* ring_tile_taps = nullptr; ///< the same for the ring design's tiles (x from -x_shift)
  const float* samples = nullptr;      ///< [sources][steps]
  int steps = 0;                       ///< samples per source
  int n = 0;                           ///< step of the first update of the pass
  FieldLayout layout;
  StencilCoefs coefs;
  Box inner;       ///< the inner region: the plain update; elsewhere the layer update
  int z_chunk = 0; ///< planes of a block
  int free_surface = 0;
  int x_shift = 0; ///< the ring design's first tile starts at x = -x_shift (a 128-byte column)
};

/// Shared-memory geometry of a tile for K steps a pass.
template <int Dx, int Dy, int K> struct Geometry {
  static constexpr int kThreads = Dx * Dy;
  static constexpr int kH0 = K * R;                    ///< halo of the u^n plane
  static constexpr int kS0 = Dx + 2 * kH0;             ///< floats per row of the u^n plane
  static constexpr int kPlane0 = kS0 * (Dy + 2 * kH0); ///< floats of the u^n plane
  static constexpr int kS1 = Dx + 2 * R;               ///< floats per row of a u^{n+1} plane
  static constexpr int kPlane1 = kS1 * (Dy + 2 * R);   ///< floats of a u^{n+1} plane
  static constexpr int kSlots = R + 1;                 ///< u^{n+1} planes kept
  static constexpr int kCross = K == 2 ? 2 * R * (Dx + Dy) : 0; ///< step-1 columns beside the tile
  /// u^n points of the plane that no ring column holds: for K = 1 the R-point cross; for K = 2
  /// the band R..2R out of the tile along x and y and the R x R squares at the tile's corners.
  static constexpr int kOuter = K == 2 ? 2 * R * (Dx + Dy) + 4 * R * R : 2 * R * (Dx + Dy);
  static constexpr int kOuterPerThread = (kOuter + kThreads - 1) / kThreads;
  static constexpr int kSharedFloats = kPlane0 + (K == 2 ? kSlots * kPlane1 : 0);
  static_assert(kCross <= kThreads, "the tile has fewer threads than step-1 cross columns");
};

/// Tile-relative (dx, dy) of cross column e (K = 2): the R rows below and above the tile, then
/// the R points left and right of each row.
template <int Dx, int Dy> __device__ __forceinline__ void cross_point(int e, int& dx, int& dy) {
  if (e < 2 * R * Dx) {
    const int r = e / Dx;
    dx = e % Dx;
    dy = r < R ? r - R : Dy + r - R;
  } else {
    const int e2 = e - 2 * R * Dx;
    const int c = e2 % (2 * R);
    dy = e2 / (2 * R);
    dx = c < R ? c - R : Dx + c - R;
  }
}

/// Tile-relative (dx, dy) of outer point e of the u^n plane (Geometry::kOuter).
template <int Dx, int Dy, int K>
__device__ __forceinline__ void outer_point(int e, int& dx, int& dy) {
  if constexpr (K == 1) {
    cross_point<Dx, Dy>(e, dx, dy);
  } else if (e < 2 * R * Dx) {
    const int r = e / Dx;
    dx = e % Dx;
    dy = r < R ? r - 2 * R : Dy + r;
  } else if (e < 2 * R * (Dx + Dy)) {
    const int e2 = e - 2 * R * Dx;
    const int c = e2 % (2 * R);
    dy = e2 / (2 * R);
    dx = c < R ? c - 2 * R : Dx + c;
  } else {
    const int e3 = e - 2 * R * (Dx + Dy);
    const int q = e3 / (R * R);
    const int w = e3 % (R * R);
    dx = (q & 1) ? Dx + w % R : w % R - R;
    dy = (q & 2) ? Dy + w / R : w / R - R;
  }
}

/// A column of the grid a thread follows along z.
struct Column {
  int gx = 0, gy = 0;      ///< grid coordinates (outside the grid for ghost columns)
  bool in_grid = false;    ///< whether (gx, gy) is a grid column (else u stays 0 there)
  std::int64_t offset = 0; ///< layout offset of the column in plane -kHalo (clamped into the ghost)
};

__device__ __forceinline__ Column make_column(const FieldLayout& l, int gx, int gy) {
  Column c;
  c.gx = gx;
  c.gy = gy;
  c.in_grid = gx >= 0 && gx < l.nx && gy >= 0 && gy < l.ny;
  const int cx = min(max(gx, -R), l.nx + R - 1);
  const int cy = min(max(gy, -R), l.ny + R - 1);
  c.offset = static_cast<std::int64_t>(cy + R) * l.pitch + cx + l.x_offset;
  return c;
}

/// Layout index of plane z (clamped into the ghost planes) of a column.
__device__ __forceinline__ std::int64_t at(const FieldLayout& l, const Column& c, int z) {
  const int cz = min(max(z, -R), l.nz + R - 1);
  return static_cast<std::int64_t>(cz + R) * l.plane + c.offset;
}

/// eta at (i, j, k) from the profiles: (eta_x + eta_y) + eta_z in float. build_eta rounds the
/// double sum once; this sum of the rounded profiles differs from it by at most one unit in the
/// last place (at 1.3% of the layer points at 1000^3, where two or three profiles are non-zero).
__device__ __forceinline__ float tblock_eta(const PassArgs& a, int i, int j, int k) {
  return (__ldg(a.eta_x + i + 1) + __ldg(a.eta_y + j + 1)) + __ldg(a.eta_z + k + 1);
}

/// One update of a column's point at plane z: the x/y neighbours around `s` in a shared plane of
/// row stride S, the z neighbours in `ring` (ring[R] the point). `layer` selects layer_update,
/// which also returns phi's next value in *phi_next.
template <int S>
__device__ __forceinline__ float
update(const PassArgs& a, const float* s, const float (&ring)[2 * R + 1], float um, float vp,
       bool layer, float phi, int gx, int gy, int z, float* phi_next) {
  float zm[R + 1], zp[R + 1];
#pragma unroll
  for (int m = 1; m <= R; ++m) {
    zm[m] = ring[R - m];
    zp[m] = ring[R + m];
  }
  const float centre = ring[R];
  const float lap = st25d::star_laplacian<S>(s, centre, zm, zp, a.coefs);
  if (!layer) return inner_update(centre, um, vp, lap);
  // eta_gradient_term, with eta from the profiles and u's neighbours from shared memory and the
  // ring.
  const float ey = __ldg(a.eta_y + gy + 1), ez = __ldg(a.eta_z + z + 1);
  const float ex = __ldg(a.eta_x + gx + 1);
  const float eta = (ex + ey) + ez;
  const float exm = (__ldg(a.eta_x + gx) + ey) + ez, exp = (__ldg(a.eta_x + gx + 2) + ey) + ez;
  const float eym = (ex + __ldg(a.eta_y + gy)) + ez, eyp = (ex + __ldg(a.eta_y + gy + 2)) + ez;
  const float ezm = (ex + ey) + __ldg(a.eta_z + z), ezp = (ex + ey) + __ldg(a.eta_z + z + 2);
  const float deta_du = (exp - exm) * (s[1] - s[-1]) * a.coefs.px +
                        (eyp - eym) * (s[S] - s[-S]) * a.coefs.py +
                        (ezp - ezm) * (ring[R + 1] - ring[R - 1]) * a.coefs.pz;
  return layer_update(centre, um, vp, lap, phi, eta, deta_du, phi_next);
}

/// Adds the source samples of step `n` whose taps lie at (gx, gy, z), in table order (the CPU
/// backend's order).
__device__ __forceinline__ float inject(const PassArgs& a, int gx, int gy, int z, int n, float u) {
  const int e = __ldg(a.tap_begin + z + 1);
  for (int t = __ldg(a.tap_begin + z); t < e; ++t) {
    if (__ldg(a.tap_i + t) == gx && __ldg(a.tap_j + t) == gy)
      u += __ldg(a.tap_weight + t) *
           __ldg(a.samples + static_cast<std::int64_t>(__ldg(a.tap_owner + t)) * a.steps + n);
  }
  return u;
}

/// Whether grid point (i, j, k) takes the layer update.
__device__ __forceinline__ bool is_layer(const PassArgs& a, int i, int j, int k) {
  const Box& b = a.inner;
  return !(i >= b.x0 && i < b.x1 && j >= b.y0 && j < b.y1 && k >= b.z0 && k < b.z1);
}

/// Writes the state level of plane z of a column at layout index i, and its mirrored ghost under a
/// free surface.
__device__ __forceinline__ void store_level(const PassArgs& a, float* out, std::int64_t i,
                                            const Column& c, int z, float value, bool mirror) {
  out[i] = value;
  if (mirror && a.free_surface && z >= 1 && z <= R) out[at(a.layout, c, -z)] = -value;
}

/// Whether a block's whole footprint (tile, cross columns and the planes step 1 computes) lies
/// inside the inner region and away from the free surface: every point it computes is a grid point
/// taking the plain update, and neither level needs the free surface's zero or mirror.
template <int Dx, int Dy, int K>
__device__ __forceinline__ bool block_inside(const PassArgs& a, int x0, int y0, int zs, int ze) {
  constexpr int w = K == 2 ? R : 0;
  const Box& b = a.inner;
  const int zlo = zs - w;
  return x0 - w >= b.x0 && x0 + Dx + w <= b.x1 && y0 - w >= b.y0 && y0 + Dy + w <= b.y1 &&
         zlo >= b.z0 && ze + w <= b.z1 && (a.free_surface == 0 || zlo > R);
}

/// One pass of K steps (1 or 2) over a block's tile and chunk.
/// \tparam Opt TblockOption bits: kTblockPlaneStride selects the addressing (a layout index a
///         column, advanced by one plane a plane, against a clamped index formed a load)
/// \tparam Inside the block passed block_inside: no grid-edge, layer or free-surface tests
/// \param taps whether the block's tile and cross hold source taps (block-uniform)
template <int Dx, int Dy, int K, unsigned Opt, bool Inside>
__device__ __forceinline__ void pass_body(const PassArgs& a, float* smem, bool taps) {
  using G = Geometry<Dx, Dy, K>;
  constexpr bool kStride = (Opt & kTblockPlaneStride) != 0;
  float* s0 = smem;              // u^n, plane p, with a K R-point halo
  float* s1 = smem + G::kPlane0; // u^{n+1}, planes p mod (R + 1), with an R-point halo
  const FieldLayout& l = a.layout;

  const int t = static_cast<int>(threadIdx.x);
  const int tx = t % Dx, ty = t / Dx;
  const int x0 = static_cast<int>(blockIdx.x) * Dx;
  const int y0 = static_cast<int>(blockIdx.y) * Dy;
  const int zs = static_cast<int>(blockIdx.z) * a.z_chunk;
  const int ze = min(zs + a.z_chunk, l.nz);

  const Column own = make_column(l, x0 + tx, y0 + ty);
  const int own_s0 = (ty + G::kH0) * G::kS0 + tx + G::kH0;
  const int own_s1 = (ty + R) * G::kS1 + tx + R;
  // The thread's cross column (K = 2), if it has one.
  const bool has_cross = t < G::kCross;
  Column cross;
  int cross_s0 = 0, cross_s1 = 0;
  if constexpr (K == 2) {
    int dx = 0, dy = 0;
    cross_point<Dx, Dy>(has_cross ? t : 0, dx, dy);
    cross = make_column(l, x0 + dx, y0 + dy);
    cross_s0 = (dy + G::kH0) * G::kS0 + dx + G::kH0;
    cross_s1 = (dy + R) * G::kS1 + dx + R;
  }
  // The outer points of the u^n plane this thread loads.
  std::int64_t outer_offset[G::kOuterPerThread];
  int outer_s0[G::kOuterPerThread];
#pragma unroll
  for (int h = 0; h < G::kOuterPerThread; ++h) {
    const int e = h * G::kThreads + t;
    int dx = 0, dy = 0;
    outer_point<Dx, Dy, K>(e < G::kOuter ? e : 0, dx, dy);
    outer_offset[h] = make_column(l, x0 + dx, y0 + dy).offset;
    outer_s0[h] = (dy + G::kH0) * G::kS0 + dx + G::kH0;
  }
  auto outer_loads = [&](int h) { return h * G::kThreads + t < G::kOuter; };

  // Rings: u^n of the own and cross columns (ring[m] = u^n(p - R + m) once plane p is in), u^{n+1}
  // of the own column (ring1[m] = u^{n+1}(p - 2R + m) once plane p is computed), and delay lines
  // of the own column's vp2dt2 and phi^{n+1} for step 2, R planes behind.
  float ring[2 * R + 1] = {}, ring_x[2 * R + 1] = {}, ring1[2 * R + 1] = {};
  float vp_line[R + 1] = {}, phi_line[R + 1] = {};
  const int p0 = K == 2 ? zs - R : zs;
  const int p1 = K == 2 ? ze + R : ze;
#pragma unroll
  for (int m = 1; m <= 2 * R; ++m) {
    ring[m] = __ldg(a.u0 + at(l, own, p0 - 1 - R + m));
    if (K == 2 && has_cross) ring_x[m] = __ldg(a.u0 + at(l, cross, p0 - 1 - R + m));
  }
  // Plane-stride addressing: the layout index of plane p of the own column, advanced by one plane
  // a plane, and 32-bit distances from it (can_run bounds them) to the cross column, to the outer
  // points and to plane p + R. Unclamped: the reads of plane p + R reach R planes beyond the top
  // ghost planes, into the guard planes that follow the layout in every u buffer.
  const int ahead = R * static_cast<int>(l.plane);
  std::int64_t own_i = 0;
  int cross_d = 0;
  int outer_d[G::kOuterPerThread] = {};
  if constexpr (kStride) {
    own_i = static_cast<std::int64_t>(p0 + R) * l.plane + own.offset;
    cross_d = static_cast<int>(cross.offset - own.offset);
#pragma unroll
    for (int h = 0; h < G::kOuterPerThread; ++h)
      outer_d[h] = static_cast<int>(outer_offset[h] - own.offset);
  }

  for (int p = p0; p < p1; ++p) {
    // ---- loads of plane p (u^n up to p + R) ----
#pragma unroll
    for (int m = 0; m < 2 * R; ++m) {
      ring[m] = ring[m + 1];
      if constexpr (K == 2) {
        ring_x[m] = ring_x[m + 1];
        ring1[m] = ring1[m + 1];
      }
    }
    const float* u0_own = a.u0 + own_i; // plane p of the own column (plane stride)
    ring[2 * R] = __ldg(kStride ? u0_own + ahead : a.u0 + at(l, own, p + R));
    const bool cross_now = K == 2 && has_cross && p >= zs && p < ze;
    if (K == 2 && has_cross)
      ring_x[2 * R] = __ldg(kStride ? u0_own + (cross_d + ahead) : a.u0 + at(l, cross, p + R));
    float outer[G::kOuterPerThread];
#pragma unroll
    for (int h = 0; h < G::kOuterPerThread; ++h)
      if (outer_loads(h))
        outer[h] = __ldg(
            kStride
                ? u0_own + outer_d[h]
                : a.u0 + static_cast<std::int64_t>(min(max(p, -R), l.nz + R - 1) + R) * l.plane +
                      outer_offset[h]);
    const bool own_live = Inside || (own.in_grid && p >= 0 && p < l.nz);
    const bool own_layer = !Inside && own_live && is_layer(a, own.gx, own.gy, p);
    const std::int64_t own_p = kStride ? own_i : at(l, own, p);
    float um = 0.0f, vp = 0.0f, phi = 0.0f;
    if (own_live) {
      um = a.um[own_p];
      vp = __ldg(a.vp2dt2 + own_p);
      if (own_layer) phi = a.phi_in[own_p];
    }
    const bool cross_live = cross_now && (Inside || cross.in_grid);
    const bool cross_layer = !Inside && cross_live && is_layer(a, cross.gx, cross.gy, p);
    float um_x = 0.0f, vp_x = 0.0f, phi_x = 0.0f;
    if (cross_live) {
      const std::int64_t i = kStride ? own_i + cross_d : at(l, cross, p);
      um_x = a.um[i];
      vp_x = __ldg(a.vp2dt2 + i);
      if (cross_layer) phi_x = a.phi_in[i];
    }

    // ---- the u^n plane into shared memory ----
    s0[own_s0] = ring[R];
    if (K == 2 && has_cross) s0[cross_s0] = ring_x[R];
#pragma unroll
    for (int h = 0; h < G::kOuterPerThread; ++h)
      if (outer_loads(h)) s0[outer_s0[h]] = outer[h];
    __syncthreads();

    // ---- step 1: u^{n+1} at plane p ----
    float u1 = 0.0f, phi1 = 0.0f;
    if (own_live) {
      u1 = update<G::kS0>(a, s0 + own_s0, ring, um, vp, own_layer, phi, own.gx, own.gy, p, &phi1);
      if (taps) u1 = inject(a, own.gx, own.gy, p, a.n, u1);
      if (!Inside && a.free_surface && p == 0) u1 = 0.0f;
      if (p >= zs && p < ze) {
        store_level(a, a.u1, own_p, own, p, u1, K == 1 && !Inside);
        if (K == 1 && own_layer) a.phi_out[own_p] = phi1;
      }
    }
    if constexpr (K == 2) {
      float u1x = 0.0f;
      if (cross_live) {
        float unused = 0.0f;
        u1x = update<G::kS0>(a, s0 + cross_s0, ring_x, um_x, vp_x, cross_layer, phi_x, cross.gx,
                             cross.gy, p, &unused);
        if (taps) u1x = inject(a, cross.gx, cross.gy, p, a.n, u1x);
        if (!Inside && a.free_surface && p == 0) u1x = 0.0f;
      }
      const int slot = ((p % G::kSlots) + G::kSlots) % G::kSlots;
      if (p >= zs && p < ze) {
        s1[slot * G::kPlane1 + own_s1] = u1;
        if (has_cross) s1[slot * G::kPlane1 + cross_s1] = u1x;
      }
      ring1[2 * R] = u1;
      // Under a free surface, u^{n+1}(-p) = -u^{n+1}(p): plane -p sits 2p planes below p.
      if (!Inside && a.free_surface && own.in_grid) {
        if (p == 1) ring1[2 * R - 2] = -u1;
        if (p == 2) ring1[2 * R - 4] = -u1;
        if (p == 3) ring1[2 * R - 6] = -u1;
        if (p == 4) ring1[2 * R - 8] = -u1;
      }
#pragma unroll
      for (int m = 0; m < R; ++m) {
        vp_line[m] = vp_line[m + 1];
        phi_line[m] = phi_line[m + 1];
      }
      vp_line[R] = vp;
      phi_line[R] = phi1;
      __syncthreads();

      // ---- step 2: u^{n+2} at plane q = p - R ----
      const int q = p - R;
      if (q >= zs && (Inside || (own.in_grid && q < l.nz))) {
        const bool layer = !Inside && is_layer(a, own.gx, own.gy, q);
        const std::int64_t own_q = kStride ? own_i - ahead : at(l, own, q);
        float phi2 = 0.0f;
        float u2 = update<G::kS1>(a, s1 + (q % G::kSlots) * G::kPlane1 + own_s1, ring1, ring[0],
                                  vp_line[0], layer, phi_line[0], own.gx, own.gy, q, &phi2);
        if (taps) u2 = inject(a, own.gx, own.gy, q, a.n + 1, u2);
        if (!Inside && a.free_surface && q == 0) u2 = 0.0f;
        store_level(a, a.u2, own_q, own, q, u2, !Inside);
        if (layer) a.phi_out[own_q] = phi2;
      }
    } else {
      __syncthreads(); // the plane is read before the next one overwrites it
    }
    if constexpr (kStride) {
      own_i += l.plane;
    }
  }
}

// ---- The second design: rings of whole planes in shared memory (kTblockSmemRing) ----

/// Shared-memory geometry of the ring design for a Dx x Dy tile. A block's tile starts on a
/// 16-byte column of the padded rows (PassArgs::x_shift); a thread updates a quad (four x points
/// that share one 16-byte word) of step 1's rect (the tile and its R-point frame) and of the tile.
template <int Dx, int Dy, int Ahead> struct RingGeometry {
  static_assert(Dx % 4 == 0, "ring tiles are whole quads along x");
  static_assert(R == 4, "a quad's x neighbours are the quads beside it, the frame one quad wide");
  static constexpr int kW0 = Dx + 4 * R;            ///< floats per row of a u^n plane
  static constexpr int kH0 = Dy + 4 * R;            ///< rows of a u^n plane
  static constexpr int kPlane0 = kW0 * kH0;         ///< floats of a u^n plane
  static constexpr int kSlots0 = 2 * R + 1 + Ahead; ///< u^n planes: p - R .. p + R + Ahead
  static constexpr int kW1 = Dx + 2 * R;            ///< floats per row of a u^{n+1} plane
  static constexpr int kH1 = Dy + 2 * R;            ///< rows of a u^{n+1} plane
  static constexpr int kPlane1 = kW1 * kH1;         ///< floats of a u^{n+1} plane (the rect)
  static constexpr int kSlots1 = 2 * R + 1;         ///< u^{n+1} planes: q - R .. q + R
  static constexpr int kPhiSlots = R + 1;           ///< phi^{n+1} planes of the tile
  static constexpr int kQuads1 = kW1 / 4 * kH1;     ///< step-1 quads a plane
  static constexpr int kQuads2 = Dx / 4 * Dy;       ///< step-2 quads a plane
  static constexpr int kThreads = (kQuads1 + 31) / 32 * 32;
  static constexpr int kCopies = kW0 / 4 * kH0; ///< 16-byte copies of a u^n plane
  static constexpr int kCopiesPerThread = (kCopies + kThreads - 1) / kThreads;
  static constexpr int kSharedFloats = kSlots0 * kPlane0 + kSlots1 * kPlane1 + kPhiSlots * Dx * Dy;
  static constexpr int kSharedBytes = kSharedFloats * static_cast<int>(sizeof(float));
  /// Blocks a SM: as many as its 228 KB of shared memory hold (1 KB reserved a block). Sized for
  /// Hopper (sm_90): on sm_80 (164 KB) the 32x32 tile's launch fails at its attribute call.
  static constexpr int kBlocksPerSm = (228 * 1024) / (kSharedBytes + 1024) > 0
                                          ? (228 * 1024) / (kSharedBytes + 1024)
                                          : 1;
  static_assert(kQuads2 <= kThreads, "step 2 takes one round of quads");
};

/// Copies 16 bytes of global memory to shared memory, asynchronously where cp.async exists (the
/// copy completes at ring_copy_wait); zeros when `valid` is false (no global read then).
__device__ __forceinline__ void ring_copy16(float* dst, const float* src, bool valid) {
#if MINIMOD_GPU_CP_ASYNC && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
#else
  *reinterpret_cast<float4*>(dst) =
      valid ? *reinterpret_cast<const float4*>(src) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
}

/// Closes this thread's copies issued so far into a group.
__device__ __forceinline__ void ring_copy_commit() {
#if MINIMOD_GPU_CP_ASYNC && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N of this thread's committed copy groups are pending (the block then
/// synchronises).
template <int N> __device__ __forceinline__ void ring_copy_wait() {
#if MINIMOD_GPU_CP_ASYNC && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/// Planes of u^n the ring design copies ahead of their use.
constexpr int ring_ahead(unsigned options) {
  return (options & kTblockRingAhead2) != 0 ? 2 : 1;
}

__device__ __forceinline__ float4 load4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float4 ldg4(const float* p) {
  return __ldg(reinterpret_cast<const float4*>(p));
}
__device__ __forceinline__ float get(const float4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

/// A ring of `Slots` shared planes of `Plane` floats each: plane z (z > -2 Slots) in slot
/// z mod Slots.
template <int Slots, int Plane> struct PlaneRing {
  float* base;
  __device__ __forceinline__ float* plane(int z) const {
    return base + ((z + 2 * Slots) % Slots) * Plane;
  }
};

/// The Laplacian of a quad in laplacian_25's order with explicit fmaf: the quad itself `centre`
/// at `c` in a shared plane of row stride S with its x and y neighbours, its z neighbours zp(m) and
/// zm(m) (planes z + m and z - m at the quad). With `Diff`, also its centred first differences
/// along x, y and z (dux, duy, duz; untouched otherwise).
template <int S, bool Diff, class ZPlus, class ZMinus>
__device__ __forceinline__ void quad_terms(const float* c, float4 centre, ZPlus zp, ZMinus zm,
                                           const StencilCoefs& k, float (&lap)[4], float (&dux)[4],
                                           float (&duy)[4], float (&duz)[4]) {
  float xr[12];
  const float4 a = load4(c - 4), d = load4(c + 4);
  xr[0] = a.x, xr[1] = a.y, xr[2] = a.z, xr[3] = a.w;
  xr[4] = centre.x, xr[5] = centre.y, xr[6] = centre.z, xr[7] = centre.w;
  xr[8] = d.x, xr[9] = d.y, xr[10] = d.z, xr[11] = d.w;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    lap[q] = k.c0 * xr[4 + q];
    if constexpr (Diff) dux[q] = xr[5 + q] - xr[3 + q];
  }
#pragma unroll
  for (int m = 1; m <= R; ++m) {
    const float4 yp = load4(c + m * S), ym = load4(c - m * S);
    const float4 up = zp(m), um = zm(m);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      lap[q] = fmaf(k.cx[m], xr[4 + q + m] + xr[4 + q - m], lap[q]);
      lap[q] = fmaf(k.cy[m], get(yp, q) + get(ym, q), lap[q]);
      lap[q] = fmaf(k.cz[m], get(up, q) + get(um, q), lap[q]);
      if constexpr (Diff) {
        if (m == 1) {
          duy[q] = get(yp, q) - get(ym, q);
          duz[q] = get(up, q) - get(um, q);
        }
      }
    }
  }
}

/// The Laplacian of a quad and its centred first differences (quad_terms): the quad's first point
/// at offset `o` of plane z of `ring` (row stride S), its z neighbours at the same offset of the
/// planes around.
template <int S> struct QuadStencil {
  float centre[4], lap[4], dux[4], duy[4], duz[4];
  template <class Ring>
  __device__ __forceinline__ QuadStencil(const Ring& ring, int z, int o, const StencilCoefs& k) {
    const float* c = ring.plane(z) + o;
    const float4 b = load4(c);
    centre[0] = b.x, centre[1] = b.y, centre[2] = b.z, centre[3] = b.w;
    quad_terms<S, true>(
        c, b, [&](int m) { return load4(ring.plane(z + m) + o); },
        [&](int m) { return load4(ring.plane(z - m) + o); }, k, lap, dux, duy, duz);
  }
};

/// The layer update of point (i, j, k) with eta from the profiles and the eta gradient formed as
/// eta_gradient_sum does; returns u^{n+1}, phi^{n+1} in *phi_next.
__device__ __forceinline__ float ring_layer_point(const PassArgs& a, float centre, float um,
                                                  float vp, float lap, float phi, float dux,
                                                  float duy, float duz, int i, int j, int k,
                                                  float* phi_next) {
  const float ex = __ldg(a.eta_x + i + 1), ey = __ldg(a.eta_y + j + 1), ez = __ldg(a.eta_z + k + 1);
  const float eta = (ex + ey) + ez;
  const float exm = (__ldg(a.eta_x + i) + ey) + ez, exp = (__ldg(a.eta_x + i + 2) + ey) + ez;
  const float eym = (ex + __ldg(a.eta_y + j)) + ez, eyp = (ex + __ldg(a.eta_y + j + 2)) + ez;
  const float ezm = (ex + ey) + __ldg(a.eta_z + k), ezp = (ex + ey) + __ldg(a.eta_z + k + 2);
  const float deta_du = eta_gradient_sum(exp - exm, dux, eyp - eym, duy, ezp - ezm, duz, a.coefs);
  return layer_update(centre, um, vp, lap, phi, eta, deta_du, phi_next);
}

/// One two-step pass of the ring design over a block's tile and chunk [zs, ze). Step 1 (u^{n+1})
/// runs on plane p for the rect, step 2 (u^{n+2}) R planes behind on the tile; u^n plane p + R + 1
/// is copied into its slot while plane p is computed.
/// \tparam Inside the block passed block_inside: no grid-edge, layer or free-surface tests
template <int Dx, int Dy, int K, int Ahead, bool Inside>
__device__ __forceinline__ void ring_body(const PassArgs& a, float* smem, bool taps, int x0, int y0,
                                          int zs, int ze) {
  using G = RingGeometry<Dx, Dy, Ahead>;
  // u^n; u^{n+1} of the rect; phi^{n+1} of the tile (planes z >= zs - 2R >= -2R).
  const PlaneRing<G::kSlots0, G::kPlane0> s0{smem};
  const PlaneRing<G::kSlots1, G::kPlane1> s1{smem + G::kSlots0 * G::kPlane0};
  const PlaneRing<G::kPhiSlots, Dx * Dy> sphi{s1.base + G::kSlots1 * G::kPlane1};
  const FieldLayout& l = a.layout;
  const Box& in = a.inner;
  const int t = static_cast<int>(threadIdx.x);
  const int mx0 = x0 + l.x_offset; // padded column of the tile's first point (a multiple of 4)

  // ---- the thread's copies of a u^n plane: (row, quad) of the plane's kW0 x kH0 box ----
  int copy_smem[G::kCopiesPerThread], copy_glob[G::kCopiesPerThread];
  bool copy_ok[G::kCopiesPerThread];
#pragma unroll
  for (int h = 0; h < G::kCopiesPerThread; ++h) {
    const int e = h * G::kThreads + t;
    const int r = e / (G::kW0 / 4), c = e % (G::kW0 / 4);
    const int gy = y0 - 2 * R + r, mc = mx0 - 2 * R + 4 * c;
    copy_smem[h] = r * G::kW0 + 4 * c;
    copy_ok[h] = e < G::kCopies && gy >= -R && gy < l.ny + R && mc >= 0 && mc + 4 <= l.pitch;
    copy_glob[h] = copy_ok[h] ? (gy + R) * l.pitch + mc : 0;
  }
  auto copy_plane = [&](int z) {
    const bool zok = z >= -R && z < l.nz + R;
    float* dst = s0.plane(z);
    const float* base = a.u0 + static_cast<std::int64_t>(zok ? z + R : 0) * l.plane;
#pragma unroll
    for (int h = 0; h < G::kCopiesPerThread; ++h)
      if (h * G::kThreads + t < G::kCopies)
        ring_copy16(dst + copy_smem[h], base + copy_glob[h], zok && copy_ok[h]);
    ring_copy_commit();
  };

  // ---- step 1's quad: (qc, qr) of the rect, whose first point is (x0 - R + 4 qc, y0 - R + qr)
  // ----
  const bool has1 = t < G::kQuads1;
  const int qc = t % (G::kW1 / 4), qr = t / (G::kW1 / 4);
  const int gx1 = x0 - R + 4 * qc, gy1 = y0 - R + qr;
  const int o0 = (R + qr) * G::kW0 + R + 4 * qc; // in a u^n plane
  const int o1 = qr * G::kW1 + 4 * qc;           // in a u^{n+1} plane
  const bool in_tile1 = qc >= 1 && qc <= Dx / 4 && qr >= R && qr < R + Dy;
  const int ophi1 = (qr - R) * Dx + 4 * (qc - 1); // in a phi^{n+1} plane (in_tile1)
  const int g1 = (gy1 + R) * l.pitch + gx1 + l.x_offset;
  bool live1[4], box1[4];
  bool any1 = false;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int i = gx1 + q;
    live1[q] = has1 && i >= 0 && i < l.nx && gy1 >= 0 && gy1 < l.ny;
    box1[q] = i >= in.x0 && i < in.x1 && gy1 >= in.y0 && gy1 < in.y1;
    any1 = any1 || live1[q];
  }

  // ---- step 2's quad: (qc2, qr2) of the tile ----
  const bool has2 = t < G::kQuads2;
  const int qc2 = t % (Dx / 4), qr2 = t / (Dx / 4);
  const int gx2 = x0 + 4 * qc2, gy2 = y0 + qr2;
  const int o0_2 = (2 * R + qr2) * G::kW0 + 2 * R + 4 * qc2;
  const int o1_2 = (R + qr2) * G::kW1 + R + 4 * qc2;
  const int ophi2 = qr2 * Dx + 4 * qc2;
  const int g2 = (gy2 + R) * l.pitch + gx2 + l.x_offset;
  bool live2[4], box2[4];
  bool any2 = false, all2 = true;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int i = gx2 + q;
    live2[q] = has2 && i >= 0 && i < l.nx && gy2 < l.ny;
    box2[q] = i >= in.x0 && i < in.x1 && gy2 >= in.y0 && gy2 < in.y1;
    any2 = any2 || live2[q];
    all2 = all2 && live2[q];
  }

  // Step 1's operands of plane p (u^{n-1}, vp2dt2, phi^n), loaded one plane ahead.
  const bool layer_run = a.phi_in != nullptr;
  auto plane_live = [&](int z) { return Inside || (z >= 0 && z < l.nz); };
  auto load_operands = [&](int p, float4& um, float4& vp, float4& phi) {
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    um = vp = phi = zero;
    if ((Inside && has1) || (!Inside && any1 && plane_live(p))) {
      const std::int64_t i = static_cast<std::int64_t>(p + R) * l.plane + g1;
      um = ldg4(a.um + i);
      vp = ldg4(a.vp2dt2 + i);
      if (!Inside && layer_run) {
        const bool zin = p >= in.z0 && p < in.z1;
        if (!(zin && box1[0] && box1[1] && box1[2] && box1[3])) phi = ldg4(a.phi_in + i);
      }
    }
  };

  const int p0 = K == 2 ? zs - R : zs, p1 = K == 2 ? ze + R : ze; // step-1 planes
  for (int z = p0 - R; z < p0 + R + Ahead; ++z)
    copy_plane(z);
  float4 n_um, n_vp, n_phi;
  load_operands(p0, n_um, n_vp, n_phi);

  for (int p = p0; p < p1; ++p) {
    ring_copy_wait<Ahead - 1>(); // plane p + R is in; Ahead - 1 later ones may be pending
    __syncthreads();
    if (p + R + Ahead < p1 + R)
      copy_plane(p + R + Ahead);
    else
      ring_copy_commit(); // an empty group: the count of pending groups stays the same
    const float4 c_um = n_um, c_vp = n_vp, c_phi = n_phi;
    if (p + 1 < p1) load_operands(p + 1, n_um, n_vp, n_phi);
    const int q2 = p - R; // step 2's plane
    float4 vp2 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (K == 2 && q2 >= zs && (Inside ? has2 : any2))
      vp2 = ldg4(a.vp2dt2 + static_cast<std::int64_t>(q2 + R) * l.plane + g2);

    // ---- step 1: u^{n+1} of the rect at plane p ----
    if (has1) {
      const QuadStencil<G::kW0> st(s0, p, o0, a.coefs);
      float u1[4], phi1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const bool zin = p >= in.z0 && p < in.z1;
      const bool plive = plane_live(p);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (Inside) {
          u1[q] = inner_update(st.centre[q], get(c_um, q), get(c_vp, q), st.lap[q]);
        } else if (live1[q] && plive) {
          if (zin && box1[q])
            u1[q] = inner_update(st.centre[q], get(c_um, q), get(c_vp, q), st.lap[q]);
          else
            u1[q] = ring_layer_point(a, st.centre[q], get(c_um, q), get(c_vp, q), st.lap[q],
                                     get(c_phi, q), st.dux[q], st.duy[q], st.duz[q], gx1 + q, gy1,
                                     p, &phi1[q]);
        } else {
          u1[q] = 0.0f;
        }
        if (taps && (Inside || (live1[q] && plive))) u1[q] = inject(a, gx1 + q, gy1, p, a.n, u1[q]);
        if (!Inside && a.free_surface && p == 0) u1[q] = 0.0f;
      }
      if constexpr (K == 1) {
        // A one-step pass: the tile's points are the pass's output, with u^{n+1}'s mirrored
        // ghost planes under a free surface and phi^{n+1} at layer points.
        if (in_tile1) {
          const std::int64_t at1 = static_cast<std::int64_t>(p + R) * l.plane + g1;
          if (Inside) {
            *reinterpret_cast<float4*>(a.u1 + at1) = make_float4(u1[0], u1[1], u1[2], u1[3]);
          } else {
            const std::int64_t mirror = static_cast<std::int64_t>(R - p) * l.plane + g1;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              if (!(live1[q] && plive)) continue;
              a.u1[at1 + q] = u1[q];
              if (a.free_surface && p >= 1 && p <= R) a.u1[mirror + q] = -u1[q];
              if (layer_run && !(zin && box1[q])) a.phi_out[at1 + q] = phi1[q];
            }
          }
        }
      } else {
        *reinterpret_cast<float4*>(s1.plane(p) + o1) = make_float4(u1[0], u1[1], u1[2], u1[3]);
        // Under a free surface, u^{n+1}(-p) = -u^{n+1}(p).
        if (!Inside && a.free_surface && p >= 1 && p <= R)
          *reinterpret_cast<float4*>(s1.plane(-p) + o1) =
              make_float4(-u1[0], -u1[1], -u1[2], -u1[3]);
        if (in_tile1 && p >= zs && p < ze) {
          float* out = a.u1 + static_cast<std::int64_t>(p + R) * l.plane + g1;
          if (Inside) {
            *reinterpret_cast<float4*>(out) = make_float4(u1[0], u1[1], u1[2], u1[3]);
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
              if (live1[q]) out[q] = u1[q];
            if (layer_run)
              *reinterpret_cast<float4*>(sphi.plane(p) + ophi1) =
                  make_float4(phi1[0], phi1[1], phi1[2], phi1[3]);
          }
        }
      }
    }
    if constexpr (K == 1) continue;
    __syncthreads();

    // ---- step 2: u^{n+2} of the tile at plane q2 ----
    if (q2 >= zs && (Inside ? has2 : any2)) {
      const QuadStencil<G::kW1> st(s1, q2, o1_2, a.coefs);
      const float4 um2 = load4(s0.plane(q2) + o0_2);
      float4 phi_prev = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (!Inside && layer_run) phi_prev = load4(sphi.plane(q2) + ophi2);
      const bool zin = q2 >= in.z0 && q2 < in.z1;
      float u2[4], phi2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      bool layer2[4] = {false, false, false, false};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        layer2[q] = !Inside && live2[q] && !(zin && box2[q]);
        if (layer2[q])
          u2[q] = ring_layer_point(a, st.centre[q], get(um2, q), get(vp2, q), st.lap[q],
                                   get(phi_prev, q), st.dux[q], st.duy[q], st.duz[q], gx2 + q, gy2,
                                   q2, &phi2[q]);
        else
          u2[q] = inner_update(st.centre[q], get(um2, q), get(vp2, q), st.lap[q]);
        if (taps && (Inside || live2[q])) u2[q] = inject(a, gx2 + q, gy2, q2, a.n + 1, u2[q]);
        if (!Inside && a.free_surface && q2 == 0) u2[q] = 0.0f;
      }
      const std::int64_t at2 = static_cast<std::int64_t>(q2 + R) * l.plane + g2;
      if (Inside || all2) {
        *reinterpret_cast<float4*>(a.u2 + at2) = make_float4(u2[0], u2[1], u2[2], u2[3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (live2[q]) a.u2[at2 + q] = u2[q];
      }
      if (!Inside) {
        if (a.free_surface && q2 >= 1 && q2 <= R) {
          const std::int64_t mirror = static_cast<std::int64_t>(R - q2) * l.plane + g2;
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (live2[q]) a.u2[mirror + q] = -u2[q];
        }
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (layer2[q]) a.phi_out[at2 + q] = phi2[q];
      }
    }
  }
}

// ---- The third design: register queues along z, one shared plane a level (kTblockRegQueue) ----

/// Geometry of the third design's two-step pass for a Dx x Dy tile (docs/kernels.md, "The
/// register-queue pass"). A thread owns a quad of step 1's rect (the tile and its R-point frame)
/// for the whole chunk: threads [0, kQuads2) the tile's quads (step 1 and step 2), the rest the
/// frame's quads (step 1 only), so that step 2 runs on whole warps.
template <int Dx, int Dy> struct QueueGeometry {
  static_assert(Dx % 4 == 0, "tiles are whole quads along x");
  static_assert(R == 4, "the frame is one quad wide along x");
  static constexpr int kQx = Dx / 4 + 2;       ///< rect quads a row
  static constexpr int kRows1 = Dy + 2 * R;    ///< rect rows
  static constexpr int kQuads1 = kQx * kRows1; ///< step-1 quads a plane
  static constexpr int kQuads2 = Dx / 4 * Dy;  ///< step-2 quads a plane
  static_assert(kQuads2 % 32 == 0, "step 2 runs on whole warps");
  static constexpr int kThreads = (kQuads1 + 31) / 32 * 32;
  static constexpr int kW0 = Dx + 4 * R; ///< floats a row of a u^n plane
  static constexpr int kPlane0 = kW0 * (Dy + 4 * R);
  static constexpr int kW1 = Dx + 2 * R; ///< floats a row of a u^{n+1} plane (the rect)
  static constexpr int kPlane1 = kW1 * kRows1;
  static constexpr int kSlots1 = 2 * R + 2; ///< u^{n+1} planes: q - R .. q + R + 1
  /// Quads of a u^n plane outside the rect that step 1 reads: R rows above and below the rect
  /// (its width) and one quad left and right of its rows (no corners: the stencil is a star).
  static constexpr int kOuter = 2 * R * kQx + 2 * kRows1;
  static constexpr int kOuterPerThread = (kOuter + kThreads - 1) / kThreads;
  static constexpr int kSharedBytes =
      (2 * kPlane0 + 2 * kSlots1 * kPlane1) * static_cast<int>(sizeof(float));
  /// Blocks a SM the register allocation must allow: as many as 512 threads hold (at least one).
  static constexpr int kMinBlocks = 512 / kThreads > 0 ? 512 / kThreads : 1;
};

/// Rect coordinates (quad column, row) of thread t's step-1 quad (t < kQuads1).
template <int Dx, int Dy> __device__ __forceinline__ void queue_quad(int t, int& qc, int& qr) {
  using G = QueueGeometry<Dx, Dy>;
  if (t < G::kQuads2) {
    qc = 1 + t % (Dx / 4);
    qr = R + t / (Dx / 4);
    return;
  }
  const int e = t - G::kQuads2;
  if (e < 2 * R * G::kQx) {
    const int rr = e / G::kQx;
    qc = e % G::kQx;
    qr = rr < R ? rr : Dy + rr;
  } else {
    const int e2 = e - 2 * R * G::kQx;
    qc = (e2 & 1) ? G::kQx - 1 : 0;
    qr = R + e2 / 2;
  }
}

/// u^n plane coordinates (quad column, row) of outer quad e (QueueGeometry::kOuter).
template <int Dx, int Dy> __device__ __forceinline__ void queue_outer(int e, int& bc, int& br) {
  using G = QueueGeometry<Dx, Dy>;
  if (e < 2 * R * G::kQx) {
    const int rr = e / G::kQx;
    bc = 1 + e % G::kQx;
    br = rr < R ? rr : G::kRows1 + rr;
  } else {
    const int e2 = e - 2 * R * G::kQx;
    bc = (e2 & 1) ? G::kQx + 1 : 0;
    br = R + e2 / 2;
  }
}

/// The Laplacian of a quad alone (quad_terms without the differences).
template <int S, class ZPlus, class ZMinus>
__device__ __forceinline__ void queue_laplacian(const float* c, float4 centre, ZPlus zp, ZMinus zm,
                                                const StencilCoefs& k, float (&lap)[4]) {
  float unused[4];
  quad_terms<S, false>(c, centre, zp, zm, k, lap, unused, unused, unused);
}

__device__ __forceinline__ float4 quad_update(float4 u, float4 v, float4 vp,
                                              const float (&lap)[4]) {
  return make_float4(inner_update(u.x, v.x, vp.x, lap[0]), inner_update(u.y, v.y, vp.y, lap[1]),
                     inner_update(u.z, v.z, vp.z, lap[2]), inner_update(u.w, v.w, vp.w, lap[3]));
}

/// The third design's two-step pass over an inside block without source taps (block_inside, no
/// tap in its tile flag): plain updates only. Step 1 runs on plane p for the rect: the thread's
/// z neighbours of u^n from its register queue (2R + 1 quads), its x/y neighbours from one shared
/// u^n plane (the rect's quads stored from the queues, the outer quads copied one plane ahead).
/// Step 2 runs R + 1 planes behind on the tile, from a ring of 2R + 2 shared u^{n+1} rect planes
/// (written at plane p, read up to plane p - 1), so that one barrier a plane orders everything.
/// The ring is stored twice over (slots s and s + 2R + 2), so that the 2R + 1 planes step 2 reads
/// are consecutive slots from one base: no slot arithmetic a plane.
template <int Dx, int Dy>
__device__ __forceinline__ void queue_body(const PassArgs& a, float* smem, int x0, int y0, int zs,
                                           int ze) {
  using G = QueueGeometry<Dx, Dy>;
  constexpr int kQ = 2 * R + 1;            // the queue's length
  const PlaneRing<2, G::kPlane0> s0{smem}; // u^n, planes p mod 2
  float* const s1 = smem + 2 * G::kPlane0; // u^{n+1} of the rect, 2 (2R + 2) slots
  const FieldLayout& l = a.layout;
  const int t = static_cast<int>(threadIdx.x);
  const int mx0 = x0 + l.x_offset; // padded column of the tile's first point (a multiple of 4)

  // The thread's outer quads of a u^n plane, copied from the highest threads down (the frame's
  // warps, which skip step 2).
  int outer_smem[G::kOuterPerThread], outer_glob[G::kOuterPerThread];
  bool outer_has[G::kOuterPerThread];
#pragma unroll
  for (int h = 0; h < G::kOuterPerThread; ++h) {
    const int e = h * G::kThreads + (G::kThreads - 1 - t);
    outer_has[h] = e < G::kOuter;
    int bc = 0, br = 0;
    queue_outer<Dx, Dy>(outer_has[h] ? e : 0, bc, br);
    outer_smem[h] = br * G::kW0 + 4 * bc;
    outer_glob[h] = (y0 - 2 * R + br + R) * l.pitch + mx0 - 2 * R + 4 * bc;
  }
  auto copy_outer = [&](int z) {
    const float* base = a.u0 + static_cast<std::int64_t>(z + R) * l.plane;
    float* dst = s0.plane(z);
#pragma unroll
    for (int h = 0; h < G::kOuterPerThread; ++h)
      if (outer_has[h]) ring_copy16(dst + outer_smem[h], base + outer_glob[h], true);
    ring_copy_commit();
  };

  const bool has1 = t < G::kQuads1, has2 = t < G::kQuads2;
  int qc = 0, qr = 0;
  queue_quad<Dx, Dy>(has1 ? t : 0, qc, qr);
  const int o0 = (qr + R) * G::kW0 + 4 * (qc + 1);              // the quad in a u^n plane
  const int o1 = qr * G::kW1 + 4 * qc;                          // the quad in a u^{n+1} plane
  const int g = (y0 - R + qr + R) * l.pitch + mx0 - R + 4 * qc; // padded row offset of the quad
  const std::int64_t plane = l.plane, ahead = (R + 1) * plane;

  // The queue: at plane p, qu[m] = u^n(p - R + m); `old` = u^n(p - R - 1), step 2's u^n.
  // Step 1 on planes [p0, p1); step 2 on planes [zs, ze), at the loop's planes [p0 + 2R + 1, p1].
  const int p0 = zs - R, p1 = ze + R;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float4 qu[kQ], old = zero, um = zero, vp = zero;
  std::int64_t at_p = (p0 + R) * plane + g; // layout index of the quad at plane p
  if (has1) {
#pragma unroll
    for (int m = 0; m < kQ; ++m)
      qu[m] = ldg4(a.u0 + at_p + (m - R) * plane);
    um = ldg4(a.um + at_p);
    vp = ldg4(a.vp2dt2 + at_p);
  } else {
#pragma unroll
    for (int m = 0; m < kQ; ++m)
      qu[m] = zero;
  }
  copy_outer(p0);

  for (int p = p0; p <= p1; ++p) {
    const bool step1 = p < p1;
    if (has1 && step1) *reinterpret_cast<float4*>(s0.plane(p) + o0) = qu[R];
    ring_copy_wait<0>(); // the outer quads of plane p
    __syncthreads();
    if (p + 1 < p1) copy_outer(p + 1);
    // Operands of the next plane, loaded a plane ahead.
    float4 n_u = zero, n_um = zero, n_vp = zero;
    if (has1 && p + 1 < p1) {
      n_u = ldg4(a.u0 + at_p + ahead);
      n_um = ldg4(a.um + at_p + plane);
      n_vp = ldg4(a.vp2dt2 + at_p + plane);
    }
    const int q2 = p - R - 1; // step 2's plane
    const bool step2 = has2 && q2 >= zs;
    float4 vp2 = zero;
    if (step2) vp2 = ldg4(a.vp2dt2 + at_p - ahead);

    // ---- step 1: u^{n+1} of the rect at plane p, stored in slots s and s + 2R + 2 ----
    if (has1 && step1) {
      float lap[4];
      queue_laplacian<G::kW0>(
          s0.plane(p) + o0, qu[R], [&](int m) { return qu[R + m]; },
          [&](int m) { return qu[R - m]; }, a.coefs, lap);
      const float4 u1 = quad_update(qu[R], um, vp, lap);
      float* slot = s1 + ((p + 2 * G::kSlots1) % G::kSlots1) * G::kPlane1 + o1;
      *reinterpret_cast<float4*>(slot) = u1;
      *reinterpret_cast<float4*>(slot + G::kSlots1 * G::kPlane1) = u1;
      if (has2 && p >= zs && p < ze) *reinterpret_cast<float4*>(a.u1 + at_p) = u1;
    }

    // ---- step 2: u^{n+2} of the tile at plane q2 (u^{n+1} planes q2 - R .. q2 + R = p - 1) ----
    if (step2) {
      // Plane q2 - R + k in consecutive slots from the first (k = 0 .. 2R).
      const float* b = s1 + ((q2 - R + 2 * G::kSlots1) % G::kSlots1) * G::kPlane1 + o1;
      const float* c = b + R * G::kPlane1;
      float lap[4];
      queue_laplacian<G::kW1>(
          c, load4(c), [&](int m) { return load4(c + m * G::kPlane1); },
          [&](int m) { return load4(c - m * G::kPlane1); }, a.coefs, lap);
      *reinterpret_cast<float4*>(a.u2 + at_p - ahead) = quad_update(load4(c), old, vp2, lap);
    }

    old = qu[0];
#pragma unroll
    for (int m = 0; m < 2 * R; ++m)
      qu[m] = qu[m + 1];
    qu[2 * R] = n_u;
    um = n_um;
    vp = n_vp;
    at_p += plane;
  }
}

/// Whether a block of the ring design's grid runs the third design's pass (kTblockRegQueue): inside
/// (block_inside) and without a source tap in its tile and frame.
template <int Dx, int Dy>
__device__ __forceinline__ bool queue_block(const PassArgs& a, int x0, int y0, int zs, int ze) {
  return block_inside<Dx, Dy, 2>(a, x0, y0, zs, ze) &&
         __ldg(a.ring_tile_taps + blockIdx.y * gridDim.x + blockIdx.x) == 0;
}

/// The third design's two-step pass: the blocks that are inside (block_inside) and hold no source
/// tap; the ring design's kernel runs the others. Block QueueGeometry::kThreads, the ring
/// design's grid (tiles from x = -x_shift); dynamic shared memory QueueGeometry::kSharedBytes.
template <int Dx, int Dy>
__global__ void MINIMOD_LAUNCH_BOUNDS((QueueGeometry<Dx, Dy>::kThreads),
                                      (QueueGeometry<Dx, Dy>::kMinBlocks))
    tblock_queue_kernel(const PassArgs a) {
  extern __shared__ float4 queue_smem4[];
  const int x0 = static_cast<int>(blockIdx.x) * Dx - a.x_shift;
  const int y0 = static_cast<int>(blockIdx.y) * Dy;
  const int zs = static_cast<int>(blockIdx.z) * a.z_chunk;
  const int ze = min(zs + a.z_chunk, a.layout.nz);
  if (!queue_block<Dx, Dy>(a, x0, y0, zs, ze)) return;
  queue_body<Dx, Dy>(a, reinterpret_cast<float*>(queue_smem4), x0, y0, zs, ze);
}

/// The ring design's two-step pass over the whole grid; block RingGeometry::kThreads, grid (tiles
/// x from x = -x_shift, tiles y, z chunks); dynamic shared memory RingGeometry::kSharedBytes.
template <int Dx, int Dy, int K, unsigned Opt>
__global__ void MINIMOD_LAUNCH_BOUNDS((RingGeometry<Dx, Dy, ring_ahead(Opt)>::kThreads),
                                      (RingGeometry<Dx, Dy, ring_ahead(Opt)>::kBlocksPerSm))
    tblock_ring_kernel(const PassArgs a) {
  extern __shared__ float4 ring_smem4[];
  float* smem = reinterpret_cast<float*>(ring_smem4);
  const int x0 = static_cast<int>(blockIdx.x) * Dx - a.x_shift;
  const int y0 = static_cast<int>(blockIdx.y) * Dy;
  const int zs = static_cast<int>(blockIdx.z) * a.z_chunk;
  const int ze = min(zs + a.z_chunk, a.layout.nz);
  // The third design's kernel runs these blocks' two-step passes.
  if constexpr (K == 2 && (Opt & kTblockRegQueue) != 0)
    if (queue_block<Dx, Dy>(a, x0, y0, zs, ze)) return;
  bool taps = true;
  if constexpr ((Opt & kTblockSourceTiles) != 0)
    taps = __ldg(a.ring_tile_taps + blockIdx.y * gridDim.x + blockIdx.x) != 0;
  if constexpr ((Opt & kTblockInnerFast) != 0) {
    if (block_inside<Dx, Dy, 2>(a, x0, y0, zs, ze)) {
      ring_body<Dx, Dy, K, ring_ahead(Opt), true>(a, smem, taps, x0, y0, zs, ze);
      return;
    }
  }
  ring_body<Dx, Dy, K, ring_ahead(Opt), false>(a, smem, taps, x0, y0, zs, ze);
}

/// Blocks a SM the register allocation must allow: 64 registers a thread, or 128 with
/// kTblockWideRegisters (65536 registers a SM).
template <int Threads, unsigned Opt> constexpr int min_blocks() {
  const int regs = (Opt & kTblockWideRegisters) != 0 ? 128 : 64;
  const int blocks = 65536 / (regs * Threads);
  return blocks < 1 ? 1 : blocks;
}

/// One pass of K steps (1 or 2) over the whole grid; block (Dx * Dy), grid (tiles x, tiles y,
/// z chunks); dynamic shared memory Geometry::kSharedFloats floats. Opt: TblockOption bits.
template <int Dx, int Dy, int K, unsigned Opt>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, (min_blocks<Dx * Dy, Opt>()))
    tblock_kernel(const PassArgs a) {
  extern __shared__ float smem[];
  bool taps = true;
  if constexpr ((Opt & kTblockSourceTiles) != 0)
    taps = __ldg(a.tile_taps + blockIdx.y * gridDim.x + blockIdx.x) != 0;
  if constexpr ((Opt & kTblockInnerFast) != 0) {
    const int zs = static_cast<int>(blockIdx.z) * a.z_chunk;
    if (block_inside<Dx, Dy, K>(a, static_cast<int>(blockIdx.x) * Dx,
                                static_cast<int>(blockIdx.y) * Dy, zs,
                                min(zs + a.z_chunk, a.layout.nz))) {
      pass_body<Dx, Dy, K, Opt, true>(a, smem, taps);
      return;
    }
  }
  pass_body<Dx, Dy, K, Opt, false>(a, smem, taps);
}

/// Launch of a pass kernel over the grid's tiles (the first tile at x = -x_shift), with `bytes`
/// of dynamic shared memory, allowed once a kernel (`once`); throws with the launch's name and
/// sizes on failure.
void launch_tblock(void (*kernel)(PassArgs), std::once_flag& once, int dx, int dy, int k,
                   unsigned options, int x_shift, unsigned threads, int bytes, const PassArgs& a,
                   gpuStream_t stream, const char* part = "") {
  const std::string what = "tb2_25d_" + std::to_string(dx) + "x" + std::to_string(dy) + "+" +
                           tblock_variant_name(options) + "<" + std::to_string(k) + " steps>" +
                           part;
  std::call_once(once, [&] {
    MINIMOD_GPU_CHECK_WHAT(
        gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, bytes),
        what + ": " + std::to_string(bytes) + " B of dynamic shared memory");
  });
  const dim3 block(threads);
  const dim3 grid(static_cast<unsigned>((a.layout.nx + x_shift + dx - 1) / dx),
                  static_cast<unsigned>((a.layout.ny + dy - 1) / dy),
                  static_cast<unsigned>((a.layout.nz + a.z_chunk - 1) / a.z_chunk));
  kernel<<<grid, block, bytes, stream>>>(a);
  MINIMOD_GPU_CHECK_LAUNCH(what.c_str(), grid, block, bytes);
}

/// One pass of the first design (K steps) of a tile and variant.
template <int Dx, int Dy, int K, unsigned Opt>
void launch_pass(const PassArgs& a, gpuStream_t stream) {
  using G = Geometry<Dx, Dy, K>;
  static std::once_flag once;
  launch_tblock(&tblock_kernel<Dx, Dy, K, Opt>, once, Dx, Dy, K, Opt, 0, Dx * Dy,
                G::kSharedFloats * static_cast<int>(sizeof(float)), a, stream);
}

/// One pass of the ring design (K steps) of a tile and variant: tiles from x = -x_shift.
template <int Dx, int Dy, int K, unsigned Opt>
void launch_ring(const PassArgs& a, gpuStream_t stream) {
  using G = RingGeometry<Dx, Dy, ring_ahead(Opt)>;
  static std::once_flag once;
  launch_tblock(&tblock_ring_kernel<Dx, Dy, K, Opt>, once, Dx, Dy, K, Opt, a.x_shift, G::kThreads,
                G::kSharedBytes, a, stream);
  if constexpr (K == 2 && (Opt & kTblockRegQueue) != 0) {
    using Q = QueueGeometry<Dx, Dy>;
    static std::once_flag queue_once;
    launch_tblock(&tblock_queue_kernel<Dx, Dy>, queue_once, Dx, Dy, K, Opt, a.x_shift, Q::kThreads,
                  Q::kSharedBytes, a, stream, " (queue blocks)");
  }
}

using PassFn = void (*)(const PassArgs&, gpuStream_t);

constexpr std::size_t kVariantCount = sizeof(kTblockVariants) / sizeof(kTblockVariants[0]);

/// The one-step and two-step passes of a tile and variant, and the most dynamic shared memory a
/// block of their kernels takes.
struct PassPair {
  PassFn one, two;
  int shared_bytes;
};

/// A compiled tile: its passes for every variant, in kTblockVariants' order.
struct TileEntry {
  int dx, dy;
  PassPair variant[kVariantCount];
};

/// The K-step pass of a variant: the ring design's or the first design's. A variant's one-step
/// pass is of its own design, so that passes of one and two steps give the same bits.
template <int Dx, int Dy, int K, unsigned Opt> constexpr PassFn variant_pass() {
  if constexpr ((Opt & kTblockSmemRing) != 0)
    return &launch_ring<Dx, Dy, K, Opt>;
  else
    return &launch_pass<Dx, Dy, K, Opt>;
}

/// The most dynamic shared memory a block of a variant's kernels takes (launch_pass, launch_ring).
template <int Dx, int Dy, unsigned Opt> constexpr int variant_shared_bytes() {
  if constexpr ((Opt & kTblockSmemRing) == 0) {
    return static_cast<int>(sizeof(float)) *
           std::max(Geometry<Dx, Dy, 1>::kSharedFloats, Geometry<Dx, Dy, 2>::kSharedFloats);
  } else {
    const int ring = RingGeometry<Dx, Dy, ring_ahead(Opt)>::kSharedBytes;
    if constexpr ((Opt & kTblockRegQueue) != 0)
      return std::max(ring, QueueGeometry<Dx, Dy>::kSharedBytes);
    else
      return ring;
  }
}

template <int Dx, int Dy, std::size_t... V>
constexpr TileEntry tile_entry(std::index_sequence<V...>) {
  return TileEntry{Dx,
                   Dy,
                   {PassPair{variant_pass<Dx, Dy, 1, kTblockVariants[V]>(),
                             variant_pass<Dx, Dy, 2, kTblockVariants[V]>(),
                             variant_shared_bytes<Dx, Dy, kTblockVariants[V]>()}...}};
}

/// The compiled tiles, default first.
constexpr TileEntry kTiles[] = {
    tile_entry<32, 16>(std::make_index_sequence<kVariantCount>{}),
    tile_entry<32, 32>(std::make_index_sequence<kVariantCount>{}),
    tile_entry<16, 16>(std::make_index_sequence<kVariantCount>{}),
};

const TileEntry* find_tile(const TblockTile& t) {
  for (const TileEntry& e : kTiles)
    if (e.dx == t.dx && e.dy == t.dy) return &e;
  return nullptr;
}

} // namespace tb

std::vector<TblockTile> tblock_tiles() {
  std::vector<TblockTile> out;
  for (const tb::TileEntry& e : tb::kTiles)
    out.push_back(TblockTile{e.dx, e.dy});
  return out;
}

std::string tblock_name(const TblockTile& tile) {
  return "tb2_25d_" + std::to_string(tile.dx) + "x" + std::to_string(tile.dy);
}

// ---- TblockPass: what the passes read besides the fields ----

struct TblockPass::Impl {
  TblockTile tile;
  const tb::TileEntry* entry = nullptr;
  const tb::PassPair* passes = nullptr; ///< the variant's passes
  unsigned options = 0;
  int z_chunk = 0;

  bool ready = false;
  FieldLayout layout{};
  StencilCoefs coefs{};
  Box inner{};
  int steps = 0;
  bool free_surface = false;
  bool layer = false;
  DeviceBuffer eta_x, eta_y, eta_z;
  DeviceBuffer tap_begin, tap_i, tap_j, tap_weight, tap_owner, samples, tile_taps, ring_tile_taps;
  int x_shift = 0; ///< the ring design's tile origin: x = -x_shift
};

TblockPass::TblockPass(TblockTile tile, int z_chunk, unsigned options)
    : m(std::make_unique<Impl>()) {
  m->tile = tile;
  m->entry = tb::find_tile(tile);
  if (m->entry == nullptr)
    throw std::invalid_argument("tb2_25d: no tile " + std::to_string(tile.dx) + "x" +
                                std::to_string(tile.dy) + " is compiled");
  std::string allowed;
  for (std::size_t v = 0; v < tb::kVariantCount; ++v) {
    if (kTblockVariants[v] == options) m->passes = &m->entry->variant[v];
    allowed += (v ? ", " : "") + std::to_string(kTblockVariants[v]) + " (" +
               tblock_variant_name(kTblockVariants[v]) + ")";
  }
  if (m->passes == nullptr)
    throw std::invalid_argument("tb2_25d: options " + std::to_string(options) +
                                " are no compiled variant; allowed: " + allowed);
  m->options = options;
  if (z_chunk < 2 * kHalo)
    throw std::invalid_argument("tb2_25d: z chunk " + std::to_string(z_chunk) + " < " +
                                std::to_string(2 * kHalo));
  m->z_chunk = z_chunk;
}

TblockPass::~TblockPass() = default;

std::string TblockPass::name() const {
  return tblock_name(m->tile) + (m->options ? "+" + tblock_variant_name(m->options) : "");
}

bool TblockPass::layer() const {
  return m->layer;
}

std::size_t TblockPass::level_bytes(const FieldLayout& l, unsigned options) {
  const std::int64_t guard =
      (options & kTblockPlaneStride) != 0 ? static_cast<std::int64_t>(kHalo) * l.plane : 0;
  return static_cast<std::size_t>(l.size + guard) * sizeof(float);
}

int TblockPass::shared_bytes(TblockTile tile, unsigned options) {
  const tb::TileEntry* e = tb::find_tile(tile);
  if (e == nullptr) return 0;
  for (std::size_t v = 0; v < tb::kVariantCount; ++v)
    if (kTblockVariants[v] == options) return e->variant[v].shared_bytes;
  return 0;
}

namespace {

/// The profiles of eta as the pass reads them: eta along one axis where the other two are inner
/// coordinates (their profiles zero there), index i + 1 for i = -1 .. n.
std::array<std::vector<float>, 3> eta_profiles_of(const AcousticProblem& p) {
  const FieldLayout& l = p.layout;
  const Box& in = p.regions[static_cast<int>(RegionId::Inner)].box;
  std::array<std::vector<float>, 3> e{std::vector<float>(l.nx + 2), std::vector<float>(l.ny + 2),
                                      std::vector<float>(l.nz + 2)};
  for (int i = -1; i <= l.nx; ++i)
    e[0][i + 1] = p.eta[l.index(i, in.y0, in.z0)];
  for (int j = -1; j <= l.ny; ++j)
    e[1][j + 1] = p.eta[l.index(in.x0, j, in.z0)];
  for (int k = -1; k <= l.nz; ++k)
    e[2][k + 1] = p.eta[l.index(in.x0, in.y0, k)];
  return e;
}

/// The grid point (i, j, k) of a padded-field index.
void tap_point(const FieldLayout& l, std::int64_t idx, int& i, int& j, int& k) {
  k = static_cast<int>(idx / l.plane) - kHalo;
  const std::int64_t rest = idx % l.plane;
  j = static_cast<int>(rest / l.pitch) - kHalo;
  i = static_cast<int>(rest % l.pitch) - l.x_offset;
}

/// Empty when eta (grid and ghost ring) is, within two units in the last place, the float sum of
/// its profiles (tblock_eta); else the first point where it is not, with both values.
std::string eta_not_separable(const AcousticProblem& p) {
  const FieldLayout& l = p.layout;
  const auto e = eta_profiles_of(p);
  for (int k = -1; k <= l.nz; ++k)
    for (int j = -1; j <= l.ny; ++j)
      for (int i = -1; i <= l.nx; ++i) {
        const float want = (e[0][i + 1] + e[1][j + 1]) + e[2][k + 1];
        const float got = p.eta[l.index(i, j, k)];
        const float scale = std::max(std::fabs(want), std::fabs(got));
        if (std::fabs(got - want) <= 2.0f * std::numeric_limits<float>::epsilon() * scale) continue;
        return "eta at (" + std::to_string(i) + ", " + std::to_string(j) + ", " +
               std::to_string(k) + ") is " + std::to_string(got) + ", not their sum " +
               std::to_string(want) + " (eta is not separable)";
      }
  return {};
}

} // namespace

std::string TblockPass::can_run(const AcousticProblem& p, TblockTile tile) {
  if (tb::find_tile(tile) == nullptr)
    return "no tile " + std::to_string(tile.dx) + "x" + std::to_string(tile.dy) + " is compiled";
  const Box& in = p.regions[static_cast<int>(RegionId::Inner)].box;
  if (in.empty()) return "the problem has no inner region";
  // The plane-stride addressing's 32-bit distances reach R + 1 planes.
  if (static_cast<std::int64_t>(kHalo + 1) * p.layout.plane > std::numeric_limits<int>::max())
    return "a plane of " + std::to_string(p.layout.plane) +
           " floats: " + std::to_string(kHalo + 1) +
           " planes exceed the 32-bit distances of the addressing";
  if (p.boundary != BoundaryType::Minimod && p.layer.any())
    return "its layer is Minimod's (eta and phi), not the C-PML";
  if (p.layer.any() && p.eta.size() != static_cast<std::size_t>(p.layout.size))
    return "the problem has a layer but no eta field";
  // With eta's profiles the pass forms eta from the array's values at inner coordinates, which the
  // GPU backend has checked against the profiles bit for bit (the family's own driver trusts the
  // problem's builder); without, the array must be their sum as the pass forms it.
  if (p.layer.any() && p.eta_axes.empty()) {
    const std::string at = eta_not_separable(p);
    if (!at.empty()) return "its layer forms eta from three 1D profiles, and " + at;
  }
  if (p.subdomain.has_neighbour())
    return "it advances two steps a pass, with no halo exchange between them: a run of one "
           "subdomain only";
  // The pass adds a tap's samples where it updates the tap's point: grid points only.
  const FieldLayout& l = p.layout;
  for (std::size_t t = 0; t < p.sources.index.size(); ++t) {
    int i = 0, j = 0, k = 0;
    tap_point(l, p.sources.index[t], i, j, k);
    if (k < 0 || k >= l.nz || j < 0 || j >= l.ny || i < 0 || i >= l.nx)
      return "source tap " + std::to_string(t) + " lies at (" + std::to_string(i) + ", " +
             std::to_string(j) + ", " + std::to_string(k) +
             "), outside the grid, where the pass updates no point";
  }
  return {};
}

void TblockPass::setup(const AcousticProblem& p, void* stream_ptr) {
  const std::string why = can_run(p, m->tile);
  if (!why.empty()) throw std::invalid_argument(name() + ": " + why);
  check_taps(p.sources, p.source_samples, p.receivers, p.steps, p.layout.size);
  gpuStream_t st = static_cast<gpuStream_t>(stream_ptr);
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(st));
  Impl& s = *m;
  s.ready = false;
  s.layout = p.layout;
  s.coefs = p.coefs;
  s.inner = p.regions[static_cast<int>(RegionId::Inner)].box;
  s.steps = p.steps;
  s.free_surface = p.free_surface;
  s.layer = p.layer.any();
  if (s.layer) {
    // The three profiles, read back from eta where the other two axes' profiles are zero (inner
    // coordinates): eta(i, j_in, k_in) = eta_x(i) exactly.
    const auto e = eta_profiles_of(p);
    s.eta_x = upload_new(e[0], "eta profile x", st);
    s.eta_y = upload_new(e[1], "eta profile y", st);
    s.eta_z = upload_new(e[2], "eta profile z", st);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(st));
  } else {
    for (DeviceBuffer* b : {&s.eta_x, &s.eta_y, &s.eta_z})
      *b = DeviceBuffer();
  }
  // Source taps grouped by plane (a stable sort keeps each point's taps in table order).
  const FieldLayout& l = p.layout;
  const std::size_t taps = p.sources.index.size();
  std::vector<int> owner(taps), ti(taps), tj(taps), tk(taps);
  for (std::size_t src = 0; src < p.sources.owners(); ++src)
    for (std::int64_t t = p.sources.begin[src]; t < p.sources.begin[src + 1]; ++t)
      owner[static_cast<std::size_t>(t)] = static_cast<int>(src);
  for (std::size_t t = 0; t < taps; ++t)
    tap_point(l, p.sources.index[t], ti[t], tj[t], tk[t]); // inside the grid (can_run)
  std::vector<std::size_t> order(taps);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return tk[a] < tk[b]; });
  std::vector<int> begin(static_cast<std::size_t>(l.nz) + 1, 0), oi(taps + 1), oj(taps + 1),
      oo(taps + 1);
  std::vector<float> ow(taps + 1);
  for (std::size_t r = 0; r < taps; ++r) {
    const std::size_t t = order[r];
    oi[r] = ti[t];
    oj[r] = tj[t];
    oo[r] = owner[t];
    ow[r] = p.sources.weight[t];
    ++begin[static_cast<std::size_t>(tk[t]) + 1];
  }
  for (int k = 0; k < l.nz; ++k)
    begin[k + 1] += begin[k];
  std::vector<float> samp = p.source_samples;
  if (samp.empty()) samp.push_back(0.0f);
  s.tap_begin = upload_new(begin, "source taps by plane", st);
  s.tap_i = upload_new(oi, "source tap x", st);
  s.tap_j = upload_new(oj, "source tap y", st);
  s.tap_owner = upload_new(oo, "source tap owners", st);
  s.tap_weight = upload_new(ow, "source tap weights", st);
  s.samples = upload_new(samp, "source samples", st);
  // Per tile of the launch grid: whether a tap lies in its tile or its cross (the R columns
  // beside it), i.e. in [x0 - R, x0 + Dx + R) x [y0 - R, y0 + Dy + R).
  // The ring design's tiles start at x = -x_shift, on a 128-byte column of the padded rows.
  const int dx = s.tile.dx, dy = s.tile.dy;
  s.x_shift = l.x_offset % kAlignFloats;
  auto tile_flags = [&](int shift) {
    const int tiles_x = (l.nx + shift + dx - 1) / dx, tiles_y = (l.ny + dy - 1) / dy;
    std::vector<int> flags(static_cast<std::size_t>(tiles_x) * tiles_y, 0);
    for (std::size_t t = 0; t < taps; ++t)
      for (int by = std::max(0, (tj[t] - kHalo) / dy);
           by <= std::min(tiles_y - 1, (tj[t] + kHalo) / dy); ++by)
        for (int bx = std::max(0, (ti[t] + shift - kHalo) / dx);
             bx <= std::min(tiles_x - 1, (ti[t] + shift + kHalo) / dx); ++bx)
          flags[static_cast<std::size_t>(by) * tiles_x + bx] = 1;
    return flags;
  };
  s.tile_taps = upload_new(tile_flags(0), "source tiles", st);
  s.ring_tile_taps = upload_new(tile_flags(s.x_shift), "source tiles (ring design)", st);
  // upload_new's copies read the host vectors above: finish them before those go.
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(st));
  s.ready = true;
}

void TblockPass::launch(int n, int k, const TblockLevels& levels, const float* vp2dt2,
                        void* stream) const {
  const Impl& s = *m;
  if (!s.ready) throw std::logic_error(name() + ": a pass before setup");
  if ((k != 1 && k != 2) || n < 0 || n + k > s.steps)
    throw std::out_of_range(name() + ": a pass of " + std::to_string(k) + " steps from step " +
                            std::to_string(n) + " of " + std::to_string(s.steps));
  if (s.layer && (levels.phi_in == nullptr || levels.phi_out == nullptr))
    throw std::logic_error(name() + ": a pass over a layer without phi's two levels");
  tb::PassArgs a;
  a.u0 = levels.u0;
  a.um = levels.um;
  a.vp2dt2 = vp2dt2;
  a.u1 = levels.u1;
  a.u2 = levels.u2;
  if (s.layer) {
    a.phi_in = levels.phi_in;
    a.phi_out = levels.phi_out;
    a.eta_x = s.eta_x.as<const float>();
    a.eta_y = s.eta_y.as<const float>();
    a.eta_z = s.eta_z.as<const float>();
  }
  a.tap_begin = s.tap_begin.as<const int>();
  a.tap_i = s.tap_i.as<const int>();
  a.tap_j = s.tap_j.as<const int>();
  a.tap_weight = s.tap_weight.as<const float>();
  a.tap_owner = s.tap_owner.as<const int>();
  a.tile_taps = s.tile_taps.as<const int>();
  a.ring_tile_taps = s.ring_tile_taps.as<const int>();
  a.x_shift = s.x_shift;
  a.samples = s.samples.as<const float>();
  a.steps = s.steps;
  a.n = n;
  a.layout = s.layout;
  a.coefs = s.coefs;
  a.inner = s.inner;
  a.z_chunk = s.z_chunk;
  a.free_surface = s.free_surface ? 1 : 0;
  (k == 2 ? s.passes->two : s.passes->one)(a, static_cast<gpuStream_t>(stream));
}

// ---- TblockKernel: the registered kernels ----

TblockKernel::TblockKernel(TblockTile tile)
    : GpuKernel(GpuKernelInfo{"tb2_25d", tile.dx, tile.dy, 0, Physics::Acoustic, true, true}),
      m_tile(tile) {}

std::string TblockKernel::description() const {
  return "two steps a pass over memory (temporal blocking, 2.5D), the whole grid: layer, taps "
         "and free surface inside the pass";
}

std::string TblockKernel::can_run(const Region& region, const FieldLayout& layout) const {
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  const int need = TblockPass::shared_bytes(m_tile, kTblockRegistered);
  int device = 0, most = 0;
  // Without a device to ask (a host without a GPU checking names), the launch reports any limit.
  if (gpuGetDevice(&device) != gpuSuccess ||
      gpuDeviceGetAttribute(&most, gpuDevAttrMaxSharedMemoryPerBlockOptin, device) != gpuSuccess) {
    (void)gpuGetLastError();
    return {};
  }
  if (most < need)
    return "its blocks need " + std::to_string(need) + " B of shared memory; this GPU's have " +
           std::to_string(most) + " B";
  return {};
}

void TblockKernel::launch(const IsoFields&, const FieldLayout&, const StencilCoefs&, const Region&,
                          void*) const {
  throw std::logic_error(name() + " advances the whole grid in its passes (TblockPass); it has "
                                  "no region update");
}

void register_tblock_kernels(KernelRegistry& registry) {
  bool first = true;
  for (const TblockTile& tile : tblock_tiles()) {
    registry.add(std::make_unique<TblockKernel>(tile), first);
    first = false;
  }
}

// ---- TemporalBlock25d: the family over fields of its own ----

struct TemporalBlock25d::Impl {
  Impl(TblockTile tile, int z_chunk, unsigned opt) : pass(tile, z_chunk, opt), options(opt) {}

  TblockPass pass;
  unsigned options = 0;
  OpenedDevice device = open_device();
  StreamHandle stream = make_stream("tb2_25d stream");
  EventHandle start = make_timing_event("tb2_25d start event");
  EventHandle stop = make_timing_event("tb2_25d stop event");

  bool ready = false;
  FieldLayout layout{};
  int steps = 0;
  /// u^n = u[cur], u^{n-1} = u[prev], the other two written by a pass (TblockPass::level_bytes).
  DeviceBuffer u[4];
  int cur = 0, prev = 1;
  DeviceBuffer phi[2];
  int phi_cur = 0;
  DeviceBuffer vp2dt2;
  DeviceTaps taps; ///< receivers (sampling) and the traces

  float* level(int b) const { return u[b].as<float>(); }

  void zero_fields() {
    for (auto& b : u)
      MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b.as<void>(), 0, b.bytes(), stream.get()),
                             "tb2_25d: zero u");
    for (auto& b : phi)
      if (!b.empty())
        MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b.as<void>(), 0, b.bytes(), stream.get()),
                               "tb2_25d: zero phi");
    cur = 0;
    prev = 1;
    phi_cur = 0;
  }

  /// One pass of k steps (1 or 2) from step n.
  void run_pass(int n, int k) {
    int free_a = -1, free_b = -1;
    for (int b = 0; b < 4; ++b)
      if (b != cur && b != prev) (free_a < 0 ? free_a : free_b) = b;
    TblockLevels lv;
    lv.u0 = level(cur);
    lv.um = level(prev);
    lv.u1 = level(free_a);
    lv.u2 = level(free_b);
    if (pass.layer()) {
      lv.phi_in = phi[phi_cur].as<const float>();
      lv.phi_out = phi[1 - phi_cur].as<float>();
    }
    pass.launch(n, k, lv, vp2dt2.as<const float>(), stream.get());
    taps.sample(lv.u1, n, stream.get(), "tb2_25d sample_receivers_kernel");
    if (k == 2) {
      taps.sample(lv.u2, n + 1, stream.get(), "tb2_25d sample_receivers_kernel");
      prev = free_a;
      cur = free_b;
    } else {
      prev = cur;
      cur = free_a;
    }
    if (pass.layer()) phi_cur = 1 - phi_cur;
  }

  void advance(int first, int count, bool wrap) {
    int n = first;
    int left = count;
    while (left > 0) {
      const int nn = wrap ? n % steps : n;
      // A two-step pass needs both steps' samples: at the end of the step range, one step.
      const int k = (left >= 2 && nn + 1 < steps) ? 2 : 1;
      run_pass(nn, k);
      n += k;
      left -= k;
    }
  }
};

TemporalBlock25d::TemporalBlock25d(TblockTile tile, int z_chunk, unsigned options)
    : m(std::make_unique<Impl>(tile, z_chunk, options)) {}

TemporalBlock25d::~TemporalBlock25d() {
  if (m && m->stream) (void)gpuStreamSynchronize(m->stream.get());
}

std::string TemporalBlock25d::name() const {
  return m->pass.name();
}

std::string TemporalBlock25d::can_run(const AcousticProblem& p, TblockTile tile) {
  return TblockPass::can_run(p, tile);
}

void TemporalBlock25d::setup(const AcousticProblem& p) {
  MINIMOD_GPU_CHECK(gpuSetDevice(m->device.id));
  Impl& s = *m;
  gpuStream_t st = s.stream.get();
  s.ready = false;
  s.pass.setup(p, st);
  s.layout = p.layout;
  s.steps = p.steps;
  const std::size_t level = TblockPass::level_bytes(p.layout, s.options);
  for (int b = 0; b < 4; ++b)
    s.u[b] = DeviceBuffer(level, "u level " + std::to_string(b));
  s.vp2dt2 = upload_new(p.vp2dt2, "vp2dt2", st);
  const std::size_t bytes = static_cast<std::size_t>(p.layout.size) * sizeof(float);
  for (int b = 0; b < 2; ++b)
    s.phi[b] = s.pass.layer() ? DeviceBuffer(bytes, b == 0 ? "phi" : "phi (next)") : DeviceBuffer();
  s.taps.upload(TapTable{{0}, {}, {}}, {}, p.receivers, p.steps, st);
  s.zero_fields();
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(st));
  s.ready = true;
}

void TemporalBlock25d::advance(int first, int count) {
  if (!m->ready) throw std::logic_error("tb2_25d: advance before setup");
  if (first < 0 || count < 0 || first + count > m->steps)
    throw std::out_of_range("tb2_25d: steps [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") outside [0, " +
                            std::to_string(m->steps) + ")");
  m->advance(first, count, false);
}

double TemporalBlock25d::time_steps(int first, int count) {
  if (!m->ready) throw std::logic_error("tb2_25d: time_steps before setup");
  gpuStream_t st = m->stream.get();
  MINIMOD_GPU_CHECK(gpuEventRecord(m->start.get(), st));
  m->advance(first, count, true);
  MINIMOD_GPU_CHECK(gpuEventRecord(m->stop.get(), st));
  MINIMOD_GPU_CHECK(gpuEventSynchronize(m->stop.get()));
  float ms = 0.0f;
  MINIMOD_GPU_CHECK(gpuEventElapsedTime(&ms, m->start.get(), m->stop.get()));
  return static_cast<double>(ms);
}

void TemporalBlock25d::fetch_wavefield(std::vector<float>& dense) {
  if (!m->ready) throw std::logic_error("tb2_25d: fetch_wavefield before setup");
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(m->stream.get()));
  std::vector<float> padded(static_cast<std::size_t>(m->layout.size));
  m->u[m->cur].download(padded.data(), padded.size() * sizeof(float));
  const FieldLayout& l = m->layout;
  dense.resize(static_cast<std::size_t>(l.nx) * l.ny * l.nz);
  unpad_field(l, padded.data(), dense.data());
}

void TemporalBlock25d::fetch_traces(std::vector<float>& traces) {
  if (!m->ready) throw std::logic_error("tb2_25d: fetch_traces before setup");
  m->taps.fetch(traces, m->stream.get());
}

void TemporalBlock25d::reset() {
  if (!m->ready) throw std::logic_error("tb2_25d: reset before setup");
  m->zero_fields();
  m->taps.zero_traces(m->stream.get());
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(m->stream.get()));
}

} // namespace minimod::gpu
