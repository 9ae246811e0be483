#pragma once
/// The semi-stencil family (Sai et al. 2022: journal section 5.7 and the semi-stencil paper): 2.5D
/// streaming along z with the semi-stencil along the streaming axis. A 2D thread block of Dx x Dy
/// threads owns a Dx x Dy column of the region (or a chunk of it along z). The xy plane being
/// processed, with its 4-point halo, sits in shared memory for the x/y star; along z every thread
/// keeps its own column in registers and splits the z part of each point's star in two halves:
///
///   forward  (when plane q arrives): P(q)   = xy(q) + sum_m c_m u(q - m)   (planes already seen)
///   backward (4 planes later):       L(q-4) = P(q-4) + sum_m c_m u(q-4 + m) (planes q-3 .. q)
///
/// so that each u value is read from memory once and added into the pending points' sums; the
/// point q - 4 is finished when plane q arrives, then updated (inner_update / layer_update) and
/// stored. The sum is the 25-point Laplacian of stencil_K.hpp in another order (float rounding).
///
/// Variants (family names):
///   semi_25d   one shared plane; loads, barrier, compute, barrier (the seeds' st_semi)
///   semi+b     two shared planes; the next plane is prefetched into registers while the current
///              one is computed (one barrier per plane)
///   semi+b+a   shared stages filled with cp.async (16-byte copies where rows allow), three
///              planes ahead (two for 32x32, whose four stages exceed 48 KB); v and vp2dt2 ride
///              in the same copy groups (no staging registers)
///   semi+2z    two planes per iteration (2z thread folding): both planes' loads in flight
///              together, one barrier pair per two planes
/// Each handles the inner region and the layer slabs (eta's neighbours come from global memory).

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "core/host_device.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_kernel.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace minimod::gpu {

/// Which member of the semi-stencil family.
enum class SemiVariant : int {
  Plain = 0,    ///< semi_25d
  Buffered = 1, ///< semi+b: register prefetch of the next plane, two shared planes
  Async = 2,    ///< semi+b+a: cp.async into shared stages, planes ahead
  Fold2z = 3,   ///< semi+2z: two planes per iteration
};

/// Family name of a variant, as users type it.
constexpr const char* semi_family_name(SemiVariant v) {
  return v == SemiVariant::Plain      ? "semi_25d"
         : v == SemiVariant::Buffered ? "semi+b"
         : v == SemiVariant::Async    ? "semi+b+a"
                                      : "semi+2z";
}

/// Measured tuning of one variant and tile (H100, the seeds' problem; docs/kernels.md).
struct SemiTuning {
  int min_blocks_inner; ///< resident blocks per SM asked of the register allocator, inner kernel
  int min_blocks_layer; ///< the same for the layer kernel (more registers: eta, phi)
  int chunk_planes;     ///< preferred planes per block along z (0: the whole depth)
};

/// The tuning of variant v with a dx x dy tile. Register variants gain from more resident blocks
/// (their loads need many warps in flight); semi+b+a keeps its loads in flight through cp.async
/// and does best with 64 registers. Short z chunks keep the blocks that share halo rows close in
/// time, so that the halos come from L2, not DRAM (512-thread tiles; 1024-thread tiles, one or
/// two per SM, lose more to the chunks' pipeline fill than they gain).
constexpr SemiTuning semi_tuning(SemiVariant v, int dx, int dy) {
  const bool big = dx * dy >= 1024;
  const int chunk = big ? 0 : 64;
  switch (v) {
  case SemiVariant::Plain:
    return {big ? 2 : 4, big ? 1 : 2, chunk};
  case SemiVariant::Buffered:
  case SemiVariant::Fold2z:
    return {big ? 1 : 3, big ? 1 : 2, chunk};
  case SemiVariant::Async:
    return {2, big ? 1 : 2, chunk};
  }
  return {1, 1, 0};
}

/// Everything a semi-stencil kernel reads, passed by value (the constant bank).
struct SemiArgs {
  const float* u = nullptr;      ///< u^n
  float* v = nullptr;            ///< u^{n-1} in, u^{n+1} out
  const float* vp2dt2 = nullptr; ///< (c dt)^2
  float* phi = nullptr;          ///< layer only
  const float* eta = nullptr;    ///< layer only
  FieldLayout layout;            ///< index arithmetic of every field
  StencilCoefs coefs;            ///< stencil weights
  Box box;                       ///< points to update
  int z_chunk = 1;               ///< planes per block along z (blockIdx.z picks the chunk)
};

/// Compile-time shape of a Dx x Dy tile and its shared plane.
/// \tparam Dx threads (and points) along x
/// \tparam Dy threads (and points) along y
template <int Dx, int Dy> struct SemiTile {
  static constexpr int kThreads = Dx * Dy;                                ///< threads per block
  static constexpr int kW = Dx + 2 * kHalo;                               ///< shared row length
  static constexpr int kH = Dy + 2 * kHalo;                               ///< shared rows
  static constexpr int kCells = kW * kH;                                  ///< floats per plane
  static constexpr int kLoads = (kCells + kThreads - 1) / kThreads;       ///< cells per thread
  static constexpr int kChunks = kCells / 4;                              ///< 16-byte pieces
  static constexpr int kChunkLoads = (kChunks + kThreads - 1) / kThreads; ///< pieces per thread
  static_assert(Dx % 4 == 0, "Dx must be a multiple of 4 (16-byte rows in shared memory)");
  static_assert(kThreads <= 1024, "a thread block holds at most 1024 threads");
};

