/// Launchers, explicit instantiations and registration of the gmem_3d_f4 family.

#include "kernels/gpu/gmem_3d_f4.cuh"

#include "kernels/gpu/cpml_gpu.cuh"
#include "kernels/gpu/launch_limits.hpp"

#include "kernels/gpu/gpu_check.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>

namespace minimod::gpu {

template <int Dx, int Dy, int Dz> std::string Gmem3dF4Kernel<Dx, Dy, Dz>::description() const {
  return "3D blocking, " + tile() + " threads, 4 consecutive x points per thread (a tile of " +
         std::to_string(kQuad * Dx) + "x" + std::to_string(Dy) + "x" + std::to_string(Dz) +
         " points), stencil read from global memory with float4 loads (inner and layer)";
}

template <int Dx, int Dy, int Dz>
std::string Gmem3dF4Kernel<Dx, Dy, Dz>::can_run(const Region& region,
                                                const FieldLayout& layout) const {
  // The common checks: the kind is handled and the box lies inside the field.
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  const Box& b = region.box;
  if (b.empty()) return {};
  // float4 loads need 16-byte aligned rows and planes, and a lead of at least one quad before
  // x = 0 (the left neighbour quad of the first one must lie inside the row).
  if (layout.pitch % kQuad != 0 || layout.x_offset < kQuad)
    return "float4 loads need a row pitch that is a multiple of 4 floats and at least 4 floats "
           "before x = 0 (pitch " +
           std::to_string(layout.pitch) + ", x offset " + std::to_string(layout.x_offset) + ")";
  const long long quads = quad_span(b, layout).count;
  const int shift = quad_x_shift(Dx, quads);
  const long long gx = ceil_div(quads, Dx >> shift);
  const long long gy = ceil_div(b.ny(), Dy << shift), gz = ceil_div(b.nz(), Dz);
  if (auto limit = launch_grid_limit(gx, gy, gz); !limit.empty()) return limit;
  return {};
}

template <int Dx, int Dy, int Dz>
void Gmem3dF4Kernel<Dx, Dy, Dz>::launch(const IsoFields& f, const FieldLayout& layout,
                                        const StencilCoefs& coefs, const Region& region,
                                        void* stream) const {
  const Box& b = region.box;
  if (b.empty()) return;
  if (region.kind() == RegionKind::Layer && f.cpml) {
    cpml_layer_update_gpu(f, layout, coefs, b, static_cast<gpuStream_t>(stream));
    return;
  }
  if (!quad_aligned(f))
    throw std::invalid_argument(name() + ": float4 loads need 16-byte aligned field pointers");
  const QuadSpan quads = quad_span(b, layout);
  const int shift = quad_x_shift(Dx, quads.count);
  const dim3 block(Dx, Dy, Dz);
  const dim3 grid(static_cast<unsigned>(ceil_div(quads.count, Dx >> shift)),
                  static_cast<unsigned>(ceil_div(b.ny(), Dy << shift)),
                  static_cast<unsigned>(ceil_div(b.nz(), Dz)));
  const auto s = static_cast<gpuStream_t>(stream);
  if (region.kind() == RegionKind::Inner) {
    gmem_3d_f4_kernel<Dx, Dy, Dz, RegionKind::Inner><<<grid, block, 0, s>>>(
        f.u, f.v, f.vp2dt2, nullptr, nullptr, EtaTableView{}, layout, coefs, b, quads.x0, shift);
  } else {
    if (f.eta_table.rows == nullptr) require_layer_fields(f);
    if (f.phi == nullptr)
      throw std::invalid_argument(name() + ": a layer region needs the phi field");
    if (f.eta_table.rows != nullptr)
      gmem_3d_f4_kernel<Dx, Dy, Dz, RegionKind::Layer, true><<<grid, block, 0, s>>>(
          f.u, f.v, f.vp2dt2, f.phi, f.eta, f.eta_table, layout, coefs, b, quads.x0, shift);
    else
      gmem_3d_f4_kernel<Dx, Dy, Dz, RegionKind::Layer><<<grid, block, 0, s>>>(
          f.u, f.v, f.vp2dt2, f.phi, f.eta, EtaTableView{}, layout, coefs, b, quads.x0, shift);
  }
  MINIMOD_GPU_CHECK_LAUNCH(launch_name(region.kind()), grid, block, 0);
}

// The registered tiles (threads; points along x are 4 times Dx), the family default first. Tiles
// deep along z win on the seeds' problem: blocks run in x, y, z order, so the z halo of a block was
// last read a whole layer of tiles earlier and comes from DRAM again; a deeper tile re-reads less.
template class Gmem3dF4Kernel<8, 2, 16>;
template class Gmem3dF4Kernel<8, 4, 16>;
template class Gmem3dF4Kernel<16, 2, 16>;
template class Gmem3dF4Kernel<8, 2, 32>;
template class Gmem3dF4Kernel<16, 4, 8>;
template class Gmem3dF4Kernel<8, 8, 8>;
template class Gmem3dF4Kernel<32, 4, 4>;
template class Gmem3dF4Kernel<16, 8, 4>;

void register_gmem_3d_f4_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<Gmem3dF4Kernel<8, 2, 16>>(), /*family_default=*/true);
  registry.add(std::make_unique<Gmem3dF4Kernel<8, 4, 16>>());
  registry.add(std::make_unique<Gmem3dF4Kernel<16, 2, 16>>());
  registry.add(std::make_unique<Gmem3dF4Kernel<8, 2, 32>>());
  registry.add(std::make_unique<Gmem3dF4Kernel<16, 4, 8>>());
  registry.add(std::make_unique<Gmem3dF4Kernel<8, 8, 8>>());
  registry.add(std::make_unique<Gmem3dF4Kernel<32, 4, 4>>());
  registry.add(std::make_unique<Gmem3dF4Kernel<16, 8, 4>>());
}

} // namespace minimod::gpu
