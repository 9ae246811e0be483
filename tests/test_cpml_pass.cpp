/// The acoustic C-PML in the CPU multi-step pass (kernels/cpu/cpu_kernels.hpp:
/// cpu_multi_step_pass with a C-PML; docs/kernels.md, "The CPU multi-step pass"): several steps
/// in one pass over memory, the memory variables updated in place ahead of each step's rows, give
/// the bits of single steps of cpml_fused_step_cpu, for the kernel alone (grids of unequal widths
/// per face, interiors narrower than the stencil, bands of the least width and wider, any thread
/// count) and for the backend (a free surface, sources and receivers across the band edges and
/// next to the surface, passes of every length).
#include "kernels/backend.hpp"
#include "kernels/cpml.hpp"
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/kernel.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"

#include "tests/cpu_pass_steps.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/scoped_env.hpp"

#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace minimod {
namespace {

using test_support::expect_passes_give_single_steps;
using test_support::random_field;
using test_support::ScopedThreads;

/// Every memory variable of `v` (psi with its padding, then zeta), slab by slab.
std::vector<float> memory_of(const Grid& g, const LayerWidths& w, const CpmlView& v) {
  std::vector<float> out;
  for (int axis = 0; axis < 3; ++axis)
    for (int face = 0; face < 2; ++face) {
      const std::size_t psi = cpml_slab_points(g, w, axis, face == 1, kHalo);
      const std::size_t zeta = cpml_slab_points(g, w, axis, face == 1, 0);
      if (zeta == 0) continue;
      out.insert(out.end(), v.psi[axis][face], v.psi[axis][face] + psi);
      out.insert(out.end(), v.zeta[axis][face], v.zeta[axis][face] + zeta);
    }
  return out;
}

/// The pieces of make_regions that hold points.
std::vector<Region> pieces_of(const Grid& g, const LayerWidths& w) {
  std::vector<Region> out;
  for (const Region& r : make_regions(g, w))
    if (!r.box.empty()) out.push_back(r);
  return out;
}

/// The kernel's pass on grid `g` with `w` against single fused steps, from random fields and
/// memory variables made non-zero by two fused steps first: 2 to 8 steps a pass, bands of the
/// least width, 3 rows more and 48, 1 to 3 threads, on 2 threads also bands cut by skewed rates.
void expect_pass_bits(const Grid& g, const LayerWidths& w) {
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const StencilCoefs coefs = make_stencil_coefs(g);
  const CpmlProfile profile = make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{1e-4, 2, 40, 1.5});
  const std::vector<Region> pieces = pieces_of(g, w);
  const int count = static_cast<int>(pieces.size());
  std::mt19937 rng(11);
  const std::vector<float> u0 = random_field(l, rng, -1.0f, 1.0f),
                           v0 = random_field(l, rng, -1.0f, 1.0f),
                           vp2dt2 = random_field(l, rng, 0.1f, 0.3f);
  auto fused = [&](std::vector<float>& u, std::vector<float>& v, CpmlHostMemory& m, int steps) {
    IsoFields f;
    f.vp2dt2 = vp2dt2.data();
    f.cpml = &m.view();
    for (int n = 0; n < steps; ++n) {
      f.u = u.data();
      f.v = v.data();
      cpml_fused_step_cpu(f, l, coefs, pieces.data(), count);
      std::swap(u, v);
    }
  };
  constexpr int kWarm = 2;
  for (const int steps : {2, 3, 4, 5, 8}) {
    std::vector<float> cur = u0, next = v0;
    CpmlHostMemory single;
    single.setup(g, w, profile);
    fused(cur, next, single, kWarm + steps);
    const std::vector<float> memory = memory_of(g, w, single.view());
    const int least = (2 * steps - 1) * kHalo;
    for (const int band : {least, least + 3, std::max(48, least)}) {
      for (const int threads : {1, 2, 3}) {
        for (const bool rated : {false, true}) {
          if (rated && threads != 2) continue;
          const ScopedThreads t(threads);
          CpuPassRates rates{{1.0, 0.25}};
          std::vector<float> u = u0, v = v0;
          CpmlHostMemory m;
          m.setup(g, w, profile);
          fused(u, v, m, kWarm);
          IsoFields medium;
          medium.vp2dt2 = vp2dt2.data();
          medium.cpml = &m.view();
          cpu_multi_step_pass(u.data(), v.data(), medium, l, coefs, pieces.data(), count, steps,
                              band, {}, rated ? &rates : nullptr);
          const std::vector<float>& last = steps % 2 == 0 ? u : v;
          const std::vector<float>& before = steps % 2 == 0 ? v : u;
          const std::string what = std::to_string(steps) + " steps, bands of " +
                                   std::to_string(band) + ", " + std::to_string(threads) +
                                   " threads" + (rated ? ", rated bands" : "");
          EXPECT_EQ(std::memcmp(last.data(), cur.data(), cur.size() * sizeof(float)), 0) << what;
          EXPECT_EQ(std::memcmp(before.data(), next.data(), next.size() * sizeof(float)), 0)
              << what;
          const std::vector<float> mm = memory_of(g, w, m.view());
          ASSERT_EQ(mm.size(), memory.size());
          EXPECT_EQ(std::memcmp(mm.data(), memory.data(), mm.size() * sizeof(float)), 0)
              << what << ": the memory variables differ";
        }
      }
    }
  }
}