#if MINIMOD_DEVICE_COMPILER

// ---- Device building blocks ------------------------------------------------------------------

/// Read-only load through the non-coherent cache (u, vp2dt2, eta are never written by a launch).
__device__ __forceinline__ float semi_ldg(const float* p) {
  return __ldg(p);
}

/// Streaming load/store (v, vp2dt2: touched once per step, evict first so u's lines stay in L2).
__device__ __forceinline__ float semi_ldcs(const float* p) {
  return __ldcs(p);
}
__device__ __forceinline__ void semi_stcs(float* p, float x) {
  __stcs(p, x);
}

#if MINIMOD_GPU_CP_ASYNC

/// Address of a shared-memory object in the shared window (what cp.async takes).
__device__ __forceinline__ unsigned semi_smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// cp.async of 4 bytes global -> shared (through L1); `smem` is a shared-window address.
__device__ __forceinline__ void semi_cp_async_4(unsigned smem, const float* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem), "l"(gmem) : "memory");
}

/// cp.async of 16 bytes global -> shared (L2 only); both addresses 16-byte aligned.
__device__ __forceinline__ void semi_cp_async_16(unsigned smem, const float* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem) : "memory");
}

/// Close the current group of cp.async copies.
__device__ __forceinline__ void semi_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Wait until at most N groups of this thread's copies are still in flight.
template <int N> __device__ __forceinline__ void semi_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif // MINIMOD_GPU_CP_ASYNC

/// Where the block and the thread sit: tile origin, the thread's column, the z chunk.
template <int Dx, int Dy> struct SemiPlace {
  int tid;         ///< linear thread index
  int tile_x;      ///< first x of the tile
  int tile_y;      ///< first y of the tile
  int i, j;        ///< the thread's column
  bool active;     ///< the column lies inside the box
  int col;         ///< offset of (i, j) inside a padded plane
  int zs, ze;      ///< the block's chunk [zs, ze)
  std::int64_t sz; ///< floats per plane
  int smem_centre; ///< index of (i, j) in a shared plane

  __device__ SemiPlace(const SemiArgs& a) {
    using T = SemiTile<Dx, Dy>;
    tid = static_cast<int>(threadIdx.y) * Dx + static_cast<int>(threadIdx.x);
    tile_x = a.box.x0 + static_cast<int>(blockIdx.x) * Dx;
    tile_y = a.box.y0 + static_cast<int>(blockIdx.y) * Dy;
    i = tile_x + static_cast<int>(threadIdx.x);
    j = tile_y + static_cast<int>(threadIdx.y);
    active = i < a.box.x1 && j < a.box.y1;
    col = (j + kHalo) * a.layout.pitch + i + a.layout.x_offset;
    zs = a.box.z0 + static_cast<int>(blockIdx.z) * a.z_chunk;
    ze = min(zs + a.z_chunk, a.box.z1);
    sz = a.layout.plane;
    smem_centre =
        (static_cast<int>(threadIdx.y) + kHalo) * T::kW + static_cast<int>(threadIdx.x) + kHalo;
  }
  /// Offset of plane q (its first padded float).
  __device__ std::int64_t plane(int q) const { return static_cast<std::int64_t>(q + kHalo) * sz; }
};

/// One thread's share of a plane load, cell by cell (each thread loads cells tid, tid + T, ...):
/// offsets inside a padded plane, and which cells are needed (inside the box plus its halo).
template <int Dx, int Dy> struct SemiCellLoader {
  using T = SemiTile<Dx, Dy>;
  int gofs[T::kLoads]; ///< offset of each cell inside a padded plane
  unsigned valid = 0;  ///< bit k: cell k is needed and inside the field

  __device__ SemiCellLoader(const SemiPlace<Dx, Dy>& p, const SemiArgs& a) {
#pragma unroll
    for (int k = 0; k < T::kLoads; ++k) {
      const int c = p.tid + k * T::kThreads;
      const int sx = c % T::kW, sy = c / T::kW;
      const int gi = p.tile_x - kHalo + sx, gj = p.tile_y - kHalo + sy;
      const bool ok = c < T::kCells && gi < a.box.x1 + kHalo && gj < a.box.y1 + kHalo;
      gofs[k] = ok ? (gj + kHalo) * a.layout.pitch + gi + a.layout.x_offset : 0;
      valid |= ok ? (1u << k) : 0u;
    }
  }
  /// Load this thread's cells of the plane starting at `plane` into registers (0 where unused).
  __device__ void load(const float* plane, float (&r)[T::kLoads]) const {
#pragma unroll
    for (int k = 0; k < T::kLoads; ++k)
      r[k] = (valid >> k) & 1u ? semi_ldg(plane + gofs[k]) : 0.0f;
  }
  /// Store the registers of load() into a shared plane.
  __device__ void store(float* sm, const float (&r)[T::kLoads], int tid) const {
#pragma unroll
    for (int k = 0; k < T::kLoads; ++k) {
      const int c = tid + k * T::kThreads;
      if (T::kCells % T::kThreads == 0 || c < T::kCells) sm[c] = r[k];
    }
  }
  /// Copy this thread's cells into the shared plane at window address `sm` (4-byte cp.async).
  __device__ void copy_async(unsigned sm, const float* plane, int tid) const {
#pragma unroll
    for (int k = 0; k < T::kLoads; ++k)
      if ((valid >> k) & 1u) semi_cp_async_4(sm + 4u * (tid + k * T::kThreads), plane + gofs[k]);
  }
};

