#pragma once
/// The C-PML on CUDA and HIP (kernels/cpml.hpp): the device copy of a run's profile and memory
/// variables, and the acoustic C-PML layer update that the layer kernels with `handles_cpml()`
/// launch for their layer regions. The update is fused, with no memory pass over the slabs: one
/// pass over each layer region forms psi^n of every
/// slab the point is in from psi^(n-1) and u^n, writes it to the second psi buffer and steps zeta
/// and u; the buffers swap after the step. The z slabs' centre streams along z in st_reg_shft_25d's
/// tiles (launch_cpml_z_slab: a thread a point, its column of u and psi^n in registers, the x and
/// y neighbours from a shared plane) and the y slabs along y (register queues of u and psi^n of a
/// quad's column); the x slabs and the z slabs' edges go point by point,
/// the neighbours' psi^n along y and z through cpml_psi_taps (docs/kernels.md, "C-PML"). The
/// TTI C-PML (tti_cpml_gpu.cuh) keeps one psi buffer of p and of q and a memory pass a step: its
/// one-thread-a-point update through the taps measured slower than the pass (docs/kernels.md).

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/cpml.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

namespace minimod::gpu {

/// A run's C-PML in device memory.
class CpmlDevice {
public:
  /// Upload `profile` and allocate zeroed memory variables for `grid` with `layer`. `fused`: for
  /// cpml_layer_update_gpu, with the taps (cpml_psi_taps) and psi twice (psi^(n-1) read, psi^n
  /// written); else for memory_pass (the TTI C-PML), psi once.
  void setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile,
             gpuStream_t stream, bool fused = false);
  /// Queue zeros over the memory variables.
  void zero(gpuStream_t stream);
  /// Free everything; on() is false after.
  void release();
  bool on() const { return m_on; }
  /// The view (device pointers), for kernels.
  const CpmlView& view() const { return m_view; }
  /// Queue the memory pass of a step (not fused): psi of every slab point from u^n.
  void memory_pass(const float* u, const FieldLayout& layout, gpuStream_t stream) const;
  /// After every step's layer update (fused): psi^n becomes the step's psi^(n-1).
  void end_step();

private:
  bool m_on = false;
  bool m_fused = false;
  DeviceBuffer m_profile[3][4]; ///< a, b, 1/kappa, d(1/kappa)/dx per axis
  DeviceBuffer m_taps[3];       ///< cpml_psi_taps per axis
  DeviceBuffer m_psi[3][2], m_psi_next[3][2], m_zeta[3][2];
  CpmlView m_view;
};

/// Queue the fused acoustic C-PML layer update of box `b` (f.cpml: a host pointer to the view of a
/// fused CpmlDevice). Every layer point of a step must be updated before CpmlDevice::end_step.
void cpml_layer_update_gpu(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                           const Box& b, gpuStream_t stream);

} // namespace minimod::gpu
