/// Reverse-time migration (solver/rtm.hpp) on the CPU backend: the backward run is the adjoint of
/// the modelling (dot-product test), and a flat reflector is imaged flat at its depth.
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "solver/rtm.hpp"
#include "tests/gpu/problem_builder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace minimod {
namespace {

using test_support::ProblemSpec;

RegionKernels cpu_kernels() {
  RegionKernels k;
  k.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  return k;
}

/// The traces of `p` on the CPU backend.
std::vector<float> traces_of(const AcousticProblem& p) {
  auto cpu = make_cpu_backend();
  cpu->setup(p, cpu_kernels());
  for (int n = 0; n < p.steps; ++n)
    cpu->step(n);
  std::vector<float> t;
  cpu->fetch_traces(t);
  return t;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * b[i];
  return s;
}

/// <F s, e> against <s, F^T e> for random source samples s and traces e.
void dot_product_test(bool free_surface) {
  ProblemSpec s;
  s.nx = 44;
  s.ny = 38;
  s.nz = 34;
  s.n_layer = 0;
  s.steps = 150;
  AcousticProblem p = test_support::build_acoustic_problem(s);
  p.free_surface = free_surface;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : p.source_samples)
    v = g(rng);
  const std::vector<float> fs = traces_of(p); // F s
  std::vector<float> e(fs.size());
  for (float& v : e)
    v = g(rng);
  const AcousticProblem q = backward_problem(p, e);
  const std::vector<float> fte = adjoint_samples(p, traces_of(q)); // F^T e
  const double lhs = dot(fs, e), rhs = dot(p.source_samples, fte);
  const double rel = std::abs(lhs - rhs) / std::max(std::abs(lhs), std::abs(rhs));
  std::printf("[ rtm      ] %s: <F s, e> = %.9g, <s, F^T e> = %.9g, relative difference %.3g\n",
              free_surface ? "free surface" : "zero ghost", lhs, rhs, rel);
  EXPECT_GT(std::abs(lhs), 0.0);
  EXPECT_LE(rel, 1e-5);
}

// No absorbing layer: the grid's zero ghost is the boundary (or the free surface on top).
TEST(RtmAdjoint, TheBackwardRunIsTheAdjointOfTheModelling) {
  dot_product_test(false);
}
TEST(RtmAdjoint, WithAFreeSurfaceTheBackwardRunIsTheAdjointOfTheModelling) {
  dot_product_test(true);
}

/// A medium velocity(i, j, k) on a 90 x 50 x 70 grid with Minimod's layer, a Ricker source at
/// (45, 25, 15) and receivers at the source's depth: a line along x, or with `areal` a grid of
/// lines 4 points apart in y; dt and the layer's damping for velocities up to `vmax`, so that media
/// of one vmax share the time axis.
template <class Velocity>
AcousticProblem imaging_problem(Velocity velocity, double vmax, bool areal = false) {
  ProblemSpec s;
  s.nx = 90;
  s.ny = 50;
  s.nz = 70;
  s.n_layer = 12;
  s.steps = 340;
  s.random_receivers = 0;
  AcousticProblem p = test_support::problem_frame(s);
  const FieldLayout& l = p.layout;
  p.dt = test_support::gershgorin_dt(p.grid, vmax, s.cfl);
  p.vp2dt2.assign(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = 0; k < s.nz; ++k)
    for (int j = 0; j < s.ny; ++j)
      for (int i = 0; i < s.nx; ++i) {
        const double cdt = velocity(i, j, k) * p.dt;
        p.vp2dt2[static_cast<std::size_t>(l.index(i, j, k))] = static_cast<float>(cdt * cdt);
      }
  p.eta.assign(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = -1; k <= s.nz; ++k)
    for (int j = -1; j <= s.ny; ++j)
      for (int i = -1; i <= s.nx; ++i)
        p.eta[static_cast<std::size_t>(l.index(i, j, k))] = static_cast<float>(
            test_support::eta_axis(i, s.nx, s.n_layer, s.n_layer, s.h, p.dt, vmax) +
            test_support::eta_axis(j, s.ny, s.n_layer, s.n_layer, s.h, p.dt, vmax) +
            test_support::eta_axis(k, s.nz, s.n_layer, s.n_layer, s.h, p.dt, vmax));
  const double cell = s.h * s.h * s.h;
  const int js = 25, ks = 15;
  test_support::append_trilinear(
      p.grid, l, 45 * s.h, js * s.h, ks * s.h,
      [&](int i, int j, int k) {
        return static_cast<double>(p.vp2dt2[static_cast<std::size_t>(l.index(i, j, k))]) / cell;
      },
      p.sources);
  p.source_samples.resize(static_cast<std::size_t>(s.steps));
  for (int n = 0; n < s.steps; ++n)
    p.source_samples[static_cast<std::size_t>(n)] =
        static_cast<float>(test_support::ricker(n * p.dt, s.peak_hz, 1.5 / s.peak_hz));
  for (int j = areal ? 9 : js; j <= (areal ? 41 : js); j += 4)
    for (int i = 14; i <= 76; i += 2)
      test_support::append_trilinear(
          p.grid, l, i * s.h, j * s.h, ks * s.h, [](int, int, int) { return 1.0; }, p.receivers);
  return p;
}