/// One thread's share of a plane copy in 16-byte pieces (rows of the tile and its halo start on a
/// 16-byte boundary: the launcher checks). A piece is copied when its first cell is needed; a
/// piece never crosses the padded row (rows are multiples of 32 floats).
template <int Dx, int Dy> struct SemiChunkLoader {
  using T = SemiTile<Dx, Dy>;
  int gofs[T::kChunkLoads]; ///< offset of each piece inside a padded plane
  unsigned valid = 0;       ///< bit k: piece k is needed

  __device__ SemiChunkLoader(const SemiPlace<Dx, Dy>& p, const SemiArgs& a) {
    constexpr int kPerRow = T::kW / 4;
#pragma unroll
    for (int k = 0; k < T::kChunkLoads; ++k) {
      const int c = p.tid + k * T::kThreads;
      const int gi = p.tile_x - kHalo + 4 * (c % kPerRow), gj = p.tile_y - kHalo + c / kPerRow;
      const bool ok = c < T::kChunks && gi < a.box.x1 + kHalo && gj < a.box.y1 + kHalo;
      gofs[k] = ok ? (gj + kHalo) * a.layout.pitch + gi + a.layout.x_offset : 0;
      valid |= ok ? (1u << k) : 0u;
    }
  }
  /// Copy this thread's pieces of the plane starting at `plane` into the shared plane at window
  /// address `sm`.
  __device__ void copy_async(unsigned sm, const float* plane, int tid) const {
#pragma unroll
    for (int k = 0; k < T::kChunkLoads; ++k)
      if ((valid >> k) & 1u) semi_cp_async_16(sm + 16u * (tid + k * T::kThreads), plane + gofs[k]);
  }
};

/// The x/y part of the star at a shared-plane point, with the centre weight of all three axes.
template <int W>
__device__ __forceinline__ float semi_xy_star(const float* c, const StencilCoefs& k) {
  float lap = k.c0 * c[0];
#pragma unroll
  for (int m = 1; m <= kHalo; ++m) {
    lap += k.cx[m] * (c[m] + c[-m]);
    lap += k.cy[m] * (c[m * W] + c[-m * W]);
  }
  return lap;
}

/// One thread's streaming state along z: the last four u values of its column, the forward
/// partial sums of the four points still waiting for their backward half, and (layer) the eta
/// history and the eta-gradient terms of those points.
template <RegionKind Kind> struct SemiColumn {
  float h1 = 0, h2 = 0, h3 = 0, h4 = 0; ///< u(q-1) .. u(q-4)
  float p1 = 0, p2 = 0, p3 = 0, p4 = 0; ///< partial Laplacians of points q-1 .. q-4
  float e1 = 0, e2 = 0, e3 = 0, e4 = 0; ///< eta(q-1) .. eta(q-4) (layer)
  float g1 = 0;                         ///< x/y eta-gradient term of point q-1 (layer)
  float d2 = 0, d3 = 0, d4 = 0;         ///< full eta-gradient terms of points q-2 .. q-4 (layer)
};

/// One column's running pointers while it streams: the arrays at point q-4 (the point emitted
/// at step q) and eta at point q. Advanced by one plane per step, so that no step recomputes a
/// 64-bit index.
template <RegionKind Kind> struct SemiPtrs {
  float* v;          ///< v at (i, j, q-4)
  const float* vp;   ///< vp2dt2 at (i, j, q-4)
  float* phi;        ///< phi at (i, j, q-4) (layer)
  const float* eta;  ///< eta at (i, j, q) (layer)
  std::int64_t step; ///< floats per plane

  /// Pointers for step q of column `col` (offset inside a plane).
  __device__ SemiPtrs(const SemiArgs& a, int q, int col) : step(a.layout.plane) {
    const std::int64_t pq = static_cast<std::int64_t>(q + kHalo) * step + col;
    v = a.v + pq - kHalo * step;
    vp = a.vp2dt2 + pq - kHalo * step;
    phi = Kind == RegionKind::Layer ? a.phi + pq - kHalo * step : nullptr;
    eta = Kind == RegionKind::Layer ? a.eta + pq : nullptr;
  }
  /// On to step q+1.
  __device__ void advance() {
    v += step;
    vp += step;
    if constexpr (Kind == RegionKind::Layer) {
      phi += step;
      eta += step;
    }
  }
};

