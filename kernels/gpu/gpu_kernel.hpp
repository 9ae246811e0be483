#pragma once
/// The one base of every GPU kernel class, for both GPU backends: a registry entry is described
/// by a GpuKernelInfo (family, thread tile, equation, region kinds), from which GpuKernel answers
/// the registry's questions (name, family, backend, physics, handles) once for all families. A
/// family's class adds its description, its launch and, where its grid differs, can_run; a tile is
/// one `registry.add(std::make_unique<FamilyKernel<...>>())` line in the family's .cu file, which
/// nvcc compiles into the `cuda` backend and hipcc into the `hip` one (kGpuBackend).
///
/// This header is plain C++ (no device code), so host files may include it.

#include "kernels/kernel.hpp"

#include <string>
#include <utility>

namespace minimod::gpu {

/// What a GPU kernel is, as the registry shows it.
struct GpuKernelInfo {
  std::string family;                  ///< registered family name (`gmem_3d`, `semi+b`)
  int dx = 0;                          ///< threads of a block along x
  int dy = 0;                          ///< threads of a block along y
  int dz = 0;                          ///< along z; 0 for the 2D tiles of the streaming methods
  Physics physics = Physics::Acoustic; ///< the equation it advances
  bool inner = true;                   ///< it updates the inner region
  bool layer = true;                   ///< it updates absorbing-layer slabs
};

/// The tile in names: "32x16", or "32x4x4" with dz > 0.
inline std::string gpu_tile_name(int dx, int dy, int dz) {
  std::string t = std::to_string(dx) + "x" + std::to_string(dy);
  if (dz > 0) t += "x" + std::to_string(dz);
  return t;
}

/// A registry entry of the binary's GPU backend, described by its GpuKernelInfo:
/// `<family>_<tile>`.
class GpuKernel : public StencilKernel {
public:
  std::string name() const override { return m_name; }
  std::string family() const override { return m_info.family; }
  BackendKind backend() const override { return kGpuBackend; }
  Physics physics() const override { return m_info.physics; }
  bool handles(RegionKind kind) const override {
    return kind == RegionKind::Inner ? m_info.inner : m_info.layer;
  }
  /// What the kernel was registered as.
  const GpuKernelInfo& info() const { return m_info; }

protected:
  explicit GpuKernel(GpuKernelInfo info)
      : m_info(std::move(info)), m_tile(gpu_tile_name(m_info.dx, m_info.dy, m_info.dz)),
        m_name(m_info.family + "_" + m_tile) {}

  /// The tile, "32x4x4" or "32x16".
  const std::string& tile() const { return m_tile; }

private:
  GpuKernelInfo m_info;
  std::string m_tile, m_name;
};

} // namespace minimod::gpu
