#include "kernels/cpu/cpu_cpml.hpp"

#include <algorithm>

namespace minimod {

void CpmlHostMemory::setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile) {
  m_view = make_cpml_view(grid, layer, profile);
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const std::size_t n = cpml_slab_points(grid, layer, axis, face == 1, 0);
      m_psi[axis][face].assign(cpml_slab_points(grid, layer, axis, face == 1, kHalo), 0.0f);
      m_zeta[axis][face].assign(n, 0.0f);
      m_view.psi[axis][face] = n ? m_psi[axis][face].data() : nullptr;
      m_view.zeta[axis][face] = n ? m_zeta[axis][face].data() : nullptr;
    }
  }
}

void CpmlHostMemory::reset() {
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      std::fill(m_psi[axis][face].begin(), m_psi[axis][face].end(), 0.0f);
      std::fill(m_zeta[axis][face].begin(), m_zeta[axis][face].end(), 0.0f);
    }
  }
}

void cpml_memory_pass_cpu(const CpmlView& v, const float* u, const FieldLayout& l) {
  const std::int64_t stride[3] = {1, l.pitch, l.plane};
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const int w = face == 0 ? v.lo[axis] : v.hi[axis];
      if (w == 0) continue;
      const int start = face == 0 ? 0 : v.n[axis] - w;
      int lo[3] = {0, 0, 0}, hi[3] = {v.n[0], v.n[1], v.n[2]};
      lo[axis] = start;
      hi[axis] = start + w;
      const std::int64_t s = stride[axis];
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = lo[2]; k < hi[2]; ++k) {
        for (int j = lo[1]; j < hi[1]; ++j) {
          const std::int64_t row = l.index(0, j, k);
          for (int i = lo[0]; i < hi[0]; ++i)
            cpml_memory_point(v, axis, face, u, row + i, s, i, j, k);
        }
      }
    }
  }
}

void cpml_update_layer_cpu(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                           const Box& b) {
  const CpmlView& v = *f.cpml;
  const std::int64_t sy = l.pitch, sz = l.plane;
  const float* __restrict__ u = f.u;
  float* __restrict__ next = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = b.z0; k < b.z1; ++k) {
    for (int j = b.y0; j < b.y1; ++j) {
      const std::int64_t row = l.index(0, j, k);
      for (int i = b.x0; i < b.x1; ++i) {
        const std::int64_t p = row + i;
        float sum = cpml_axis_term(v, 0, u, p, 1, i, j, k, cpml_second_derivative(u, p, 1, c.cx));
        sum += cpml_axis_term(v, 1, u, p, sy, i, j, k, cpml_second_derivative(u, p, sy, c.cy));
        sum += cpml_axis_term(v, 2, u, p, sz, i, j, k, cpml_second_derivative(u, p, sz, c.cz));
        next[p] = inner_update(u[p], next[p], vp2dt2[p], sum);
      }
    }
  }
}

} // namespace minimod