/// Advance a column by plane q. `uq` is u(i, j, q); `smc` points at (i, j) in the shared copy of
/// plane q (read only when `compute`).
/// compute: point q is in the chunk (q < ze) and the column active: start its forward half.
/// emit: point q - 4 is in the chunk and the column active: finish, update and store it, with
///       `v_old` = v(q-4) and `vp` = vp2dt2(q-4).
/// eta_load / grad_z (layer): eta(q) is needed (zs-1 <= q <= ze); point q-1 is in the chunk.
template <int W, RegionKind Kind>
__device__ __forceinline__ void semi_advance(SemiColumn<Kind>& s, float uq, const float* smc,
                                             bool compute, bool emit, bool eta_load, bool grad_z,
                                             float v_old, float vp, const SemiPtrs<Kind>& pt,
                                             const SemiArgs& a) {
  const StencilCoefs& k = a.coefs;
  float p0 = 0.0f;
  if (compute)
    p0 =
        semi_xy_star<W>(smc, k) + k.cz[1] * s.h1 + k.cz[2] * s.h2 + k.cz[3] * s.h3 + k.cz[4] * s.h4;
  if constexpr (Kind == RegionKind::Inner) {
    if (emit) {
      const float lap = s.p4 + k.cz[1] * s.h3 + k.cz[2] * s.h2 + k.cz[3] * s.h1 + k.cz[4] * uq;
      semi_stcs(pt.v, inner_update(s.h4, v_old, vp, lap));
    }
  } else {
    const int sy = a.layout.pitch;
    const float e0 = eta_load ? semi_ldg(pt.eta) : 0.0f;
    float g0 = 0.0f;
    if (compute)
      g0 = (semi_ldg(pt.eta + 1) - semi_ldg(pt.eta - 1)) * (smc[1] - smc[-1]) * k.px +
           (semi_ldg(pt.eta + sy) - semi_ldg(pt.eta - sy)) * (smc[W] - smc[-W]) * k.py;
    const float d1 = grad_z ? s.g1 + (e0 - s.e2) * (uq - s.h2) * k.pz : 0.0f;
    if (emit) {
      const float lap = s.p4 + k.cz[1] * s.h3 + k.cz[2] * s.h2 + k.cz[3] * s.h1 + k.cz[4] * uq;
      float phi_next;
      const float next = layer_update(s.h4, v_old, vp, lap, *pt.phi, s.e4, s.d4, &phi_next);
      semi_stcs(pt.v, next);
      *pt.phi = phi_next;
    }
    s.e4 = s.e3;
    s.e3 = s.e2;
    s.e2 = s.e1;
    s.e1 = e0;
    s.d4 = s.d3;
    s.d3 = s.d2;
    s.d2 = d1;
    s.g1 = g0;
  }
  s.h4 = s.h3;
  s.h3 = s.h2;
  s.h2 = s.h1;
  s.h1 = uq;
  s.p4 = s.p3;
  s.p3 = s.p2;
  s.p2 = s.p1;
  s.p1 = p0;
}

/// The four planes above the chunk (zs-4 .. zs-1): only the thread's own column is needed (their
/// u values start the forward halves; eta(zs-1) starts the layer's z gradient).
template <int Dx, int Dy, RegionKind Kind>
__device__ __forceinline__ void semi_prologue(SemiColumn<Kind>& s, const SemiPlace<Dx, Dy>& p,
                                              const SemiArgs& a) {
  float uc[kHalo];
  const float* u0 = a.u + p.plane(p.zs - kHalo) + p.col;
#pragma unroll
  for (int m = 0; m < kHalo; ++m)
    uc[m] = p.active ? semi_ldg(u0 + m * p.sz) : 0.0f;
  SemiPtrs<Kind> pt(a, p.zs - kHalo, p.col);
#pragma unroll
  for (int m = 0; m < kHalo; ++m) {
    semi_advance<SemiTile<Dx, Dy>::kW, Kind>(s, uc[m], nullptr, false, false,
                                             p.active && m == kHalo - 1, false, 0.0f, 0.0f, pt, a);
    pt.advance();
  }
}

/// The flags of a generic step q (any plane of the stream, chunk edges included).
struct SemiFlags {
  bool in_chunk; ///< plane q lies in the chunk: it is loaded whole, point q is started
  bool compute;  ///< in_chunk and the column active
  bool emit;     ///< point q-4 lies in the chunk and the column is active
  bool eta_load; ///< eta(q) is needed (layer)
  bool grad_z;   ///< point q-1 lies in the chunk and the column is active (layer)

  /// Flags of step q.
  template <int Dx, int Dy> __device__ static SemiFlags at(const SemiPlace<Dx, Dy>& p, int q) {
    SemiFlags f;
    f.in_chunk = q < p.ze;
    f.compute = p.active && f.in_chunk;
    f.emit = p.active && q >= p.zs + kHalo;
    f.eta_load = p.active && q <= p.ze;
    f.grad_z = p.active && q > p.zs && q - 1 < p.ze;
    return f;
  }
  /// Flags of a steady-state step (q in [zs+4, ze)).
  template <int Dx, int Dy> __device__ static SemiFlags steady(const SemiPlace<Dx, Dy>& p) {
    return SemiFlags{true, p.active, p.active, p.active, p.active};
  }
};

/// Compile-time index (buffer, stage) for the unrolled steady-state loops.
template <int N> using SemiIndex = std::integral_constant<int, N>;

/// Call f(SemiIndex<K>()), f(SemiIndex<K+1>()), ..., f(SemiIndex<N-1>()) (an unrolled loop with
/// a compile-time index).
template <int K, int N, class F> __device__ __forceinline__ void semi_unroll(F&& f) {
  if constexpr (K < N) {
    f(SemiIndex<K>());
    semi_unroll<K + 1, N>(f);
  }
}

// ---- The kernels -----------------------------------------------------------------------------

/// Minimum resident blocks per SM asked of the register allocator.
template <int Dx, int Dy> inline constexpr int kSemiMinBlocks = Dx* Dy >= 1024 ? 1 : 2;

