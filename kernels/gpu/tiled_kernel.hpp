#pragma once
/// What the acoustic GPU kernels with a Dx x Dy x Dz thread tile share (gmem_3d, gmem_3d_f4,
/// smem_3d, smem_eta): beside what GpuKernel answers (the name `<family>_<Dx>x<Dy>x<Dz>`, the
/// backend, the acoustic physics, the region kinds), can_run's checks for one block a tile, and
/// what a launch needs around the kernel (the names launch errors give it, the layer fields it
/// requires). A family's class adds its description and launch, and can_run where its grid
/// differs.

#include "kernels/gpu/gpu_kernel.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/kernel.hpp"

#include <string>

namespace minimod::gpu {

class TiledCudaKernel : public GpuKernel {
public:
  /// StencilKernel's checks, then that one block a tile of the box can be launched.
  std::string can_run(const Region& region, const FieldLayout& layout) const override;

protected:
  /// A kernel of `family` with a dx x dy x dz tile that updates inner regions when `inner` and
  /// absorbing-layer slabs when `layer`.
  TiledCudaKernel(std::string family, int dx, int dy, int dz, bool inner, bool layer);

  /// The launch grid of one block a tile of `b`.
  dim3 tile_grid(const Box& b) const;
  /// The kernel's name in launch errors: "gmem_3d_32x4x4<inner>" or "...<layer>".
  const char* launch_name(RegionKind kind) const;
  /// Throws std::invalid_argument naming the kernel when `f` lacks the layer fields (phi, eta).
  void require_layer_fields(const IsoFields& f) const;

private:
  std::string m_inner_launch, m_layer_launch;
  int m_dx, m_dy, m_dz;
};

} // namespace minimod::gpu
