/// Launchers, explicit instantiations and registration of the smem_3d family.

#include "kernels/gpu/launch_limits.hpp"
#include "kernels/gpu/smem_3d.cuh"

#include "kernels/gpu/gpu_check.hpp"

#include <limits>
#include <memory>
#include <stdexcept>

namespace minimod::gpu {

namespace {

/// First x of the block grid: the last x <= box.x0 whose padded-row position is a multiple of 4
/// (positions are >= 0, so plain division rounds down).
int tile_x0(const Box& b, const FieldLayout& layout) {
  return (b.x0 + layout.x_offset) / 4 * 4 - layout.x_offset;
}

} // namespace

template <int Dx, int Dy, int Dz> std::string Smem3dKernel<Dx, Dy, Dz>::description() const {
  return "3D blocking, " + tile() + " threads, one point per thread, u tile and 4-point halo in " +
         std::to_string(kSharedBytes) +
         " B of shared memory, loaded by one flat loop (inner and layer)";
}

template <int Dx, int Dy, int Dz>
std::string Smem3dKernel<Dx, Dy, Dz>::can_run(const Region& region,
                                              const FieldLayout& layout) const {
  // The common checks: the kind is handled and the box lies inside the field.
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  const Box& b = region.box;
  if (b.empty()) return {};
  const long long gx = ceil_div(b.x1 - tile_x0(b, layout), Dx);
  const long long gy = ceil_div(b.ny(), Dy), gz = ceil_div(b.nz(), Dz);
  if (auto limit = launch_grid_limit(gx, gy, gz); !limit.empty()) return limit;
  return {};
}

template <int Dx, int Dy, int Dz>
void Smem3dKernel<Dx, Dy, Dz>::launch(const IsoFields& f, const FieldLayout& layout,
                                      const StencilCoefs& coefs, const Region& region,
                                      void* stream) const {
  const Box& b = region.box;
  if (b.empty()) return;
  const int x0 = tile_x0(b, layout);
  const dim3 block(Dx, Dy, Dz);
  const dim3 grid(static_cast<unsigned>(ceil_div(b.x1 - x0, Dx)),
                  static_cast<unsigned>(ceil_div(b.ny(), Dy)),
                  static_cast<unsigned>(ceil_div(b.nz(), Dz)));
  const auto s = static_cast<gpuStream_t>(stream);
  // The shared tile is static: the launch itself asks for no dynamic shared memory.
  if (region.kind() == RegionKind::Inner) {
    smem_3d_kernel<Dx, Dy, Dz, RegionKind::Inner>
        <<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, nullptr, nullptr, layout, coefs, b, x0);
  } else {
    require_layer_fields(f);
    smem_3d_kernel<Dx, Dy, Dz, RegionKind::Layer>
        <<<grid, block, 0, s>>>(f.u, f.v, f.vp2dt2, f.phi, f.eta, layout, coefs, b, x0);
  }
  MINIMOD_GPU_CHECK_LAUNCH(launch_name(region.kind()), grid, block, 0);
}

// The registered tiles, the family default first. 32 along x keeps each warp on one row of the
// tile (no bank conflicts); the 16-wide tile has 2-way conflicts on its x-neighbour reads.
template class Smem3dKernel<32, 4, 8>;
template class Smem3dKernel<32, 4, 4>;
template class Smem3dKernel<32, 8, 4>;
template class Smem3dKernel<16, 8, 8>;

void register_smem_3d_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<Smem3dKernel<32, 4, 8>>(), /*family_default=*/true);
  registry.add(std::make_unique<Smem3dKernel<32, 4, 4>>());
  registry.add(std::make_unique<Smem3dKernel<32, 8, 4>>());
  registry.add(std::make_unique<Smem3dKernel<16, 8, 8>>());
}

} // namespace minimod::gpu
