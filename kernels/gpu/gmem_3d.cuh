#pragma once
/// The gmem_3d family (Sai et al. 2022, section 5.1): 3D blocking with global memory only. Each
/// region is cut into Dx x Dy x Dz tiles, one thread block per tile and one grid point per thread;
/// every thread reads its 25-point star straight from global memory (neighbours along x coalesce
/// across the warp; reuse along y and z is left to L1/L2). The per-point math is the shared
/// stencil_K.hpp, so these kernels compute exactly the CPU reference's function.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/tiled_kernel.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <string>

namespace minimod::gpu {

/// Threads in a Dx x Dy x Dz block.
template <int Dx, int Dy, int Dz> inline constexpr int kTileThreads = Dx* Dy* Dz;

/// One step of the update on the points of `box` (absolute grid coordinates).
/// \tparam Dx threads per block along x (the coalesced axis)
/// \tparam Dy threads per block along y
/// \tparam Dz threads per block along z
/// \tparam Kind RegionKind::Inner: plain update (phi, eta unused and may be null);
///              RegionKind::Layer: Minimod's PML update, also writes phi
template <int Dx, int Dy, int Dz, RegionKind Kind>
__global__ void MINIMOD_LAUNCH_BOUNDS((kTileThreads<Dx, Dy, Dz>))
    gmem_3d_kernel(const float* __restrict__ u, float* __restrict__ v,
                   const float* __restrict__ vp2dt2, float* __restrict__ phi,
                   const float* __restrict__ eta, const FieldLayout layout,
                   const StencilCoefs coefs, const Box box) {
  // Regions are arbitrary boxes, not tile multiples: threads past the box edge do nothing.
  const int i = box.x0 + static_cast<int>(blockIdx.x) * Dx + static_cast<int>(threadIdx.x);
  const int j = box.y0 + static_cast<int>(blockIdx.y) * Dy + static_cast<int>(threadIdx.y);
  const int k = box.z0 + static_cast<int>(blockIdx.z) * Dz + static_cast<int>(threadIdx.z);
  if (i >= box.x1 || j >= box.y1 || k >= box.z1) return;

  const std::int64_t p = layout.index(i, j, k);
  const std::int64_t sy = layout.pitch;
  const std::int64_t sz = layout.plane;
  // The point's own operands first, so that their loads are in flight during the star sum.
  const float u_p = u[p];
  const float v_p = v[p];
  const float vp2dt2_p = vp2dt2[p];
  if constexpr (Kind == RegionKind::Inner) {
    const float lap = laplacian_25(u, p, sy, sz, coefs);
    v[p] = inner_update(u_p, v_p, vp2dt2_p, lap);
  } else {
    const float phi_p = phi[p];
    const float eta_p = eta[p];
    const float lap = laplacian_25(u, p, sy, sz, coefs);
    const float deta_du = eta_gradient_term(u, eta, p, sy, sz, coefs);
    float phi_next;
    v[p] = layer_update(u_p, v_p, vp2dt2_p, lap, phi_p, eta_p, deta_du, &phi_next);
    phi[p] = phi_next;
  }
}

/// The registry entry of one gmem_3d tile: `gmem_3d_<Dx>x<Dy>x<Dz>`, both region kinds.
/// \tparam Dx threads per block along x
/// \tparam Dy threads per block along y
/// \tparam Dz threads per block along z
template <int Dx, int Dy, int Dz> class Gmem3dKernel final : public TiledCudaKernel {
public:
  static_assert(Dx > 0 && Dy > 0 && Dz > 0, "tile extents must be positive");
  static_assert(Dx * Dy * Dz <= 1024, "a thread block holds at most 1024 threads");

  /// Threads per block.
  static constexpr int kThreads = kTileThreads<Dx, Dy, Dz>;

  Gmem3dKernel() : TiledCudaKernel("gmem_3d", Dx, Dy, Dz, true, true) {}
  std::string description() const override;
  /// Its C-PML layer regions run the shared C-PML layer kernel (kernels/gpu/cpml_gpu.cuh).
  bool handles_cpml() const override { return true; }
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;
};

/// Add every gmem_3d tile to `registry`, gmem_3d_32x4x4 as the family default.
void register_gmem_3d_kernels(KernelRegistry& registry);

} // namespace minimod::gpu
