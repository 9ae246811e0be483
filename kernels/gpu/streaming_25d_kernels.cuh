#pragma once
/// Device code and launcher of the 2.5D streaming families (Sai et al. 2022, sections 5.4-5.6 and
/// 6.6). A 2D thread block owns a Dx x Dy tile of xy points and streams along z through one chunk
/// of the region's z range, one plane per step. The xy neighbours of the current plane come from
/// shared memory (the tile plus its 4-point x/y halo, without corners: the stencil is a star); the
/// z neighbours come from shared planes (st_smem) or from a column of registers per thread
/// (st_reg_*). Every block reads each u value of its tile once per step plus the x/y halo (mostly
/// L2 hits, since neighbouring tiles read the same points) and 2R extra planes per z chunk.
///
/// Threads whose point lies outside the region (partial tiles at the box edges) still load their
/// column, which is the x/y halo of the points beside them, and take part in every barrier; they
/// store nothing. Their loads are clamped to the last point an active thread needs (box edge + 4,
/// inside the field's zero ghost), so every address is valid.
///
/// Included only by the streaming_25d_<variant>.cu files, which instantiate the registered tiles.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/cpml.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/half_kernels.cuh"
#include "kernels/gpu/streaming_25d.cuh"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace minimod::gpu::st25d {

/// How a thread keeps the z neighbours of its point.
enum class ZColumn : int {
  Shifted = 0, ///< 2R+1 registers, shifted by one each step (behind4 = behind3, ...)
  Fixed = 1    ///< a ring of registers whose names rotate at compile time (loop unrolled)
};

/// How many shared xy planes the register families stage.
enum class PlaneBuffers : int {
  Single = 1, ///< one plane: a barrier before it is overwritten and one after it is filled
  Double = 2  ///< two planes: the next plane is filled while the current one is read, one barrier
};

/// Shared-memory geometry of a Dx x Dy tile with its kHalo-point x/y halo.
/// \tparam Dx threads (points) of the tile along x
/// \tparam Dy threads (points) of the tile along y
template <int Dx, int Dy> struct TileGeometry {
  static constexpr int kThreads = Dx * Dy;                  ///< threads per block
  static constexpr int kStride = Dx + 2 * kHalo;            ///< floats per shared row
  static constexpr int kRows = Dy + 2 * kHalo;              ///< rows per shared plane
  static constexpr int kPlaneFloats = kStride * kRows;      ///< floats per shared plane
  static constexpr int kHaloPoints = 2 * kHalo * (Dx + Dy); ///< x/y halo points of a plane
  /// Halo points each thread loads per plane (the last of them only by some threads).
  static constexpr int kHaloPerThread = (kHaloPoints + kThreads - 1) / kThreads;
};

/// Where one thread of a tile block reads and writes, fixed for the whole z chunk. Offsets are
/// relative to the tile origin (x0, y0) of a plane and fit in an int (a few rows of a plane).
/// \tparam Dx tile extent along x
/// \tparam Dy tile extent along y
template <int Dx, int Dy> struct ThreadPlan {
  /// The tile's shared-memory geometry.
  using Geometry = TileGeometry<Dx, Dy>;
  std::int64_t origin = 0; ///< layout index of the tile origin in plane zs
  int zs = 0;              ///< first plane the block updates
  int ze = 0;              ///< one past the last plane the block updates
  int smem = 0;            ///< shared index of the thread's own point
  int column = 0;          ///< offset of the thread's (clamped) column in a plane
  bool active = false;     ///< whether the thread's point is in the region (it stores)
  int halo_smem[Geometry::kHaloPerThread];   ///< shared index of each halo point it loads
  int halo_offset[Geometry::kHaloPerThread]; ///< offset of each halo point it loads in a plane
  bool halo_loads[Geometry::kHaloPerThread]; ///< whether the thread has that halo point at all
};

/// The thread's plan in a block of `box`: the tile from blockIdx.x/y, the z chunk from blockIdx.z.
template <int Dx, int Dy>
__device__ __forceinline__ ThreadPlan<Dx, Dy> make_plan(const FieldLayout& layout, const Box& box,
                                                        int z_chunk) {
  using G = TileGeometry<Dx, Dy>;
  ThreadPlan<Dx, Dy> p;
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int t = ty * Dx + tx;
  const int x0 = box.x0 + static_cast<int>(blockIdx.x) * Dx;
  const int y0 = box.y0 + static_cast<int>(blockIdx.y) * Dy;
  p.zs = box.z0 + static_cast<int>(blockIdx.z) * z_chunk;
  p.ze = min(p.zs + z_chunk, box.z1);
  p.origin = layout.index(x0, y0, p.zs);
  // Last tile-relative x and y that an active thread reads (box edge + halo): clamping loads
  // there keeps them inside the field's ghost; the clamped values are never used.
  const int x_last = box.x1 + kHalo - 1 - x0;
  const int y_last = box.y1 + kHalo - 1 - y0;
  const int pitch = layout.pitch;
  p.active = x0 + tx < box.x1 && y0 + ty < box.y1;
  p.smem = (ty + kHalo) * G::kStride + tx + kHalo;
  p.column = min(ty, y_last) * pitch + min(tx, x_last);
  // Halo points in order: the 2R rows above and below the tile (coalesced along x), then the 2R
  // points left and right of each row. Thread t loads points t, t + threads, ...
#pragma unroll
  for (int h = 0; h < G::kHaloPerThread; ++h) {
    const int e = h * G::kThreads + t;
    int dx, dy;
    if (e < 2 * kHalo * Dx) {
      const int r = e / Dx;
      dx = e % Dx;
      dy = r < kHalo ? r - kHalo : Dy + r - kHalo;
    } else {
      const int e2 = e - 2 * kHalo * Dx;
      const int c = e2 % (2 * kHalo);
      dy = e2 / (2 * kHalo);
      dx = c < kHalo ? c - kHalo : Dx + c - kHalo;
    }
    p.halo_loads[h] = e < G::kHaloPoints;
    p.halo_smem[h] = (dy + kHalo) * G::kStride + dx + kHalo;
    p.halo_offset[h] = min(dy, y_last) * pitch + min(dx, x_last);
  }
  return p;
}