// A different width on every face: an interior of 7 points along x (narrower than the stencil)
// and a y slab of 35 rows (wider than a band of the least width); an interior of 3 rows along y
// and 1 plane along z; and a z slab on both faces, each narrower than the stencil's reach of
// psi (8 planes) on one of them.
TEST(CpmlPass, KernelPassGivesTheBitsOfFusedSteps) {
  expect_pass_bits(Grid{29, 75, 43, 10, 12, 9, 0, 0, 0}, LayerWidths{9, 13, 35, 6, 0, 11});
  expect_pass_bits(Grid{37, 30, 22, 10, 10, 10, 0, 0, 0}, LayerWidths{6, 5, 14, 13, 0, 21});
  expect_pass_bits(Grid{23, 61, 33, 10, 11, 12, 0, 0, 0}, LayerWidths{4, 7, 5, 10, 6, 3});
}

TEST(CpmlPass, KernelPassRefusesNarrowBandsAndPartOfTheGrid) {
  const Grid g{21, 40, 20, 10, 10, 10, 0, 0, 0};
  const LayerWidths w{5, 5, 5, 5, 5, 5};
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const CpmlProfile profile = make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{});
  CpmlHostMemory m;
  m.setup(g, w, profile);
  std::vector<float> u(static_cast<std::size_t>(l.size)), v = u, vp2dt2 = u;
  IsoFields medium;
  medium.vp2dt2 = vp2dt2.data();
  medium.cpml = &m.view();
  const auto regions = make_regions(g, w);
  auto pass = [&](int count, int steps, int band) {
    cpu_multi_step_pass(u.data(), v.data(), medium, l, make_stencil_coefs(g), regions.data(), count,
                        steps, band, {});
  };
  // 3 steps: the last lags the first by 2 x 8 + 4 = 20 rows.
  EXPECT_THROW(pass(kRegionCount, 3, 19), std::invalid_argument);
  EXPECT_NO_THROW(pass(kRegionCount, 3, 20));
  EXPECT_THROW(pass(kRegionCount - 1, 3, 20), std::logic_error);
}

/// An acoustic C-PML problem on an nx x ny x nz grid of unequal spacings and unequal widths per
/// face (none on the top face under a free surface), a medium with contrasts, sources of one and
/// of two taps and receivers: rows across the first band edges of the backend's passes (bands of
/// 48 rows; step s of a pass updates the rows before 44 - 8s, its memory those before 48 - 8s),
/// planes next to the top face, a receiver on the surface plane.
AcousticProblem pass_problem(int nx, int ny, int nz, const LayerWidths& w, bool surface,
                             int steps) {
  AcousticProblem p;
  p.grid = Grid{nx, ny, nz, 10, 11, 9, 0, 0, 0};
  p.layer = w;
  if (surface) p.layer.z_lo = 0;
  p.free_surface = surface;
  p.regions = make_regions(p.grid, p.layer);
  p.layout = make_field_layout(nx, ny, nz, p.layer.x_lo);
  p.coefs = make_stencil_coefs(p.grid);
  const double vmax = 3000;
  p.dt = 0.7 * stable_dt_limit(p.grid, vmax);
  p.steps = steps;
  p.vp2dt2.assign(static_cast<std::size_t>(p.layout.size), 0.0f);
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) {
        double v = k < nz / 3 ? 1500 : 2400;
        if (i > nx / 2 && j > ny / 2) v = vmax;
        const double c = v * p.dt;
        p.vp2dt2[static_cast<std::size_t>(p.layout.index(i, j, k))] = static_cast<float>(c * c);
      }
  p.boundary = BoundaryType::Cpml;
  p.cpml = make_cpml_profile(p.grid, p.layer, p.dt, vmax, CpmlParams{1e-4, 2, 3.14159 * 15, 1});
  const FieldLayout& l = p.layout;
  auto row = [ny](int j) { return std::min(j, ny - 3); };
  // Sources: two taps across a band edge, one near the surface, one in a corner of the layers.
  p.sources.begin = {0, 2, 3, 4};
  p.sources.index = {l.index(nx / 2, row(27), nz / 2), l.index(nx / 2 + 1, row(36), nz / 2 + 1),
                     l.index(nx / 3, row(44), 2), l.index(nx - 3, ny - 2, nz - 2)};
  p.sources.weight = {0.7f, 0.3f, 1.0f, 0.5f};
  p.source_samples.assign(3 * static_cast<std::size_t>(steps), 0.0f);
  for (std::size_t src = 0; src < 3; ++src)
    for (int s = 0; s < steps; ++s) {
      const double a = 3.14159265 * 25 * (s * p.dt - 0.04 - 0.005 * static_cast<double>(src));
      p.source_samples[src * static_cast<std::size_t>(steps) + static_cast<std::size_t>(s)] =
          static_cast<float>((1 - 2 * a * a) * std::exp(-a * a));
    }
  // Receivers: on the surface plane, at plane 4 (where the pass applies the surface), across
  // band edges (two taps), in the bottom slab.
  p.receivers.begin = {0, 1, 2, 4, 5};
  p.receivers.index = {l.index(nx / 2, ny / 3, 0), l.index(nx / 4, row(40), 4),
                       l.index(nx / 2, row(20), nz / 3), l.index(nx / 2, row(28), nz / 3),
                       l.index(2, ny - 4, nz - 3)};
  p.receivers.weight = {1.0f, 1.0f, 0.5f, 0.5f, 1.0f};
  return p;
}

TEST(CpmlPass, BackendPassesGiveTheBitsOfSingleSteps) {
  for (const bool surface : {true, false})
    expect_passes_give_single_steps(
        pass_problem(31, 83, 29, LayerWidths{6, 9, 11, 7, 5, 8}, surface, 23),
        std::string("C-PML, free surface ") + (surface ? "on" : "off"));
}

} // namespace
} // namespace minimod
