/// The C-PML of the TTI equation on the CPU reference (kernels/tti_cpml.hpp): long-time stability
/// in a tilted anelliptic medium (epsilon > delta) with and without azimuth, and how much of the
/// wave it leaves in the grid after the wave has left, against Minimod's layer of the same width.
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/omp_threads.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace minimod {
namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;

/// One thread: the runs are small (tests/omp_threads.hpp).
class TtiCpml : public ::testing::Test {
private:
  test_support::OmpThreadCap m_threads{1};
};

/// A tilted anelliptic medium: epsilon 0.24, delta 0.08, the axis tilted by `theta` at azimuth
/// `azimuth`, with a slower, less anisotropic layer above 6 points over the centre (so that the
/// centred part of a larger grid has the same medium).
TtiModel tilted_model(const Grid& g, double theta, double azimuth) {
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2500.0f);
  m.epsilon.assign(n, 0.24f);
  m.delta.assign(n, 0.08f);
  m.theta.assign(n, static_cast<float>(theta));
  m.phi.assign(n, static_cast<float>(azimuth));
  const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
  for (std::size_t p = 0; p < static_cast<std::size_t>(g.nz / 2 - 6) * plane; ++p) {
    m.vp[p] = 1800.0f;
    m.epsilon[p] = 0.12f;
    m.delta[p] = 0.04f;
  }
  return m;
}

struct RunSetup {
  int n = 18;
  int width = 5;
  int steps = 20000;
  double theta = 40 * kDeg;
  double azimuth = 0;
  bool cpml = true;
};

/// The plan and problem of a run; the source a Ricker of `peak` Hz centred at t0, at the centre.
std::pair<TtiPlan, TtiProblem> make_run(const RunSetup& s, double peak = 20, double t0 = 0.06) {
  const double h = 10;
  const Grid g = test_support::make_grid(s.n, s.n, s.n, h, h, h);
  const TtiModel m = tilted_model(g, s.theta, s.azimuth);
  TtiPlanOptions o;
  o.steps = s.steps;
  o.layer_width = s.width;
  const TtiPlan plan = make_tti_plan(g, m, o);
  std::vector<float> wavelet(static_cast<std::size_t>(s.steps));
  for (int n = 0; n < s.steps; ++n)
    wavelet[static_cast<std::size_t>(n)] = static_cast<float>(ricker(n * plan.dt, peak, t0));
  const double c = (s.n / 2) * h;
  TtiProblem p = build_tti_problem(plan, m, {{Vec3{c, c, c}, wavelet, Injection::Physical}}, {},
                                   Interpolation::Trilinear);
  if (s.cpml) use_tti_cpml(p, plan, CpmlParams{1e-4, 2, 3.14159265 * 50 / 2.5, 1});
  return {plan, std::move(p)};
}

/// Steps a C-PML run; returns the peak of |p|, |q| over the run, over its middle (steps 40-50%)
/// and over its last 10%.
std::array<float, 3> long_run(const RunSetup& s) {
  auto [plan, problem] = make_run(s);
  EXPECT_EQ(problem.boundary, BoundaryType::Cpml);
  EXPECT_TRUE(problem.eta.empty());
  TtiCpuRun run(plan, std::move(problem));
  float peak = 0, middle = 0, late = 0;
  for (int n = 0; n < s.steps; ++n) {
    run.step(n);
    if (n % 100 == 0 || n == s.steps - 1) {
      const float m = peak_of(run);
      peak = std::max(peak, m);
      if (n >= 4 * s.steps / 10 && n < 5 * s.steps / 10) middle = std::max(middle, m);
      if (n >= 9 * s.steps / 10) late = std::max(late, m);
      if (!std::isfinite(m)) break;
    }
  }
  std::printf(
      "[tti cpml, theta %.0f, azimuth %.0f] peak %.3g, steps 40-50%% %.3g, last 10%% %.3g\n",
      s.theta / kDeg, s.azimuth / kDeg, peak, middle, late);
  return {peak, middle, late};
}

TEST_F(TtiCpml, TwentyThousandStepsInATiltedAnellipticMedium) {
  RunSetup s;
  const auto [peak, middle, late] = long_run(s);
  ASSERT_TRUE(std::isfinite(peak));
  EXPECT_GT(peak, 0.0f);
  EXPECT_LE(late, middle * 1.01f + 1e-30f) << "the field grows late in the run";
  EXPECT_LT(late, 1e-4f * peak);
}

TEST_F(TtiCpml, TwentyThousandStepsWithAzimuth) {
  RunSetup s;
  s.n = 16;
  s.width = 4;
  s.theta = 50 * kDeg;
  s.azimuth = 30 * kDeg;
  const auto [peak, middle, late] = long_run(s);
  ASSERT_TRUE(std::isfinite(peak));
  EXPECT_GT(peak, 0.0f);
  EXPECT_LE(late, middle * 1.01f + 1e-30f) << "the field grows late in the run";
  EXPECT_LT(late, 1e-4f * peak);
}

