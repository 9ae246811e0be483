/// Launchers, explicit instantiations and registration of the gmem_3d family.

#include "kernels/gpu/gmem_3d.cuh"

#include "kernels/gpu/cpml_gpu.cuh"

#include "kernels/gpu/gpu_check.hpp"

#include <memory>

namespace minimod::gpu {

template <int Dx, int Dy, int Dz> std::string Gmem3dKernel<Dx, Dy, Dz>::description() const {
  return "3D blocking, " + tile() +
         " threads, one point per thread, stencil read from global memory (inner and layer)";
}

template <int Dx, int Dy, int Dz>
void Gmem3dKernel<Dx, Dy, Dz>::launch(const IsoFields& f, const FieldLayout& layout,
                                      const StencilCoefs& coefs, const Region& region,
                                      void* stream) const {
  const Box& b = region.box;
  if (b.empty()) return;
  if (region.kind() == RegionKind::Layer && f.cpml) {
    cpml_layer_update_gpu(f, layout, coefs, b, static_cast<gpuStream_t>(stream));
    return;
  }
  const dim3 block(Dx, Dy, Dz);
  const dim3 grid = tile_grid(b);
  const auto s = static_cast<gpuStream_t>(stream);
  if (region.kind() == RegionKind::Inner) {
    gmem_3d_kernel<Dx, Dy, Dz, RegionKind::Inner>
        <<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, nullptr, nullptr, layout, coefs, b);
  } else {
    require_layer_fields(f);
    gmem_3d_kernel<Dx, Dy, Dz, RegionKind::Layer>
        <<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, f.phi, f.eta, layout, coefs, b);
  }
  MINIMOD_GPU_CHECK_LAUNCH(launch_name(region.kind()), grid, block, 0);
}

// The registered tiles. 32 along x keeps each warp on one 128-byte line of a row.
template class Gmem3dKernel<32, 4, 4>;
template class Gmem3dKernel<32, 8, 4>;
template class Gmem3dKernel<64, 4, 2>;
template class Gmem3dKernel<16, 8, 8>;

void register_gmem_3d_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<Gmem3dKernel<32, 4, 4>>(), /*family_default=*/true);
  registry.add(std::make_unique<Gmem3dKernel<32, 8, 4>>());
  registry.add(std::make_unique<Gmem3dKernel<64, 4, 2>>());
  registry.add(std::make_unique<Gmem3dKernel<16, 8, 8>>());
}

} // namespace minimod::gpu
