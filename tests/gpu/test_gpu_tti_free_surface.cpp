/// The TTI free surface on the GPU against the CPU reference: the default TTI pair and the
/// baseline, a tilted medium with azimuth, sources and receivers near the surface (mirrored
/// sinc taps), an awkward grid.
#include "solver/tti.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/tti_gpu_compare.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace minimod {
namespace {

void compare_free_surface(const std::string& spec) {
  const Grid g = test_support::make_grid(45, 38, 53, 10.0, 10.0, 10.0);
  const TtiModel m = test_support::tilted_anelliptic_medium(g);
  TtiPlanOptions o;
  o.steps = 120;
  o.layer_width = 6;
  o.cfl = 0.7;
  o.free_surface = true;
  const TtiPlan plan = make_tti_plan(g, m, o);
  const std::vector<TtiSource> sources{
      {{223.0, 187.0, 23.0}, test_support::ricker_30hz(plan), Injection::Physical}};
  const std::vector<Vec3> receivers{{300.0, 200.0, 12.0}, {100.0, 150.0, 35.0}};
  TtiCpuRun cpu(plan, m, sources, receivers, Interpolation::Sinc);
  cpu.run();
  const TtiProblem p = build_tti_problem(plan, m, sources, receivers, Interpolation::Sinc);
  ASSERT_TRUE(p.free_surface);
  test_support::expect_gpu_matches_cpu(
      p, cpu, spec, "TTI free surface, " + (spec.empty() ? std::string("default") : spec));
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
