/// The CPU backend's multi-step pass (kernels/cpu/cpu_kernels.hpp: cpu_multi_step_pass; the
/// backend's step_pass; docs/kernels.md, "The CPU multi-step pass"): several steps in one pass over
/// memory give the bits of single steps, for the kernel alone (random fields, bands that cut the
/// grid unevenly, any thread count) and for the backend and the time loop (sources and receivers
/// on band edges and at the free surface, the layer or none, passes of every length).
#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/kernel.hpp"
#include "kernels/tti_problem.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"
#include "solver/simulation.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
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
using test_support::ScopedEnv;
using test_support::ScopedThreads;
using test_support::step_with_passes;
using test_support::Stepped;

/// A survey of a layered medium on an nx x ny x nz grid of 10 m, `width` layer points (0: none),
/// sources and receivers where the pass has its edges: rows across the edges of the first band
/// (the backend's acoustic bands are 48 rows; step s of a pass ends the band at row 48 - 4s),
/// planes next to the top face, a receiver on the surface.
Survey pass_survey(int nx, int ny, int nz, int width, bool free_surface) {
  Survey s;
  s.path = "pass";
  s.grid.shape = {nx, ny, nz};
  s.grid.spacing = {10, 10, 10};
  s.model.kind = ModelSpec::Kind::Constant;
  s.time.steps = 37;
  s.boundary.width = width;
  s.boundary.free_surface = free_surface;
  auto source = [](double x, double y, double z) {
    SourceSpec src;
    src.position = {x, y, z};
    src.wavelet.kind = WaveletSpec::Kind::Ricker;
    src.wavelet.frequency = 30;
    return src;
  };
  // Rows 39.5 and 46.5 (taps across the band edges of steps 0 to 3 of a pass, rows 36 to 48),
  // near the surface, and a deep one.
  // (Grids of fewer rows than that, for the tests that need no band edge, move them inside.)
  auto row = [ny](double y) { return std::min(y, 10.0 * (ny - 8)); };
  s.sources = {source(10.0 * (nx / 2) + 3.0, row(395.0), 10.0 * (nz / 2)),
               source(10.0 * (nx / 3) + 4.0, row(465.0), 10.0 * (nz / 2) + 6.0),
               source(10.0 * (nx / 3), 10.0 * (ny / 2), 20.0),
               source(10.0 * (nx - 12), 10.0 * (ny - 12), 10.0 * (nz - 12))};
  s.receivers = {ReceiverSpec{{10.0 * (nx / 4), row(437.0), 10.0 * (nz / 3)}, {}},
                 ReceiverSpec{{10.0 * (nx / 2), 10.0 * (ny / 3), 0.0}, {}},
                 ReceiverSpec{{10.0 * (nx / 2) + 4.0, 10.0 * (ny / 2) + 6.0, 12.0}, {}},
                 ReceiverSpec{{10.0 * (nx - 10), 10.0 * (ny - 7), 10.0 * (nz - 9)}, {}}};
  return s;
}

/// A velocity model with a contrast, so that the fields are not symmetric.
std::vector<float> pass_velocity(const Survey& s) {
  const int nx = s.grid.shape[0], ny = s.grid.shape[1], nz = s.grid.shape[2];
  std::vector<float> v(static_cast<std::size_t>(nx) * ny * nz);
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i)
        v[(static_cast<std::size_t>(k) * ny + j) * nx + i] = k < nz / 2 ? 1800.0f : 2600.0f;
  return v;
}

/// The pieces of a problem's regions that hold points.
std::vector<Region> pieces_of(const AcousticProblem& p) {
  std::vector<Region> out;
  for (const Region& r : p.regions)
    if (!r.box.empty()) out.push_back(r);
  return out;
}

