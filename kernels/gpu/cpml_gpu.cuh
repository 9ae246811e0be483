#pragma once
/// The C-PML on CUDA (kernels/cpml.hpp): the device copy of a run's profile and memory variables,
/// the memory pass of a step, and the acoustic C-PML layer update that the layer kernels with
/// `handles_cpml()` launch for their layer regions: one thread a point, the per-point math of the
/// CPU reference.

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
  /// Upload `profile` and allocate zeroed memory variables for `grid` with `layer`.
  void setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile,
             gpuStream_t stream);
  /// Queue zeros over the memory variables.
  void zero(gpuStream_t stream);
  /// Free everything; on() is false after.
  void release();
  bool on() const { return m_on; }
  /// The view (device pointers), for kernels.
  const CpmlView& view() const { return m_view; }
  /// Queue the memory pass of a step: psi of every slab point from u^n.
  void memory_pass(const float* u, const FieldLayout& layout, gpuStream_t stream) const;

private:
  bool m_on = false;
  DeviceBuffer m_profile[3][4]; ///< a, b, 1/kappa, d(1/kappa)/dx per axis
  DeviceBuffer m_psi[3][2], m_zeta[3][2];
  CpmlView m_view;
};

/// Queue the acoustic C-PML layer update of box `b` (f.cpml: a host pointer to a view of device
/// memory; the memory pass of the step queued before on the same stream or joined into it).
void cpml_layer_update_gpu(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                           const Box& b, gpuStream_t stream);

} // namespace minimod::gpu
