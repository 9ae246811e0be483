#pragma once
/// The C-PML of the TTI equation on the CPU (kernels/tti_cpml.hpp): its memory variables in host
/// memory, the memory pass of a step and the layer update of a box.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/tti_K.hpp"
#include "kernels/tti_cpml.hpp"

#include <vector>

namespace minimod {

/// psi and zeta of p and of q and the mixed memory of every slab, zero at the start.
class TtiCpmlHostMemory {
public:
  /// Zeroed memory for `grid` with `layer`, viewed with `profile`'s arrays (which must outlive
  /// this object).
  void setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile);
  /// Zero every memory variable.
  void reset();
  const TtiCpmlView& view() const { return m_view; }

private:
  CpmlHostMemory m_p, m_q;
  std::vector<float> m_mix[3][2];
  TtiCpmlView m_view;
};

/// The memory pass of a step: psi of p and of q over every slab, from p^n and q^n.
void tti_cpml_memory_pass_cpu(const TtiCpmlView& v, const float* p, const float* q,
                              const FieldLayout& l);

/// The C-PML layer update of both fields over box `b` (f.cpml set, after the memory pass). A
/// work-sharing loop without a barrier: called inside a parallel region, the box's (z, y) rows are
/// shared among its threads; outside one, the caller's thread does them all.
void tti_cpml_update_box_cpu(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c,
                             const Box& b);

} // namespace minimod
