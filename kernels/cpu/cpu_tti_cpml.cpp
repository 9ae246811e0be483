#include "kernels/cpu/cpu_tti_cpml.hpp"

#include <algorithm>

namespace minimod {

void TtiCpmlHostMemory::setup(const Grid& grid, const LayerWidths& layer,
                              const CpmlProfile& profile) {
  m_p.setup(grid, layer, profile);
  m_q.setup(grid, layer, profile);
  m_view = TtiCpmlView{};
  m_view.p = m_p.view();
  m_view.q = m_q.view();
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const std::size_t n = cpml_slab_points(grid, layer, axis, face == 1, 0);
      m_mix[axis][face].assign(n * kTtiCpmlMix, 0.0f);
      m_view.mix[axis][face] = n ? m_mix[axis][face].data() : nullptr;
      m_view.slab[axis][face] = static_cast<std::int64_t>(n);
    }
  }
}

void TtiCpmlHostMemory::reset() {
  m_p.reset();
  m_q.reset();
  for (auto& axis : m_mix)
    for (auto& face : axis)
      std::fill(face.begin(), face.end(), 0.0f);
}

void tti_cpml_memory_pass_cpu(const TtiCpmlView& v, const float* p, const float* q,
                              const FieldLayout& l) {
  cpml_memory_pass_cpu(v.p, p, l);
  cpml_memory_pass_cpu(v.q, q, l);
}

namespace {

template <bool kAzimuth>
void update_box(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c, const Box& b) {
  const TtiCpmlView& v = *f.cpml;
  const std::int64_t sy = l.pitch, sz = l.plane;
#pragma omp for collapse(2) schedule(static) nowait
  for (int k = b.z0; k < b.z1; ++k) {
    for (int j = b.y0; j < b.y1; ++j) {
      const std::int64_t row = l.index(0, j, k);
      for (int i = b.x0; i < b.x1; ++i)
        tti_cpml_update_point<kAzimuth>(f, v, row + i, sy, sz, c, i, j, k);
    }
  }
}

} // namespace

void tti_cpml_update_box_cpu(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c,
                             const Box& b) {
  if (f.axis_y)
    update_box<true>(f, l, c, b);
  else
    update_box<false>(f, l, c, b);
}

} // namespace minimod
