#pragma once
/// The TTI kernel family on CUDA (the semi-stencil paper, Sai et al. 2022: Table I and section
/// III; docs/kernels.md, "TTI"). Every kernel computes the six second derivatives of p and q at
/// its points its own way and finishes with the update that the CPU reference uses
/// (kernels/tti_K.hpp: tti_finish_point, or tti_finish_loaded with the point's values loaded
/// early), so that all of them compute one function up to the order of the sums (semi+b+a and
/// semi+b+tma with azimuth fold the in-plane terms into L s, H s, H q first and finish with
/// tti_apply_operators). Each layer form comes twice (kPhi): with the layer's phi and its drive,
/// and without, for media whose layer has no elliptic point (no phi_p array; tti_layer_store):
///
///   gmem_3d   3D blocks, one point a thread, all 2 x 73 stencil points read from global memory
///   smem_3d   3D blocks; the (Dx+8)(Dy+8)(Dz+8) boxes of p and q staged in shared memory
///   smem_25d  2D blocks streaming along z; the 2R+1 = 9 planes of the stencil, with their x/y
///             halos, in a circular buffer of shared planes (the mixed xz and yz derivatives need
///             off-centre points of the other planes, so a register column is not enough)
///   semi_25d  the same streaming with the semi-stencil done in registers: one shared plane of
///             (p, q) pairs. When plane t arrives each of its values is read once and added to
///             every pending point it feeds: the row and column values give xx, yy of point t and
///             the xz, yz terms of points t-4..t+4, the centre their zz; point t-4 is then
///             complete. The nine pending points' sums live in registers (the plane loop is
///             unrolled by nine, so the ring's indices are constants): 33 8-byte shared loads a
///             point for both fields instead of 146 4-byte ones
///   semi+b    semi_25d with the next plane prefetched into registers while the current one is
///             computed: three shared planes (constant slots) and one barrier per plane
///   semi+b+a  semi+b with the prefetch done by cp.async straight into shared memory, two planes
///             ahead (no staging registers)
///   semi+2z   semi_25d loading two planes per barrier pair (2z folding of the loads; the ring
///             still advances plane by plane), two shared planes
///   semi+b+tma semi+b+a with each plane copied by the Hopper tensor memory accelerator: one
///             thread issues a box copy of p and one of q, the block waits on an mbarrier; no
///             per-thread copies (sm_90 and newer)
///
/// The layer form reads its phi drive's 1-point neighbours (p, q, eta) from global memory.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "core/host_device.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/tensor_copy.cuh"
#include "kernels/stencil_K.hpp"
#include "kernels/tti_K.hpp"

#include <cstdint>
#include <type_traits>

namespace minimod {
class KernelRegistry;
}

namespace minimod::gpu {

/// Register the TTI kernels (kernels/gpu/tti_kernels.cu).
void register_tti_kernels(KernelRegistry& registry);
/// Register semi+b+tma where the tensor copies are available (kernels/cuda/tti_kernels_tma.cu;
/// called by register_tti_kernels).
void register_tti_tma_kernels(KernelRegistry& registry);
/// Register semi+b (kernels/gpu/tti_kernels_semib.cu; called by register_tti_kernels).
void register_tti_semib_kernels(KernelRegistry& registry);

/// How a TTI kernel reaches its stencil points.
enum class TtiMethod : int { Gmem3d, Smem3d, Smem25d, Semi, SemiB, SemiBA, Semi2z, SemiBT };

/// Family name of a method, as users type it.
constexpr const char* tti_family_name(TtiMethod m) {
  return m == TtiMethod::Gmem3d    ? "gmem_3d"
         : m == TtiMethod::Smem3d  ? "smem_3d"
         : m == TtiMethod::Smem25d ? "smem_25d"
         : m == TtiMethod::Semi    ? "semi_25d"
         : m == TtiMethod::SemiB   ? "semi+b"
         : m == TtiMethod::SemiBA  ? "semi+b+a"
         : m == TtiMethod::Semi2z  ? "semi+2z"
                                   : "semi+b+tma";
}

/// Whether a method streams along z (2D blocks, one column of points a thread).
constexpr bool tti_streams(TtiMethod m) {
  return m != TtiMethod::Gmem3d && m != TtiMethod::Smem3d;
}

/// Shared planes of a streaming method's circular buffer.
constexpr int tti_planes(TtiMethod m) {
  return m == TtiMethod::Smem25d  ? 2 * kHalo + 1
         : m == TtiMethod::Semi   ? 1
         : m == TtiMethod::Semi2z ? 2
                                  : 3;
}

/// Spare cells a shared plane of method m has: the register-prefetch methods store every
/// thread's last fetched cell, and a thread without one stores it there (guarding that load and
/// store cost semi+b_32x8 9% on the H100); smem_25d and semi+b+a skip such a cell instead.
constexpr int tti_spare_cells(TtiMethod m) {
  return m == TtiMethod::Semi || m == TtiMethod::SemiB || m == TtiMethod::Semi2z ? 1 : 0;
}

/// The box a semi+b+tma tensor copy brings in for a Dx x Dy tile, in floats: the tile with its
/// halos, 4 floats wider since a box must start on 16 bytes (it starts 0-3 floats before the
/// halo). The kernel's shared rows and the host's tensor maps both use these.
constexpr int tti_tma_box_w(int dx) {
  return dx + 2 * kHalo + 4;
}
constexpr int tti_tma_box_h(int dy) {
  return dy + 2 * kHalo;
}

/// Bytes of shared memory a kernel of method m and tile Dx x Dy x Dz stages (p and q).
constexpr int tti_smem_bytes(TtiMethod m, int dx, int dy, int dz) {
  return m == TtiMethod::Gmem3d   ? 0
         : m == TtiMethod::Smem3d ? 2 * (dx + 2 * kHalo) * (dy + 2 * kHalo) * (dz + 2 * kHalo) * 4
         : m == TtiMethod::SemiBT // the copy's box, planes on 128 bytes (tti_semi_kernel)
             ? 2 * tti_planes(m) * ((tti_tma_box_w(dx) * tti_tma_box_h(dy) + 31) / 32 * 32) * 4
             : 2 * tti_planes(m) * ((dx + 2 * kHalo) * (dy + 2 * kHalo) + tti_spare_cells(m)) * 4;
}

/// The boxes one launch of a streaming kernel's layer form updates: the layer slabs it was given
/// (all six in one launch: a thin slab's grid is a few waves, and one launch leaves one tail
/// instead of six). The 1D grid tiles box 0 first, then box 1, ...: block b
/// belongs to box r when first[r] <= b < first[r + 1], and inside it the x tiles run fastest,
/// then the y tiles, then the z chunks (the order of a 3D grid).
struct TtiBoxes {
  static constexpr int kMax = kRegionCount - 1;
  int count = 0;
  Box box[kMax]{};
  int z_chunk[kMax]{}; ///< planes per block along z
  int tiles_x[kMax]{}, tiles_y[kMax]{};
  int first[kMax + 1]{}; ///< first block of each box; first[count] is the grid's size
};

/// Everything a TTI kernel reads, passed by value (the constant bank).
struct TtiArgs {
  TtiFields f;
  FieldLayout layout;
  TtiCoefs c;
  Box box;         ///< one region on a 3D grid of tiles (z chunks for the streaming methods)
  int z_chunk = 1; ///< streaming methods: planes per block along z (blockIdx.z picks the chunk)
  TtiBoxes boxes;  ///< the layer form of the streaming methods: its slabs on a 1D grid
};

#if MINIMOD_DEVICE_COMPILER

// ---- gmem_3d ---------------------------------------------------------------------------------

/// Resident blocks per SM asked of the register allocator for gmem_3d and smem_25d: 1024 threads
/// a SM, at most 64 registers. Both lost a third or more of their speed on the H100 when the
/// compiler drifted past 64 (smem_25d: 78-109 registers, 25.1 -> 31.5 ms; gmem_3d_32x4x4: 66
/// registers after an equivalent rewrite of tti_operators, one 512-thread block a SM, 34.2
/// -> 48.8).
template <int Threads> constexpr int kTtiMinBlocks = Threads >= 1024 ? 1 : 1024 / Threads;

template <int Dx, int Dy, int Dz, bool kAz, bool kLayer, bool kPhi = true>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy* Dz, kTtiMinBlocks<Dx * Dy * Dz>)
    tti_gmem_3d_kernel(const TtiArgs a) {
  const int i = a.box.x0 + static_cast<int>(blockIdx.x) * Dx + static_cast<int>(threadIdx.x);
  const int j = a.box.y0 + static_cast<int>(blockIdx.y) * Dy + static_cast<int>(threadIdx.y);
  const int k = a.box.z0 + static_cast<int>(blockIdx.z) * Dz + static_cast<int>(threadIdx.z);
  if (i >= a.box.x1 || j >= a.box.y1 || k >= a.box.z1) return;
  tti_update_point<kAz, kLayer, kPhi>(a.f, a.layout.index(i, j, k), a.layout.pitch, a.layout.plane,
                                      a.c);
}