/// semi_25d: one shared plane; per plane: load, barrier, compute, barrier.
/// \tparam Dx threads per block along x
/// \tparam Dy threads per block along y
/// \tparam Kind inner or layer update
/// \tparam MinBlocks resident blocks per SM asked of the register allocator
template <int Dx, int Dy, RegionKind Kind, int MinBlocks = kSemiMinBlocks<Dx, Dy>>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, MinBlocks) semi_25d_kernel(const SemiArgs a) {
  using T = SemiTile<Dx, Dy>;
  __shared__ float sm[T::kCells];
  const SemiPlace<Dx, Dy> p(a);
  const SemiCellLoader<Dx, Dy> ld(p, a);
  SemiColumn<Kind> s;
  semi_prologue(s, p, a);
  SemiPtrs<Kind> pt(a, p.zs, p.col);
  const float* gu = a.u + p.plane(p.zs); // plane q of u
  const float* smc = sm + p.smem_centre;
  auto step = [&](const SemiFlags f) {
    float r[T::kLoads];
    float ucol = 0.0f;
    if (f.in_chunk)
      ld.load(gu, r);
    else if (p.active)
      ucol = semi_ldg(gu + p.col);
    float v_old = 0.0f, vp = 0.0f;
    if (f.emit) {
      v_old = semi_ldcs(pt.v);
      vp = semi_ldcs(pt.vp);
    }
    if (f.in_chunk) {
      ld.store(sm, r, p.tid);
      __syncthreads();
    }
    const float uq = f.in_chunk ? (p.active ? *smc : 0.0f) : ucol;
    semi_advance<T::kW, Kind>(s, uq, smc, f.compute, f.emit, f.eta_load, f.grad_z, v_old, vp, pt,
                              a);
    if (f.in_chunk) __syncthreads();
    gu += p.sz;
    pt.advance();
  };
  int q = p.zs;
  for (; q < p.zs + kHalo; ++q)
    step(SemiFlags::at(p, q));
  for (; q < p.ze; ++q)
    step(SemiFlags::steady(p));
  for (; q < p.ze + kHalo; ++q)
    step(SemiFlags::at(p, q));
}

/// semi+b: two shared planes; the next plane (and the next output's v, vp2dt2) is loaded into
/// registers before the current plane is computed, then stored to the other plane: one barrier
/// per plane.
template <int Dx, int Dy, RegionKind Kind, int MinBlocks = kSemiMinBlocks<Dx, Dy>>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, MinBlocks) semi_b_kernel(const SemiArgs a) {
  using T = SemiTile<Dx, Dy>;
  __shared__ float sm[2][T::kCells];
  const SemiPlace<Dx, Dy> p(a);
  const SemiCellLoader<Dx, Dy> ld(p, a);
  SemiColumn<Kind> s;
  semi_prologue(s, p, a);
  {
    float r[T::kLoads];
    ld.load(a.u + p.plane(p.zs), r);
    ld.store(sm[0], r, p.tid);
  }
  __syncthreads();
  SemiPtrs<Kind> pt(a, p.zs, p.col);
  const float* gu = a.u + p.plane(p.zs + 1);       // plane q+1 of u
  float v_cur = 0.0f, vp_cur = 0.0f, u_cur = 0.0f; // this step's v, vp2dt2 (and epilogue u)
  // Step q from shared plane `buf`; `next_plane`: plane q+1 lies in the chunk, else `next_own`:
  // step q+1 needs the own u(q+1); `emit_next`: step q+1 emits.
  auto step = [&](auto buf, const SemiFlags f, bool next_plane, bool next_own, bool emit_next) {
    float r[T::kLoads];
    float u_next = 0.0f, v_next = 0.0f, vp_next = 0.0f;
    if (next_plane)
      ld.load(gu, r);
    else if (next_own)
      u_next = semi_ldg(gu + p.col);
    if (emit_next) {
      v_next = semi_ldcs(pt.v + p.sz);
      vp_next = semi_ldcs(pt.vp + p.sz);
    }
    const float* smc = sm[static_cast<int>(buf)] + p.smem_centre;
    const float uq = f.in_chunk ? (p.active ? *smc : 0.0f) : u_cur;
    semi_advance<T::kW, Kind>(s, uq, smc, f.compute, f.emit, f.eta_load, f.grad_z, v_cur, vp_cur,
                              pt, a);
    if (next_plane) {
      // The other plane was last read in step q-1, before the barrier that ended it.
      ld.store(sm[static_cast<int>(buf) ^ 1], r, p.tid);
      __syncthreads();
    }
    gu += p.sz;
    pt.advance();
    u_cur = u_next;
    v_cur = v_next;
    vp_cur = vp_next;
  };
  auto generic = [&](int q) {
    step((q - p.zs) & 1, SemiFlags::at(p, q), q + 1 < p.ze, p.active && q + 1 < p.ze + kHalo,
         p.active && q + 1 >= p.zs + kHalo && q + 1 < p.ze + kHalo);
  };
  int q = p.zs;
  for (; q < p.zs + kHalo; ++q)
    generic(q);
  // Steady state, two planes per trip so that the buffers are constants (plane zs+4 is in 0).
  for (; q + 2 < p.ze; q += 2) {
    step(SemiIndex<0>(), SemiFlags::steady(p), true, false, p.active);
    step(SemiIndex<1>(), SemiFlags::steady(p), true, false, p.active);
  }
  for (; q < p.ze + kHalo; ++q)
    generic(q);
}

/// Shared memory of one semi+b+a stage: the plane with its halo, and the tile's v and vp2dt2.
template <int Dx, int Dy> struct SemiAsyncStage {
  alignas(16) float u[SemiTile<Dx, Dy>::kCells]; ///< u plane with halo
  alignas(16) float v[Dx * Dy];                  ///< v of the point emitted with this stage
  alignas(16) float vp[Dx * Dy];                 ///< vp2dt2 of that point
};

/// Stages of the semi+b+a pipeline: the plane computed now and Stages-1 in flight; four where
/// they fit in the 48 KB of static shared memory, else three.
template <int Dx, int Dy>
inline constexpr int kSemiStages = 4 * sizeof(SemiAsyncStage<Dx, Dy>) <= 48 * 1024 ? 4 : 3;

