/// The CPU reference TTI kernel `cpu`: the per-point math of tti_K.hpp over region boxes, OpenMP
/// across (z, y) rows and SIMD along x, like the isotropic `cpu`. The regions of a step go through
/// one parallel region (launch_tti_regions): seven fork-joins a step cost more than the small
/// layer regions themselves when the cores are shared.
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_tti_cpml.hpp"
#include "kernels/kernel.hpp"
#include "kernels/tti_K.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace minimod {
namespace {

/// One region of both fields, (z, y) rows shared among the threads of the enclosing parallel
/// region and SIMD along x, like the isotropic `cpu`. No barrier: regions are disjoint and only
/// read p and q, so the threads go on to the next region at once.
template <bool kAzimuth, bool kLayer, bool kPhi = true>
void update_box(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c, const Box& b) {
  const std::int64_t sy = l.pitch, sz = l.plane;
#pragma omp for collapse(2) schedule(static) nowait
  for (int k = b.z0; k < b.z1; ++k) {
    for (int j = b.y0; j < b.y1; ++j) {
      const std::int64_t row = l.index(0, j, k);
#pragma omp simd
      for (int i = b.x0; i < b.x1; ++i) {
        tti_update_point<kAzimuth, kLayer, kPhi>(f, row + i, sy, sz, c);
      }
    }
  }
}

/// Every region of `regions[0, count)` in one parallel region.
void update_regions(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c,
                    const Region* regions, int count) {
  const bool azimuth = f.axis_y != nullptr;
  // The layer without phi where no point of it is driven (tti_layer_store).
  const bool phi = f.phi_p != nullptr;
  // One parallel region a step (not one a region): seven fork-joins a step cost more than the
  // small layer regions themselves when the cores are shared.
#pragma omp parallel
  for (int n = 0; n < count; ++n) {
    const Region& r = regions[n];
    if (r.box.empty()) continue;
    const bool layer = r.kind() == RegionKind::Layer;
    if (layer && f.cpml) { // the C-PML's layer (kernels/cpu/cpu_tti_cpml.cpp)
      tti_cpml_update_box_cpu(f, l, c, r.box);
      continue;
    }
    tti_with_form(azimuth, layer, phi, [&](auto kAz, auto kLayer, auto kPhi) {
      update_box<decltype(kAz)::value, decltype(kLayer)::value, decltype(kPhi)::value>(f, l, c,
                                                                                       r.box);
    });
  }
}

/// The CPU reference of the TTI equation: handles every region kind, any box.
class CpuTtiKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference (TTI): OpenMP over (z, y) rows, SIMD along x";
  }
  BackendKind backend() const override { return BackendKind::Cpu; }
  Physics physics() const override { return Physics::Tti; }
  bool handles(RegionKind) const override { return true; }
  bool handles_cpml() const override { return true; }
  void launch(const IsoFields&, const FieldLayout&, const StencilCoefs&, const Region&,
              void*) const override {
    throw std::logic_error(name() + " is a TTI kernel: launch it with launch_tti");
  }
  void launch_tti(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c, const Region& r,
                  void*) const override {
    update_regions(f, l, c, &r, 1);
  }
  void launch_tti_regions(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c,
                          const Region* regions, int count, void*) const override {
    update_regions(f, l, c, regions, count);
  }
};

} // namespace

void register_cpu_tti_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<CpuTtiKernel>(), true);
}

} // namespace minimod
