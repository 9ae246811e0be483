#pragma once
/// The smem_3d family (Sai et al. 2022, section 5.2, smem_u): 3D blocking with the tile of u and
/// its halo of kHalo points on every side staged in shared memory. Each region is cut into Dx x Dy
/// x Dz tiles, one thread block per tile and one grid point per thread. The block first copies the
/// (Dx + 8) x (Dy + 8) x (Dz + 8) box of u around its tile into shared memory with one flat loop
/// over the box (each thread copies every kThreads-th element; the loop's bound is the only
/// condition, and only its last trip can fail it, instead of a branch per axis and face), then sums
/// the 25-point star from shared memory. In the layer, eta's 1-point stencil is read from global
/// memory (read-only path); u's neighbours for the eta-gradient term come from the tile.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/tiled_kernel.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <string>

namespace minimod::gpu {

/// Copy the box of `src` whose first point is `origin` and whose extents are Sx x Sy x Sz (x
/// fastest) into `dst` (shared memory, the same shape, densely packed). Local coordinates are
/// clamped to (lx_max, ly_max, lz_max) so that no read leaves the field: the clamped slots hold
/// duplicates that no point inside the region reads. All threads of the block must call this.
/// \tparam Sx, Sy, Sz extents of the staged box
/// \tparam Threads threads in the block
template <int Sx, int Sy, int Sz, int Threads>
__device__ __forceinline__ void stage_box(float* dst, const float* __restrict__ src,
                                          std::int64_t origin, std::int64_t sy, std::int64_t sz,
                                          int lx_max, int ly_max, int lz_max, int tid) {
  constexpr int kElems = Sx * Sy * Sz;
  constexpr int kTrips = (kElems + Threads - 1) / Threads;
  MINIMOD_UNROLL
  for (int t = 0; t < kTrips; ++t) {
    const int e = tid + t * Threads;
    // The one condition: only the last trip can run past the box (known at compile time).
    if ((kElems % Threads == 0 || t + 1 < kTrips) || e < kElems) {
      const int lx = e % Sx;
      const int rest = e / Sx;
      const int ly = rest % Sy;
      const int lz = rest / Sy;
      dst[e] = __ldg(src + origin + static_cast<std::int64_t>(min(lz, lz_max)) * sz +
                     static_cast<std::int64_t>(min(ly, ly_max)) * sy + min(lx, lx_max));
    }
  }
}

/// stage_box with 16-byte copies, for a box whose rows start on a 16-byte boundary and lie whole
/// inside the field along x (so only y and z are clamped). `dst` must be 16-byte aligned.
/// \tparam Sx, Sy, Sz extents of the staged box (Sx a multiple of 4)
/// \tparam Threads threads in the block
template <int Sx, int Sy, int Sz, int Threads>
__device__ __forceinline__ void stage_box_quads(float* dst, const float* __restrict__ src,
                                                std::int64_t origin, std::int64_t sy,
                                                std::int64_t sz, int ly_max, int lz_max, int tid) {
  static_assert(Sx % 4 == 0, "rows of whole quads");
  constexpr int kRowQuads = Sx / 4;
  constexpr int kQuads = kRowQuads * Sy * Sz;
  constexpr int kTrips = (kQuads + Threads - 1) / Threads;
  MINIMOD_UNROLL
  for (int t = 0; t < kTrips; ++t) {
    const int e = tid + t * Threads;
    // The one condition: only the last trip can run past the box (known at compile time).
    if ((kQuads % Threads == 0 || t + 1 < kTrips) || e < kQuads) {
      const int qx = e % kRowQuads;
      const int rest = e / kRowQuads;
      const int ly = rest % Sy;
      const int lz = rest / Sy;
      reinterpret_cast<float4*>(dst)[e] = __ldg(reinterpret_cast<const float4*>(
          src + origin + static_cast<std::int64_t>(min(lz, lz_max)) * sz +
          static_cast<std::int64_t>(min(ly, ly_max)) * sy + 4 * qx));
    }
  }
}

/// One step of the update on the points of `box` (absolute grid coordinates), u's star from a
/// shared-memory tile. Blocks start at `tile_x0` + a multiple of Dx, where tile_x0 is the last
/// x <= box.x0 whose padded-row position is a multiple of 4 (threads left of box.x0 only help
/// stage): the staged rows of a block then start on 16-byte boundaries, and a block that lies
/// whole inside the box along x stages with 16-byte copies.
/// \tparam Dx threads (and points) per block along x
/// \tparam Dy threads (and points) per block along y
/// \tparam Dz threads (and points) per block along z
/// \tparam Kind RegionKind::Inner: plain update (phi, eta unused and may be null);
///              RegionKind::Layer: Minimod's PML update, also writes phi
template <int Dx, int Dy, int Dz, RegionKind Kind>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy* Dz)
    smem_3d_kernel(const float* __restrict__ u, float* __restrict__ v,
                   const float* __restrict__ vp2dt2, float* __restrict__ phi,
                   const float* __restrict__ eta, const FieldLayout layout,
                   const StencilCoefs coefs, const Box box, const int tile_x0) {
  constexpr int kSx = Dx + 2 * kHalo, kSy = Dy + 2 * kHalo, kSz = Dz + 2 * kHalo;
  constexpr int kPlane = kSx * kSy;
  __shared__ __align__(16) float sm_u[kSz * kPlane];

  const int bx0 = tile_x0 + static_cast<int>(blockIdx.x) * Dx;
  const int by0 = box.y0 + static_cast<int>(blockIdx.y) * Dy;
  const int bz0 = box.z0 + static_cast<int>(blockIdx.z) * Dz;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y),
            tz = static_cast<int>(threadIdx.z);
  const int i = bx0 + tx, j = by0 + ty, k = bz0 + tz;
  const bool inside = i >= box.x0 && i < box.x1 && j < box.y1 && k < box.z1;
  const std::int64_t sy = layout.pitch;
  const std::int64_t sz = layout.plane;
  const std::int64_t p = layout.index(i, j, k);

  // The point's own operands first, so that their loads are in flight during the staging; threads
  // outside the box (their p may lie past the field) load nothing.
  float v_p = 0.0f, vp2dt2_p = 0.0f, phi_p = 0.0f, eta_p = 0.0f;
  if (inside) {
    v_p = v[p];
    vp2dt2_p = __ldg(vp2dt2 + p);
    if constexpr (Kind == RegionKind::Layer) {
      phi_p = phi[p];
      eta_p = __ldg(eta + p);
    }
  }

  // Stage u on [b0 - R, min(b0 + D, box end) + R) per axis: slots past that are clamped copies.
  // The branch is uniform across the block.
  const std::int64_t origin = layout.index(bx0 - kHalo, by0 - kHalo, bz0 - kHalo);
  const int tid = tx + Dx * (ty + Dy * tz);
  if (Dx % 4 == 0 && bx0 + Dx <= box.x1) {
    stage_box_quads<kSx, kSy, kSz, Dx * Dy * Dz>(
        sm_u, u, origin, sy, sz, box.y1 - by0 + 2 * kHalo - 1, box.z1 - bz0 + 2 * kHalo - 1, tid);
  } else {
    stage_box<kSx, kSy, kSz, Dx * Dy * Dz>(sm_u, u, origin, sy, sz, box.x1 - bx0 + 2 * kHalo - 1,
                                           box.y1 - by0 + 2 * kHalo - 1,
                                           box.z1 - bz0 + 2 * kHalo - 1, tid);
  }
  __syncthreads();
  if (!inside) return;

  const int c = (tz + kHalo) * kPlane + (ty + kHalo) * kSx + (tx + kHalo);
  const float u_p = sm_u[c];
  const float lap = laplacian_25(sm_u, c, kSx, kPlane, coefs);
  if constexpr (Kind == RegionKind::Inner) {
    v[p] = inner_update(u_p, v_p, vp2dt2_p, lap);
  } else {
    // eta_gradient_term's expression and order, u from the tile and eta from global memory.
    const float deta_du =
        (__ldg(eta + p + 1) - __ldg(eta + p - 1)) * (sm_u[c + 1] - sm_u[c - 1]) * coefs.px +
        (__ldg(eta + p + sy) - __ldg(eta + p - sy)) * (sm_u[c + kSx] - sm_u[c - kSx]) * coefs.py +
        (__ldg(eta + p + sz) - __ldg(eta + p - sz)) * (sm_u[c + kPlane] - sm_u[c - kPlane]) *
            coefs.pz;
    float phi_next;
    v[p] = layer_update(u_p, v_p, vp2dt2_p, lap, phi_p, eta_p, deta_du, &phi_next);
    phi[p] = phi_next;
  }
}

