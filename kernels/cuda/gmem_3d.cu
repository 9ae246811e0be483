/// Launchers, explicit instantiations and registration of the gmem_3d family.

#include "kernels/cuda/gmem_3d.cuh"
#include "kernels/cuda/launch_limits.hpp"

#include "kernels/cuda/gpu_check.hpp"

#include <memory>
#include <stdexcept>

namespace minimod::gpu {

template <int Dx, int Dy, int Dz>
Gmem3dKernel<Dx, Dy, Dz>::Gmem3dKernel()
    : m_inner_launch_name(Gmem3dKernel::name() + "<inner>"),
      m_layer_launch_name(Gmem3dKernel::name() + "<layer>") {}

template <int Dx, int Dy, int Dz> std::string Gmem3dKernel<Dx, Dy, Dz>::name() const {
  return "gmem_3d_" + std::to_string(Dx) + "x" + std::to_string(Dy) + "x" + std::to_string(Dz);
}

template <int Dx, int Dy, int Dz> std::string Gmem3dKernel<Dx, Dy, Dz>::description() const {
  return "3D blocking, " + std::to_string(Dx) + "x" + std::to_string(Dy) + "x" +
         std::to_string(Dz) +
         " threads, one point per thread, stencil read from global memory (inner and layer)";
}

template <int Dx, int Dy, int Dz>
std::string Gmem3dKernel<Dx, Dy, Dz>::can_run(const Region& region,
                                              const FieldLayout& layout) const {
  // Block size: checked at compile time (static_assert in the class).
  // The common checks: the kind is handled and the box lies inside the field.
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  const Box& b = region.box;
  if (b.empty()) return {};
  return tile_grid_limit(b.nx(), b.ny(), b.nz(), Dx, Dy, Dz);
}

template <int Dx, int Dy, int Dz>
void Gmem3dKernel<Dx, Dy, Dz>::launch(const IsoFields& f, const FieldLayout& layout,
                                      const StencilCoefs& coefs, const Region& region,
                                      void* stream) const {
  const Box& b = region.box;
  if (b.empty()) return;
  const dim3 block(Dx, Dy, Dz);
  const dim3 grid(static_cast<unsigned>(ceil_div(b.nx(), Dx)),
                  static_cast<unsigned>(ceil_div(b.ny(), Dy)),
                  static_cast<unsigned>(ceil_div(b.nz(), Dz)));
  const auto s = static_cast<gpuStream_t>(stream);
  if (region.kind() == RegionKind::Inner) {
    gmem_3d_kernel<Dx, Dy, Dz, RegionKind::Inner>
        <<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, nullptr, nullptr, layout, coefs, b);
    MINIMOD_GPU_CHECK_LAUNCH(m_inner_launch_name.c_str(), grid, block, 0);
  } else {
    if (f.phi == nullptr || f.eta == nullptr)
      throw std::invalid_argument(name() + ": a layer region needs the phi and eta fields");
    gmem_3d_kernel<Dx, Dy, Dz, RegionKind::Layer>
        <<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, f.phi, f.eta, layout, coefs, b);
    MINIMOD_GPU_CHECK_LAUNCH(m_layer_launch_name.c_str(), grid, block, 0);
  }
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
