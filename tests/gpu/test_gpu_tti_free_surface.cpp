/// The TTI free surface on the GPU against the CPU reference: the default TTI pair and the
/// baseline, a tilted medium with azimuth, sources and receivers near the surface (mirrored
/// sinc taps), an awkward grid.
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
#include <vector>

namespace minimod {
namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;

void compare_free_surface(const std::string& spec) {
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
  o.steps = 120;
  o.layer_width = 6;
  o.cfl = 0.7;
  o.free_surface = true;
  const TtiPlan plan = make_tti_plan(g, m, o);
  std::vector<float> s(static_cast<std::size_t>(o.steps));
  for (int t = 0; t < o.steps; ++t)
    s[static_cast<std::size_t>(t)] = static_cast<float>(ricker(t * plan.dt, 30.0, 0.02));
  const std::vector<TtiSource> sources{{{223.0, 187.0, 23.0}, s, Injection::Physical}};
  const std::vector<Vec3> receivers{{300.0, 200.0, 12.0}, {100.0, 150.0, 35.0}};
  TtiCpuRun cpu(plan, m, sources, receivers, Interpolation::Sinc);
  cpu.run();
  const TtiProblem p = build_tti_problem(plan, m, sources, receivers, Interpolation::Sinc);
  ASSERT_TRUE(p.free_surface);
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
  const std::string what = "TTI free surface, " + (spec.empty() ? std::string("default") : spec);
  test_support::expect_close(gp, cpu.wavefield_p(), (what + ": p").c_str());
  test_support::expect_close(gq, cpu.wavefield_q(), (what + ": q").c_str());
  test_support::expect_close(traces, cpu.traces(), (what + ": traces").c_str());
}

TEST(TtiGpuFreeSurface, DefaultPairMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_free_surface("");
}

TEST(TtiGpuFreeSurface, BaselineMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_free_surface("gmem_3d");
}

} // namespace
} // namespace minimod