TEST(CpuPass, KernelPassGivesTheBitsOfSingleSteps) {
  const Survey s = pass_survey(37, 45, 30, 5, false);
  const std::vector<float> velocity = pass_velocity(s);
  const AcousticProblem p = build_acoustic_problem(s, make_plan(s, velocity), velocity);
  const FieldLayout& l = p.layout;
  const std::vector<Region> pieces = pieces_of(p);
  const StencilKernel* cpu = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  ASSERT_NE(cpu, nullptr);
  ASSERT_FALSE(p.eta_axes.empty());
  const EtaRows rows(p.eta_axes, l.nx, l.ny, l.nz);
  std::mt19937 rng(7);
  const std::vector<float> u0 = random_field(l, rng, -1.0f, 1.0f),
                           v0 = random_field(l, rng, -1.0f, 1.0f),
                           phi0 = random_field(l, rng, -0.1f, 0.1f);
  for (const bool table : {true, false}) {
    for (const int steps : {2, 3, 4, 5, 8}) {
      // Single steps, as the backend's update makes them.
      std::vector<float> cur = u0, next = v0, phi = phi0;
      for (int n = 0; n < steps; ++n) {
        IsoFields f;
        f.u = cur.data();
        f.v = next.data();
        f.vp2dt2 = p.vp2dt2.data();
        f.phi = phi.data();
        f.eta = p.eta.data();
        f.eta_rows = table ? &rows : nullptr;
        cpu->launch_regions(f, l, p.coefs, pieces.data(), static_cast<int>(pieces.size()), nullptr);
        std::swap(cur, next);
      }
      const int least = (steps - 1) * kHalo;
      for (const int band : {least, least + 3, 16 + least}) {
        for (const int threads : {1, 2, 3}) {
          // On 2 threads also with bands cut by skewed rates (CpuPassRates), which the pass
          // then measures.
          for (const bool rated : {false, true}) {
            if (rated && threads != 2) continue;
            const ScopedThreads t(threads);
            CpuPassRates rates{{1.0, 0.25}};
            std::vector<float> u = u0, v = v0, pphi = phi0;
            IsoFields medium;
            medium.vp2dt2 = p.vp2dt2.data();
            medium.phi = pphi.data();
            medium.eta = p.eta.data();
            medium.eta_rows = table ? &rows : nullptr;
            cpu_multi_step_pass(u.data(), v.data(), medium, l, p.coefs, pieces.data(),
                                static_cast<int>(pieces.size()), steps, std::max(1, band), {},
                                rated ? &rates : nullptr);
            // An even count of steps leaves u^(n+steps) in u, an odd one in v.
            const std::vector<float>& last = steps % 2 == 0 ? u : v;
            const std::vector<float>& before = steps % 2 == 0 ? v : u;
            const std::string what = std::to_string(steps) + " steps, bands of " +
                                     std::to_string(band) + ", " + std::to_string(threads) +
                                     " threads, eta " + (table ? "table" : "array") +
                                     (rated ? ", rated bands" : "");
            EXPECT_EQ(std::memcmp(last.data(), cur.data(), cur.size() * sizeof(float)), 0) << what;
            EXPECT_EQ(std::memcmp(before.data(), next.data(), next.size() * sizeof(float)), 0)
                << what;
            EXPECT_EQ(std::memcmp(pphi.data(), phi.data(), phi.size() * sizeof(float)), 0) << what;
            if (!rated) continue;
            ASSERT_EQ(rates.rate.size(), 2u) << what;
            EXPECT_GT(rates.rate[0], 0.0) << what;
            // The second thread has a band where the rows make two of `least` rows.
            if (l.ny / std::max(1, least) >= 2)
              EXPECT_NE(rates.rate[1], 0.25) << what << ": the pass measured the second thread";
            else
              EXPECT_EQ(rates.rate[1], 0.25) << what << ": one band, the second thread's rate kept";
          }
        }
      }
    }
  }
}

