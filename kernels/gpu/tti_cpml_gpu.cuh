#pragma once
/// The C-PML of the TTI equation on CUDA (kernels/tti_cpml.hpp): the device memory variables of a
/// run, the memory pass of a step, and the layer kernel that every TTI kernel family launches for
/// its layer regions when the boundary is a C-PML: one thread a point, global memory, the
/// per-point math of the CPU reference. The slabs are a few percent of a large grid's points, so
/// one plain kernel serves every family instead of a C-PML form of each.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/cpml_gpu.cuh"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/tti_K.hpp"
#include "kernels/tti_cpml.hpp"

namespace minimod::gpu {

/// A TTI run's C-PML in device memory: psi and zeta of p and of q, and the mixed memory.
class TtiCpmlDevice {
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
  const TtiCpmlView& view() const { return m_view; }
  /// Queue the memory pass of a step: psi of p and q at every slab point from p^n and q^n.
  void memory_pass(const float* p, const float* q, const FieldLayout& layout,
                   gpuStream_t stream) const;

private:
  bool m_on = false;
  CpmlDevice m_p, m_q;
  DeviceBuffer m_mix[3][2];
  TtiCpmlView m_view;
};

/// Queue the TTI C-PML layer update of box `b` (f.cpml: a host pointer to a view of device
/// memory; the memory pass of the step queued before on the same stream or joined into it).
void tti_cpml_layer_update_gpu(const TtiFields& f, const FieldLayout& layout, const TtiCoefs& coefs,
                               const Box& b, gpuStream_t stream);

} // namespace minimod::gpu
