#pragma once
/// The TTI kernel family on CUDA (the semi-stencil paper, Sai et al. 2022: Table I and section
/// III; docs/kernels.md, "TTI"). Every kernel computes the six second derivatives of p and q at
/// its points its own way and finishes with tti_finish_point (kernels/tti_K.hpp), the update that
/// the CPU reference uses, so that all of them compute one function:
///
///   gmem_3d   3D blocks, one point a thread, all 2 x 73 stencil points read from global memory
///   smem_3d   3D blocks; the (Dx+8)(Dy+8)(Dz+8) boxes of p and q staged in shared memory
///   smem_25d  2D blocks streaming along z; the 2R+1 = 9 planes of the stencil, with their x/y
///             halos, in a circular buffer of shared planes (the mixed xz and yz derivatives need
///             off-centre points of the other planes, so a register column is not enough)
///   semi_25d  the same streaming with the semi-stencil done in registers: one shared plane. When
///             plane t arrives each of its values is read once and added to every pending point it
///             feeds: the row and column values give xx, yy of point t and the xz, yz terms of
///             points t-4..t+4, the centre their zz; point t-4 is then complete. The nine pending
///             points' sums live in registers (the plane loop is unrolled by nine, so the ring's
///             indices are constants): 33 shared loads a point a field instead of 73
///   semi+b    semi_25d with the next plane prefetched into registers while the current one is
///             computed: two shared planes and one barrier per plane
///   semi+b+a  semi+b with the prefetch done by cp.async straight into the second shared plane (no
///             staging registers)
///   semi+2z   semi_25d loading two planes per barrier pair (2z folding of the loads; the ring
///             still advances plane by plane), two shared planes
///
/// The layer form reads its phi drive's 1-point neighbours (p, q, eta) from global memory.

#include "kernels/cuda/gpu_runtime.hpp"
#include "kernels/field_layout.hpp"
#include "kernels/stencil_K.hpp"
#include "kernels/tti_K.hpp"
#include "solver/grid.hpp"

#include <cstdint>
#include <type_traits>

namespace minimod {
class KernelRegistry;
}