/// Checks that `edges` cut rows [y0, y0 + cost.size()) into bands of at least `least` rows and
/// returns the costliest band's cost.
double checked_bands(const std::vector<int>& edges, int y0, const std::vector<double>& cost,
                     int least) {
  EXPECT_GE(edges.size(), 2u);
  EXPECT_EQ(edges.front(), y0);
  EXPECT_EQ(edges.back(), y0 + static_cast<int>(cost.size()));
  double most = 0.0;
  for (std::size_t b = 0; b + 1 < edges.size(); ++b) {
    EXPECT_GE(edges[b + 1] - edges[b], least) << "band " << b;
    double c = 0.0;
    for (int j = edges[b]; j < edges[b + 1]; ++j)
      c += cost[static_cast<std::size_t>(j - y0)];
    most = std::max(most, c);
  }
  return most;
}

TEST(CpuPass, BandsShareTheRowsCostEquallyInAMultipleOfTheThreads) {
  // 256 rows whose first and last 27 cost 1.7 times the others (the layer rows of a 256^3 grid
  // with 27-point layers), as the acoustic pass weighs them.
  std::vector<double> cost(256, 1.0);
  for (int j = 0; j < 27; ++j)
    cost[static_cast<std::size_t>(j)] = cost[static_cast<std::size_t>(255 - j)] = 1.7;
  double total = 0.0, row_most = 0.0;
  for (const double c : cost) {
    total += c;
    row_most = std::max(row_most, c);
  }
  for (const int threads : {1, 2, 3, 16}) {
    const std::vector<int> edges = cpu_pass_bands(-4, cost, 48, 12, threads);
    const int bands = static_cast<int>(edges.size()) - 1;
    EXPECT_EQ(bands % threads, 0) << threads << " threads";
    EXPECT_GE(bands, (256 + 47) / 48);
    // Every band within one row's cost of an equal share, or `least` rows where the share is
    // narrower (16 bands).
    EXPECT_LE(checked_bands(edges, -4, cost, 12), std::max(total / bands + row_most, 12 * row_most))
        << threads;
  }
  // Two threads: six bands, the outer ones narrower than the inner ones (a fixed width of 48 left
  // the pair of the first two bands waiting on the first's 27 layer rows).
  const std::vector<int> two = cpu_pass_bands(0, cost, 48, 12, 2);
  ASSERT_EQ(two.size(), 7u);
  EXPECT_LT(two[1] - two[0], two[2] - two[1]);
  EXPECT_LT(two[6] - two[5], two[5] - two[4]);

  // Rates: a thread measured twice as fast gets bands of twice the cost.
  const CpuPassRates rates{{2.0, 1.0}};
  const std::vector<int> rated = cpu_pass_bands(0, cost, 48, 12, 2, &rates);
  ASSERT_EQ(rated.size(), 7u);
  double of[2] = {0.0, 0.0};
  for (std::size_t b = 0; b + 1 < rated.size(); ++b)
    for (int j = rated[b]; j < rated[b + 1]; ++j)
      of[b % 2] += cost[static_cast<std::size_t>(j)];
  EXPECT_NEAR(of[0] / of[1], 2.0, 0.1);
  // Rates of another thread count, or not all positive, are ignored.
  const CpuPassRates three{{2.0, 1.0, 1.0}}, zero{{1.0, 0.0}};
  EXPECT_EQ(cpu_pass_bands(0, cost, 48, 12, 2, &three), two);
  EXPECT_EQ(cpu_pass_bands(0, cost, 48, 12, 2, &zero), two);

  // More threads than bands of `least` rows: as many bands as fit.
  const std::vector<double> flat(40, 1.0);
  EXPECT_EQ(cpu_pass_bands(0, flat, 48, 12, 16).size(), 4u); // 3 bands
  checked_bands(cpu_pass_bands(0, flat, 48, 12, 16), 0, flat, 12);
  // Fewer rows than `least`: one band of all of them.
  const std::vector<double> few(5, 1.0);
  EXPECT_EQ(cpu_pass_bands(7, few, 48, 12, 2), (std::vector<int>{7, 12}));
  // Rows that cost nothing are cut evenly.
  const std::vector<int> even = cpu_pass_bands(0, std::vector<double>(100, 0.0), 25, 4, 2);
  EXPECT_EQ(even, (std::vector<int>{0, 25, 50, 75, 100}));
}

