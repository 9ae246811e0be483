/// The NaN/Inf watch's scan on the GPU against the CPU's (CTest label gpu): NaN, +Inf and -Inf
/// planted at known points (inner region, layers, faces, corners; the ghost, which the scan must
/// ignore) of grids whose sizes are no multiple of the scan's 32 x 8 blocks, for the acoustic and
/// the TTI backends; the GPU must report exactly what the CPU does: the count, the first point, the
/// largest finite |value| and where. A run with the watch gives the traces of the same steps
/// without it, bit for bit. Skipped without a GPU.

#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "kernels/tti_problem.hpp"
#include "models/velocity.hpp"
#include "solver/simulation.hpp"
#include "solver/tti.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/problem_builder.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/planted_values.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test::kInf;
using test::kNaN;
using test::Plant;
using test::plant;

/// Plants on an nx x ny x nz grid: the corners, points on each face, the layer, the inner region,
/// the ghost, and `random` finite values of random size at random points.
std::vector<Plant> plants_for(int nx, int ny, int nz, bool nonfinite, int random) {
  std::vector<Plant> p;
  if (nonfinite) {
    const Plant corners_faces_inner[] = {
        {nx - 1, ny - 1, nz - 1, kNaN}, {nx / 2, ny / 3, nz / 2, kInf}, {1, ny / 2, nz - 2, -kInf},
        {nx - 1, 0, nz / 3, kNaN},      {nx / 3, ny - 1, 2, kInf},      {nx - 2, ny / 2, 0, -kInf}};
    for (const Plant& at : corners_faces_inner)
      p.push_back(at);
  }
  // The ghost: never counted, even when NaN.
  p.push_back({-1, ny / 2, nz / 2, kNaN});
  p.push_back({nx, 0, 0, kInf});
  std::mt19937 rng(20240917u + static_cast<unsigned>(nx));
  std::uniform_int_distribution<int> ix(0, nx - 1), iy(0, ny - 1), iz(0, nz - 1);
  std::uniform_real_distribution<float> mag(-30.0f, 30.0f);
  for (int r = 0; r < random; ++r)
    p.push_back({ix(rng), iy(rng), iz(rng), std::ldexp(1.0f, static_cast<int>(mag(rng)))});
  return p;
}

void expect_same(const FiniteScan& gpu, const FiniteScan& cpu, const std::string& what) {
  EXPECT_EQ(gpu.points, cpu.points) << what;
  EXPECT_EQ(gpu.nonfinite, cpu.nonfinite) << what;
  EXPECT_EQ(gpu.first, cpu.first) << what;
  EXPECT_EQ(gpu.max_abs, cpu.max_abs) << what;
  EXPECT_EQ(gpu.max_at, cpu.max_at) << what;
}

/// Acoustic grids: small and odd; wider than the scan's 256 lanes of x; enough rows (ny nz) that
/// the scan's grid is capped and each thread loops over many rows.
struct Shape {
  int nx, ny, nz, layer;
};
const Shape kShapes[] = {{23, 19, 17, 4}, {301, 13, 29, 6}, {241, 100, 121, 8}};

TEST(GpuFiniteScan, AcousticAgreesWithTheCpuOnPlantedNaNAndInf) {
  MINIMOD_SKIP_WITHOUT_GPU();
  for (const Shape& sh : kShapes) {
    for (const bool nonfinite : {true, false}) {
      test_support::ProblemSpec spec;
      spec.nx = sh.nx;
      spec.ny = sh.ny;
      spec.nz = sh.nz;
      spec.n_layer = sh.layer;
      spec.steps = 2;
      spec.random_receivers = 0;
      AcousticProblem p = test_support::build_acoustic_problem(spec);
      const std::vector<Plant> plants = plants_for(sh.nx, sh.ny, sh.nz, nonfinite, 40);
      plant(p, plants);
      const std::string what = std::to_string(sh.nx) + "x" + std::to_string(sh.ny) + "x" +
                               std::to_string(sh.nz) + (nonfinite ? " with" : " without") +
                               " NaN/Inf";
      auto cpu = make_cpu_backend();
      cpu->setup(p, resolve_kernels("", BackendKind::Cpu, Physics::Acoustic, p.regions, p.layout,
                                    "--kernel"));
      auto gpu = make_cuda_backend();
      gpu->setup(
          p, resolve_kernels("", kGpuBackend, Physics::Acoustic, p.regions, p.layout, "--kernel"));
      // Before any step: all zero on both.
      expect_same(gpu->scan_field(0), cpu->scan_field(0), what + ", zero field");
      cpu->step(0);
      gpu->step(0);
      const FiniteScan c = cpu->scan_field(0);
      expect_same(gpu->scan_field(0), c, what);
      EXPECT_EQ(c.nonfinite, nonfinite ? 6 : 0) << what;
      EXPECT_GT(c.max_abs, 0.0f) << what;
    }
  }
}

TEST(GpuFiniteScan, TtiAgreesWithTheCpuOnPlantedNaNAndInf) {
  MINIMOD_SKIP_WITHOUT_GPU();
  for (const Shape& sh : {Shape{45, 38, 37, 6}, Shape{263, 21, 19, 5}}) {
    const Grid g = test_support::make_grid(sh.nx, sh.ny, sh.nz, 10.0, 10.0, 10.0);
    TtiModel m;
    m.vp.assign(g.points(), 2200.0f);
    m.epsilon.assign(g.points(), 0.25f);
    m.delta.assign(g.points(), 0.1f);
    m.theta.assign(g.points(), 0.4f);
    TtiPlanOptions o;
    o.steps = 3;
    o.layer_width = sh.layer;
    const TtiPlan plan = make_tti_plan(g, m, o);
    TtiProblem p = build_tti_problem(plan, m, {}, {});
    plant(p, plants_for(sh.nx, sh.ny, sh.nz, true, 40));
    const std::string what =
        std::to_string(sh.nx) + "x" + std::to_string(sh.ny) + "x" + std::to_string(sh.nz);
    auto gpu = make_cuda_backend(Physics::Tti);
    gpu->setup(p, resolve_kernels("", kGpuBackend, Physics::Tti, p.regions, p.layout, "--kernel"));
    TtiCpuRun cpu(plan, p);
    cpu.step(0);
    gpu->step(0);
    const FiniteScan cp = cpu.scan_field(false);
    EXPECT_EQ(cp.nonfinite, 6) << what;
    expect_same(gpu->scan_field(0), cp, what + " p after one step");
    expect_same(gpu->scan_field(1), cpu.scan_field(true), what + " q after one step");
  }
}

// The watch's scans run on the compute stream between steps: they must change nothing.
TEST(GpuFiniteScan, WatchLeavesCudaTracesBitForBit) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const Survey survey = parse_survey("grid: {shape: [67, 45, 39], spacing: 10}\n"
                                     "model: {type: constant, velocity: 2000}\n"
                                     "time: {steps: 300}\n"
                                     "boundary: {width: 6}\n"
                                     "sources:\n"
                                     "  - position: [331, 215, 140]\n"
                                     "    wavelet: {type: ricker, frequency: 15}\n"
                                     "receivers:\n"
                                     "  points: [[150, 100, 50], [500, 300, 300]]\n",
                                     "gpu-watch.yaml", ".");
  test::expect_watch_leaves_results_bit_for_bit(survey, BackendChoice::Cuda);
}

} // namespace
} // namespace minimod