namespace minimod::gpu {

/// Register the TTI kernels (kernels/cuda/tti_kernels.cu).
void register_tti_kernels(KernelRegistry& registry);

/// How a TTI kernel reaches its stencil points.
enum class TtiMethod : int { Gmem3d, Smem3d, Smem25d, Semi, SemiB, SemiBA, Semi2z };

/// Family name of a method, as users type it.
constexpr const char* tti_family_name(TtiMethod m) {
  return m == TtiMethod::Gmem3d    ? "gmem_3d"
         : m == TtiMethod::Smem3d  ? "smem_3d"
         : m == TtiMethod::Smem25d ? "smem_25d"
         : m == TtiMethod::Semi    ? "semi_25d"
         : m == TtiMethod::SemiB   ? "semi+b"
         : m == TtiMethod::SemiBA  ? "semi+b+a"
                                   : "semi+2z";
}

/// Whether a method streams along z (2D blocks, one column of points a thread).
constexpr bool tti_streams(TtiMethod m) {
  return m != TtiMethod::Gmem3d && m != TtiMethod::Smem3d;
}

/// Shared planes of a streaming method's circular buffer.
constexpr int tti_planes(TtiMethod m) {
  return m == TtiMethod::Smem25d ? 2 * kHalo + 1 : m == TtiMethod::Semi ? 1 : 2;
}

/// Bytes of shared memory a kernel of method m and tile Dx x Dy x Dz stages (p and q).
constexpr int tti_smem_bytes(TtiMethod m, int dx, int dy, int dz) {
  return m == TtiMethod::Gmem3d   ? 0
         : m == TtiMethod::Smem3d ? 2 * (dx + 2 * kHalo) * (dy + 2 * kHalo) * (dz + 2 * kHalo) * 4
                                  : 2 * tti_planes(m) * (dx + 2 * kHalo) * (dy + 2 * kHalo) * 4;
}

/// Everything a TTI kernel reads, passed by value (the constant bank).
struct TtiArgs {
  TtiFields f;
  FieldLayout layout;
  TtiCoefs c;
  Box box;
  int z_chunk = 1; ///< streaming methods: planes per block along z (blockIdx.z picks the chunk)
};

#if defined(__CUDACC__)

// ---- gmem_3d ---------------------------------------------------------------------------------

template <int Dx, int Dy, int Dz, bool kAz, bool kLayer>
__global__ void __launch_bounds__(Dx* Dy* Dz) tti_gmem_3d_kernel(const TtiArgs a) {
  const int i = a.box.x0 + static_cast<int>(blockIdx.x) * Dx + static_cast<int>(threadIdx.x);
  const int j = a.box.y0 + static_cast<int>(blockIdx.y) * Dy + static_cast<int>(threadIdx.y);
  const int k = a.box.z0 + static_cast<int>(blockIdx.z) * Dz + static_cast<int>(threadIdx.z);
  if (i >= a.box.x1 || j >= a.box.y1 || k >= a.box.z1) return;
  tti_update_point<kAz, kLayer>(a.f, a.layout.index(i, j, k), a.layout.pitch, a.layout.plane, a.c);
}

// ---- smem_3d ---------------------------------------------------------------------------------

template <int Dx, int Dy, int Dz, bool kAz, bool kLayer>
__global__ void __launch_bounds__(Dx* Dy* Dz) tti_smem_3d_kernel(const TtiArgs a) {
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
  tti_finish_point<kAz, kLayer>(a.f, a.layout.index(i, j, k), sy, sz, a.c, dp, dq);
}

// ---- The streaming methods -------------------------------------------------------------------

/// One field's six second derivatives at one point, being summed plane by plane (semi-stencil):
/// xx, yy, xy come whole from the point's own plane; zz, xz, yz collect one term from each of the
/// nine planes k-4..k+4 as they stream past.
struct TtiSums {
  float xx = 0.0f, yy = 0.0f, xy = 0.0f, zz = 0.0f, xz = 0.0f, yz = 0.0f;
};

/// The semi-stencil step of one field for one arriving plane t (shared plane `u`, the thread at
/// c0): each value read once is used for every pending point that needs it. The row and column
/// values u(i +- m, j) and u(i, j +- m) give xx and yy of point t and the diagonal terms of xz
/// and yz of the points t - m (plane t lies m above them) and t + m (m below); the centre gives
/// zz of t and t +- m; the in-plane diagonals give xy of t. ring[(P + d) % 9] holds point t + d.
template <bool kAz, int W, int P>
__device__ __forceinline__ void tti_semi_plane(const float* u, int c0, const TtiCoefs& c,
                                               TtiSums (&ring)[9], bool in_chunk) {
  const float centre = u[c0];
  float xx = c.xx[0] * centre, yy = c.yy[0] * centre, xy = 0.0f;
  ring[P % 9].zz += c.zz[0] * centre;
#pragma unroll
  for (int m = 1; m <= kHalo; ++m) {
    const float a = u[c0 + m], b = u[c0 - m];
    xx += c.xx[m] * (a + b);
    TtiSums& above = ring[(P + 9 - m) % 9]; // point t - m: plane t is m above it
    TtiSums& below = ring[(P + m) % 9];     // point t + m: plane t is m below it
    const float zc = c.zz[m] * centre;
    above.zz += zc;
    below.zz += zc;
    const float dx = c.xz[m] * (a - b);
    above.xz += dx;
    below.xz -= dx;
    const float ya = u[c0 + m * W], yb = u[c0 - m * W];
    yy += c.yy[m] * (ya + yb);
    if constexpr (kAz) {
      const float dy = c.yz[m] * (ya - yb);
      above.yz += dy;
      below.yz -= dy;
      if (in_chunk)
        xy += c.xy[m] *
              ((u[c0 + m + m * W] + u[c0 - m - m * W]) - (u[c0 + m - m * W] + u[c0 - m + m * W]));
    }
  }
  TtiSums& own = ring[P % 9];
  own.xx = xx;
  own.yy = yy;
  own.xy = xy;
}

/// f(integral_constant<P>) for P = First .. 8, in order (the nine phases of the semi-stencil ring).
template <int First, class F> __device__ __forceinline__ void tti_phases(F&& f) {
  if constexpr (First < 9) {
    f(std::integral_constant<int, First>{});
    tti_phases<First + 1>(f);
  }
}

/// The derivatives of a finished point from its sums.
__device__ __forceinline__ SecondDerivatives tti_from_sums(const TtiSums& r) {
  return SecondDerivatives{r.xx, r.yy, r.zz, r.xy, r.xz, r.yz, r.xx + r.yy + r.zz};
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

/// cp.async of 4 bytes global -> shared; `smem` is a shared-window address.
__device__ __forceinline__ void tti_cp_async_4(unsigned smem, const float* gmem) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem), "l"(gmem) : "memory");
}
__device__ __forceinline__ void tti_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void tti_cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/// One block's view of its column: the tile's cells of a plane that this thread loads, the
/// thread's own point, and the z chunk.
template <int Dx, int Dy> struct TtiColumn {
  static constexpr int W = Dx + 2 * kHalo, H = Dy + 2 * kHalo;
  static constexpr int kCells = W * H, kThreads = Dx * Dy;
  static constexpr int kLoads = (kCells + kThreads - 1) / kThreads;
  int gofs[kLoads]; ///< offset of each of the thread's cells inside a padded plane
  int sofs[kLoads]; ///< its index inside a shared plane (kCells: no cell)
  int i, j;         ///< the thread's point
  bool active;      ///< (i, j) lies inside the box
  int c0;           ///< the thread's point inside a shared plane
  int zs, ze;       ///< the block's chunk [zs, ze)

  __device__ explicit TtiColumn(const TtiArgs& a) {
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    const int tid = ty * Dx + tx;
    const int x0 = a.box.x0 + static_cast<int>(blockIdx.x) * Dx;
    const int y0 = a.box.y0 + static_cast<int>(blockIdx.y) * Dy;
    // Cells past what the tile's points read are clamped (no load leaves the padded field).
    const int lx_max = min(W, a.box.x1 - x0 + 2 * kHalo) - 1;
    const int ly_max = min(H, a.box.y1 - y0 + 2 * kHalo) - 1;
#pragma unroll
    for (int n = 0; n < kLoads; ++n) {
      const int e = tid + n * kThreads;
      const int lx = min(e % W, lx_max), ly = min(e / W, ly_max);
      gofs[n] = (y0 - kHalo + ly + kHalo) * a.layout.pitch + x0 - kHalo + lx + a.layout.x_offset;
      sofs[n] = e < kCells ? e : kCells;
    }
    i = x0 + tx;
    j = y0 + ty;
    active = i < a.box.x1 && j < a.box.y1;
    c0 = (ty + kHalo) * W + tx + kHalo;
    zs = a.box.z0 + static_cast<int>(blockIdx.z) * a.z_chunk;
    ze = min(zs + a.z_chunk, a.box.z1);
  }

  /// Offset of plane k's first padded float; planes before the first ghost plane are clamped
  /// to it (the semi-stencil loop reads a few such planes, whose values no finished point uses).
  __device__ static std::int64_t plane_offset(const FieldLayout& l, int k) {
    return static_cast<std::int64_t>(max(k, -kHalo) + kHalo) * l.plane;
  }
};