/// Whether halo load h of every thread exists (known at compile time for all but the last one).
template <int Dx, int Dy> __device__ __forceinline__ constexpr bool halo_always(int h) {
  return (h + 1) * TileGeometry<Dx, Dy>::kThreads <= TileGeometry<Dx, Dy>::kHaloPoints;
}

/// Loads the x/y halo of the plane whose tile origin is at `plane` into registers.
template <int Dx, int Dy>
__device__ __forceinline__ void load_halo(const float* __restrict__ u, std::int64_t plane,
                                          const ThreadPlan<Dx, Dy>& p,
                                          float (&h)[TileGeometry<Dx, Dy>::kHaloPerThread]) {
#pragma unroll
  for (int k = 0; k < TileGeometry<Dx, Dy>::kHaloPerThread; ++k)
    if (halo_always<Dx, Dy>(k) || p.halo_loads[k]) h[k] = __ldg(u + plane + p.halo_offset[k]);
}

/// Writes halo values loaded by load_halo into a shared plane.
template <int Dx, int Dy>
__device__ __forceinline__ void store_halo(float* sm, const ThreadPlan<Dx, Dy>& p,
                                           const float (&h)[TileGeometry<Dx, Dy>::kHaloPerThread]) {
#pragma unroll
  for (int k = 0; k < TileGeometry<Dx, Dy>::kHaloPerThread; ++k)
    if (halo_always<Dx, Dy>(k) || p.halo_loads[k]) sm[p.halo_smem[k]] = h[k];
}

/// The operands of one point besides u: v, vp2dt2 and, in a layer, phi, the x/y neighbours of
/// eta and the eta value that enters the thread's eta column next (`eta_lead`).
struct PointOperands {
  float v = 0.0f;        ///< u^{n-1}
  float vp2dt2 = 0.0f;   ///< (c dt)^2
  float phi = 0.0f;      ///< phi^n (layer)
  float eta_xm = 0.0f;   ///< eta at -x (layer)
  float eta_xp = 0.0f;   ///< eta at +x (layer)
  float eta_ym = 0.0f;   ///< eta at -y (layer)
  float eta_yp = 0.0f;   ///< eta at +y (layer)
  float eta_lead = 0.0f; ///< eta `lead` floats ahead of the point along z (layer)
};

/// Loads the operands of the point at layout index `own`; `lead` is the z offset (in floats) of
/// the eta value that enters the eta column. v and phi are read and written by the same thread
/// only, so their reads need no read-only path.
template <RegionKind Kind>
__device__ __forceinline__ PointOperands
load_operands(const float* v, const float* __restrict__ vp2dt2, const float* phi,
              const float* __restrict__ eta, std::int64_t own, std::int64_t sy, std::int64_t lead) {
  PointOperands o;
  o.v = v[own];
  o.vp2dt2 = __ldg(vp2dt2 + own);
  if constexpr (Kind == RegionKind::Layer) {
    o.phi = phi[own];
    o.eta_xm = __ldg(eta + own - 1);
    o.eta_xp = __ldg(eta + own + 1);
    o.eta_ym = __ldg(eta + own - sy);
    o.eta_yp = __ldg(eta + own + sy);
    o.eta_lead = __ldg(eta + own + lead);
  }
  return o;
}

/// The z column of eta around the current point (layer only): eta(z-1), eta(z), eta(z+1).
struct EtaColumn {
  float m = 0.0f; ///< eta one plane below the point
  float c = 0.0f; ///< eta at the point
  float p = 0.0f; ///< eta one plane above the point
  /// Moves one plane up; `lead` is the value that enters above.
  __device__ __forceinline__ void advance(float lead) {
    m = c;
    c = p;
    p = lead;
  }
};

/// laplacian_25 (stencil_K.hpp) with x/y neighbours from the shared plane at `s` (the point) and
/// z neighbours zm[m] = u(z-m), zp[m] = u(z+m): the same terms in the same order.
template <int Stride>
__device__ __forceinline__ float
star_laplacian(const float* s, float centre, const float (&zm)[kHalo + 1],
               const float (&zp)[kHalo + 1], const StencilCoefs& c) {
  float lap = c.c0 * centre;
#pragma unroll
  for (int m = 1; m <= kHalo; ++m) {
    lap += c.cx[m] * (s[m] + s[-m]);
    lap += c.cy[m] * (s[m * Stride] + s[-m * Stride]);
    lap += c.cz[m] * (zp[m] + zm[m]);
  }
  return lap;
}