// ---- smem_3d ---------------------------------------------------------------------------------

template <int Dx, int Dy, int Dz, bool kAz, bool kLayer, bool kPhi = true>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy* Dz) tti_smem_3d_kernel(const TtiArgs a) {
  constexpr int W = Dx + 2 * kHalo, H = Dy + 2 * kHalo, D = Dz + 2 * kHalo;
  constexpr int kCells = W * H * D, kThreads = Dx * Dy * Dz;
  __shared__ float sp[kCells];
  __shared__ float sq[kCells];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y),
            tz = static_cast<int>(threadIdx.z);
  const int tid = (tz * Dy + ty) * Dx + tx;
  const int x0 = a.box.x0 + static_cast<int>(blockIdx.x) * Dx;
  const int y0 = a.box.y0 + static_cast<int>(blockIdx.y) * Dy;
  const int z0 = a.box.z0 + static_cast<int>(blockIdx.z) * Dz;
  // The staged box starts kHalo before the tile; local coordinates past what the tile's points
  // read are clamped so that no load leaves the padded field (ghosts are kHalo wide).
  const int lx_max = min(W, a.box.x1 - x0 + 2 * kHalo) - 1;
  const int ly_max = min(H, a.box.y1 - y0 + 2 * kHalo) - 1;
  const int lz_max = min(D, a.box.z1 - z0 + 2 * kHalo) - 1;
  const std::int64_t sy = a.layout.pitch, sz = a.layout.plane;
  const std::int64_t origin = a.layout.index(x0 - kHalo, y0 - kHalo, z0 - kHalo);
  for (int e = tid; e < kCells; e += kThreads) {
    const int lx = e % W, rest = e / W;
    const int ly = rest % H, lz = rest / H;
    const std::int64_t g = origin + min(lz, lz_max) * sz + min(ly, ly_max) * sy +
                           static_cast<std::int64_t>(min(lx, lx_max));
    sp[e] = __ldg(a.f.p + g);
    sq[e] = __ldg(a.f.q + g);
  }
  __syncthreads();
  const int i = x0 + tx, j = y0 + ty, k = z0 + tz;
  if (i >= a.box.x1 || j >= a.box.y1 || k >= a.box.z1) return;
  const std::int64_t local = ((tz + kHalo) * H + ty + kHalo) * W + tx + kHalo;
  const SecondDerivatives dp = second_derivatives_73<kAz>(sp, local, W, W * H, a.c);
  const SecondDerivatives dq = second_derivatives_73<kAz>(sq, local, W, W * H, a.c);
  tti_finish_point<kAz, kLayer, kPhi>(a.f, a.layout.index(i, j, k), sy, sz, a.c, dp, dq);
}

// ---- The streaming methods -------------------------------------------------------------------

/// f(integral_constant<P>) for P = First .. 8, in order (the nine phases of the semi-stencil ring).
template <int First, class F> __device__ __forceinline__ void tti_phases(F&& f) {
  if constexpr (First < 9) {
    f(std::integral_constant<int, First>{});
    tti_phases<First + 1>(f);
  }
}

