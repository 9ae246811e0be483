/// The step in parts that a decomposed run interleaves with its halo exchange (kernels/backend.hpp:
/// StepPart, step_part_regions) and the hooks of the time loop (solver/simulation.hpp:
/// DomainHooks), on a grid that is not decomposed: the parts cover every point once, a step made
/// of them equals a whole step bit for bit on either equation, and hooks that pass everything
/// through leave a run unchanged.
#include "kernels/backend.hpp"
#include "kernels/tti_problem.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"
#include "solver/simulation.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/grid_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test_support::make_grid;
using test_support::widths;

/// How many times the pieces of both parts cover each point of the grid, and whether each piece
/// lies inside its region's box.
std::vector<int> coverage(const std::array<Region, kRegionCount>& regions, const Grid& g,
                          const Subdomain& s, bool* inside_region) {
  std::vector<int> count(g.points(), 0);
  *inside_region = true;
  for (const StepPart part : {StepPart::Shell, StepPart::Interior}) {
    for (const Region& piece : step_part_regions(regions, g, s, part)) {
      const Box& r = regions[static_cast<int>(piece.id)].box;
      const Box& b = piece.box;
      if (b.x0 < r.x0 || b.x1 > r.x1 || b.y0 < r.y0 || b.y1 > r.y1 || b.z0 < r.z0 || b.z1 > r.z1)
        *inside_region = false;
      for (int k = b.z0; k < b.z1; ++k)
        for (int j = b.y0; j < b.y1; ++j)
          for (int i = b.x0; i < b.x1; ++i)
            ++count[(static_cast<std::size_t>(k) * g.ny + j) * g.nx + i];
    }
  }
  return count;
}

TEST(StepParts, ShellAndInteriorCoverEveryPointOnce) {
  const Grid g = make_grid(23, 19, 17, 10, 10, 10);
  for (const LayerWidths& layer : {widths(0, 0, 0, 0, 0, 0), widths(5, 3, 2, 6, 0, 4)}) {
    const auto regions = make_regions(g, layer);
    for (int mask = 0; mask < 64; ++mask) {
      Subdomain s;
      for (int f = 0; f < 6; ++f)
        s.neighbour[static_cast<std::size_t>(f)] = (mask >> f) & 1;
      bool inside = false;
      const std::vector<int> count = coverage(regions, g, s, &inside);
      EXPECT_TRUE(inside) << "mask " << mask;
      for (std::size_t n = 0; n < count.size(); ++n) {
        ASSERT_EQ(count[n], 1) << "point " << n << ", neighbour mask " << mask;
      }
      // The shell is exactly the points within kHalo of a face with a neighbour.
      std::size_t shell = 0;
      for (const Region& piece : step_part_regions(regions, g, s, StepPart::Shell))
        shell += piece.box.points();
      std::size_t expect = 0;
      for (int k = 0; k < g.nz; ++k)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i) {
            const bool near =
                (s.neighbour[0] && i < kHalo) || (s.neighbour[1] && i >= g.nx - kHalo) ||
                (s.neighbour[2] && j < kHalo) || (s.neighbour[3] && j >= g.ny - kHalo) ||
                (s.neighbour[4] && k < kHalo) || (s.neighbour[5] && k >= g.nz - kHalo);
            expect += near ? 1 : 0;
          }
      EXPECT_EQ(shell, expect) << "mask " << mask;
    }
  }
}

TEST(StepParts, WithoutNeighbourTheInteriorIsTheRegions) {
  const Grid g = make_grid(23, 19, 17, 10, 10, 10);
  const auto regions = make_regions(g, widths(5, 3, 2, 6, 0, 4));
  EXPECT_TRUE(step_part_regions(regions, g, Subdomain{}, StepPart::Shell).empty());
  const auto interior = step_part_regions(regions, g, Subdomain{}, StepPart::Interior);
  std::size_t n = 0;
  for (const Region& r : regions) {
    if (r.box.empty()) continue;
    ASSERT_LT(n, interior.size());
    EXPECT_EQ(interior[n].id, r.id);
    EXPECT_EQ(interior[n].box.points(), r.box.points());
    EXPECT_EQ(interior[n].box.x0, r.box.x0);
    EXPECT_EQ(interior[n].box.z1, r.box.z1);
    ++n;
  }
  EXPECT_EQ(n, interior.size());
}

/// A small acoustic problem with a layer, a source and receivers.
AcousticProblem acoustic_problem(std::vector<float>& velocity, Survey& s) {
  s.path = "parts";
  s.grid.shape = {29, 26, 24};
  s.grid.spacing = {10, 10, 10};
  s.model.kind = ModelSpec::Kind::Constant;
  s.time.steps = 40;
  s.boundary.width = 5;
  SourceSpec src;
  src.position = {141.0, 123.0, 117.0};
  src.wavelet.kind = WaveletSpec::Kind::Ricker;
  src.wavelet.frequency = 25;
  s.sources = {src};
  s.receivers.push_back(ReceiverSpec{{60.0, 70.0, 80.0}, {}});
  s.receivers.push_back(ReceiverSpec{{200.0, 190.0, 45.0}, {}});
  velocity.assign(29u * 26u * 24u, 1900.0f);
  const Plan plan = make_plan(s, velocity);
  return build_acoustic_problem(s, plan, velocity);
}