/// Updates the point at layout index `own` and stores v (and phi in a layer).
/// \tparam Stride floats per shared row
/// \tparam Kind inner (plain update) or layer (Minimod's PML, also writes phi)
template <int Stride, RegionKind Kind>
__device__ __forceinline__ void
update_point(const float* s, float centre, const float (&zm)[kHalo + 1],
             const float (&zp)[kHalo + 1], const PointOperands& o, const EtaColumn& ez,
             float* __restrict__ v, float* __restrict__ phi, std::int64_t own,
             const StencilCoefs& c) {
  const float lap = star_laplacian<Stride>(s, centre, zm, zp, c);
  if constexpr (Kind == RegionKind::Inner) {
    v[own] = inner_update(centre, o.v, o.vp2dt2, lap);
  } else {
    // eta_gradient_term, with u's neighbours from shared memory and registers.
    const float deta_du = (o.eta_xp - o.eta_xm) * (s[1] - s[-1]) * c.px +
                          (o.eta_yp - o.eta_ym) * (s[Stride] - s[-Stride]) * c.py +
                          (ez.p - ez.m) * (zp[1] - zm[1]) * c.pz;
    float phi_next;
    v[own] = layer_update(centre, o.v, o.vp2dt2, lap, o.phi, ez.c, deta_du, &phi_next);
    phi[own] = phi_next;
  }
}

/// The C-PML of the z slabs in st_reg_shft_25d's inner update (its kCpmlZ form, launched by
/// launch_cpml_z_slab for the top and bottom slabs' boxes that meet no x or y slab). Each thread
/// keeps psi^n of z at planes z - 4 .. z + 4 of its column in registers; the step at z forms psi^n
/// of plane z + 4 from psi^(n-1) and d_z u^n there (the reference's memory pass, u up to z + 8 from
/// the ring), and a point in a z slab takes d~_zz u (kernels/cpml.hpp) instead of d_zz u. Every
/// test of a plane is uniform over the block. Off (false): nothing.
template <bool On> struct CpmlZColumn {
  __device__ __forceinline__ void shift() {}
};

template <> struct CpmlZColumn<true> {
  float pq[2 * kHalo + 1] = {}; ///< psi^n of z at planes z - 4 .. z + 4 (zero outside the slabs)
  int i = 0, j = 0;             ///< the thread's point

  /// psi^n of z at plane q (in the slab of face f) from the first derivative d of u^n there.
  __device__ __forceinline__ float psi_at(const CpmlView& v, int f, int q, float d) const {
    const float old = v.psi[2][f][cpml_slab_index(v, 2, f, i, j, q, kHalo)];
    return __ldg(v.b[2] + q) * old + __ldg(v.a[2] + q) * d;
  }

  /// psi^n of the planes zs - 4 .. zs + 3 that lie in a z slab, for a column that starts at plane
  /// zs (col0: its index there): u read from memory, 4 planes around each.
  __device__ __forceinline__ void start(const CpmlView& v, const float* __restrict__ u,
                                        std::int64_t col0, std::int64_t sz, int zs, bool active,
                                        int i_, int j_) {
    i = i_;
    j = j_;
    if (!active) return;
#pragma unroll
    for (int t = 0; t < 2 * kHalo; ++t) {
      const int q = zs - kHalo + t;
      const int f = cpml_face(v, 2, q);
      if (f < 0) continue;
      const std::int64_t at = col0 + static_cast<std::int64_t>(q - zs) * sz;
      float d = 0.0f;
#pragma unroll
      for (int m = 1; m <= kHalo; ++m)
        d += v.d1[2][m] * (__ldg(u + at + m * sz) - __ldg(u + at - m * sz));
      pq[t] = psi_at(v, f, q, d);
    }
  }

  /// The update of the thread's point at plane z: psi^n of plane z + 4 first, then u^(n+1) with
  /// the z term stretched where z is in a slab (psi^n of the point written for the next step).
  /// ring: u(z - 4 .. z + 8); zm, zp: u(z -+ m).
  template <int Stride>
  __device__ __forceinline__ void
  update(const CpmlView& v, const float* s, const float (&ring)[3 * kHalo + 1], int z,
         const float (&zm)[kHalo + 1], const float (&zp)[kHalo + 1], const PointOperands& o,
         float* __restrict__ out, std::int64_t own, const StencilCoefs& c) {
    const float* w = v.d1[2];
    const int fl = cpml_face(v, 2, z + kHalo);
    float lead = 0.0f;
    if (fl >= 0) {
      float d = 0.0f;
#pragma unroll
      for (int m = 1; m <= kHalo; ++m)
        d += w[m] * (ring[2 * kHalo + m] - ring[2 * kHalo - m]);
      lead = psi_at(v, fl, z + kHalo, d);
    }
    pq[2 * kHalo] = lead;
    const float centre = ring[kHalo];
    float lap = star_laplacian<Stride>(s, centre, zm, zp, c);
    const int f = cpml_face(v, 2, z);
    if (f >= 0) {
      float d2 = c.cz[0] * centre, d1 = 0.0f, dpsi = 0.0f;
#pragma unroll
      for (int m = 1; m <= kHalo; ++m) {
        d2 += c.cz[m] * (zp[m] + zm[m]);
        d1 += w[m] * (zp[m] - zm[m]);
        dpsi += w[m] * ((cpml_face(v, 2, z + m) == f ? pq[kHalo + m] : 0.0f) -
                        (cpml_face(v, 2, z - m) == f ? pq[kHalo - m] : 0.0f));
      }
      v.psi_next[2][f][cpml_slab_index(v, 2, f, i, j, z, kHalo)] = pq[kHalo];
      const float ik = __ldg(v.ik[2] + z);
      const float g = ik * d2 + __ldg(v.dik[2] + z) * d1 + dpsi;
      float& zeta = v.zeta[2][f][cpml_slab_index(v, 2, f, i, j, z, 0)];
      const float zt = __ldg(v.b[2] + z) * zeta + __ldg(v.a[2] + z) * g;
      zeta = zt;
      lap += ik * g + zt - d2;
    }
    out[own] = inner_update(centre, o.v, o.vp2dt2, lap);
  }

  /// One plane up the column.
  __device__ __forceinline__ void shift() {
#pragma unroll
    for (int t = 0; t < 2 * kHalo; ++t)
      pq[t] = pq[t + 1];
  }
};