/// A field's second derivatives at shared index c0 with all nine planes at hand (smem_25d):
/// `plane(o)` is the shared plane k + o, o = -4..4. The sums follow second_derivatives_73's order.
template <bool kAz, int W, class PlaneFn>
__device__ __forceinline__ SecondDerivatives tti_nine_planes(PlaneFn plane, int c0,
                                                             const TtiCoefs& c) {
  const float* u0 = plane(0);
  const float centre = u0[c0];
  SecondDerivatives d{c.xx[0] * centre, c.yy[0] * centre, c.zz[0] * centre, 0.0f, 0.0f, 0.0f,
                      c.centre * centre};
#pragma unroll
  for (int m = 1; m <= kHalo; ++m) {
    const float* up = plane(m);
    const float* dn = plane(-m);
    const float tx = c.xx[m] * (u0[c0 + m] + u0[c0 - m]);
    const float ty = c.yy[m] * (u0[c0 + m * W] + u0[c0 - m * W]);
    const float tz = c.zz[m] * (up[c0] + dn[c0]);
    d.lap += tx;
    d.lap += ty;
    d.lap += tz;
    d.xx += tx;
    d.yy += ty;
    d.zz += tz;
    d.xz += c.xz[m] * ((up[c0 + m] + dn[c0 - m]) - (dn[c0 + m] + up[c0 - m]));
    if constexpr (kAz) {
      d.xy += c.xy[m] * ((u0[c0 + m + m * W] + u0[c0 - m - m * W]) -
                         (u0[c0 + m - m * W] + u0[c0 - m + m * W]));
      d.yz += c.yz[m] * ((up[c0 + m * W] + dn[c0 - m * W]) - (dn[c0 + m * W] + up[c0 - m * W]));
    }
  }
  return d;
}

/// a * b for ints a, b >= 0, as one 32 x 32 -> 64-bit multiply (IMAD.WIDE.U32): a 64-bit
/// product of the sign-extended ints costs ptxas three multiplies and an add. The streaming
/// kernels form plane offsets this way several times a point; a plane's size fits an int (their
/// can_run checks it).
__device__ __forceinline__ std::int64_t tti_wide(int a, int b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<unsigned>(a)) *
                                   static_cast<unsigned>(b));
}

/// One block's view of its column: the tile's cells of a plane that this thread loads, the
/// thread's own point, and the z chunk. kBoxes: the block is one of a 1D grid over a.boxes (the
/// layer form: all its slabs in one launch); otherwise of a 3D grid over a.box (the inner form:
/// there the compiler re-reads the block's coordinates instead of holding the chunk's bounds,
/// which the 1D decode made semi+b+tma_32x4 spill at its 80 registers).
template <int Dx, int Dy, bool kBoxes> struct TtiColumn {
  static constexpr int W = Dx + 2 * kHalo, H = Dy + 2 * kHalo;
  static constexpr int kCells = W * H, kThreads = Dx * Dy;
  static constexpr int kLoads = (kCells + kThreads - 1) / kThreads;
  int gofs[kLoads]; ///< offset of each of the thread's cells inside a padded plane
  int sofs[kLoads]; ///< its index inside a shared plane (kCells: no cell, see has())
  int i, j;         ///< the thread's point
  bool active;      ///< (i, j) lies inside the box
  int c0;           ///< the thread's point inside a shared plane
  int zs, ze;       ///< the block's chunk [zs, ze)

  __device__ explicit TtiColumn(const TtiArgs& a) {
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const int tid = ty * Dx + tx;
    Box box = a.box;
    int chunk = a.z_chunk, bx = static_cast<int>(blockIdx.x), by = static_cast<int>(blockIdx.y),
        bz = static_cast<int>(blockIdx.z);
    if constexpr (kBoxes) {
      // The block's box, picked with constant indices (a dynamic index into the kernel's
      // parameters would copy them to local memory), and its tile there.
      const int b = static_cast<int>(blockIdx.x);
      int tiles_x = a.boxes.tiles_x[0], tiles_y = a.boxes.tiles_y[0], first = 0;
      box = a.boxes.box[0];
      chunk = a.boxes.z_chunk[0];
#pragma unroll
      for (int r = 1; r < TtiBoxes::kMax; ++r) {
        if (r < a.boxes.count && b >= a.boxes.first[r]) {
          box = a.boxes.box[r];
          chunk = a.boxes.z_chunk[r];
          tiles_x = a.boxes.tiles_x[r];
          tiles_y = a.boxes.tiles_y[r];
          first = a.boxes.first[r];
        }
      }
      const int local = b - first, rows = local / tiles_x;
      bx = local - rows * tiles_x;
      by = rows % tiles_y;
      bz = rows / tiles_y;
    }
    const int x0 = box.x0 + bx * Dx;
    const int y0 = box.y0 + by * Dy;
    // Cells past what the tile's points read are clamped (no load leaves the padded field).
    const int lx_max = min(W, box.x1 - x0 + 2 * kHalo) - 1;
    const int ly_max = min(H, box.y1 - y0 + 2 * kHalo) - 1;
#pragma unroll
    for (int n = 0; n < kLoads; ++n) {
      const int e = tid + n * kThreads;
      const int lx = min(e % W, lx_max), ly = min(e / W, ly_max);
      gofs[n] = (y0 - kHalo + ly + kHalo) * a.layout.pitch + x0 - kHalo + lx + a.layout.x_offset;
      sofs[n] = e < kCells ? e : kCells;
    }
    i = x0 + tx;
    j = y0 + ty;
    active = i < box.x1 && j < box.y1;
    c0 = (ty + kHalo) * W + tx + kHalo;
    zs = box.z0 + bz * chunk;
    ze = min(zs + chunk, box.z1);
  }

  /// Whether the thread has an n-th cell (smem_25d and semi+b+a copy only those). Only the last
  /// of its loads can be empty, and then for whole warps (a tile's cell count minus (kLoads - 1)
  /// blocks is a multiple of 32 when Dx and Dy are multiples of 8, as in every registered tile
  /// of the methods that copy cell by cell (semi+b+tma copies boxes);
  /// otherwise one warp diverges there). Skipping it instead of copying a dummy cell took
  /// semi+b+a_32x8 from 20.05 to 19.32 ms a step and smem_25d_32x8 from 24.18 to 23.03 (H100,
  /// 900^3): half the warps of a 32x8 block had copied one cell of two fields for nothing, every
  /// plane.
  __device__ bool has(int n) const {
    return n + 1 < kLoads || sofs[n] < kCells;
  }

  /// Offset of plane k's first padded float; planes before the first ghost plane are clamped
  /// to it (the semi-stencil loop reads a few such planes, whose values no finished point uses).
  __device__ static std::int64_t plane_offset(const FieldLayout& l, int k) {
    return tti_wide(max(k, -kHalo) + kHalo, static_cast<int>(l.plane));
  }
};