#if MINIMOD_GPU_CP_ASYNC

/// semi+b+a: shared stages filled by cp.async Stages-1 planes ahead; each group also carries the
/// v and vp2dt2 that the step using that stage emits (no staging registers). One barrier per
/// plane. The steady state runs unrolled by the stage count, so that stage addresses are
/// constants; the chunk's first and last planes take a generic step.
/// \tparam Vec16 the tile's rows start on 16-byte boundaries: copy the plane in 16-byte pieces
/// \tparam Stages shared stages (at least 2)
template <int Dx, int Dy, RegionKind Kind, bool Vec16, int MinBlocks = kSemiMinBlocks<Dx, Dy>,
          int Stages = kSemiStages<Dx, Dy>>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, MinBlocks) semi_b_a_kernel(const SemiArgs a) {
  static_assert(Stages >= 2, "the pipeline needs at least two stages");
  using T = SemiTile<Dx, Dy>;
  using Stage = SemiAsyncStage<Dx, Dy>;
  __shared__ Stage st[Stages];
  const SemiPlace<Dx, Dy> p(a);
  const SemiChunkLoader<Dx, Dy> ld16(p, a);
  const SemiCellLoader<Dx, Dy> ld4(p, a);
  constexpr unsigned kStageBytes = sizeof(Stage);
  constexpr unsigned kVBytes = sizeof(float) * T::kCells;
  constexpr unsigned kVpBytes = kVBytes + sizeof(float) * T::kThreads;
  const unsigned s_base = semi_smem_addr(st);
  const unsigned s_own = s_base + 4u * p.tid;
  // What the copies of step q+Stages-1 read: plane q+Stages-1 of u, and v, vp2dt2 at its point
  // minus four (SemiPtrs of that step).
  const float* gu = a.u + p.plane(p.zs);
  SemiPtrs<RegionKind::Inner> gin(a, p.zs, p.col);

  // Queue the copies for the step that reads `stage` (the plane of gu, the v and vp2dt2 of gin):
  // `plane`: the plane lies in the chunk (else only the own u, when `own`); `vv`: the step emits.
  // Always commits a group, so that every thread's group count stays the same.
  auto issue = [&](unsigned stage, bool plane, bool own, bool vv) {
    const unsigned so = stage * kStageBytes;
    if (plane) {
      if constexpr (Vec16)
        ld16.copy_async(s_base + so, gu, p.tid);
      else
        ld4.copy_async(s_base + so, gu, p.tid);
    } else if (own) {
      semi_cp_async_4(s_base + so + 4u * p.smem_centre, gu + p.col);
    }
    if (vv) {
      semi_cp_async_4(s_own + so + kVBytes, gin.v);
      semi_cp_async_4(s_own + so + kVpBytes, gin.vp);
    }
    semi_cp_async_commit();
    gu += p.sz;
    gin.advance();
  };
  auto issue_for = [&](int q, unsigned stage) {
    issue(stage, q < p.ze, p.active && q < p.ze + kHalo,
          p.active && q >= p.zs + kHalo && q < p.ze + kHalo);
  };
  SemiColumn<Kind> s;
  SemiPtrs<Kind> pt(a, p.zs, p.col);
  // Step q reading `stage`; `f` its flags; `next` the copies to queue for step q+Stages-1.
  auto step = [&](auto stage, const SemiFlags f, bool next_plane, bool next_own, bool next_vv) {
    semi_cp_async_wait<Stages - 2>(); // this thread's copies for step q have landed
    __syncthreads(); // ... and everyone's; the stage refilled next was last read in step q-1
    const int sidx = static_cast<int>(stage);
    issue(static_cast<unsigned>(sidx == 0 ? Stages - 1 : sidx - 1), next_plane, next_own, next_vv);
    const Stage& g = st[sidx];
    const float uq = p.active ? g.u[p.smem_centre] : 0.0f;
    const float v_old = f.emit ? g.v[p.tid] : 0.0f;
    const float vp = f.emit ? g.vp[p.tid] : 0.0f;
    semi_advance<T::kW, Kind>(s, uq, g.u + p.smem_centre, f.compute, f.emit, f.eta_load, f.grad_z,
                              v_old, vp, pt, a);
    pt.advance();
  };
  auto generic = [&](int q) {
    const int n = q + Stages - 1;
    step((q - p.zs) % Stages, SemiFlags::at(p, q), n < p.ze, p.active && n < p.ze + kHalo,
         p.active && n >= p.zs + kHalo && n < p.ze + kHalo);
  };

#pragma unroll
  for (int k = 0; k < Stages - 1; ++k)
    issue_for(p.zs + k, static_cast<unsigned>(k));
  semi_prologue(s, p, a);
  int q = p.zs;
  // Warm-up: the first four planes emit nothing.
  for (; q < p.zs + kHalo && q < p.ze + kHalo; ++q)
    generic(q);
  // Steady state: plane q and the refilled plane q+Stages-1 in the chunk, point q-4 emitted.
  constexpr int kFirst = kHalo % Stages; // stage of plane zs + 4
  for (; q + 2 * Stages - 2 < p.ze; q += Stages)
    semi_unroll<0, Stages>([&](auto k) {
      step(SemiIndex<(kFirst + decltype(k)::value) % Stages>(), SemiFlags::steady(p), true,
           p.active, p.active);
    });
  // The chunk's last planes and the four below it.
  for (; q < p.ze + kHalo; ++q)
    generic(q);
  semi_cp_async_wait<0>();
}