/// Ring slot of u(z + d) at phase `ph` in a ring of n registers or planes (u(z) is at ph + R).
__device__ __forceinline__ constexpr int ring_slot(int ph, int d, int n) {
  return (ph + kHalo + d) % n;
}

/// st_reg_shft_25d / st_reg_fixed_25d (and +db): one step of the update on `box`, block
/// (Dx, Dy, 1), grid (tiles x, tiles y, z chunks). The u column of each thread lives in a ring
/// of registers; the current plane (tile + x/y halo) in shared memory.
/// \tparam Dx tile extent along x (threads)
/// \tparam Dy tile extent along y (threads)
/// \tparam Kind inner or layer update
/// \tparam Column shifted registers (loop not unrolled) or fixed registers (loop unrolled)
/// \tparam Buffers one shared plane and two barriers a step, or two planes and one barrier with
///         every load of the next plane (u, halo, v, vp2dt2, phi, eta) issued before the compute
/// \tparam MinBlocks blocks per multiprocessor the register allocation must allow
template <int Dx, int Dy, RegionKind Kind, ZColumn Column, PlaneBuffers Buffers, int MinBlocks,
          bool kCpmlZ = false>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, MinBlocks)
    st_reg_25d_kernel(const float* __restrict__ u, float* __restrict__ v,
                      const float* __restrict__ vp2dt2, float* __restrict__ phi,
                      const float* __restrict__ eta, const FieldLayout layout,
                      const StencilCoefs coefs, const Box box, const int z_chunk,
                      const CpmlView cpml) {
  using G = TileGeometry<Dx, Dy>;
  constexpr bool kDouble = Buffers == PlaneBuffers::Double;
  static_assert(!kCpmlZ || (Kind == RegionKind::Inner && Column == ZColumn::Shifted && !kDouble),
                "the C-PML's z slabs take st_reg_shft_25d's inner update only");
  // Ring of the u column: u(z-R..z+R), plus u(z+R+1) loaded a step ahead when double-buffered;
  // with the C-PML's z slabs u(z-R..z+2R) (psi^n of plane z+R needs d_z u there).
  constexpr int kRing = kCpmlZ ? 3 * kHalo + 1 : (kDouble ? 2 * kHalo + 2 : 2 * kHalo + 1);
  constexpr int kLead = kCpmlZ ? 2 * kHalo : kHalo; // the plane each step loads, from z
  constexpr int kUnroll = Column == ZColumn::Fixed ? kRing : 1;
  constexpr int kHaloLoads = G::kHaloPerThread;
  __shared__ float sm_plane[kDouble ? 2 : 1][G::kPlaneFloats];

  const ThreadPlan<Dx, Dy> p = make_plan<Dx, Dy>(layout, box, z_chunk);
  const std::int64_t sy = layout.pitch;
  const std::int64_t sz = layout.plane;
  const std::int64_t col0 = p.origin + p.column;
  // The step's lead plane z + kLead, kept inside the field's ghost (the C-PML's reads past it
  // enter psi^n of planes outside the grid only, which are zero).
  const auto lead_offset = [&](int z) {
    return kCpmlZ ? min(z + kLead, layout.nz + kHalo - 1) - z : kLead;
  };

  float ring[kRing];
#pragma unroll
  for (int d = -kHalo; d < (kDouble ? kHalo + 1 : kLead); ++d)
    ring[d + kHalo] =
        __ldg(u + col0 + ((kCpmlZ ? min(p.zs + d, layout.nz + kHalo - 1) : p.zs + d) - p.zs) * sz);
  CpmlZColumn<kCpmlZ> cz;
  if constexpr (kCpmlZ)
    cz.start(cpml, u, col0, sz, p.zs, p.active,
             box.x0 + static_cast<int>(blockIdx.x) * Dx + static_cast<int>(threadIdx.x),
             box.y0 + static_cast<int>(blockIdx.y) * Dy + static_cast<int>(threadIdx.y));

  PointOperands ops;
  EtaColumn ez;
  if constexpr (Kind == RegionKind::Layer) {
    if (p.active) {
      ez.c = __ldg(eta + col0 - sz);
      ez.p = __ldg(eta + col0);
    }
  }
  if constexpr (kDouble) {
    // Plane zs and the operands of its points, before the loop.
    float h[kHaloLoads];
    load_halo<Dx, Dy>(u, p.origin, p, h);
    if (p.active) ops = load_operands<Kind>(v, vp2dt2, phi, eta, col0, sy, sz);
    ez.advance(ops.eta_lead);
    sm_plane[0][p.smem] = ring[kHalo];
    store_halo<Dx, Dy>(sm_plane[0], p, h);
    __syncthreads();
  }

  int buffer = 0; // the plane read this step, when the phase is not known at compile time
  for (int zb = p.zs;; zb += kUnroll) {
#pragma unroll
    for (int q = 0; q < kUnroll; ++q) {
      const int z = zb + q;
      if (z >= p.ze) return; // the same z for the whole block: no barrier is skipped by some
      const std::int64_t plane = p.origin + static_cast<std::int64_t>(z - p.zs) * sz;
      const std::int64_t own = plane + p.column;
      if constexpr (!kDouble) {
        ring[ring_slot(q, kLead, kRing)] = __ldg(u + own + lead_offset(z) * sz);
        float h[kHaloLoads];
        load_halo<Dx, Dy>(u, plane, p, h);
        if (p.active) ops = load_operands<Kind>(v, vp2dt2, phi, eta, own, sy, sz);
        __syncthreads(); // every thread is done reading the previous plane
        sm_plane[0][p.smem] = ring[ring_slot(q, 0, kRing)];
        store_halo<Dx, Dy>(sm_plane[0], p, h);
        __syncthreads();
        ez.advance(ops.eta_lead);
        if (p.active) {
          float zm[kHalo + 1], zp[kHalo + 1];
#pragma unroll
          for (int m = 1; m <= kHalo; ++m) {
            zm[m] = ring[ring_slot(q, -m, kRing)];
            zp[m] = ring[ring_slot(q, m, kRing)];
          }
          if constexpr (kCpmlZ) {
            cz.template update<G::kStride>(cpml, &sm_plane[0][p.smem], ring, z, zm, zp, ops, v, own,
                                           coefs);
          } else {
            update_point<G::kStride, Kind>(&sm_plane[0][p.smem], ring[ring_slot(q, 0, kRing)], zm,
                                           zp, ops, ez, v, phi, own, coefs);
          }
        }
        if constexpr (kCpmlZ) cz.shift();
      } else {
        const int cur = Column == ZColumn::Fixed ? (q & 1) : buffer;
        const bool more = z + 1 < p.ze; // uniform over the block
        float h[kHaloLoads];
        PointOperands next;
        if (more) {
          // Everything plane z+1 needs is requested before plane z is computed.
          ring[ring_slot(q, kHalo + 1, kRing)] = __ldg(u + own + (kHalo + 1) * sz);
          load_halo<Dx, Dy>(u, plane + sz, p, h);
          if (p.active) next = load_operands<Kind>(v, vp2dt2, phi, eta, own + sz, sy, sz);
          sm_plane[cur ^ 1][p.smem] = ring[ring_slot(q, 1, kRing)];
        }
        if (p.active) {
          float zm[kHalo + 1], zp[kHalo + 1];
#pragma unroll
          for (int m = 1; m <= kHalo; ++m) {
            zm[m] = ring[ring_slot(q, -m, kRing)];
            zp[m] = ring[ring_slot(q, m, kRing)];
          }
          update_point<G::kStride, Kind>(&sm_plane[cur][p.smem], ring[ring_slot(q, 0, kRing)], zm,
                                         zp, ops, ez, v, phi, own, coefs);
        }
        if (more) store_halo<Dx, Dy>(sm_plane[cur ^ 1], p, h);
        // One barrier: the next plane is complete, and every read of the current one is done
        // before the step after next overwrites it.
        __syncthreads();
        ops = next;
        ez.advance(next.eta_lead);
        buffer ^= 1;
      }
      if constexpr (Column == ZColumn::Shifted) {
        // behind4 = behind3, ..., front3 = front4 (front4 = front5 when double-buffered).
#pragma unroll
        for (int k = 0; k + 1 < kRing; ++k)
          ring[k] = ring[k + 1];
      }
    }
  }
}