/// Resident blocks per SM asked of the register allocator. The semi-stencil ring needs ~150-210
/// registers a thread unbounded; two 256-thread blocks (128 registers) keep 16 warps per SM.
/// smem_25d fits in 64 registers (it ran at 64 and 25.1 ms on the H100 before the compiler moved
/// to 78-109 and 31.5 ms): 1024 threads a SM at 64 registers.
template <TtiMethod M, int Threads>
constexpr int kTtiMinBlocks = M == TtiMethod::Smem25d ? 1024 / Threads
                              : Threads <= 256        ? 2
                                                      : 1;

/// The streaming kernel of every 2.5D method. The shared buffer holds NB planes of p, then NB of
/// q; plane t lives in slot t mod NB.
template <TtiMethod M, int Dx, int Dy, bool kAz, bool kLayer>
__global__ void __launch_bounds__(Dx* Dy, kTtiMinBlocks<M, Dx * Dy>)
    tti_stream_kernel(const TtiArgs a) {
  using Col = TtiColumn<Dx, Dy>;
  constexpr int W = Col::W;
  constexpr int kCells = Col::kCells;
  constexpr int NB = tti_planes(M);
  constexpr bool kSemi = M != TtiMethod::Smem25d;
  // One spare cell per plane: the target of the loads of threads that have no cell.
  constexpr int kPlane = kCells + 1;
  __shared__ float buffer[2 * NB * kPlane];
  float* const sp = buffer;
  float* const sq = buffer + NB * kPlane;

  const Col col(a);
  const std::int64_t sy = a.layout.pitch, sz = a.layout.plane;
  auto slot = [](int t) { return ((t % NB + NB) % NB) * kPlane; };

  // Plane t of p and q straight into its slot (plain loads).
  auto load_plane = [&](int t, int s) {
    const std::int64_t base = Col::plane_offset(a.layout, t);
#pragma unroll
    for (int n = 0; n < Col::kLoads; ++n) {
      sp[s + col.sofs[n]] = __ldg(a.f.p + base + col.gofs[n]);
      sq[s + col.sofs[n]] = __ldg(a.f.q + base + col.gofs[n]);
    }
  };

  // The point at plane k: its global index and the finishing update.
  if constexpr (M == TtiMethod::Smem25d) {
    // The ring index of plane t advances by one a plane (no division in the loop: slot() takes a
    // modulus, and 18 of them a point cost more than a fifth of the step).
    int cur = ((col.zs - kHalo) % NB + NB) % NB;
    for (int t = col.zs - kHalo; t < col.ze + kHalo; ++t, cur = cur + 1 == NB ? 0 : cur + 1) {
      __syncthreads(); // everyone is done with the plane that this slot held
      load_plane(t, cur * kPlane);
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
        tti_finish_point<kAz, kLayer>(a.f, a.layout.index(col.i, col.j, k), sy, sz, a.c, dp, dq);
      }
    }
  } else if constexpr (kSemi) {
    // The register ring of the nine points a plane contributes to (p and q). The plane loop is
    // unrolled by nine, so that every ring index is a compile-time constant and only the live
    // sums occupy registers. It starts up to eight planes early so that its length is a multiple
    // of nine: those planes (clamped to the field's ghosts) only feed points before the chunk,
    // which are never finished, and whose slots are zeroed before reuse.
    TtiSums rp[9], rq[9];
    const int end = col.ze + kHalo;
    const int span = end - (col.zs - kHalo);
    const int first = col.zs - kHalo - (9 - span % 9) % 9;
    // What point t - 4 reads besides the stencil, loaded one plane ahead so that its memory
    // latency hides behind a plane's work (the ring's registers leave room for few warps).
    TtiPointIn ahead{};
    auto point_index = [&](int k) { return a.layout.index(col.i, col.j, k); };
    // Plane t (in slot s) has arrived: its contributions, then point t - 4 is complete, then the
    // loads of point t - 3 go out.
    auto process = [&](int t, int s, auto phase) {
      constexpr int P = decltype(phase)::value;
      if (!col.active) return;
      const bool in_chunk = t >= col.zs && t < col.ze;
      tti_semi_plane<kAz, W, P>(sp + s, col.c0, a.c, rp, in_chunk);
      tti_semi_plane<kAz, W, P>(sq + s, col.c0, a.c, rq, in_chunk);
      constexpr int done = (P + 5) % 9; // point t - 4
      const int k = t - kHalo;
      if (k >= col.zs)
        tti_finish_loaded<kAz, kLayer>(a.f, point_index(k), sy, sz, a.c, tti_from_sums(rp[done]),
                                       tti_from_sums(rq[done]), ahead);
      rp[done] = TtiSums{}; // the slot of point t + 5
      rq[done] = TtiSums{};
      if (k + 1 >= col.zs && k + 1 < col.ze)
        ahead = tti_load_point<kAz, kLayer>(a.f, point_index(k + 1));
    };
    if constexpr (M == TtiMethod::Semi) {
      // One shared plane: load, barrier, compute, barrier.
      for (int t0 = first; t0 < end; t0 += 9) {
        tti_phases<0>([&](auto phase) {
          const int t = t0 + decltype(phase)::value;
          __syncthreads();
          load_plane(t, 0);
          __syncthreads();
          process(t, 0, phase);
        });
      }
    } else if constexpr (M == TtiMethod::Semi2z) {
      // Two planes at a time in two slots, both loads in flight together (four pairs and a
      // single plane per nine).
      for (int t0 = first; t0 < end; t0 += 9) {
        tti_phases<0>([&](auto phase) {
          constexpr int P = decltype(phase)::value;
          const int t = t0 + P;
          if constexpr (P % 2 == 0) {
            __syncthreads();
            load_plane(t, slot(t));
            if constexpr (P < 8) load_plane(t + 1, slot(t + 1));
            __syncthreads();
          }
          process(t, slot(t), phase);
        });
      }
    } else if constexpr (M == TtiMethod::SemiB) {
      // Plane t+1 travels in registers while plane t is computed; its slot held plane t-1, whose
      // readers all passed the previous plane's barrier.
      constexpr int L = Col::kLoads;
      load_plane(first, slot(first));
      __syncthreads();
      for (int t0 = first; t0 < end; t0 += 9) {
        tti_phases<0>([&](auto phase) {
          const int t = t0 + decltype(phase)::value;
          float np[L], nq[L];
          const bool more = t + 1 < end;
          if (more) {
            const std::int64_t base = Col::plane_offset(a.layout, t + 1);
#pragma unroll
            for (int n = 0; n < L; ++n) {
              np[n] = __ldg(a.f.p + base + col.gofs[n]);
              nq[n] = __ldg(a.f.q + base + col.gofs[n]);
            }
          }
          process(t, slot(t), phase);
          if (more) {
            const int s = slot(t + 1);
#pragma unroll
            for (int n = 0; n < L; ++n) {
              sp[s + col.sofs[n]] = np[n];
              sq[s + col.sofs[n]] = nq[n];
            }
          }
          __syncthreads();
        });
      }
    } else { // SemiBA: plane t+1 copied by cp.async into its slot while plane t is computed
      auto copy_plane = [&](int t) {
        const std::int64_t base = Col::plane_offset(a.layout, t);
        const int s = slot(t);
#pragma unroll
        for (int n = 0; n < Col::kLoads; ++n) {
          tti_cp_async_4(static_cast<unsigned>(__cvta_generic_to_shared(sp + s + col.sofs[n])),
                         a.f.p + base + col.gofs[n]);
          tti_cp_async_4(static_cast<unsigned>(__cvta_generic_to_shared(sq + s + col.sofs[n])),
                         a.f.q + base + col.gofs[n]);
        }
        tti_cp_async_commit();
      };
      copy_plane(first);
      tti_cp_async_wait_all();
      __syncthreads();
      for (int t0 = first; t0 < end; t0 += 9) {
        tti_phases<0>([&](auto phase) {
          const int t = t0 + decltype(phase)::value;
          if (t + 1 < end) copy_plane(t + 1);
          process(t, slot(t), phase);
          tti_cp_async_wait_all();
          __syncthreads();
        });
      }
    }
  }
}

#endif // __CUDACC__

} // namespace minimod::gpu
