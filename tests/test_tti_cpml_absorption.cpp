/// What the damping of the TTI C-PML's anelliptic points (kernels/tti_cpml.hpp:
/// tti_cpml_sponge_eta) costs in absorption: the layer's return in the strongly tilted anelliptic
/// medium of tests/test_tti_cpml_stability.cpp (epsilon 0.3, delta 0.1, the axis at 45 degrees),
/// where the undamped C-PML grows, against a larger grid whose faces return nothing in time and
/// against Minimod's layer of the same width; and where the damping acts.
#include "kernels/cpml.hpp"
#include "kernels/tti_cpml.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/omp_threads.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace minimod {
namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;
constexpr double kSpacing = 10;

class TtiCpmlAbsorption : public ::testing::Test {
private:
  test_support::OmpThreadCap m_threads{2};
};

/// epsilon 0.3, delta 0.1 at 2500 m/s, the axis at 45 degrees (azimuth `azimuth`), under a
/// slower top (1800 m/s, half the anisotropy) above 6 points over the centre, so that the centred
/// part of a larger grid holds the same medium.
TtiModel model_of(const Grid& g, double azimuth) {
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2500.0f);
  m.epsilon.assign(n, 0.3f);
  m.delta.assign(n, 0.1f);
  m.theta.assign(n, static_cast<float>(45 * kDeg));
  m.phi.assign(n, static_cast<float>(azimuth));
  const std::size_t plane = static_cast<std::size_t>(g.nx) * g.ny;
  for (std::size_t p = 0; p < static_cast<std::size_t>(g.nz / 2 - 6) * plane; ++p) {
    m.vp[p] = 1800.0f;
    m.epsilon[p] = 0.15f;
    m.delta[p] = 0.05f;
  }
  return m;
}

/// p at the end of a run on an n^3 grid with a layer of `width` (C-PML or Minimod's), on the
/// centred `part`^3 points: a 30 Hz Ricker at the centre, run until the fastest wave has crossed
/// the part's layer and come back half the way to the source.
std::vector<float> field_at_end(int n, int width, bool cpml, double azimuth, int part) {
  const Grid g = test_support::make_grid(n, n, n, kSpacing, kSpacing, kSpacing);
  const TtiModel m = model_of(g, azimuth);
  TtiPlanOptions o;
  o.steps = 1;
  o.layer_width = width;
  const TtiPlan probe = make_tti_plan(g, m, o);
  o.steps = static_cast<int>((0.04 + 1.5 * (part / 2) * kSpacing / probe.speed_max) / probe.dt);
  const TtiPlan plan = make_tti_plan(g, m, o);
  std::vector<float> wavelet(static_cast<std::size_t>(plan.steps));
  for (int s = 0; s < plan.steps; ++s)
    wavelet[static_cast<std::size_t>(s)] = static_cast<float>(ricker(s * plan.dt, 30, 0.04));
  const double c = (n / 2) * kSpacing;
  TtiProblem p = build_tti_problem(plan, m, {{Vec3{c, c, c}, wavelet, Injection::Physical}}, {},
                                   Interpolation::Trilinear);
  if (cpml) use_tti_cpml(p, plan, CpmlParams{1e-4, 2, 3.14159265 * 20, 1});
  TtiCpuRun run(plan, std::move(p));
  run.run();
  const std::vector<float> whole = run.wavefield_p();
  const int off = (n - part) / 2;
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(part) * part * part);
  for (int k = 0; k < part; ++k)
    for (int j = 0; j < part; ++j)
      for (int i = 0; i < part; ++i)
        out.push_back(whole[(static_cast<std::size_t>(k + off) * n + (j + off)) * n + i + off]);
  return out;
}

/// The relative L2 difference over the interior of a 32^3 grid with a layer of 8 between its p
/// and the same points of a 64^3 grid.
double reflected(bool cpml, double azimuth, const std::vector<float>& reference) {
  constexpr int kN = 32, kWidth = 8;
  return interior_difference(field_at_end(kN, kWidth, cpml, azimuth, kN), reference, kN, kWidth);
}