/// st_smem_25d: one step of the update on `box`, block (Dx, Dy, 1), grid (tiles x, tiles y, z
/// chunks). 2R+1 planes (tile + x/y halo) live in shared memory as a ring; the loop is unrolled
/// by 2R+1 so that the ring index of every plane is a compile-time constant (no modulus).
/// \tparam Dx tile extent along x (threads)
/// \tparam Dy tile extent along y (threads)
/// \tparam Kind inner or layer update
/// \tparam MinBlocks blocks per multiprocessor the register allocation must allow
template <int Dx, int Dy, RegionKind Kind, int MinBlocks>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, MinBlocks)
    st_smem_25d_kernel(const float* __restrict__ u, float* __restrict__ v,
                       const float* __restrict__ vp2dt2, float* __restrict__ phi,
                       const float* __restrict__ eta, const FieldLayout layout,
                       const StencilCoefs coefs, const Box box, const int z_chunk,
                       const CpmlView /*unused: the signature of st_reg_25d_kernel*/) {
  using G = TileGeometry<Dx, Dy>;
  constexpr int kPlanes = 2 * kHalo + 1;
  constexpr int kHaloLoads = G::kHaloPerThread;
  __shared__ float sm_planes[kPlanes][G::kPlaneFloats];

  const ThreadPlan<Dx, Dy> p = make_plan<Dx, Dy>(layout, box, z_chunk);
  const std::int64_t sy = layout.pitch;
  const std::int64_t sz = layout.plane;
  const std::int64_t col0 = p.origin + p.column;

  // Planes zs-R .. zs+R-1 into slots 0 .. 2R-1 (the first step's barrier publishes them).
#pragma unroll
  for (int d = -kHalo; d < kHalo; ++d) {
    float h[kHaloLoads];
    load_halo<Dx, Dy>(u, p.origin + d * sz, p, h);
    sm_planes[d + kHalo][p.smem] = __ldg(u + col0 + d * sz);
    store_halo<Dx, Dy>(sm_planes[d + kHalo], p, h);
  }
  EtaColumn ez;
  if constexpr (Kind == RegionKind::Layer) {
    if (p.active) {
      ez.c = __ldg(eta + col0 - sz);
      ez.p = __ldg(eta + col0);
    }
  }

  for (int zb = p.zs;; zb += kPlanes) {
#pragma unroll
    for (int q = 0; q < kPlanes; ++q) {
      const int z = zb + q;
      if (z >= p.ze) return; // uniform over the block
      const std::int64_t plane = p.origin + static_cast<std::int64_t>(z - p.zs) * sz;
      const std::int64_t own = plane + p.column;
      // Plane z+R into the slot that plane z-R-1 held (read for the last time a step ago).
      float h[kHaloLoads];
      load_halo<Dx, Dy>(u, plane + kHalo * sz, p, h);
      const float lead = __ldg(u + own + kHalo * sz);
      PointOperands ops;
      if (p.active) ops = load_operands<Kind>(v, vp2dt2, phi, eta, own, sy, sz);
      float* slot_lead = sm_planes[ring_slot(q, kHalo, kPlanes)];
      __syncthreads();
      slot_lead[p.smem] = lead;
      store_halo<Dx, Dy>(slot_lead, p, h);
      __syncthreads();
      ez.advance(ops.eta_lead);
      if (p.active) {
        float zm[kHalo + 1], zp[kHalo + 1];
#pragma unroll
        for (int m = 1; m <= kHalo; ++m) {
          zm[m] = sm_planes[ring_slot(q, -m, kPlanes)][p.smem];
          zp[m] = sm_planes[ring_slot(q, m, kPlanes)][p.smem];
        }
        const float* s = &sm_planes[ring_slot(q, 0, kPlanes)][p.smem];
        update_point<G::kStride, Kind>(s, *s, zm, zp, ops, ez, v, phi, own, coefs);
      }
    }
  }
}