/// smem_25d: the nine planes k-4..k+4 of p and q in a circular buffer of shared planes; plane t
/// lives in slot t mod 9.
template <int Dx, int Dy, bool kAz, bool kLayer, bool kPhi = true>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, kTtiMinBlocks<Dx * Dy>)
    tti_smem_25d_kernel(const TtiArgs a) {
  using Col = TtiColumn<Dx, Dy, kLayer>;
  constexpr int W = Col::W;
  constexpr int NB = tti_planes(TtiMethod::Smem25d);
  constexpr int kPlane = Col::kCells;
  __shared__ float buffer[2 * NB * kPlane];
  float* const sp = buffer;
  float* const sq = buffer + NB * kPlane;

  const Col col(a);
  const std::int64_t sy = a.layout.pitch, sz = a.layout.plane;
  // The ring index of plane t advances by one a plane (no division in the loop: a modulus per
  // plane access, 18 of them a point, cost more than a fifth of the step).
  int cur = ((col.zs - kHalo) % NB + NB) % NB;
  for (int t = col.zs - kHalo; t < col.ze + kHalo; ++t, cur = cur + 1 == NB ? 0 : cur + 1) {
    __syncthreads(); // everyone is done with the plane that this slot held
    const std::int64_t base = Col::plane_offset(a.layout, t);
#pragma unroll
    for (int n = 0; n < Col::kLoads; ++n) {
      if (col.has(n)) {
        sp[cur * kPlane + col.sofs[n]] = __ldg(a.f.p + base + col.gofs[n]);
        sq[cur * kPlane + col.sofs[n]] = __ldg(a.f.q + base + col.gofs[n]);
      }
    }
    __syncthreads();
    const int k = t - kHalo;
    if (k >= col.zs && col.active) {
      // Plane k + o is plane t - (4 - o).
      auto plane_at = [&](int o) {
        const int x = cur - (kHalo - o);
        return (x < 0 ? x + NB : x) * kPlane;
      };
      const SecondDerivatives dp =
          tti_nine_planes<kAz, W>([&](int o) { return sp + plane_at(o); }, col.c0, a.c);
      const SecondDerivatives dq =
          tti_nine_planes<kAz, W>([&](int o) { return sq + plane_at(o); }, col.c0, a.c);
      tti_finish_point<kAz, kLayer, kPhi>(a.f, a.layout.index(col.i, col.j, k), sy, sz, a.c, dp,
                                          dq);
    }
  }
}

// ---- The semi-stencil methods ----------------------------------------------------------------
//
// A shared plane holds (p, q) pairs, so that one 8-byte load gives both fields at a cell (33
// loads a point for both fields instead of 66; semi+b+tma, whose tensor copies write a plane of p
// and one of q, makes them 66 4-byte loads, as many bytes). Each thread keeps, for the nine points
// t-4..t+4 that plane t feeds, the partial sums of both fields in registers (TtiRing); the plane
// loop is unrolled by nine, so every ring index, and every slot of a buffer of 1, 2 or 3 planes, is
// a compile-time constant. (Giving p and q a lane each halves the sums a thread holds, but measured
// 1.6 times slower: 64 registers spill, and the two lanes repeat the addressing and loads.)

/// Partial sums at the nine pending points; index (P + d) mod 9 in phase P holds point t + d.
/// zz, xz, yz of p and of q collect one term from each of the planes k-4..k+4. The point's own
/// plane adds its in-plane derivatives: raw (xx, yy, xy of p and of q), or, folded with
/// the point's axis (kFold), as 3 values instead of 6: ls = (xx + yy) s, and hs, hq the in-plane
/// parts of H s and H q. Only the arrays a kernel uses take registers.
struct TtiRing {
  float zzp[9], xzp[9], yzp[9], zzq[9], xzq[9], yzq[9];
  float xxp[9], yyp[9], xyp[9], xxq[9], yyq[9], xyq[9]; // raw
  float ls[9], hs[9], hq[9];                            // folded
};

/// The raw derivatives of p (q = false) or q at the finished point in ring slot r.
template <bool kAz>
__device__ __forceinline__ SecondDerivatives tti_ring_derivatives(const TtiRing& g, int r, bool q) {
  const float xx = q ? g.xxq[r] : g.xxp[r], yy = q ? g.yyq[r] : g.yyp[r];
  const float zz = q ? g.zzq[r] : g.zzp[r];
  return SecondDerivatives{xx,
                           yy,
                           zz,
                           q ? g.xyq[r] : g.xyp[r],
                           q ? g.xzq[r] : g.xzp[r],
                           kAz ? (q ? g.yzq[r] : g.yzp[r]) : 0.0f,
                           (xx + yy) + zz};
}

/// L s, H s and H q of the finished point in folded ring slot r, its H weights w.
template <bool kAz>
__device__ __forceinline__ void tti_ring_operators(const TtiRing& g, int r, const TtiWeights& w,
                                                   float& lap_s, float& h_s, float& h_q) {
  const float zzs = g.zzp[r] + g.zzq[r], xzs = g.xzp[r] + g.xzq[r];
  lap_s = g.ls[r] + zzs;
  h_s = g.hs[r] + w.zz * zzs + w.xz * xzs;
  h_q = g.hq[r] + w.zz * g.zzq[r] + w.xz * g.xzq[r];
  if constexpr (kAz) {
    h_s += w.yz * (g.yzp[r] + g.yzq[r]);
    h_q += w.yz * g.yzq[r];
  }
}

/// A shared plane of p followed by one of q, kQ floats further (the layout a tensor copy of
/// each field writes), read as pairs: two 4-byte loads a cell, as many bytes and shared-memory
/// wavefronts as the 8-byte load of a plane of (p, q) pairs (a `const float2*`, the other
/// semi-stencil kernels' plane).
template <int kQ> struct TtiSplitPlane {
  const float* p;
  __device__ float2 operator[](int cell) const { return make_float2(p[cell], p[cell + kQ]); }
};

