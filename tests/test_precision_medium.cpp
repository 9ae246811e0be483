/// The medium alone in 16 bits (core/precision.hpp, MediumCode) with float32 fields: how far its
/// coding moves a run, against the float32 rounding level of the medium (each value moved by one
/// float32 ulp up or down at random). This decides whether a 16-bit medium (14 bytes a point)
/// could be the float32 default (docs/physics-checks.md, "16-bit storage").
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/precision_problem.hpp"
#include "tests/gpu/cpu_reference.hpp"
#include "tests/gpu/problem_builder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace minimod {
namespace {

double rel_l2(const std::vector<float>& a, const std::vector<float>& ref) {
  double d = 0.0, r = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    d += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    r += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(d / r);
}

TEST(Float16Medium, CodedMediumAgainstFloat32Rounding) {
  test_support::ProblemSpec s;
  s.nx = 64;
  s.ny = 56;
  s.nz = 48;
  s.steps = 300;
  const AcousticProblem p = test_support::build_acoustic_problem(s);
  AcousticProblem coded = p;
  code_medium(coded); // float32 fields, the decoded 16-bit medium
  coded.vp2dt2_code.clear();
  AcousticProblem ulp = p;
  std::mt19937 rng(11);
  const FieldLayout& l = p.layout;
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j)
      for (int i = 0; i < l.nx; ++i) {
        float& v = ulp.vp2dt2[static_cast<std::size_t>(l.index(i, j, k))];
        v = std::nextafter(v, (rng() & 1u) ? 1.0f : 0.0f);
      }
  RegionKernels k;
  k.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto cpu = make_cpu_backend();
  const test_support::RunResult ref = test_support::run_to_end(*cpu, p, k);
  const test_support::RunResult c = test_support::run_to_end(*cpu, coded, k);
  const test_support::RunResult u = test_support::run_to_end(*cpu, ulp, k);
  const double c_traces = rel_l2(c.traces, ref.traces), c_field = rel_l2(c.field, ref.field);
  const double u_traces = rel_l2(u.traces, ref.traces), u_field = rel_l2(u.field, ref.field);
  std::printf("[ float16  ] 16-bit medium: traces %.3g, field %.3g; one float32 ulp: traces %.3g, "
              "field %.3g (relative L2 from float32)\n",
              c_traces, c_field, u_traces, u_field);
  EXPECT_GT(u_traces, 0.0);
  EXPECT_GT(c_traces, u_traces) << "coding 65536 levels cannot be finer than float32";
  // Measured (2026-12-04): traces 7.74e-6 and field 2.22e-5 against one ulp's 4.5e-7 and 6.16e-6.
  EXPECT_LE(c_traces, 2e-5);
  EXPECT_LE(c_field, 5e-5);
}

} // namespace
} // namespace minimod