/// A small TTI problem with azimuth, a layer, a source and receivers.
TtiProblem tti_problem() {
  const Grid g = make_grid(27, 25, 23, 10, 10, 10);
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2000.0f);
  m.epsilon.assign(n, 0.2f);
  m.delta.assign(n, 0.1f);
  m.theta.assign(n, 0.5f);
  m.phi.assign(n, 0.3f);
  TtiPlanOptions o;
  o.steps = 40;
  o.layer_width = 5;
  const TtiPlan plan = make_tti_plan(g, m, o);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::Ricker;
  w.frequency = 25;
  const TtiSource src{{131.0, 122.0, 108.0}, sample_wavelet(w, plan.dt, plan.steps, "w")};
  return build_tti_problem(plan, m, {src}, {{60, 70, 80}, {190, 180, 45}});
}

/// Every field and the traces after stepping `p` on the CPU backend, each step in parts (the
/// subdomain's neighbours flagged: a shell is updated first, but nothing writes the ghosts).
std::vector<std::vector<float>> run_in_parts(Problem& p, bool neighbours) {
  for (bool& n : p.subdomain.neighbour)
    n = neighbours;
  auto backend = make_cpu_backend();
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, p.physics()));
  backend->setup(p, kernels);
  for (int n = 0; n < p.steps; ++n) {
    backend->update(StepPart::Shell);
    backend->update(StepPart::Interior);
    backend->finish_step(n);
  }
  std::vector<std::vector<float>> out;
  for (int f = 0; f < static_cast<int>(wavefield_names(p.physics()).size()); ++f) {
    out.emplace_back();
    backend->fetch_field(f, out.back());
  }
  out.emplace_back();
  backend->fetch_traces(out.back());
  return out;
}

TEST(StepParts, ShellThenInteriorEqualsTheWholeStep) {
  std::vector<float> velocity;
  Survey s;
  AcousticProblem a = acoustic_problem(velocity, s);
  const auto whole_a = run_in_parts(a, false);
  EXPECT_EQ(run_in_parts(a, true), whole_a) << "acoustic";
  double peak = 0;
  for (const float x : whole_a.back())
    peak = std::max(peak, static_cast<double>(std::abs(x)));
  EXPECT_GT(peak, 0) << "the acoustic receivers recorded nothing";

  TtiProblem t = tti_problem();
  const auto whole_t = run_in_parts(t, false);
  ASSERT_EQ(whole_t.size(), 3u) << "p, q and the traces";
  EXPECT_EQ(run_in_parts(t, true), whole_t) << "tti";
}

/// Hooks that pass everything through and count the calls, checking their order.
class PassThroughHooks final : public DomainHooks {
public:
  explicit PassThroughHooks(int* calls) : m_calls(calls) {}
  void start_exchange(Backend& backend, int n) override {
    EXPECT_EQ(n, m_next) << "start_exchange out of order";
    EXPECT_FALSE(m_open);
    EXPECT_EQ(backend.halo_fields().size(), 1u);
    m_open = true;
    ++*m_calls;
  }
  void finish_exchange(Backend&, int n) override {
    EXPECT_TRUE(m_open);
    EXPECT_EQ(n, m_next);
    m_open = false;
    ++m_next;
  }
  FiniteScan reduce_scan(const FiniteScan& local) override { return local; }
  bool gather_field(const std::vector<float>& local, std::vector<float>& global) override {
    global = local;
    return true;
  }
  bool gather_traces(const std::vector<float>& local, std::vector<float>& global) override {
    global = local;
    return true;
  }

private:
  int* m_calls;
  int m_next = 0;
  bool m_open = false;
};

TEST(DomainHooksSeam, PassThroughHooksLeaveTheRunUnchanged) {
  std::vector<float> velocity;
  Survey s;
  (void)acoustic_problem(velocity, s);
  SimulationOptions o;
  o.backend = BackendChoice::Cpu;
  Simulation plain(s, velocity, o);
  plain.run({}, nullptr);
  Simulation hooked(s, velocity, o);
  int calls = 0;
  hooked.set_domain_hooks(std::make_unique<PassThroughHooks>(&calls));
  hooked.run({}, nullptr);
  EXPECT_EQ(calls, hooked.plan().steps);
  EXPECT_EQ(hooked.raw_traces(), plain.raw_traces());
  EXPECT_EQ(hooked.output_traces(), plain.output_traces());
  EXPECT_EQ(hooked.wavefield(), plain.wavefield());
}

} // namespace
} // namespace minimod
