/// The TTI C-PML on the GPU against the CPU reference (kernels/tti_cpml.hpp): the default TTI pair
/// and the baseline, an anelliptic medium with a varying tilt and azimuth (every mixed pair), a
/// free surface on top, kappa = 1 and kappa > 1, an awkward grid.
#include "solver/tti.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/tti_gpu_compare.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace minimod {
namespace {

void compare_cpml(const std::string& spec, double kappa, bool free_surface) {
  const Grid g = test_support::make_grid(45, 38, 53, 10.0, 10.0, 10.0);
  const TtiModel m = test_support::tilted_anelliptic_medium(g);
  TtiPlanOptions o;
  o.steps = 220;
  o.layer_width = 7;
  o.cfl = 0.7;
  o.free_surface = free_surface;
  const TtiPlan plan = make_tti_plan(g, m, o);
  const std::vector<TtiSource> sources{
      {{223.0, 187.0, 93.0}, test_support::ricker_30hz(plan), Injection::Physical}};
  const std::vector<Vec3> receivers{{400.0, 200.0, 52.0}, {40.0, 150.0, 435.0}};
  TtiProblem p = build_tti_problem(plan, m, sources, receivers, Interpolation::Sinc);
  use_tti_cpml(p, plan, CpmlParams{1e-4, 2, 3.14159265358979 * 30.0, kappa});
  ASSERT_EQ(p.boundary, BoundaryType::Cpml);
  TtiCpuRun cpu(plan, TtiProblem(p));
  cpu.run();
  test_support::expect_gpu_matches_cpu(
      p, cpu, spec,
      "TTI C-PML, " + (spec.empty() ? std::string("default") : spec) + ", kappa " +
          std::to_string(kappa) + (free_surface ? ", free surface" : ""));
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