/// The registry entry of one smem_3d tile: `smem_3d_<Dx>x<Dy>x<Dz>`, both region kinds.
/// \tparam Dx threads per block along x
/// \tparam Dy threads per block along y
/// \tparam Dz threads per block along z
template <int Dx, int Dy, int Dz> class Smem3dKernel final : public TiledCudaKernel {
public:
  static_assert(Dx > 0 && Dy > 0 && Dz > 0, "tile extents must be positive");
  static_assert(Dx * Dy * Dz <= 1024, "a thread block holds at most 1024 threads");
  static_assert((Dx + 2 * kHalo) * (Dy + 2 * kHalo) * (Dz + 2 * kHalo) * sizeof(float) <= 48 * 1024,
                "the staged tile must fit in 48 KB of static shared memory");

  /// Threads per block.
  static constexpr int kThreads = Dx * Dy * Dz;
  /// Shared memory per block in bytes (the tile of u and its halo).
  static constexpr int kSharedBytes =
      (Dx + 2 * kHalo) * (Dy + 2 * kHalo) * (Dz + 2 * kHalo) * static_cast<int>(sizeof(float));

  Smem3dKernel() : TiledCudaKernel("smem_3d", Dx, Dy, Dz, true, true) {}
  std::string description() const override;
  /// The block grid starts at tile_x0 (a 16-byte aligned x), not at the box.
  std::string can_run(const Region& region, const FieldLayout& layout) const override;
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;
};

/// Add every smem_3d tile to `registry`, the best measured one as the family default.
void register_smem_3d_kernels(KernelRegistry& registry);

} // namespace minimod::gpu
