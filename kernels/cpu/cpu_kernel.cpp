/// The CPU reference kernel `cpu`: the per-point math of stencil_K.hpp over a region box, OpenMP
/// across (z, y) rows and vectorised along x.
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

namespace minimod {
namespace {

void update_inner(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Box& b) {
  const std::int64_t sy = l.pitch, sz = l.plane;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = b.z0; k < b.z1; ++k) {
    for (int j = b.y0; j < b.y1; ++j) {
      const std::int64_t row = l.index(0, j, k);
#pragma omp simd
      for (int i = b.x0; i < b.x1; ++i) {
        const std::int64_t p = row + i;
        v[p] = inner_update(u[p], v[p], vp2dt2[p], laplacian_25(u, p, sy, sz, c));
      }
    }
  }
}

void update_layer(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Box& b) {
  const std::int64_t sy = l.pitch, sz = l.plane;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  float* __restrict__ phi = f.phi;
  const float* __restrict__ eta = f.eta;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = b.z0; k < b.z1; ++k) {
    for (int j = b.y0; j < b.y1; ++j) {
      const std::int64_t row = l.index(0, j, k);
#pragma omp simd
      for (int i = b.x0; i < b.x1; ++i) {
        const std::int64_t p = row + i;
        const float lap = laplacian_25(u, p, sy, sz, c);
        const float grad = eta_gradient_term(u, eta, p, sy, sz, c);
        float phi_next;
        v[p] = layer_update(u[p], v[p], vp2dt2[p], lap, phi[p], eta[p], grad, &phi_next);
        phi[p] = phi_next;
      }
    }
  }
}

/// The CPU reference: handles every region kind, any box.
class CpuKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference: OpenMP over (z, y) rows, SIMD along x";
  }
  BackendKind backend() const override { return BackendKind::Cpu; }
  Physics physics() const override { return Physics::Acoustic; }
  bool handles(RegionKind) const override { return true; }
  bool handles_cpml() const override { return true; }
  void launch(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Region& r,
              void*) const override {
    if (r.box.empty()) return;
    if (r.kind() == RegionKind::Inner) {
      update_inner(f, l, c, r.box);
    } else if (f.cpml) {
      cpml_update_layer_cpu(f, l, c, r.box);
    } else {
      update_layer(f, l, c, r.box);
    }
  }
};

} // namespace

void register_cpu_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<CpuKernel>(), true);
  register_cpu_tti_kernels(registry);
}

} // namespace minimod