TEST(CpuPass, KernelPassRefusesBandsNarrowerThanItsSkew) {
  const Survey s = pass_survey(21, 40, 20, 0, false);
  const std::vector<float> velocity = pass_velocity(s);
  const AcousticProblem p = build_acoustic_problem(s, make_plan(s, velocity), velocity);
  const std::vector<Region> pieces = pieces_of(p);
  std::vector<float> u(static_cast<std::size_t>(p.layout.size)), v = u;
  IsoFields medium;
  medium.vp2dt2 = p.vp2dt2.data();
  auto pass = [&](int steps, int band) {
    cpu_multi_step_pass(u.data(), v.data(), medium, p.layout, p.coefs, pieces.data(),
                        static_cast<int>(pieces.size()), steps, band, {});
  };
  EXPECT_THROW(pass(3, 7), std::invalid_argument);
  EXPECT_THROW(pass(0, 16), std::invalid_argument);
  EXPECT_THROW(pass(kCpuPassMaxSteps + 1, 64), std::invalid_argument);
  EXPECT_NO_THROW(pass(3, 8));
}

TEST(CpuPass, BackendPassesGiveTheBitsOfSingleSteps) {
  for (const int width : {0, 6}) {
    for (const bool surface : {false, true}) {
      const Survey s = pass_survey(29, 75, 31, width, surface);
      const std::vector<float> velocity = pass_velocity(s);
      const AcousticProblem p = build_acoustic_problem(s, make_plan(s, velocity), velocity);
      ASSERT_GE(p.sources.owners(), 3u);
      expect_passes_give_single_steps(p, "acoustic, layer " + std::to_string(width) +
                                             ", free surface " + (surface ? "on" : "off"));
    }
  }
}

/// A TTI problem on a 26 x 60 x 24 grid whose layer drives phi_p (an elliptic lower half), with
/// sources and receivers across the backend's first band edges (bands of 32 rows: rows 28 to 32
/// for steps 0 and 1 of a pass) and next to the top face.
TtiProblem pass_tti_problem(bool surface, bool azimuth) {
  const Grid g = test_support::make_grid(26, 60, 24, 10, 10, 10);
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2000.0f);
  m.delta.assign(n, 0.1f);
  m.epsilon.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    m.epsilon[i] = static_cast<int>(i / (static_cast<std::size_t>(g.nx) * g.ny)) < g.nz / 2
                       ? 0.25f
                       : 0.1f; // elliptic below
  m.theta.assign(n, 0.5f);
  m.phi.assign(n, azimuth ? 0.3f : 0.0f);
  TtiPlanOptions o;
  o.steps = 29;
  o.layer_width = 5;
  o.free_surface = surface;
  const TtiPlan plan = make_tti_plan(g, m, o);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::Ricker;
  w.frequency = 30;
  const std::vector<float> samples = sample_wavelet(w, plan.dt, plan.steps, "w");
  return build_tti_problem(plan, m,
                           {{{121.0, 305.0, 118.0}, samples}, {{90.0, 300.0, 15.0}, samples}},
                           {{60.0, 297.0, 80.0}, {100.0, 330.0, 0.0}, {170.0, 480.0, 190.0}});
}

TEST(CpuPass, TtiBackendPassesGiveTheBitsOfSingleSteps) {
  for (const bool azimuth : {false, true}) {
    for (const bool surface : {false, true}) {
      const TtiProblem p = pass_tti_problem(surface, azimuth);
      ASSERT_TRUE(tti_needs_phi(p)) << "the layer drives phi_p somewhere";
      expect_passes_give_single_steps(p, std::string("tti, azimuth ") + (azimuth ? "on" : "off") +
                                             ", free surface " + (surface ? "on" : "off"));
    }
  }
}