/// xy of p (xyp) and q (xyq) at shared cell c0 of a plane (of pairs, or a TtiSplitPlane): the 16
/// diagonal points.
template <int W, class Plane>
__device__ __forceinline__ void tti_plane_xy(Plane u, int c0, const TtiCoefs& c, float& xyp,
                                             float& xyq) {
#pragma unroll
  for (int m = 1; m <= kHalo; ++m) {
    const float2 pp = u[c0 + m + m * W], mm = u[c0 - m - m * W];
    const float2 pm = u[c0 + m - m * W], mp = u[c0 - m + m * W];
    xyp = fmaf(c.xy[m], (pp.x + mm.x) - (pm.x + mp.x), xyp);
    xyq = fmaf(c.xy[m], (pp.y + mm.y) - (pm.y + mp.y), xyq);
  }
}

/// Phase P of the semi-stencil: plane t (shared plane `u`, the thread at c0) has
/// arrived. Each of its values is read once and used for every pending point it feeds: the
/// centre gives zz, a row difference dx = u(i + m) - u(i - m) the xz terms and a column
/// difference dy the yz terms of points t - m (plane t lies m above them: + dx) and t + m (m
/// below: - dx); the row and column sums give xx and yy of point t, kept raw with its xy or (kFold)
/// folded with `w`, point t's H weights, into ls, hs, hq. The terms at distance 4 come first: they
/// complete point t - 4, which `finish(slot, dp, dq)` then updates before point t + 4's sums are
/// started, so that the two never hold registers at once (dp, dq: its raw derivatives, formed
/// before the call, which kept semi+b at 20 bytes of spills instead of 104; unused with kFold,
/// where finish reads the folded slot). xy of point t is summed only when plane t is one of the
/// block's own planes (`own`; the others only feed their neighbours).
template <bool kAz, bool kFold, int W, int P, class Plane, class Finish>
__device__ __forceinline__ void tti_semi_phase(Plane u, int c0, const TtiCoefs& c, TtiRing& g,
                                               const TtiWeights& w, bool own, Finish&& finish) {
  constexpr int kT = P % 9;
  const float2 ce = u[c0];
  float xxp = c.xx[0] * ce.x, xxq = c.xx[0] * ce.y;
  float yyp = c.yy[0] * ce.x, yyq = c.yy[0] * ce.y;
  {
    constexpr int up = (P + 9 - kHalo) % 9, dn = (P + kHalo) % 9;
    const float zc = c.zz[kHalo], xc = c.xz[kHalo], yc = c.yz[kHalo];
    const float2 a = u[c0 + kHalo], b = u[c0 - kHalo];
    const float2 ya = u[c0 + kHalo * W], yb = u[c0 - kHalo * W];
    xxp = fmaf(c.xx[kHalo], a.x + b.x, xxp);
    xxq = fmaf(c.xx[kHalo], a.y + b.y, xxq);
    yyp = fmaf(c.yy[kHalo], ya.x + yb.x, yyp);
    yyq = fmaf(c.yy[kHalo], ya.y + yb.y, yyq);
    // Point t - 4 first: its sums are then complete.
    g.zzp[up] = fmaf(zc, ce.x, g.zzp[up]);
    g.zzq[up] = fmaf(zc, ce.y, g.zzq[up]);
    const float dxp = a.x - b.x, dxq = a.y - b.y;
    g.xzp[up] = fmaf(xc, dxp, g.xzp[up]);
    g.xzq[up] = fmaf(xc, dxq, g.xzq[up]);
    float dyp = 0.0f, dyq = 0.0f;
    if constexpr (kAz) {
      dyp = ya.x - yb.x;
      dyq = ya.y - yb.y;
      g.yzp[up] = fmaf(yc, dyp, g.yzp[up]);
      g.yzq[up] = fmaf(yc, dyq, g.yzq[up]);
    }
    if constexpr (kFold) {
      finish(up, SecondDerivatives{}, SecondDerivatives{});
    } else {
      finish(up, tti_ring_derivatives<kAz>(g, up, false), tti_ring_derivatives<kAz>(g, up, true));
    }
    // Point t + 4 starts.
    g.zzp[dn] = zc * ce.x;
    g.zzq[dn] = zc * ce.y;
    g.xzp[dn] = -xc * dxp;
    g.xzq[dn] = -xc * dxq;
    if constexpr (kAz) {
      g.yzp[dn] = -yc * dyp;
      g.yzq[dn] = -yc * dyq;
    }
  }
#pragma unroll
  for (int m = 1; m < kHalo; ++m) {
    const int up = (P + 9 - m) % 9, dn = (P + m) % 9;
    const float2 a = u[c0 + m], b = u[c0 - m];
    xxp = fmaf(c.xx[m], a.x + b.x, xxp);
    xxq = fmaf(c.xx[m], a.y + b.y, xxq);
    g.zzp[up] = fmaf(c.zz[m], ce.x, g.zzp[up]);
    g.zzq[up] = fmaf(c.zz[m], ce.y, g.zzq[up]);
    g.zzp[dn] = fmaf(c.zz[m], ce.x, g.zzp[dn]);
    g.zzq[dn] = fmaf(c.zz[m], ce.y, g.zzq[dn]);
    const float dxp = a.x - b.x, dxq = a.y - b.y;
    g.xzp[up] = fmaf(c.xz[m], dxp, g.xzp[up]);
    g.xzq[up] = fmaf(c.xz[m], dxq, g.xzq[up]);
    g.xzp[dn] = fmaf(-c.xz[m], dxp, g.xzp[dn]);
    g.xzq[dn] = fmaf(-c.xz[m], dxq, g.xzq[dn]);
    const float2 ya = u[c0 + m * W], yb = u[c0 - m * W];
    yyp = fmaf(c.yy[m], ya.x + yb.x, yyp);
    yyq = fmaf(c.yy[m], ya.y + yb.y, yyq);
    if constexpr (kAz) {
      const float dyp = ya.x - yb.x, dyq = ya.y - yb.y;
      g.yzp[up] = fmaf(c.yz[m], dyp, g.yzp[up]);
      g.yzq[up] = fmaf(c.yz[m], dyq, g.yzq[up]);
      g.yzp[dn] = fmaf(-c.yz[m], dyp, g.yzp[dn]);
      g.yzq[dn] = fmaf(-c.yz[m], dyq, g.yzq[dn]);
    }
  }
  g.zzp[kT] = fmaf(c.zz[0], ce.x, g.zzp[kT]);
  g.zzq[kT] = fmaf(c.zz[0], ce.y, g.zzq[kT]);
  if constexpr (kFold) {
    const float xxs = xxp + xxq, yys = yyp + yyq;
    g.ls[kT] = xxs + yys;
    float hs = w.xx * xxs, hq = w.xx * xxq;
    if constexpr (kAz) {
      float xyp = 0.0f, xyq = 0.0f;
      if (own) tti_plane_xy<W>(u, c0, c, xyp, xyq);
      hs += w.yy * yys + w.xy * (xyp + xyq);
      hq += w.yy * yyq + w.xy * xyq;
    }
    g.hs[kT] = hs;
    g.hq[kT] = hq;
  } else {
    (void)w;
    g.xxp[kT] = xxp;
    g.xxq[kT] = xxq;
    g.yyp[kT] = yyp;
    g.yyq[kT] = yyq;
    float xyp = 0.0f, xyq = 0.0f;
    if constexpr (kAz) {
      if (own) tti_plane_xy<W>(u, c0, c, xyp, xyq);
    } else {
      (void)own;
    }
    g.xyp[kT] = xyp;
    g.xyq[kT] = xyq;
  }
}

