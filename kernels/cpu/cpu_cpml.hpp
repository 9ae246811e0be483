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

/// The memory pass of a step: psi of every axis over its slabs from u^n (padded layout `l`), one
/// parallel region, each slab row one vectorised loop.
void cpml_memory_pass_cpu(const CpmlView& v, const float* u, const FieldLayout& l);

/// The memory update of one slab row: psi^n of the slab (axis, face) at row (j, k) from u^n, the
/// slab's points of the row for x, the whole row for y and z (the row must lie in the slab). The
/// expressions of cpml_memory_point, one vectorised loop.
void cpml_memory_row(const CpmlView& v, int axis, int face, const float* u, const FieldLayout& l,
                     int j, int k);

/// A whole acoustic step under a C-PML with the memory update fused into the sweep (defined with
/// the kernel `cpu`, kernels/cpu/cpu_kernel.cpp): the pieces must be disjoint and make up the
/// whole grid, and no memory pass runs before it. The (y, z) box is cut into tiles whose edges
/// include the slabs' inner edges, a slab one tile deep along its own axis, so that psi of a
/// slab point is read only within its tile; a tile updates psi^n of its z planes 4 planes and of
/// its y rows 4 rows before the rows that read them, psi of the x slabs in the row itself, in
/// place, then the row's pieces as the kernel `cpu` does. The same bits as the memory pass
/// followed by the kernel `cpu`'s sweep. Throws std::logic_error when the pieces do not cover
/// the grid.
void cpml_fused_step_cpu(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                         const Region* regions, int count);

/// The acoustic C-PML layer update of points [x0, x1) of row (j, k) (f.cpml set, after the memory
/// pass): the row's y and z slabs taken once, its x slab points and the others as runs of their
/// own, each one vectorised loop. Called by the kernel `cpu`'s sweep for its layer pieces; the
/// same expressions in the same order as cpml_update_layer_reference.
void cpml_layer_segment(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, int j,
                        int k, int x0, int x1);

/// The memory pass point by point (cpml_memory_point), the formulation the tests hold the
/// vectorised pass to.
void cpml_memory_pass_reference(const CpmlView& v, const float* u, const FieldLayout& l);

/// The layer update of box `b` point by point (cpml_axis_term per axis), the formulation the tests
/// hold cpml_layer_segment to.
void cpml_update_layer_reference(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                                 const Box& b);

} // namespace minimod
