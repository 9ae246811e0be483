/// The TTI C-PML on the GPU against the CPU reference (kernels/tti_cpml.hpp): the default TTI pair
/// and the baseline, an anelliptic medium with a varying tilt and azimuth (every mixed pair), a
/// free surface on top, kappa = 1 and kappa > 1, an awkward grid.
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace minimod {
namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;

void compare_cpml(const std::string& spec, double kappa, bool free_surface) {
  const Grid g = test_support::make_grid(45, 38, 53, 10.0, 10.0, 10.0);
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2000.0f);
  m.epsilon.assign(n, 0.25f);
  m.delta.assign(n, 0.08f);
  m.theta.resize(n);
  m.phi.assign(n, static_cast<float>(25 * kDeg));
  std::size_t idx = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i, ++idx)
        m.theta[idx] = static_cast<float>((20.0 + 0.3 * i + 0.2 * k) * kDeg);
  TtiPlanOptions o;
  o.steps = 220;
  o.layer_width = 7;
  o.cfl = 0.7;
  o.free_surface = free_surface;
  const TtiPlan plan = make_tti_plan(g, m, o);
  std::vector<float> s(static_cast<std::size_t>(o.steps));
  for (int t = 0; t < o.steps; ++t)
    s[static_cast<std::size_t>(t)] = static_cast<float>(ricker(t * plan.dt, 30.0, 0.02));
  const std::vector<TtiSource> sources{{{223.0, 187.0, 93.0}, s, Injection::Physical}};
  const std::vector<Vec3> receivers{{400.0, 200.0, 52.0}, {40.0, 150.0, 435.0}};
  TtiProblem p = build_tti_problem(plan, m, sources, receivers, Interpolation::Sinc);
  use_tti_cpml(p, plan, CpmlParams{1e-4, 2, 3.14159265358979 * 30.0, kappa});
  ASSERT_EQ(p.boundary, BoundaryType::Cpml);
  TtiCpuRun cpu(plan, TtiProblem(p));
  cpu.run();
  const RegionKernels k =
      resolve_kernels(spec, kGpuBackend, Physics::Tti, p.regions, p.layout, "test");
  auto gpu = make_cuda_backend(Physics::Tti);
  gpu->setup(p, k);
  for (int t = 0; t < p.steps; ++t)
    gpu->step(t);
  std::vector<float> gp, gq, traces;
  gpu->fetch_field(0, gp);
  gpu->fetch_field(1, gq);
  gpu->fetch_traces(traces);
  const std::string what = "TTI C-PML, " + (spec.empty() ? std::string("default") : spec) +
                           ", kappa " + std::to_string(kappa) +
                           (free_surface ? ", free surface" : "");
  test_support::expect_close(gp, cpu.wavefield_p(), (what + ": p").c_str());
  test_support::expect_close(gq, cpu.wavefield_q(), (what + ": q").c_str());
  test_support::expect_close(traces, cpu.traces(), (what + ": traces").c_str());
}

TEST(TtiGpuCpml, DefaultPairMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_cpml("", 1.0, false);
}

TEST(TtiGpuCpml, DefaultPairWithKappaUnderAFreeSurfaceMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_cpml("", 2.5, true);
}

TEST(TtiGpuCpml, BaselineMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_cpml("gmem_3d", 1.0, false);
}

} // namespace
} // namespace minimod