TEST(CpuPass, PassesOnlyWhereTheyApply) {
  const Survey s = pass_survey(23, 40, 21, 5, false);
  const std::vector<float> velocity = pass_velocity(s);
  AcousticProblem p = build_acoustic_problem(s, make_plan(s, velocity), velocity);
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  const ScopedEnv env("MINIMOD_CPU_PASS_STEPS", std::nullopt);
  {
    auto backend = make_cpu_backend();
    backend->setup(p, kernels);
    EXPECT_GE(backend->pass_steps(), 2) << "the default takes passes";
  }
  // A subdomain with a neighbour exchanges halos between steps: one step at a time.
  p.subdomain.neighbour[3] = true;
  {
    auto backend = make_cpu_backend();
    backend->setup(p, kernels);
    EXPECT_EQ(backend->pass_steps(), 1);
    // step_pass still advances, one step at a time.
    backend->step_pass(0, 3);
  }
}

TEST(CpuPass, UnsetSettingTriesPassesAndKeepsTheBits) {
  // Unset, the backend times its first passes against single steps and keeps the faster: either
  // way the results are those of single steps.
  const Survey s = pass_survey(29, 75, 31, 6, true);
  const std::vector<float> velocity = pass_velocity(s);
  const AcousticProblem p = build_acoustic_problem(s, make_plan(s, velocity), velocity);
  const Stepped single = step_with_passes(p, 1, {1});
  const ScopedEnv env("MINIMOD_CPU_PASS_STEPS", std::nullopt);
  auto backend = make_cpu_backend();
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  backend->setup(p, kernels);
  EXPECT_EQ(backend->pass_steps(), 4) << "before its trial the backend offers passes";
  for (int n = 0; n < p.steps;) {
    const int count = std::min(backend->pass_steps(), p.steps - n);
    backend->step_pass(n, count);
    n += count;
  }
  const int settled = backend->pass_steps();
  EXPECT_TRUE(settled == 1 || settled == 4) << settled;
  std::vector<float> u, traces;
  backend->fetch_field(0, u);
  backend->fetch_traces(traces);
  EXPECT_EQ(u, single.fields[0]);
  EXPECT_EQ(traces, single.traces);
}

TEST(CpuPass, MalformedSettingIsAnInputErrorNamingIt) {
  const Survey s = pass_survey(21, 40, 20, 0, false);
  const std::vector<float> velocity = pass_velocity(s);
  const AcousticProblem p = build_acoustic_problem(s, make_plan(s, velocity), velocity);
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  for (const char* bad : {"0", "9", "two", "2x", "-1"}) {
    const ScopedEnv env("MINIMOD_CPU_PASS_STEPS", std::string(bad));
    auto backend = make_cpu_backend();
    try {
      backend->setup(p, kernels);
      ADD_FAILURE() << "MINIMOD_CPU_PASS_STEPS=" << bad << " was accepted";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("MINIMOD_CPU_PASS_STEPS"), std::string::npos) << message;
      EXPECT_NE(message.find(bad), std::string::npos) << message;
      EXPECT_NE(message.find("1 to 8"), std::string::npos) << message;
    }
  }
}

TEST(CpuPass, TimeLoopWithPassesEqualsTheLoopWithout) {
  // The time loop's passes, ended early at the snapshots (every 5 steps) and the NaN watch's
  // scans, give the traces and the last field of single steps. The snapshots themselves are
  // compared in RunDir.PassesOfAnyLengthWriteTheSameSnapshotsAndGathers (test_survey_run.cpp).
  Survey s = pass_survey(27, 70, 26, 5, true);
  s.time.steps = 43;
  s.output.snapshot_every = 5;
  const std::vector<float> velocity = pass_velocity(s);
  SimulationOptions o;
  o.backend = BackendChoice::Cpu;
  auto run = [&](const char* most) {
    const ScopedEnv env("MINIMOD_CPU_PASS_STEPS", std::string(most));
    Simulation sim(s, velocity, o);
    sim.run({}, nullptr, true);
    return std::make_pair(sim.raw_traces(), sim.wavefield());
  };
  const auto single = run("1");
  for (const char* most : {"2", "5", "8"}) {
    const auto passes = run(most);
    EXPECT_EQ(passes.first, single.first) << most;
    EXPECT_EQ(passes.second, single.second) << most;
  }
}

} // namespace
} // namespace minimod