/// Blocks per multiprocessor that the register allocation of a variant, tile and kind must allow
/// (__launch_bounds__); 0 leaves the choice to the compiler. Measured (H200, 1000^3): the inner
/// kernels get 32-40 registers and full occupancy by themselves (a cap of 1 block lets them take
/// 48-56 and costs 40%); the st_reg_shft_25d layer kernels of 512 threads run 10-15% faster capped
/// at 3 blocks (40 registers) than with the compiler's 51-62. The other layer kernels gain at most
/// 3% from that cap (st_reg_fixed_25d, at the price of spills) or lose (the +db ones, st_smem_25d).
template <Stream25d Variant, int Dx, int Dy, RegionKind Kind> constexpr int min_blocks() {
  return Kind == RegionKind::Layer && Variant == Stream25d::RegShift && Dx * Dy == 512 ? 3 : 0;
}

/// The kernel of a variant, tile and region kind.
template <Stream25d Variant, int Dx, int Dy, RegionKind Kind> constexpr auto kernel_of() {
  constexpr int blocks = min_blocks<Variant, Dx, Dy, Kind>();
  if constexpr (Variant == Stream25d::SmemPlanes) {
    return &st_smem_25d_kernel<Dx, Dy, Kind, blocks>;
  } else {
    constexpr ZColumn column = (Variant == Stream25d::RegShift || Variant == Stream25d::RegShiftDb)
                                   ? ZColumn::Shifted
                                   : ZColumn::Fixed;
    constexpr PlaneBuffers buffers =
        (Variant == Stream25d::RegShiftDb || Variant == Stream25d::RegFixedDb)
            ? PlaneBuffers::Double
            : PlaneBuffers::Single;
    return &st_reg_25d_kernel<Dx, Dy, Kind, column, buffers, blocks>;
  }
}

