/// The CPU reference TTI kernel `cpu`: the per-point math of tti_K.hpp over any list of region
/// pieces in one OpenMP parallel region, like the isotropic `cpu` (cpu_sweep: (y, z) tiles taken
/// by the threads one at a time, rows in memory order through every piece that holds them), SIMD
/// along x. A row's x layer slabs and inner segment go one after another while the 73-point
/// stencil's p and q planes are in cache.
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_pass.hpp"
#include "kernels/cpu/cpu_sweep.hpp"
#include "kernels/cpu/cpu_tti_cpml.hpp"
#include "kernels/kernel.hpp"
#include "kernels/tti_K.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace minimod {
namespace {

/// Points [x0, x1) of the row starting at `row` (the linear index of x = 0), in one form.
template <bool kAzimuth, bool kLayer, bool kPhi>
void update_row(const TtiFields& f, std::int64_t row, int x0, int x1, std::int64_t sy,
                std::int64_t sz, const TtiCoefs& coefs) {
  // A local copy, whose coefficients the loop keeps in registers (cpu_kernel.cpp: inner_row).
  const TtiCoefs c = coefs;
#pragma omp simd
  for (int i = x0; i < x1; ++i)
    tti_update_point<kAzimuth, kLayer, kPhi>(f, row + i, sy, sz, c);
}

/// Points [r.box.x0, r.box.x1) of row (j, k) of piece r, in the piece's form: the layer without
/// phi where no point of it is driven (tti_layer_store).
void update_segment(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c, const Region& r,
                    int j, int k) {
  const std::int64_t row = l.index(0, j, k);
  tti_with_form(f.axis_y != nullptr, r.kind() == RegionKind::Layer, f.phi_p != nullptr,
                [&](auto kAz, auto kLayer, auto kPhi) {
                  update_row<decltype(kAz)::value, decltype(kLayer)::value, decltype(kPhi)::value>(
                      f, row, r.box.x0, r.box.x1, l.pitch, l.plane, c);
                });
}

/// Every piece of regions[0, count) in one parallel region.
void update_regions(const TtiFields& f, const FieldLayout& l, const TtiCoefs& coefs,
                    const Region* regions, int count) {
  const TtiCoefs& c = coefs;
  // Under a C-PML the layer pieces take its update (kernels/cpu/cpu_tti_cpml.cpp: worksharing
  // loops of one parallel region) and the sweep below only the inner ones.
  if (f.cpml) {
#pragma omp parallel
    for (int n = 0; n < count; ++n)
      if (!regions[n].box.empty() && regions[n].kind() == RegionKind::Layer)
        tti_cpml_update_box_cpu(f, l, c, regions[n].box);
  }
  // The 73-point stencil reads 9 planes of p and of q: half the inner tile's rows of the
  // isotropic sweep keep them in L2.
  cpu_sweep(regions, count, CpuTile{16, 64}, [&](const Region& r, int j, int k) {
    if (f.cpml && r.kind() == RegionKind::Layer) return;
    update_segment(f, l, c, r, j, k);
  });
}

/// The CPU reference of the TTI equation: handles every region kind, any box.
class CpuTtiKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return "cpu"; }
  std::string description() const override {
    return "CPU reference (TTI): one OpenMP region over (y, z) tiles of all pieces, SIMD along x";
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

/// A TTI layer point's cost in inner points, for the pass's bands: TTI is bound by the
/// arithmetic every point shares, and a step of 160^3 with 27-point layers (70% of the points in
/// them) took about as long as one without (within the 4% of this host's noise).
constexpr double kTtiLayerWeight = 1.0;

void cpu_tti_multi_step_pass(float* p, float* p_before, float* q, float* q_before,
                             const TtiFields& medium, const FieldLayout& l, const TtiCoefs& coefs,
                             const Region* regions, int count, int steps, int band,
                             const CpuPassPlaneHook& after_plane, CpuPassRates* rates) {
  // As the acoustic pass: even steps read p and q and write p_before and q_before, odd steps the
  // other way round; phi_p is updated in place.
  TtiFields fields[2] = {medium, medium};
  fields[0].p = p;
  fields[0].p_next = p_before;
  fields[0].q = q;
  fields[0].q_next = q_before;
  fields[1].p = p_before;
  fields[1].p_next = p;
  fields[1].q = q_before;
  fields[1].q_next = q;
  cpu_pass_over_pieces(
      "cpu_tti_multi_step_pass", fields, regions, count, steps, band, kTtiLayerWeight,
      [&](const TtiFields& f, const Region& r, int j, int k) {
        update_segment(f, l, coefs, r, j, k);
      },
      after_plane, rates);
}

void register_cpu_tti_kernels(KernelRegistry& registry) {
  registry.add(std::make_unique<CpuTtiKernel>(), true);
}

} // namespace minimod
