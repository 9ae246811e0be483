/// The shared part of the tiled acoustic CUDA kernels (tiled_kernel.hpp).

#include "kernels/gpu/tiled_kernel.hpp"

#include "kernels/gpu/launch_limits.hpp"

#include <stdexcept>
#include <utility>

namespace minimod::gpu {

TiledCudaKernel::TiledCudaKernel(std::string family, int dx, int dy, int dz, bool inner, bool layer)
    : GpuKernel(GpuKernelInfo{std::move(family), dx, dy, dz, Physics::Acoustic, inner, layer}),
      m_inner_launch(name() + "<inner>"), m_layer_launch(name() + "<layer>"), m_dx(dx), m_dy(dy),
      m_dz(dz) {}

std::string TiledCudaKernel::can_run(const Region& region, const FieldLayout& layout) const {
  // The common checks: the kind is handled and the box lies inside the field.
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  const Box& b = region.box;
  if (b.empty()) return {};
  return tile_grid_limit(b.nx(), b.ny(), b.nz(), m_dx, m_dy, m_dz);
}

dim3 TiledCudaKernel::tile_grid(const Box& b) const {
  return dim3(static_cast<unsigned>(ceil_div(b.nx(), m_dx)),
              static_cast<unsigned>(ceil_div(b.ny(), m_dy)),
              static_cast<unsigned>(ceil_div(b.nz(), m_dz)));
}

const char* TiledCudaKernel::launch_name(RegionKind kind) const {
  return kind == RegionKind::Inner ? m_inner_launch.c_str() : m_layer_launch.c_str();
}

void TiledCudaKernel::require_layer_fields(const IsoFields& f) const {
  if (f.phi == nullptr || f.eta == nullptr)
    throw std::invalid_argument(name() + ": a layer region needs the phi and eta fields");
}

} // namespace minimod::gpu