#endif // MINIMOD_GPU_CP_ASYNC

/// semi+2z: two planes per iteration (2z thread folding). Both planes' loads and both outputs'
/// v, vp2dt2 are in flight together; one barrier pair per two planes.
template <int Dx, int Dy, RegionKind Kind, int MinBlocks = kSemiMinBlocks<Dx, Dy>>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, MinBlocks) semi_2z_kernel(const SemiArgs a) {
  using T = SemiTile<Dx, Dy>;
  __shared__ float sm[2][T::kCells];
  const SemiPlace<Dx, Dy> p(a);
  const SemiCellLoader<Dx, Dy> ld(p, a);
  SemiColumn<Kind> s;
  semi_prologue(s, p, a);
  SemiPtrs<Kind> pt(a, p.zs, p.col);
  const float* gu = a.u + p.plane(p.zs); // plane q of u
  // Planes q and q+1 with flags f0, f1; `live1`: plane q+1 is part of the stream.
  auto pair = [&](const SemiFlags f0, const SemiFlags f1, bool live1) {
    float r0[T::kLoads], r1[T::kLoads];
    float u0 = 0.0f, u1 = 0.0f;
    if (f0.in_chunk)
      ld.load(gu, r0);
    else if (p.active)
      u0 = semi_ldg(gu + p.col);
    if (f1.in_chunk)
      ld.load(gu + p.sz, r1);
    else if (p.active && live1)
      u1 = semi_ldg(gu + p.sz + p.col);
    float v0 = 0.0f, vp0 = 0.0f, v1 = 0.0f, vp1 = 0.0f;
    if (f0.emit) {
      v0 = semi_ldcs(pt.v);
      vp0 = semi_ldcs(pt.vp);
    }
    if (f1.emit) {
      v1 = semi_ldcs(pt.v + p.sz);
      vp1 = semi_ldcs(pt.vp + p.sz);
    }
    if (f0.in_chunk) {
      ld.store(sm[0], r0, p.tid);
      if (f1.in_chunk) ld.store(sm[1], r1, p.tid);
      __syncthreads();
    }
    if (f0.compute) u0 = sm[0][p.smem_centre];
    if (f1.compute) u1 = sm[1][p.smem_centre];
    semi_advance<T::kW, Kind>(s, u0, sm[0] + p.smem_centre, f0.compute, f0.emit, f0.eta_load,
                              f0.grad_z, v0, vp0, pt, a);
    pt.advance();
    if (live1) {
      semi_advance<T::kW, Kind>(s, u1, sm[1] + p.smem_centre, f1.compute, f1.emit, f1.eta_load,
                                f1.grad_z, v1, vp1, pt, a);
      pt.advance();
    }
    if (f0.in_chunk) __syncthreads();
    gu += 2 * p.sz;
  };
  auto generic = [&](int q) {
    pair(SemiFlags::at(p, q), SemiFlags::at(p, q + 1), q + 1 < p.ze + kHalo);
  };
  int q = p.zs;
  for (; q < p.zs + kHalo; q += 2)
    generic(q);
  for (; q + 1 < p.ze; q += 2)
    pair(SemiFlags::steady(p), SemiFlags::steady(p), true);
  for (; q < p.ze + kHalo; q += 2)
    generic(q);
}

#endif // MINIMOD_DEVICE_COMPILER

// ---- Host side -------------------------------------------------------------------------------

/// Planes per block along z for a region: `preferred` planes (0: the whole depth), cut shorter
/// when the xy tiles and those chunks do not give enough blocks to fill a large GPU (never
/// shorter than 32 planes).
/// \param tiles xy tiles of the region; \param nz its depth; \param threads threads per block
int semi_z_chunk(long long tiles, int nz, int threads, int preferred);

/// Enqueue one semi-stencil update of `region` with an explicit z chunk (0: semi_z_chunk's).
/// \tparam V the variant
/// \tparam Dx threads per block along x
/// \tparam Dy threads per block along y
template <SemiVariant V, int Dx, int Dy>
void launch_semi(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                 const Region& region, int z_chunk, gpuStream_t stream);

/// The registry entry of one semi-stencil tile: `<family>_<Dx>x<Dy>`, both region kinds.
/// \tparam V the variant (family)
/// \tparam Dx threads per block along x
/// \tparam Dy threads per block along y
template <SemiVariant V, int Dx, int Dy> class SemiKernel final : public GpuKernel {
public:
  SemiKernel() : GpuKernel(GpuKernelInfo{semi_family_name(V), Dx, Dy, 0, Physics::Acoustic}) {}
  std::string description() const override;
  std::string can_run(const Region& region, const FieldLayout& layout) const override;
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;
};

#if MINIMOD_DEVICE_COMPILER

/// Description of a variant, for `minimod-gpu kernels` (`stages`: semi+b+a's shared stages).
inline std::string semi_description(SemiVariant v, int dx, int dy, int stages) {
  const std::string tile = std::to_string(dx) + "x" + std::to_string(dy);
  switch (v) {
  case SemiVariant::Plain:
    return "2.5D streaming along z, semi-stencil in z, " + tile +
           " xy tile in shared memory (inner and layer)";
  case SemiVariant::Buffered:
    return "semi_25d with the next plane prefetched into registers, two shared planes, " + tile +
           " (inner and layer)";
  case SemiVariant::Async:
    return "semi_25d with cp.async into " + std::to_string(stages) +
           " shared stages (copies planes ahead), " + tile + " (inner and layer)";
  case SemiVariant::Fold2z:
    return "semi_25d computing two z planes per iteration (2z folding), " + tile +
           " (inner and layer)";
  }
  return {};
}