#if MINIMOD_GPU_CP_ASYNC
/// cp.async of 4 bytes global -> shared at a shared-window address plus a constant byte offset.
template <int kOffset>
__device__ __forceinline__ void tti_cp_async_4_at(unsigned smem, const float* gmem) {
  asm volatile("cp.async.ca.shared.global [%0+%2], [%1], 4;\n" ::"r"(smem), "l"(gmem), "n"(kOffset)
               : "memory");
}
/// Close this thread's cp.async copies issued since the last commit into one group.
__device__ __forceinline__ void tti_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/// Wait until at most N of this thread's committed cp.async groups are pending.
template <int N> __device__ __forceinline__ void tti_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
#endif // MINIMOD_GPU_CP_ASYNC

/// Registers a SM holds (sm_90), which the launch bounds below share among resident threads.
inline constexpr int kTtiRegistersPerSm = 65536;

/// Registers a thread of semi+b+tma needs without spilling (sm_90, ptxas 13.0): no per-thread
/// copy addresses leave its inner form 80 registers without azimuth and 96 with. Without azimuth
/// the layer forms, with phi and without, fit 80 too, which gives tiles of up to 256 threads 24
/// warps a SM (96 registers would give 20 for 128-thread tiles, 16 for 256-thread ones);
/// 512-thread tiles run one block a SM. With azimuth the layer form spills 92-100 bytes at 96, so
/// it gets 128. The build checks that none of these forms spills (CMakeLists.txt, -warn-spills).
constexpr int tti_tma_registers(bool az, bool layer) {
  return layer && az ? 128 : az ? 96 : 80;
}

/// Resident blocks per SM asked for a semi-stencil kernel of `threads` threads. ~70 live partial
/// sums need up to 128 registers: two blocks of up to 256 threads or one larger, 16 warps (with
/// azimuth semi_25d, semi+b and semi+2z spill 20-116 bytes in the inner form and 92-164 in the
/// layer form, semi+b+a with its fold 0-4; ptxas 13.0). Measured
/// on the H100 (900^3): fewer registers for more warps spill far more (80 registers, 24 warps: 43
/// ms a step), and no spill at 168 registers with 12 warps (32x12) is slower too (24.6 against
/// 23.0 ms for 32x16 at 128 registers, measured with the float medium). semi+b+tma asks for as many
/// blocks as its register need allows: 24 warps for 256-thread blocks without azimuth, 20 for
/// 128-thread blocks with it.
constexpr int tti_semi_min_blocks(TtiMethod m, int threads, bool az, bool layer) {
  if (m != TtiMethod::SemiBT) return threads <= 256 ? 2 : 1;
  const int blocks = kTtiRegistersPerSm / (tti_tma_registers(az, layer) * threads);
  return blocks > 1 ? blocks : 1;
}

#if MINIMOD_GPU_TENSOR_COPY
/// The tensor maps of semi+b+tma: boxes of (Dx + 12) x (Dy + 8) x 1 floats of p and of q.
struct TtiTensorMaps {
  CUtensorMap p, q;
};
#else
struct TtiTensorMaps {};
#endif

