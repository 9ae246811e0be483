/// The CPU reference kernel `cpu`: the per-point math of stencil_K.hpp over any list of region
/// pieces in one OpenMP parallel region (cpu_sweep: (y, z) tiles, dynamic schedule, rows in memory
/// order), vectorised along x. Every point computes exactly the expressions of stencil_K.hpp in
/// their order, and the build keeps the compiler from fusing them (-ffp-contract=off), so results
/// do not depend on the tiling, the thread count or the vector width. Under a C-PML the layer
/// pieces take the C-PML update (kernels/cpu/cpu_cpml.cpp) and the inner pieces this sweep.
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_sweep.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

namespace minimod {
namespace {

/// Points [x0, x1) of the row starting at `row` (the linear index of x = 0), inner update.
inline void inner_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& coefs) {
  // A local copy: its coefficients stay in vector registers across the loop, where the caller's
  // (captured by reference) are broadcast from memory at every use.
  const StencilCoefs c = coefs;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
#pragma omp simd
  for (int i = x0; i < x1; ++i) {
    const std::int64_t p = row + i;
    v[p] = inner_update(u[p], v[p], vp2dt2[p], laplacian_25(u, p, sy, sz, c));
  }
}

/// Points [x0, x1) of the row starting at `row`, absorbing-layer update (u and phi).
inline void layer_row(const IsoFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                      std::int64_t sz, const StencilCoefs& coefs) {
  const StencilCoefs c = coefs;
  const float* __restrict__ u = f.u;
  float* __restrict__ v = f.v;
  const float* __restrict__ vp2dt2 = f.vp2dt2;
  float* __restrict__ phi = f.phi;
  const float* __restrict__ eta = f.eta;
#pragma omp simd
  for (int i = x0; i < x1; ++i) {
    const std::int64_t p = row + i;
    const float lap = laplacian_25(u, p, sy, sz, c);
    const float grad = eta_gradient_term(u, eta, p, sy, sz, c);
    float phi_next;
    v[p] = layer_update(u[p], v[p], vp2dt2[p], lap, phi[p], eta[p], grad, &phi_next);
    phi[p] = phi_next;
  }
}

/// Every piece of regions[0, count) in one parallel region.
void update_regions(const IsoFields& f, const FieldLayout& l, const StencilCoefs& coefs,
                    const Region* regions, int count) {
  const std::int64_t sy = l.pitch, sz = l.plane;
  const StencilCoefs& c = coefs;
  cpu_sweep(regions, count, CpuTile{}, [&](const Region& r, int j, int k) {
    const std::int64_t row = l.index(0, j, k);
    if (r.kind() == RegionKind::Inner)
      inner_row(f, row, r.box.x0, r.box.x1, sy, sz, c);
    else
      layer_row(f, row, r.box.x0, r.box.x1, sy, sz, c);
  });
}

/// The CPU reference: handles every region kind, any list of boxes.
class CpuKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference: one OpenMP region over (y, z) tiles of all pieces, SIMD along x";
  }
  BackendKind backend() const override { return BackendKind::Cpu; }
  Physics physics() const override { return Physics::Acoustic; }
  bool handles(RegionKind) const override { return true; }
  bool handles_cpml() const override { return true; }
  void launch(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Region& r,
              void*) const override {
    launch_regions(f, l, c, &r, 1, nullptr);
  }
  void launch_regions(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                      const Region* regions, int count, void*) const override {
    if (f.cpml == nullptr) {
      update_regions(f, l, c, regions, count);
      return;
    }
    for (int i = 0; i < count; ++i) {
      const Region& r = regions[i];
      if (r.box.empty()) continue;
      if (r.kind() == RegionKind::Inner)
        update_regions(f, l, c, &r, 1);
      else
        cpml_update_layer_cpu(f, l, c, r.box);
    }
  }
};

} // namespace

void register_cpu_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<CpuKernel>(), true);
  register_cpu_tti_kernels(registry);
}

} // namespace minimod
