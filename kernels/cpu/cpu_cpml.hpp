#pragma once
/// The C-PML on the CPU (kernels/cpml.hpp): the memory pass of a step and the layer update of
/// the acoustic equation, OpenMP over (z, y) rows like the kernel `cpu`.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/cpml.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <vector>

namespace minimod {

/// The memory variables psi and zeta of every axis and face of a grid, in host memory, and the
/// view of them with the profile's arrays.
class CpmlHostMemory {
public:
  /// Zeroed memory for `grid` with `layer`, viewed with `profile`'s arrays (which must outlive
  /// this object).
  void setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile);
  /// Zero every memory variable.
  void reset();
  /// The view for kernels; null pointers until setup.
  const CpmlView& view() const { return m_view; }

private:
  std::vector<float> m_psi[3][2], m_zeta[3][2];
  CpmlView m_view;
};

/// The memory pass of a step: psi of every axis over its slabs from u^n (padded layout `l`).
void cpml_memory_pass_cpu(const CpmlView& v, const float* u, const FieldLayout& l);

/// The acoustic C-PML layer update of the points of box `b` (f.cpml set, after the memory pass).
void cpml_update_layer_cpu(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                           const Box& b);

} // namespace minimod
