/// Launchers, explicit instantiations and registration of the smem_eta family.

#include "kernels/gpu/smem_eta.cuh"

#include "kernels/gpu/gpu_check.hpp"

#include <memory>
#include <stdexcept>

namespace minimod::gpu {

template <int Dx, int Dy, int Dz> std::string SmemEtaKernel<Dx, Dy, Dz>::description() const {
  return "3D blocking, " + tile() +
         " threads, one point per thread, eta tile and 1-point halo in " +
         std::to_string(kSharedBytes) +
         " B of shared memory, u from global memory (absorbing layer only)";
}

template <int Dx, int Dy, int Dz>
void SmemEtaKernel<Dx, Dy, Dz>::launch(const IsoFields& f, const FieldLayout& layout,
                                       const StencilCoefs& coefs, const Region& region,
                                       void* stream) const {
  const Box& b = region.box;
  if (b.empty()) return;
  if (region.kind() != RegionKind::Layer)
    throw std::invalid_argument(name() + " updates absorbing-layer regions only, not region " +
                                region_name(region.id));
  require_layer_fields(f);
  const dim3 block(Dx, Dy, Dz);
  const dim3 grid = tile_grid(b);
  smem_eta_kernel<Dx, Dy, Dz><<<grid, block, 0, static_cast<gpuStream_t>(stream)>>>(
      f.u, f.v, f.vp2dt2, f.phi, f.eta, layout, coefs, b);
  MINIMOD_GPU_CHECK_LAUNCH(launch_name(RegionKind::Layer), grid, block, 0);
}

// The registered tiles: the seeds' 8x8x8, and 32x4x4 whose warps read whole rows of u.
template class SmemEtaKernel<32, 4, 4>;
template class SmemEtaKernel<8, 8, 8>;

void register_smem_eta_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<SmemEtaKernel<32, 4, 4>>(), /*family_default=*/true);
  registry.add(std::make_unique<SmemEtaKernel<8, 8, 8>>());
}

} // namespace minimod::gpu
