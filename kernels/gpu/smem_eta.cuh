#pragma once
/// The smem_eta family (Sai et al. 2022, section 5.3, smem_eta_1): a layer-only kernel with 3D
/// blocking, one grid point per thread, eta's tile and its 1-point halo staged in shared memory and
/// u's 25-point star read from global memory (read-only path). eta enters the layer update through
/// a 7-point stencil of radius 1, so its staged box is only (Dx + 2) x (Dy + 2) x (Dz + 2); it is
/// copied by the same flat one-condition loop as smem_3d's u tile (each thread copies every
/// kThreads-th element) rather than by the seeds' tilted halo planes.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/smem_3d.cuh"
#include "kernels/gpu/tiled_kernel.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <string>

namespace minimod::gpu {

/// Halo of eta's stencil in the layer update.
inline constexpr int kEtaHalo = 1;

/// One step of the absorbing-layer update on the points of `box` (absolute grid coordinates),
/// eta from a shared-memory tile, everything else from global memory.
/// \tparam Dx threads (and points) per block along x
/// \tparam Dy threads (and points) per block along y
/// \tparam Dz threads (and points) per block along z
template <int Dx, int Dy, int Dz>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy* Dz)
    smem_eta_kernel(const float* __restrict__ u, float* __restrict__ v,
                    const float* __restrict__ vp2dt2, float* __restrict__ phi,
                    const float* __restrict__ eta, const FieldLayout layout,
                    const StencilCoefs coefs, const Box box) {
  constexpr int kSx = Dx + 2 * kEtaHalo, kSy = Dy + 2 * kEtaHalo, kSz = Dz + 2 * kEtaHalo;
  constexpr int kPlane = kSx * kSy;
  __shared__ float sm_eta[kSz * kPlane];

  const int bx0 = box.x0 + static_cast<int>(blockIdx.x) * Dx;
  const int by0 = box.y0 + static_cast<int>(blockIdx.y) * Dy;
  const int bz0 = box.z0 + static_cast<int>(blockIdx.z) * Dz;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y),
            tz = static_cast<int>(threadIdx.z);
  const int i = bx0 + tx, j = by0 + ty, k = bz0 + tz;
  const bool inside = i < box.x1 && j < box.y1 && k < box.z1;
  const std::int64_t sy = layout.pitch;
  const std::int64_t sz = layout.plane;
  const std::int64_t p = layout.index(i, j, k);

  // The point's own operands and its star first, so that the loads are in flight during the
  // staging; threads past the box edge (their p may lie past the field) load nothing.
  float u_p = 0.0f, v_p = 0.0f, vp2dt2_p = 0.0f, phi_p = 0.0f, lap = 0.0f;
  float du_x = 0.0f, du_y = 0.0f, du_z = 0.0f; // u(+1) - u(-1) per axis, from the star's loads
  if (inside) {
    u_p = __ldg(u + p);
    v_p = v[p];
    vp2dt2_p = __ldg(vp2dt2 + p);
    phi_p = phi[p];
    lap = laplacian_25(u, p, sy, sz, coefs);
    du_x = __ldg(u + p + 1) - __ldg(u + p - 1);
    du_y = __ldg(u + p + sy) - __ldg(u + p - sy);
    du_z = __ldg(u + p + sz) - __ldg(u + p - sz);
  }

  // Stage eta on [b0 - 1, min(b0 + D, box end) + 1) per axis (eta's ghost ring covers the ends).
  stage_box<kSx, kSy, kSz, Dx * Dy * Dz>(
      sm_eta, eta, layout.index(bx0 - kEtaHalo, by0 - kEtaHalo, bz0 - kEtaHalo), sy, sz,
      box.x1 - bx0 + 2 * kEtaHalo - 1, box.y1 - by0 + 2 * kEtaHalo - 1,
      box.z1 - bz0 + 2 * kEtaHalo - 1, tx + Dx * (ty + Dy * tz));
  __syncthreads();
  if (!inside) return;

  const int c = (tz + kEtaHalo) * kPlane + (ty + kEtaHalo) * kSx + (tx + kEtaHalo);
  // eta_gradient_term's expression and order, eta from the tile and u from global memory.
  const float deta_du = (sm_eta[c + 1] - sm_eta[c - 1]) * du_x * coefs.px +
                        (sm_eta[c + kSx] - sm_eta[c - kSx]) * du_y * coefs.py +
                        (sm_eta[c + kPlane] - sm_eta[c - kPlane]) * du_z * coefs.pz;
  float phi_next;
  v[p] = layer_update(u_p, v_p, vp2dt2_p, lap, phi_p, sm_eta[c], deta_du, &phi_next);
  phi[p] = phi_next;
}

/// The registry entry of one smem_eta tile: `smem_eta_<Dx>x<Dy>x<Dz>`, absorbing-layer regions
/// only (the inner region has no eta).
/// \tparam Dx threads per block along x
/// \tparam Dy threads per block along y
/// \tparam Dz threads per block along z
template <int Dx, int Dy, int Dz> class SmemEtaKernel final : public TiledCudaKernel {
public:
  static_assert(Dx > 0 && Dy > 0 && Dz > 0, "tile extents must be positive");
  static_assert(Dx * Dy * Dz <= 1024, "a thread block holds at most 1024 threads");

  /// Threads per block.
  static constexpr int kThreads = Dx * Dy * Dz;
  /// Shared memory per block in bytes (the tile of eta and its halo).
  static constexpr int kSharedBytes = (Dx + 2 * kEtaHalo) * (Dy + 2 * kEtaHalo) *
                                      (Dz + 2 * kEtaHalo) * static_cast<int>(sizeof(float));

  SmemEtaKernel() : TiledCudaKernel("smem_eta", Dx, Dy, Dz, false, true) {}
  std::string description() const override;
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;
};

/// Add every smem_eta tile to `registry`, the best measured one as the family default.
void register_smem_eta_kernels(KernelRegistry& registry);

} // namespace minimod::gpu