/// The kernel of a tile of st_reg_shft_25d with the C-PML's z terms (CpmlZColumn): 13 planes of
/// u and 9 of psi in registers, MinBlocks blocks an SM.
template <int Dx, int Dy, int MinBlocks> constexpr auto cpml_z_kernel_of() {
  return &st_reg_25d_kernel<Dx, Dy, RegionKind::Inner, ZColumn::Shifted, PlaneBuffers::Single,
                            MinBlocks, true>;
}

/// Queue the C-PML z-slab update of `box` with a Dx x Dy tile, one z chunk (the whole box).
template <int Dx, int Dy, int MinBlocks>
void launch_cpml_z_tile(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                        const Box& b, gpuStream_t stream) {
  const dim3 block(Dx, Dy, 1);
  const dim3 grid(static_cast<unsigned>((b.nx() + Dx - 1) / Dx),
                  static_cast<unsigned>((b.ny() + Dy - 1) / Dy), 1);
  constexpr auto kernel = cpml_z_kernel_of<Dx, Dy, MinBlocks>();
  kernel<<<grid, block, 0, stream>>>(f.u, f.v, f.vp2dt2, nullptr, nullptr, layout, coefs, b, b.nz(),
                                     *f.cpml);
  MINIMOD_GPU_CHECK_LAUNCH("st_reg_shft_25d (C-PML z slab)", grid, block, 0);
}

/// Shared memory of a block of a variant and tile, in bytes.
template <Stream25d Variant, int Dx, int Dy> constexpr int shared_bytes() {
  int planes = 1;
  if (Variant == Stream25d::SmemPlanes) planes = 2 * kHalo + 1;
  if (Variant == Stream25d::RegShiftDb || Variant == Stream25d::RegFixedDb) planes = 2;
  return planes * TileGeometry<Dx, Dy>::kPlaneFloats * static_cast<int>(sizeof(float));
}

/// The float16 form of st_reg_shft_25d's inner update on `box`: the same tile, shared plane and
/// shifted register column, in float32, from binary16 u and d and the medium's codes.
template <int Dx, int Dy>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy)
    st_half_25d_kernel(const std::uint16_t* __restrict__ u, std::uint16_t* __restrict__ u_next,
                       std::uint16_t* __restrict__ d, const std::uint16_t* __restrict__ vp2dt2,
                       const MediumCode code, const FieldLayout layout, const StencilCoefs coefs,
                       const Box box, const int z_chunk) {
  using G = TileGeometry<Dx, Dy>;
  constexpr int kRing = 2 * kHalo + 1;
  constexpr int kHaloLoads = G::kHaloPerThread;
  __shared__ float sm_plane[G::kPlaneFloats];

  const ThreadPlan<Dx, Dy> p = make_plan<Dx, Dy>(layout, box, z_chunk);
  const std::int64_t sz = layout.plane;
  const std::int64_t col0 = p.origin + p.column;

  float ring[kRing];
#pragma unroll
  for (int m = -kHalo; m < kHalo; ++m)
    ring[m + kHalo] = load_half_ro(u, col0 + m * sz);

  for (int z = p.zs; z < p.ze; ++z) { // the same z for the whole block: no barrier is skipped
    const std::int64_t plane = p.origin + static_cast<std::int64_t>(z - p.zs) * sz;
    const std::int64_t own = plane + p.column;
    ring[2 * kHalo] = load_half_ro(u, own + kHalo * sz);
    float h[kHaloLoads];
#pragma unroll
    for (int k = 0; k < kHaloLoads; ++k)
      if (halo_always<Dx, Dy>(k) || p.halo_loads[k])
        h[k] = load_half_ro(u, plane + p.halo_offset[k]);
    float step = 0.0f, medium = 0.0f;
    if (p.active) {
      step = half_bits_to_float(d[own]);
      medium = code.decode(__ldg(vp2dt2 + own));
    }
    __syncthreads(); // every thread is done reading the previous plane
    sm_plane[p.smem] = ring[kHalo];
#pragma unroll
    for (int k = 0; k < kHaloLoads; ++k)
      if (halo_always<Dx, Dy>(k) || p.halo_loads[k]) sm_plane[p.halo_smem[k]] = h[k];
    __syncthreads();
    if (p.active) {
      float zm[kHalo + 1], zp[kHalo + 1];
#pragma unroll
      for (int m = 1; m <= kHalo; ++m) {
        zm[m] = ring[kHalo - m];
        zp[m] = ring[kHalo + m];
      }
      const float centre = ring[kHalo];
      const float lap = star_laplacian<G::kStride>(&sm_plane[p.smem], centre, zm, zp, coefs);
      const float next = inner_update(centre, centre - step, medium, lap);
      u_next[own] = float_to_half_bits(next);
      d[own] = float_to_half_bits(next - centre);
    }
#pragma unroll
    for (int k = 0; k + 1 < kRing; ++k)
      ring[k] = ring[k + 1];
  }
}