/// The streaming kernel of the semi-stencil methods (`maps` is used by semi+b+tma only; the
/// others get an empty one: their compiled code kept its spills, registers moved by 2 at most).
/// The shared buffer holds NB planes;
/// in phase P of the nine-plane loop plane t lives in slot P mod NB (NB is 1 or 3, or 2 with
/// semi+2z's pairing, so the slot is a constant). A slot holds (p, q) pairs, or with semi+b+tma
/// the plane of p followed by that of q (a tensor copy writes one field's box), 128-byte
/// aligned.
template <TtiMethod M, int Dx, int Dy, bool kAz, bool kLayer, bool kPhi = true>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy, tti_semi_min_blocks(M, Dx* Dy, kAz, kLayer))
    tti_semi_kernel(const TtiArgs a, [[maybe_unused]] const __grid_constant__ TtiTensorMaps maps) {
  using Col = TtiColumn<Dx, Dy, kLayer>;
  constexpr bool kSplit = M == TtiMethod::SemiBT;
  // semi+b+tma's shared rows are its copy's box rows, 4 floats wider than the tile with its halos
  // (tti_tma_box_w; the box starts at box_x below).
  constexpr int W = kSplit ? tti_tma_box_w(Dx) : Col::W;
  static_assert(!kSplit ||
                    (Col::H == tti_tma_box_h(Dy) && W * 4 % 16 == 0 && W <= 256 && Col::H <= 256),
                "a tensor copy's box rows are multiples of 16 bytes, its sides at most 256");
  constexpr int NB = tti_planes(M);
  constexpr int L = Col::kLoads;
  static_assert(9 % NB == 0 || M == TtiMethod::Semi2z, "slots must be constant in the 9-loop");
  // A slot's planes of p and q start on 128 bytes (tensor copies write there).
  constexpr int kPlane = kSplit ? (W * Col::H + 31) / 32 * 32 : Col::kCells + tti_spare_cells(M);
  alignas(kSplit ? 128 : 8) __shared__ float2 buffer[NB * kPlane];

  const Col col(a);
  const std::int64_t sy = a.layout.pitch, sz = a.layout.plane;
  const std::int64_t column = a.layout.index(col.i, col.j, 0);
  // Index of the column's point k >= 0 (formed three or four times a point).
  auto point = [&](int k) { return column + tti_wide(k, static_cast<int>(sz)); };
  // Where this thread's cells of a plane come from (add the plane's offset).
  const float* src_p[L];
  const float* src_q[L];
#pragma unroll
  for (int n = 0; n < L; ++n) {
    src_p[n] = a.f.p + col.gofs[n];
    src_q[n] = a.f.q + col.gofs[n];
  }
  // Plane t of both fields into registers, and from there into a slot.
  auto fetch = [&](int t, float2(&v)[L]) {
    const std::int64_t base = Col::plane_offset(a.layout, t);
#pragma unroll
    for (int n = 0; n < L; ++n)
      v[n] = make_float2(__ldg(src_p[n] + base), __ldg(src_q[n] + base));
  };
  auto store = [&](int slot, const float2(&v)[L]) {
#pragma unroll
    for (int n = 0; n < L; ++n)
      buffer[slot * kPlane + col.sofs[n]] = v[n];
  };

  // The plane loop starts up to eight planes early so that its length is a multiple of nine:
  // those planes (clamped to the field's ghosts) only feed points before the chunk, which are
  // never finished.
  TtiRing g{};
  const int end = col.ze + kHalo;
  const int span = end - (col.zs - kHalo);
  const int first = col.zs - kHalo - (9 - span % 9) % 9;
  // What point t - 3 reads besides the stencil, loaded a plane before it is finished so that its
  // memory latency hides behind a plane's work; and, when the in-plane derivatives are folded,
  // the axis of point t + 1, to weigh them when its plane arrives. Folding frees 12 registers; on
  // the H100 it pays for semi+b+a with azimuth (900^3: 21.1 -> 20.0 ms, no spills left), while the
  // other methods and semi+b+a without azimuth ran 3-15% slower with it. semi+b+tma is semi+b+a
  // with other copies, and folds too.
  constexpr bool kFold = kAz && (M == TtiMethod::SemiBA || M == TtiMethod::SemiBT);
  TtiPointIn ahead{};
  // (the axis of point t + 1 as stored, decoded where used: at the end of its plane's phase)
  std::uint32_t own_axis = 0;
  std::int32_t own_y = 0;
  auto own_weights = [&] {
    return tti_weights(tti_pair_lo_axis(own_axis), tti_axis_value(own_y), 0.0f);
  };
  // semi+b+tma: the box of the tile's plane starts at padded x `box_x` (16-byte aligned), 0-3
  // floats before the tile's halo; the thread's point in a shared plane.
  int box_x = 0, split_c0 = 0;
  if constexpr (kSplit) {
    const int halo_x =
        col.i - static_cast<int>(threadIdx.x) - kHalo + static_cast<int>(a.layout.x_offset);
    box_x = halo_x & ~3;
    split_c0 = (static_cast<int>(threadIdx.y) + kHalo) * W + static_cast<int>(threadIdx.x) + kHalo +
               (halo_x - box_x);
  }
  // Phase P: plane t (in `slot`) has arrived; point t - 4 is finished on the way.
  // Threads outside the box (col.active false) compute too, on cells of the tile, and only skip
  // the global loads and stores: a phase skipped by some threads would make the compiler keep every
  // ring slot alive across it (~200 registers instead of ~130).
  auto process = [&](int t, int slot, auto phase) {
    constexpr int P = decltype(phase)::value;
    const int k = t - kHalo;
    auto finish = [&](int r, const SecondDerivatives& dp, const SecondDerivatives& dq) {
      if (col.active && k >= col.zs) {
        if constexpr (kFold) {
          const TtiWeights w = tti_weights(ahead.nx(), ahead.ny(), ahead.nz());
          float lap_s, h_s, h_q;
          tti_ring_operators<kAz>(g, r, w, lap_s, h_s, h_q);
          tti_apply_operators<kLayer, kPhi>(
              a.f, point(k), sy, sz, a.c, w,
              tti_operators_from(lap_s, h_s, h_q, ahead.two_delta(), ahead.two_emd()), ahead);
        } else {
          (void)r;
          tti_finish_loaded<kAz, kLayer, kPhi>(a.f, point(k), sy, sz, a.c, dp, dq, ahead);
        }
      }
      // The next point's loads go out at once: a whole plane's work hides them.
      if (col.active && k + 1 >= col.zs && k + 1 < col.ze)
        ahead = tti_load_point<kAz, kLayer>(a.f, point(k + 1));
    };
    const bool own = t >= col.zs && t < col.ze;
    if constexpr (kSplit) {
      tti_semi_phase<kAz, kFold, W, P>(
          TtiSplitPlane<kPlane>{reinterpret_cast<const float*>(buffer) + slot * 2 * kPlane},
          split_c0, a.c, g, own_weights(), own, finish);
    } else {
      tti_semi_phase<kAz, kFold, W, P>(buffer + slot * kPlane, col.c0, a.c, g, own_weights(), own,
                                       finish);
    }
    if constexpr (kFold) {
      if (col.active && t + 1 >= col.zs && t + 1 < col.ze) {
        own_axis = a.f.axis_xz[point(t + 1)];
        if constexpr (kAz) own_y = a.f.axis_y[point(t + 1)];
      }
    }
  };

  if constexpr (M == TtiMethod::Semi) {
    // One shared plane: load, barrier, compute, barrier.
    for (int t0 = first; t0 < end; t0 += 9) {
      tti_phases<0>([&](auto phase) {
        const int t = t0 + decltype(phase)::value;
        float2 v[L];
        fetch(t, v);
        __syncthreads();
        store(0, v);
        __syncthreads();
        process(t, 0, phase);
      });
    }
  } else if constexpr (M == TtiMethod::Semi2z) {
    // Two planes at a time (slots 0 and 1), both loads in flight together: four pairs and a
    // single plane per nine.
    for (int t0 = first; t0 < end; t0 += 9) {
      tti_phases<0>([&](auto phase) {
        constexpr int P = decltype(phase)::value;
        const int t = t0 + P;
        if constexpr (P % 2 == 0) {
          float2 v0[L], v1[L];
          fetch(t, v0);
          if constexpr (P < 8) fetch(t + 1, v1);
          __syncthreads();
          store(0, v0);
          if constexpr (P < 8) store(1, v1);
          __syncthreads();
        }
        process(t, P % 2, phase);
      });
    }
  } else if constexpr (M == TtiMethod::SemiB) {
    // Plane t + 1 travels in registers while plane t is computed; its slot held plane t - 2,
    // whose readers all passed the previous plane's barrier.
    {
      float2 v[L];
      fetch(first, v);
      store(0, v);
    }
    __syncthreads();
    for (int t0 = first; t0 < end; t0 += 9) {
      tti_phases<0>([&](auto phase) {
        constexpr int P = decltype(phase)::value;
        const int t = t0 + P;
        float2 v[L];
        const bool more = t + 1 < end;
        if (more) fetch(t + 1, v);
        process(t, P % 3, phase);
        if (more) store((P + 1) % 3, v);
        __syncthreads();
      });
    }
  } else if constexpr (M == TtiMethod::SemiBA) {
#if MINIMOD_GPU_CP_ASYNC
    // Planes t + 1 and t + 2 in flight by cp.async while plane t is computed.
    unsigned dst[L];
#pragma unroll
    for (int n = 0; n < L; ++n)
      dst[n] = static_cast<unsigned>(__cvta_generic_to_shared(buffer + col.sofs[n]));
    // Plane t into slot S (p at byte 0 of a pair, q at byte 4). The slot of plane t + 2 held
    // plane t - 1, whose readers all passed the previous plane's barrier.
    auto copy = [&](int t, auto slot) {
      constexpr int kBytes = decltype(slot)::value * kPlane * 8;
      const std::int64_t base = Col::plane_offset(a.layout, t);
#pragma unroll
      for (int n = 0; n < L; ++n) {
        if (col.has(n)) {
          tti_cp_async_4_at<kBytes>(dst[n], src_p[n] + base);
          tti_cp_async_4_at<kBytes + 4>(dst[n], src_q[n] + base);
        }
      }
    };
    copy(first, std::integral_constant<int, 0>{});
    tti_cp_async_commit();
    copy(first + 1, std::integral_constant<int, 1>{});
    tti_cp_async_commit();
    tti_cp_async_wait<1>();
    __syncthreads();
    for (int t0 = first; t0 < end; t0 += 9) {
      tti_phases<0>([&](auto phase) {
        constexpr int P = decltype(phase)::value;
        const int t = t0 + P;
        if (t + 2 < end) copy(t + 2, std::integral_constant<int, (P + 2) % 3>{});
        tti_cp_async_commit(); // possibly empty: the wait below counts groups
        process(t, P % 3, phase);
        tti_cp_async_wait<1>(); // plane t + 1 has landed
        __syncthreads();
      });
    }
#else
    static_assert(M != TtiMethod::SemiBA, "semi+b+a needs cp.async (MINIMOD_GPU_CP_ASYNC)");
#endif
  } else {
    // semi+b+tma: planes t + 1 and t + 2 in flight by tensor copies while plane t is computed.
    // Thread 0 copies a plane as one (Dx + 12) x (Dy + 8) box of p and one of q into its slot,
    // whose mbarrier counts the bytes; everyone waits on that barrier's phase before reading
    // the slot. The k-th use of a slot completes its barrier's phase k, so plane t, the
    // ((t - first) / 3)-th of its slot, waits for parity ((t - first) / 3) mod 2. The slot of
    // plane t + 2 held plane t - 1, whose readers all passed the previous plane's block
    // barrier. (Per-slot "empty" mbarriers that each warp arrives on, instead of that block
    // barrier, made semi+b+tma_32x8 1.5 times slower on the H100: thread 0 then waits for the
    // slowest warp before each copy, and the copy's latency lands on everyone's path.)
    static_assert(M == TtiMethod::SemiBT, "unknown semi-stencil method");
#if MINIMOD_GPU_TENSOR_COPY
    __shared__ alignas(8) std::uint64_t bars[3];
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    const unsigned bar0 = tma_smem_address(bars);
    const unsigned buf0 = tma_smem_address(buffer);
    // The box's padded y is the tile's y0 (its halo starts kHalo before, padded y counts from
    // the first ghost row); its x is box_x.
    const int by = col.j - static_cast<int>(threadIdx.y);
    auto copy = [&](int t, auto slot) {
      constexpr int S = decltype(slot)::value;
      constexpr unsigned kBox = W * Col::H * 4u, kSlot = 2u * kPlane * 4u;
      const int bz = max(t, -kHalo) + kHalo;
      tma_expect_bytes(bar0 + 8 * S, 2 * kBox);
      tma_load_3d(buf0 + S * kSlot, &maps.p, box_x, by, bz, bar0 + 8 * S);
      tma_load_3d(buf0 + S * kSlot + kSlot / 2, &maps.q, box_x, by, bz, bar0 + 8 * S);
    };
    if (leader) {
      for (int s = 0; s < 3; ++s)
        tma_barrier_init(bar0 + 8 * s, 1);
    }
    __syncthreads();
    if (leader) {
      copy(first, std::integral_constant<int, 0>{});
      copy(first + 1, std::integral_constant<int, 1>{});
    }
    tma_wait(bar0, 0);
    // Nine planes a round, three uses of each slot: plane t0 + P + 1 of round r is the
    // (3r + (P + 1) / 3)-th use of its slot, of parity (r + (P + 1) / 3) mod 2.
    unsigned round = 0;
    for (int t0 = first; t0 < end; t0 += 9, ++round) {
      tti_phases<0>([&](auto phase) {
        constexpr int P = decltype(phase)::value;
        const int t = t0 + P;
        if (leader && t + 2 < end) copy(t + 2, std::integral_constant<int, (P + 2) % 3>{});
        process(t, P % 3, phase);
        if (t + 1 < end) tma_wait(bar0 + 8 * ((P + 1) % 3), (round + (P + 1) / 3) & 1u);
        __syncthreads();
      });
    }
#endif
  }
}

#endif // MINIMOD_DEVICE_COMPILER

} // namespace minimod::gpu