/// Why the semi-stencil cannot run `region`, or empty (grid limits, 32-bit in-plane offsets).
std::string semi_can_run(const Region& region, const FieldLayout& layout, int dx, int dy,
                         int preferred);

template <SemiVariant V, int Dx, int Dy> std::string SemiKernel<V, Dx, Dy>::description() const {
  return semi_description(V, Dx, Dy, kSemiStages<Dx, Dy>);
}

template <SemiVariant V, int Dx, int Dy>
std::string SemiKernel<V, Dx, Dy>::can_run(const Region& region, const FieldLayout& layout) const {
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  return semi_can_run(region, layout, Dx, Dy, semi_tuning(V, Dx, Dy).chunk_planes);
}

template <SemiVariant V, int Dx, int Dy>
void SemiKernel<V, Dx, Dy>::launch(const IsoFields& f, const FieldLayout& layout,
                                   const StencilCoefs& coefs, const Region& region,
                                   void* stream) const {
  launch_semi<V, Dx, Dy>(f, layout, coefs, region, 0, static_cast<gpuStream_t>(stream));
}

/// Name of a launch in errors: `semi+b_32x16<layer>`.
template <SemiVariant V, int Dx, int Dy> const char* semi_launch_name(RegionKind kind) {
  static const std::string inner = SemiKernel<V, Dx, Dy>().name() + "<inner>";
  static const std::string layer = SemiKernel<V, Dx, Dy>().name() + "<layer>";
  return kind == RegionKind::Inner ? inner.c_str() : layer.c_str();
}

/// The kernel of variant V for one region kind (and, for semi+b+a, one copy width).
template <SemiVariant V, int Dx, int Dy, RegionKind Kind, bool Vec16>
constexpr auto semi_kernel_for() {
  constexpr SemiTuning t = semi_tuning(V, Dx, Dy);
  constexpr int kMin = Kind == RegionKind::Inner ? t.min_blocks_inner : t.min_blocks_layer;
  if constexpr (V == SemiVariant::Plain)
    return &semi_25d_kernel<Dx, Dy, Kind, kMin>;
  else if constexpr (V == SemiVariant::Buffered)
    return &semi_b_kernel<Dx, Dy, Kind, kMin>;
#if MINIMOD_GPU_CP_ASYNC
  else if constexpr (V == SemiVariant::Async)
    return &semi_b_a_kernel<Dx, Dy, Kind, Vec16, kMin>;
#endif
  else
    return &semi_2z_kernel<Dx, Dy, Kind, kMin>;
}

/// Fill the kernel arguments and the launch grid; false when the box is empty. `z_chunk` 0 takes
/// semi_z_chunk with `preferred` planes.
bool semi_prepare(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                  const Region& region, int z_chunk, int preferred, int dx, int dy, SemiArgs& args,
                  dim3& grid);

template <SemiVariant V, int Dx, int Dy>
void launch_semi(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                 const Region& region, int z_chunk, gpuStream_t stream) {
  SemiArgs a;
  dim3 grid;
  if (!semi_prepare(f, layout, coefs, region, z_chunk, semi_tuning(V, Dx, Dy).chunk_planes, Dx, Dy,
                    a, grid))
    return;
  const dim3 block(Dx, Dy, 1);
  const RegionKind kind = region.kind();
  // 16-byte copies need every tile row (halo included) to start on a 16-byte boundary.
  const bool vec16 = (layout.x_offset + a.box.x0 - kHalo) % 4 == 0 &&
                     reinterpret_cast<std::uintptr_t>(f.u) % 16 == 0;
  void (*kernel)(SemiArgs);
  if (kind == RegionKind::Inner)
    kernel = vec16 ? semi_kernel_for<V, Dx, Dy, RegionKind::Inner, true>()
                   : semi_kernel_for<V, Dx, Dy, RegionKind::Inner, false>();
  else
    kernel = vec16 ? semi_kernel_for<V, Dx, Dy, RegionKind::Layer, true>()
                   : semi_kernel_for<V, Dx, Dy, RegionKind::Layer, false>();
  kernel<<<grid, block, 0, stream>>>(a);
  const char* launch_name = semi_launch_name<V, Dx, Dy>(kind);
  MINIMOD_GPU_CHECK_LAUNCH(launch_name, grid, block, 0);
}

#endif // MINIMOD_DEVICE_COMPILER

/// The registered tiles of every variant (defined in the variant's .cu file).
#define MINIMOD_SEMI_TILES(V)                                                                      \
  extern template class SemiKernel<V, 32, 16>;                                                     \
  extern template class SemiKernel<V, 32, 32>;                                                     \
  extern template class SemiKernel<V, 64, 8>;
MINIMOD_SEMI_TILES(SemiVariant::Plain)
MINIMOD_SEMI_TILES(SemiVariant::Buffered)
#if MINIMOD_GPU_CP_ASYNC
MINIMOD_SEMI_TILES(SemiVariant::Async)
#endif
MINIMOD_SEMI_TILES(SemiVariant::Fold2z)
#undef MINIMOD_SEMI_TILES

/// Add the four semi-stencil families (semi_25d, semi+b, semi+b+a, semi+2z), each with its tiles
/// and its measured-best tile as the family default.
void register_semi_25d_kernels(KernelRegistry& registry);

} // namespace minimod::gpu