/// Queue st_half_25d_kernel over `box` with a Dx x Dy tile and z chunks of `z_chunk` planes.
template <int Dx, int Dy>
void launch_half_tile(const IsoFields16& f, const FieldLayout& layout, const StencilCoefs& coefs,
                      const Box& b, int z_chunk, gpuStream_t stream, const std::string& name) {
  if (b.empty()) return;
  const dim3 block(Dx, Dy, 1);
  const dim3 grid(static_cast<unsigned>((b.nx() + Dx - 1) / Dx),
                  static_cast<unsigned>((b.ny() + Dy - 1) / Dy),
                  static_cast<unsigned>((b.nz() + z_chunk - 1) / z_chunk));
  st_half_25d_kernel<Dx, Dy>
      <<<grid, block, 0, stream>>>(f.u, f.u_next, f.d, f.vp2dt2, f.code, layout, coefs, b, z_chunk);
  MINIMOD_GPU_CHECK_LAUNCH(name.c_str(), grid, block, 0);
}

} // namespace minimod::gpu::st25d

namespace minimod::gpu {

template <Stream25d Variant, int Dx, int Dy>
Streaming25dTileKernel<Variant, Dx, Dy>::Streaming25dTileKernel()
    : Streaming25dKernel(GpuKernelInfo{stream_25d_family(Variant), Dx, Dy, 0, Physics::Acoustic}),
      m_inner_launch_name(name() + "<inner>"), m_layer_launch_name(name() + "<layer>") {
  // Static shared memory is limited to 48 KiB a block; more needs an opt-in attribute.
  static_assert(st25d::shared_bytes<Variant, Dx, Dy>() <= 48 * 1024,
                "the tile's shared planes exceed 48 KiB of static shared memory");
}

template <Stream25d Variant, int Dx, int Dy>
std::string Streaming25dTileKernel<Variant, Dx, Dy>::description() const {
  std::string how;
  switch (Variant) {
  case Stream25d::SmemPlanes:
    how = "9 shared planes, z neighbours from shared memory";
    break;
  case Stream25d::RegShift:
    how = "one shared plane, z neighbours in shifted registers";
    break;
  case Stream25d::RegFixed:
    how = "one shared plane, z neighbours in a register ring (loop unrolled by 9)";
    break;
  case Stream25d::RegShiftDb:
    how = "two shared planes (one barrier a step, next plane loaded ahead), shifted registers";
    break;
  case Stream25d::RegFixedDb:
    how = "two shared planes (one barrier a step, next plane loaded ahead), register ring";
    break;
  }
  return "2.5D streaming along z, " + std::to_string(Dx) + "x" + std::to_string(Dy) + " threads, " +
         how + " (inner and layer)";
}

template <Stream25d Variant, int Dx, int Dy>
void Streaming25dTileKernel<Variant, Dx, Dy>::launch_chunked(const IsoFields& f,
                                                             const FieldLayout& layout,
                                                             const StencilCoefs& coefs,
                                                             const Region& region, int z_chunk,
                                                             void* stream) const {
  const Box& b = region.box;
  if (b.empty()) return;
  if (z_chunk < 1)
    throw std::invalid_argument(name() + ": z chunk " + std::to_string(z_chunk) + " < 1");
  const dim3 block(Dx, Dy, 1);
  const dim3 grid(static_cast<unsigned>((b.nx() + Dx - 1) / Dx),
                  static_cast<unsigned>((b.ny() + Dy - 1) / Dy),
                  static_cast<unsigned>((b.nz() + z_chunk - 1) / z_chunk));
  const auto s = static_cast<gpuStream_t>(stream);
  if (region.kind() == RegionKind::Inner) {
    constexpr auto kernel = st25d::kernel_of<Variant, Dx, Dy, RegionKind::Inner>();
    kernel<<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, nullptr, nullptr, layout, coefs, b, z_chunk,
                                  CpmlView{});
    MINIMOD_GPU_CHECK_LAUNCH(m_inner_launch_name.c_str(), grid, block, 0);
  } else {
    if (f.phi == nullptr || f.eta == nullptr)
      throw std::invalid_argument(name() + ": a layer region needs the phi and eta fields");
    constexpr auto kernel = st25d::kernel_of<Variant, Dx, Dy, RegionKind::Layer>();
    kernel<<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, f.phi, f.eta, layout, coefs, b, z_chunk,
                                  CpmlView{});
    MINIMOD_GPU_CHECK_LAUNCH(m_layer_launch_name.c_str(), grid, block, 0);
  }
}

template <Stream25d Variant, int Dx, int Dy>
void Streaming25dTileKernel<Variant, Dx, Dy>::launch16(const IsoFields16& f,
                                                       const FieldLayout& layout,
                                                       const StencilCoefs& coefs,
                                                       const Region& region, void* stream) const {
  if constexpr (Variant != Stream25d::RegShift) {
    (void)f, (void)layout, (void)coefs, (void)region, (void)stream;
    throw std::logic_error(name() + " has no float16 form");
  } else {
    const auto s = static_cast<gpuStream_t>(stream);
    if (region.kind() == RegionKind::Layer) {
      launch_half_points(f, layout, coefs, region, s, name() + "<float16 layer>");
    } else {
      st25d::launch_half_tile<Dx, Dy>(f, layout, coefs, region.box, default_z_chunk(region.box), s,
                                      name() + "<float16 inner>");
    }
  }
}

} // namespace minimod::gpu