/// Two layers: v_top above plane k_reflector, v_bottom from it down.
AcousticProblem reflector_problem(double v_top, double v_bottom, int k_reflector, double vmax) {
  return imaging_problem([&](int, int, int k) { return k < k_reflector ? v_top : v_bottom; }, vmax);
}

/// The image of `truth`'s scattered field (its traces less those of `smooth`), migrated in
/// `smooth`, normalised.
std::vector<float> scattered_image(const AcousticProblem& truth, const AcousticProblem& smooth,
                                   int stride) {
  std::vector<float> data = traces_of(truth);
  const std::vector<float> direct = traces_of(smooth);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] -= direct[i];
  auto cpu = make_cpu_backend();
  return normalised_image(migrate_shot(*cpu, cpu_kernels(), smooth, data, stride));
}

TEST(RtmImage, AFlatReflectorIsImagedFlatAtItsDepth) {
  constexpr int kReflector = 40; // the interface lies between planes 39 and 40
  const AcousticProblem truth = reflector_problem(2000.0, 2600.0, kReflector, 2600.0);
  const AcousticProblem smooth = reflector_problem(2000.0, 2000.0, kReflector, 2600.0);
  // The reflections alone (the two-layer gathers less the homogeneous ones), imaged every
  // second step.
  const std::vector<float> image = scattered_image(truth, smooth, 2);
  const FieldLayout& l = smooth.layout;
  auto at = [&](int i, int j, int k) {
    return image[(static_cast<std::size_t>(k) * l.ny + j) * l.nx + i];
  };
  // The depth of each column's positive peak, to a fraction of a point (the vertex of the
  // parabola through the peak and its neighbours). Measured: 38.43 to 39.12 over the columns
  // (38.43 right above the source), their mean 38.85, against the interface at 39.5.
  double lo = 1e9, hi = -1e9, sum = 0.0;
  int columns = 0;
  for (int i = 30; i <= 60; i += 3) {
    // The velocity (and impedance) grows across the interface: its image is a positive peak,
    // between the negative side lobes of the wavelet's autocorrelation.
    int best = -1;
    float peak = 0.0f;
    for (int k = 20; k < 60; ++k)
      if (at(i, 25, k) > peak) {
        peak = at(i, 25, k);
        best = k;
      }
    ASSERT_GT(best, 20) << "column " << i;
    const double a = at(i, 25, best - 1), b = at(i, 25, best), c = at(i, 25, best + 1);
    const double depth = best + 0.5 * (a - c) / (a - 2 * b + c);
    std::printf("[ rtm      ] column %d: image peak at plane %.2f\n", i, depth);
    EXPECT_LE(std::abs(depth - (kReflector - 0.5)), 1.25) << "column " << i;
    lo = std::min(lo, depth);
    hi = std::max(hi, depth);
    sum += depth;
    ++columns;
  }
  EXPECT_LE(std::abs(sum / columns - (kReflector - 0.5)), 1.0) << "the reflector's mean depth";
  EXPECT_LE(hi - lo, 1.0) << "the reflector's image is not flat";
}

} // namespace
} // namespace minimod

namespace minimod {
namespace {

TEST(RtmImage, APointDiffractorFocusesAtItsPosition) {
  // A 2 x 2 x 2 cube of faster rock (points 47-48, 23-24, 38-39: its centre at 47.5, 23.5,
  // 38.5) in 2000 m/s, seen by receivers on a grid of lines.
  auto in_cube = [](int i, int j, int k) {
    return i >= 47 && i <= 48 && j >= 23 && j <= 24 && k >= 38 && k <= 39;
  };
  const AcousticProblem truth = imaging_problem(
      [&](int i, int j, int k) { return in_cube(i, j, k) ? 2600.0 : 2000.0; }, 2600.0, true);
  const AcousticProblem smooth =
      imaging_problem([](int, int, int) { return 2000.0; }, 2600.0, true);
  const std::vector<float> image = scattered_image(truth, smooth, 2);
  const FieldLayout& l = smooth.layout;
  // The largest |value| below the source's depth. A small body of faster rock scatters the
  // second time derivative of the incident wave: its image is a negative main lobe between
  // positive side lobes (a velocity step, the integral of such bodies, images as a positive peak).
  float peak = 0.0f, value = 0.0f;
  int at[3] = {-1, -1, -1};
  for (int k = 25; k < l.nz - 12; ++k)
    for (int j = 12; j < l.ny - 12; ++j)
      for (int i = 12; i < l.nx - 12; ++i) {
        const float v = image[(static_cast<std::size_t>(k) * l.ny + j) * l.nx + i];
        if (std::abs(v) > peak) {
          peak = std::abs(v);
          value = v;
          at[0] = i;
          at[1] = j;
          at[2] = k;
        }
      }
  std::printf("[ rtm      ] diffractor imaged at (%d, %d, %d), its centre (47.5, 23.5, 38.5)\n",
              at[0], at[1], at[2]);
  EXPECT_LT(value, 0.0f) << "the main lobe's sign";
  const double centre[3] = {47.5, 23.5, 38.5};
  for (int a = 0; a < 3; ++a)
    EXPECT_LE(std::abs(at[a] - centre[a]), 1.0) << "axis " << a;
}

} // namespace
} // namespace minimod