// Measured (CPU, this medium): the interior difference is 0.0082 (-41.7 dB) without azimuth and
// 0.0047 (-46.6 dB) at azimuth 30 for the C-PML without the damping of anelliptic points (which
// grows here over long runs), 0.0136 (-37.4 dB) and 0.0116 (-38.7 dB) with it, against 0.075
// (-22.5 dB) and 0.067 (-23.4 dB) for Minimod's layer: 0.18 and 0.17 of Minimod's.
TEST_F(TtiCpmlAbsorption, TheDampedLayerStillReflectsFarLessThanMinimodsInATiltedAnellipticMedium) {
  for (const double azimuth : {0.0, 30 * kDeg}) {
    const std::vector<float> reference = field_at_end(64, 8, true, azimuth, 32);
    const double cpml = reflected(true, azimuth, reference);
    const double minimod = reflected(false, azimuth, reference);
    std::printf("[tti cpml absorption, epsilon 0.3, delta 0.1, theta 45, azimuth %.0f] interior "
                "difference from the large grid: C-PML %.3g (%.1f dB), Minimod's layer %.3g "
                "(%.1f dB)\n",
                azimuth / kDeg, cpml, 20 * std::log10(cpml), minimod, 20 * std::log10(minimod));
    EXPECT_GT(cpml, 0.0);
    EXPECT_LT(cpml, 0.025) << "the C-PML's return, -32 dB at most";
    EXPECT_LT(cpml, 0.3 * minimod);
  }
}

TEST_F(TtiCpmlAbsorption, TheDampingIsAFractionOfTheLayersOwnWhereTheAxisIsOblique) {
  // The damping's eta from the profile: zero off the slabs, and in them kTtiCpmlSponge times
  // d (1 - b) / (d + alpha) (kappa 1), about d dt, of each axis whose slab holds the point,
  // weighted by the symmetry axis' obliquity to that axis: 1 at 45 degrees, 0 along or across.
  const Grid g = test_support::make_grid(20, 20, 20, kSpacing, kSpacing, kSpacing);
  LayerWidths layer;
  layer.x_lo = layer.x_hi = layer.y_lo = layer.y_hi = layer.z_lo = layer.z_hi = 5;
  const double dt = 1e-3, vmax = 3000;
  const CpmlParams params{1e-4, 2, 3.14159265 * 20, 1};
  const CpmlProfile profile = make_cpml_profile(g, layer, dt, vmax, params);
  const CpmlView view = make_cpml_view(g, layer, profile); // the host profile's arrays
  EXPECT_EQ(tti_cpml_obliquity(0.0f), 0.0f);
  EXPECT_EQ(tti_cpml_obliquity(1.0f), 0.0f);
  EXPECT_EQ(tti_cpml_obliquity(-1.0f), 0.0f);
  EXPECT_NEAR(tti_cpml_obliquity(std::sqrt(0.5f)), 1.0f, 1e-6f);
  EXPECT_NEAR(tti_cpml_obliquity(-0.5f), std::sqrt(0.75f), 1e-6f);
  const float n45 = std::sqrt(0.5f); // the axis at 45 degrees in the xz plane
  EXPECT_EQ(tti_cpml_sponge_eta(view, 10, 10, 10, n45, 0, n45), 0.0f);
  EXPECT_EQ(tti_cpml_sponge_eta(view, 5, 14, 10, n45, 0, n45), 0.0f); // just off the slabs
  const double d0 = -3 * vmax * std::log(1e-4) / (2 * 5 * kSpacing);
  for (int depth = 1; depth <= 5; ++depth) {
    const double r = depth / 5.0, d = d0 * r * r, alpha = params.alpha * (1 - r);
    const double one = kTtiCpmlSponge * d * (1 - std::exp(-(d + alpha) * dt)) / (d + alpha);
    const int i = 5 - depth; // the x low slab
    EXPECT_NEAR(tti_cpml_sponge_eta(view, i, 10, 10, n45, 0, n45), one, 1e-6 + 1e-5 * one);
    // x and z slabs: both count; the y slab does not (the axis is across its normal).
    EXPECT_NEAR(tti_cpml_sponge_eta(view, i, 14 + depth, 14 + depth, n45, 0, n45), 2 * one,
                2e-6 + 2e-5 * one);
    // A vertical axis: no damping.
    EXPECT_EQ(tti_cpml_sponge_eta(view, i, 14 + depth, 14 + depth, 0, 0, 1), 0.0f);
    // (1 - exp(-x)) / x of x = (d + alpha) dt < 1: between 0.6 and 1 of kTtiCpmlSponge d dt.
    EXPECT_GT(one, 0.6 * kTtiCpmlSponge * d * dt) << depth;
    EXPECT_LE(one, kTtiCpmlSponge * d * dt) << depth;
  }
}

} // namespace
} // namespace minimod