/// p of a run at its last step, on the points of the grid of `n` (the centred part of a larger
/// grid): the source at the centre, a 30 Hz Ricker.
std::vector<float> field_at_end(RunSetup s, int n) {
  s.steps = 1;
  const int steps = [&] {
    // The fastest wave leaves the source, crosses the layer of the small grid and comes back
    // half the way to the source.
    const auto probe = make_run(s);
    return static_cast<int>((0.04 + 1.5 * (n / 2) * 10 / probe.first.speed_max) / probe.first.dt);
  }();
  s.steps = steps;
  auto [plan, problem] = make_run(s, 30, 0.04);
  TtiCpuRun run(plan, std::move(problem));
  run.run();
  const std::vector<float> whole = run.wavefield_p();
  const int off = (s.n - n) / 2;
  std::vector<float> part;
  part.reserve(static_cast<std::size_t>(n) * n * n);
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        part.push_back(
            whole[(static_cast<std::size_t>(k + off) * s.n + (j + off)) * s.n + i + off]);
  return part;
}

/// The relative L2 difference between p of a 32^3 grid with a layer of 8 and p of a 64^3 grid
/// (whose faces return nothing in time) over the 32^3 grid's interior, after the direct wave has
/// crossed the layer and come back half the way to the source.
double reflected(bool cpml, double azimuth) {
  RunSetup s;
  s.n = 32;
  s.width = 8;
  s.azimuth = azimuth;
  s.cpml = cpml;
  const std::vector<float> small = field_at_end(s, s.n);
  RunSetup big = s;
  big.n = 64;
  return interior_difference(small, field_at_end(big, s.n), s.n, s.width);
}

TEST_F(TtiCpml, ReflectsFarLessThanMinimodsLayerOfTheSameWidth) {
  for (const double azimuth : {0.0, 30 * kDeg}) {
    const double cpml = reflected(true, azimuth);
    const double minimod = reflected(false, azimuth);
    std::printf("[tti cpml, azimuth %.0f] interior difference from the large grid: C-PML %.3g "
                "(%.1f dB), Minimod's layer %.3g (%.1f dB)\n",
                azimuth / kDeg, cpml, 20 * std::log10(cpml), minimod, 20 * std::log10(minimod));
    EXPECT_GT(cpml, 0.0);
    // 0.142 / 0.154 of Minimod's layer at azimuth 0 / 30 (-38.3 / -38.2 dB against -21.3 /
    // -22.0): the damping of the anelliptic layer points (docs/physics.md, "C-PML of the TTI
    // equation") costs about 5-9 dB of the undamped layer's -43.5 / -46.8, which grew in tilted
    // anelliptic media.
    EXPECT_LT(cpml, 0.2 * minimod);
  }
}

TEST_F(TtiCpml, IsotropicMediumMatchesTheAcousticCpml) {
  // epsilon = delta = 0: the TTI operator is L p and q stays zero, so the TTI C-PML must give the
  // acoustic C-PML's field (to the rounding of the sums' different order), mixed memory unused.
  RunSetup s;
  s.n = 24;
  s.width = 6;
  s.steps = 300;
  const Grid g = test_support::make_grid(s.n, s.n, s.n, 10, 10, 10);
  TtiModel m = tilted_model(g, 0, 0);
  std::fill(m.epsilon.begin(), m.epsilon.end(), 0.0f);
  std::fill(m.delta.begin(), m.delta.end(), 0.0f);
  TtiPlanOptions o;
  o.steps = s.steps;
  o.layer_width = s.width;
  const TtiPlan plan = make_tti_plan(g, m, o);
  std::vector<float> wavelet(static_cast<std::size_t>(s.steps));
  for (int n = 0; n < s.steps; ++n)
    wavelet[static_cast<std::size_t>(n)] = static_cast<float>(ricker(n * plan.dt, 30, 0.04));
  TtiProblem tti = build_tti_problem(plan, m, {{Vec3{117, 124, 131}, wavelet, Injection::Physical}},
                                     {}, Interpolation::Trilinear);
  use_tti_cpml(tti, plan, CpmlParams{1e-4, 2, 3.14159265 * 30, 1.5});
  AcousticProblem a;
  a.grid = tti.grid;
  a.layer = tti.layer;
  a.regions = tti.regions;
  a.layout = tti.layout;
  a.dt = tti.dt;
  a.steps = tti.steps;
  a.boundary = tti.boundary;
  a.cpml = tti.cpml;
  a.sources = tti.sources;
  a.source_samples = tti.source_samples;
  a.receivers = tti.receivers;
  a.coefs = make_stencil_coefs(g);
  a.vp2dt2 = tti.vp2dt2;
  TtiCpuRun run(plan, std::move(tti));
  run.run();
  auto backend = make_cpu_backend();
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  backend->setup(a, kernels);
  for (int n = 0; n < s.steps; ++n)
    backend->step(n);
  std::vector<float> u;
  backend->fetch_field(0, u);
  const std::vector<float> p = run.wavefield_p(), q = run.wavefield_q();
  double num = 0, den = 0, qmax = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    num += (static_cast<double>(p[i]) - u[i]) * (static_cast<double>(p[i]) - u[i]);
    den += static_cast<double>(u[i]) * u[i];
    qmax = std::max(qmax, static_cast<double>(std::fabs(q[i])));
  }
  std::printf("[tti cpml, isotropic] relative L2 against the acoustic C-PML %.3g\n",
              std::sqrt(num / den));
  EXPECT_GT(den, 0.0);
  EXPECT_LT(std::sqrt(num / den), 1e-5);
  EXPECT_EQ(qmax, 0.0);
}

} // namespace
} // namespace minimod
