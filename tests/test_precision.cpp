/// The 16-bit storage (core/precision.hpp; docs/physics.md, "16-bit storage") on the CPU backend:
/// the binary16 conversions and the medium's code, float16 runs against the same runs in float32
/// (the measured errors are docs/physics-checks.md's table), an analytic check at float16, the
/// injection rule, and what float16 refuses.
#include "core/errors.hpp"
#include "core/precision.hpp"
#include "io/memory_file.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_half.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"
#include "solver/simulation.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/omp_threads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---- The conversions (core/precision.hpp) ----

/// Bits of a float, NaNs apart: equal bits, or both NaN.
bool same_value(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b);
}

TEST(Float16Conversion, EveryHalfRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float x = half_to_float(bits);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(round_to_half(x))) << std::hex << h;
      EXPECT_EQ(float_to_half(x) & 0x7C00u, 0x7C00u) << std::hex << h;
      EXPECT_NE(float_to_half(x) & 0x3FFu, 0u) << std::hex << h;
      continue;
    }
    ASSERT_EQ(float_to_half(x), bits) << std::hex << h;
    ASSERT_EQ(float_bits(round_to_half(x)), float_bits(x)) << std::hex << h;
  }
}

TEST(Float16Conversion, TiesSubnormalsOverflowAndNaN) {
  const float ulp1 = std::ldexp(1.0f, -10);                       // spacing of binary16 in [1, 2)
  EXPECT_EQ(round_to_half(1.0f + ulp1 / 2), 1.0f);                // tie to even (down)
  EXPECT_EQ(round_to_half(1.0f + 3 * ulp1 / 2), 1.0f + 2 * ulp1); // tie to even (up)
  EXPECT_EQ(round_to_half(std::nextafter(1.0f + ulp1 / 2, 2.0f)), 1.0f + ulp1); // above the tie
  EXPECT_EQ(round_to_half(-(1.0f + ulp1 / 2)), -1.0f);
  // Subnormals: the least is 2^-24; half of it is a tie to zero, just above rounds up.
  const float tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(round_to_half(tiny), tiny);
  EXPECT_EQ(round_to_half(3 * tiny), 3 * tiny);
  EXPECT_EQ(float_bits(round_to_half(tiny / 2)), float_bits(0.0f));
  EXPECT_EQ(float_bits(round_to_half(-tiny / 2)), float_bits(-0.0f));
  EXPECT_EQ(round_to_half(std::nextafter(tiny / 2, 1.0f)), tiny);
  EXPECT_EQ(round_to_half(1.5f * tiny), 2 * tiny); // tie between 1 and 2 units: even
  EXPECT_EQ(round_to_half(2.5f * tiny), 2 * tiny); // tie between 2 and 3 units: even
  EXPECT_EQ(round_to_half(std::ldexp(1023.5f, -24)), std::ldexp(1.0f, -14)); // up to the normals
  EXPECT_EQ(float_bits(round_to_half(1e-30f)), float_bits(0.0f));
  // Overflow: 65504 is the largest; from 65520 (the tie with 65536) on, infinity.
  EXPECT_EQ(round_to_half(65504.0f), 65504.0f);
  EXPECT_EQ(round_to_half(65519.99f), 65504.0f);
  EXPECT_EQ(round_to_half(65520.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_half(-1e30f), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_half(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(round_to_half(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to_half(bits_float(0x7F800001u)))); // a signalling NaN
}

/// Random floats over binary16's range and beyond: exponents 2^-30 .. 2^17, both signs, every
/// mantissa.
std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7FFFFFu), exponent(127 - 30, 127 + 17),
      sign(0, 1);
  std::vector<float> x(n);
  for (float& v : x)
    v = bits_float((sign(rng) << 31) | (exponent(rng) << 23) | mantissa(rng));
  return x;
}

TEST(Float16Conversion, RandomFloatsMatchTheHardware) {
#if defined(__F16C__)
  const std::vector<float> x = random_floats(400000, 7);
  std::size_t mismatches = 0;
  for (const float v : x) {
    const auto hw = static_cast<std::uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
    if (hw != float_to_half(v) || float_bits(_cvtsh_ss(hw)) != float_bits(round_to_half(v)))
      ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u);
#else
  GTEST_SKIP() << "the build has no F16C (-march without it)";
#endif
}

TEST(Float16Conversion, VectorRoundingGivesTheScalarBits) {
  // round_to_half_cpu (F16C where the build has it) against round_to_half, with a tail that is
  // not a whole vector and the special values among random ones.
  std::vector<float> x = random_floats(100003, 11);
  const float special[] = {0.0f,
                           -0.0f,
                           65504.0f,
                           65520.0f,
                           -65520.0f,
                           1e-30f,
                           std::ldexp(1.0f, -25),
                           std::ldexp(1.5f, -24),
                           std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  std::copy(std::begin(special), std::end(special), x.begin() + 40);
  std::vector<float> y = x;
  round_to_half_cpu(y.data(), static_cast<std::int64_t>(y.size()));
  std::size_t mismatches = 0;
  for (std::size_t n = 0; n < x.size(); ++n)
    if (!same_value(y[n], round_to_half(x[n]))) ++mismatches;
  EXPECT_EQ(mismatches, 0u);
}

TEST(Float16Medium, ConstantAndTwoValuedMediaAreExact) {
  const float c = 0.0123456f;
  const MediumCode one = medium_code(c, c);
  EXPECT_EQ(one.step, 0.0f);
  EXPECT_EQ(one.decode(encode_medium(one, c)), c);
  // Two values, as a two-layer model has: both ends come back exactly.
  for (const auto& [lo, hi] :
       {std::pair<float, float>{0.0225f, 0.2025f}, std::pair<float, float>{1.7e-3f, 9.3e-2f},
        std::pair<float, float>{0.36f, 0.3601f}}) {
    const MediumCode two = medium_code(lo, hi);
    EXPECT_EQ(encode_medium(two, lo), 0);
    EXPECT_EQ(two.decode(encode_medium(two, lo)), lo);
    EXPECT_EQ(two.decode(encode_medium(two, hi)), hi) << lo << " " << hi;
  }
}

TEST(Float16Medium, ErrorWithinHalfAStep) {
  const float lo = 0.0225f, hi = 0.2025f; // (c dt)^2 of 1500 and 4500 m/s at dt = 0.1 ms, x 1e6
  const MediumCode code = medium_code(lo, hi);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(lo, hi);
  double worst = 0;
  for (int n = 0; n < 200000; ++n) {
    const float x = value(rng);
    const float back = code.decode(encode_medium(code, x));
    worst = std::max(worst, std::fabs(static_cast<double>(back) - x));
  }
  // Half a step, and the float rounding of the decoded value (half an ulp of hi).
  const double bound = code.step / 2.0 + std::ldexp(1.0, std::ilogb(hi) - 24);
  std::printf("[float16] medium code: worst error %.3g, step %.3g\n", worst,
              static_cast<double>(code.step));
  EXPECT_LE(worst, bound);
}

TEST(Float16Medium, FieldScaleIsAPowerOfTwoNearThePeak) {
  EXPECT_EQ(half_field_scale(1.0), 1.0f);
  EXPECT_EQ(half_field_scale(1e-3), 1024.0f);
  EXPECT_EQ(half_field_scale(3000.0), std::ldexp(1.0f, -12));
  EXPECT_EQ(half_field_scale(0.0), 1.0f);
}

// ---- Runs ----

Survey box_survey(std::array<int, 3> shape, double h, double f, Vec3 source) {
  Survey s;
  s.path = "test";
  s.grid.shape = shape;
  s.grid.spacing = {h, h, h};
  s.model.kind = ModelSpec::Kind::Layered;
  s.time.steps = 1;
  SourceSpec src;
  src.position = source;
  src.wavelet.kind = WaveletSpec::Kind::Ricker;
  src.wavelet.frequency = f;
  src.injection = Injection::Physical;
  s.sources.push_back(src);
  return s;
}

SimulationOptions cpu_options(int steps) {
  SimulationOptions o;
  o.backend = BackendChoice::Cpu;
  o.steps_override = steps;
  return o;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t n = 0; n < a.size(); ++n) {
    const double d = static_cast<double>(a[n]) - ref[n];
    num += d * d;
    den += static_cast<double>(ref[n]) * ref[n];
  }
  return std::sqrt(num / den);
}

float largest(const std::vector<float>& x) {
  float m = 0;
  for (const float v : x)
    m = std::max(m, std::isfinite(v) ? std::fabs(v) : std::numeric_limits<float>::infinity());
  return m;
}

struct RunResult {
  std::vector<float> traces;
  std::vector<float> middle; ///< the field after `middle` steps, the wave inside the grid
  std::vector<float> field;  ///< the field after the last step
  float field_scale = 1;
  int pass_steps = 0;
};

RunResult run(Survey s, const std::vector<float>& velocity, int steps, int middle,
              Precision precision) {
  s.precision = precision;
  Simulation sim(s, velocity, cpu_options(steps));
  RunResult r;
  r.pass_steps = sim.backend().pass_steps();
  for (int n = 0; n < steps; ++n) {
    sim.step(n);
    if (n + 1 == middle) r.middle = sim.wavefield();
  }
  r.traces = sim.raw_traces();
  r.field = sim.wavefield();
  r.field_scale = sim.problem().field_scale;
  return r;
}

/// Whether every value is a binary16 value times `scale` (a power of two: exact).
std::size_t values_not_half(const std::vector<float>& x, float scale) {
  std::size_t n = 0;
  for (const float v : x)
    if (!(round_to_half(v * scale) == v * scale)) ++n;
  return n;
}

/// A float16 run and its float32 twin: the relative L2 of their gathers and of their fields
/// after `middle` steps, and what is left in each grid at the end against the float32 field's
/// largest value at `middle`. Every value the float16 run stored is a binary16 value (times the
/// field scale).
struct Comparison {
  double gathers = 0, middle = 0, final_field = 0;
  double left_single = 0, left_half = 0;
};

Comparison compare(const Survey& s, const std::vector<float>& velocity, int steps, int middle,
                   const char* what) {
  const RunResult single = run(s, velocity, steps, middle, Precision::Float32);
  const RunResult half = run(s, velocity, steps, middle, Precision::Float16);
  EXPECT_EQ(half.pass_steps, 1) << "float16 steps one step at a time";
  EXPECT_EQ(single.field_scale, 1.0f);
  EXPECT_EQ(values_not_half(half.middle, half.field_scale), 0u);
  EXPECT_EQ(values_not_half(half.field, half.field_scale), 0u);
  Comparison c;
  c.gathers = rel_l2(half.traces, single.traces);
  c.middle = rel_l2(half.middle, single.middle);
  c.final_field = rel_l2(half.field, single.field);
  const double peak = largest(single.middle);
  c.left_single = largest(single.field) / peak;
  c.left_half = largest(half.field) / peak;
  std::printf("[float16] %s: gathers %.3g (%d steps), field %.3g (%d steps), final field %.3g "
              "off float32 (relative L2); left at the end: %.3g (float32 %.3g) of the field's "
              "largest value at step %d; field scale 2^%d\n",
              what, c.gathers, steps, c.middle, middle, c.final_field, c.left_half, c.left_single,
              middle, std::ilogb(half.field_scale));
  return c;
}

/// Receivers along x at depth z, every `every` points from x0.
void add_receiver_line(Survey& s, double x0, double y, double z, double every, int count) {
  for (int r = 0; r < count; ++r)
    s.receivers.push_back(ReceiverSpec{{x0 + r * every, y, z}, {}});
}

// (a) A homogeneous box with Minimod's layer on every face: the field compared as the wave
// reaches the layer (100 steps), the gathers over 400 steps.
TEST(Float16Run, HomogeneousWithMinimodLayer) {
  const test_support::OmpThreadCap threads(1); // a small grid (tests/omp_threads.hpp)
  const double h = 10, c = 2000, f = 12;
  Survey s = box_survey({48, 48, 48}, h, f, {235, 241, 238});
  s.model.kind = ModelSpec::Kind::Constant;
  s.model.velocity = c;
  s.boundary.width = 10;
  add_receiver_line(s, 110, 300, 160, 20, 12);
  const std::vector<float> velocity(48 * 48 * 48, static_cast<float>(c));
  const Comparison e = compare(s, velocity, 400, 100, "homogeneous 48^3, Minimod's layer 10");
  EXPECT_LT(e.gathers, 0.025);   // measured 9.1e-3
  EXPECT_LT(e.middle, 0.005);    // 1.7e-3
  EXPECT_LT(e.left_half, 0.004); // 1.5e-3
}

/// Three layers of 1500, 2500 and 3500 m/s with boundaries at k = 12 and 24.
std::vector<float> layered_velocity(int nx, int ny, int nz) {
  std::vector<float> v(static_cast<std::size_t>(nx) * ny * nz);
  for (int k = 0; k < nz; ++k)
    std::fill_n(v.begin() + static_cast<std::size_t>(k) * nx * ny, nx * ny,
                k < 12 ? 1500.0f : (k < 24 ? 2500.0f : 3500.0f));
  return v;
}

// (b) The layered model under a free surface, over 3000 steps.
TEST(Float16Run, LayeredUnderAFreeSurface) {
  const test_support::OmpThreadCap threads(1); // a small grid (tests/omp_threads.hpp)
  const int nx = 40, ny = 36, nz = 40;
  Survey s = box_survey({nx, ny, nz}, 10, 15, {195, 175, 60});
  s.boundary.free_surface = true;
  s.boundary.width = 8;
  add_receiver_line(s, 95, 175, 40, 20, 11);
  const Comparison e = compare(s, layered_velocity(nx, ny, nz), 3000, 200,
                               "layered 40x36x40, free surface, layer 8");
  EXPECT_LT(e.gathers, 0.005);    // measured 1.8e-3
  EXPECT_LT(e.middle, 0.006);     // 2.2e-3
  EXPECT_LT(e.left_half, 1.2e-3); // 4.4e-4
}

// (c) 20000 steps on a tiny grid: the float16 run stays finite, and what it leaves in the grid
// stays small.
TEST(Float16Run, TwentyThousandStepsStayStable) {
  const test_support::OmpThreadCap threads(1); // a tiny grid (tests/omp_threads.hpp)
  const int n = 20;
  Survey s = box_survey({n, n, n}, 10, 15, {95, 95, 60});
  s.boundary.free_surface = true;
  s.boundary.width = 5;
  add_receiver_line(s, 55, 95, 40, 20, 5);
  const Comparison e =
      compare(s, layered_velocity(n, n, n), 20000, 150, "layered 20^3, free surface, layer 5");
  EXPECT_LT(e.gathers, 0.004);    // measured 1.4e-3
  EXPECT_LT(e.middle, 0.005);     // 1.8e-3
  EXPECT_LT(e.left_half, 2.5e-4); // 8.8e-5
}

// ---- An analytic check at float16 (tests/test_physics.cpp, PhysicsFreeSurface) ----

// The ghost of the free surface: u = s(t - r1/c)/(4 pi r1) - s(t - r2/c)/(4 pi r2), as
// tests/test_physics.cpp checks it, on a smaller grid (source and receiver 20 points apart, 8
// below the surface; a layer of 16): at float16 within the float32 check's bound, and within
// 0.005 of the float32 run's own error.
TEST(Float16Physics, FreeSurfaceGhostMatchesTheImageSolution) {
  const test_support::OmpThreadCap threads(1); // a small grid (tests/omp_threads.hpp)
  const double h = 10, c = 2000, f = 15;
  const Vec3 src{280, 280, 80};
  Survey s = box_survey({76, 57, 44}, h, f, src);
  s.model.kind = ModelSpec::Kind::Constant;
  s.model.velocity = c;
  s.boundary.free_surface = true;
  s.boundary.width = 16;
  s.time.cfl = 0.4;
  s.receivers.push_back(ReceiverSpec{{480, 280, 80}, {}});
  const double r1 = 200, r2 = std::sqrt(200.0 * 200.0 + 160.0 * 160.0);
  const double t0 = 1.5 / f;
  s.time.duration = r2 / c + 2 * t0;
  s.time.steps.reset();
  const std::vector<float> velocity(76 * 57 * 44, static_cast<float>(c));
  auto error = [&](Precision precision) {
    s.precision = precision;
    Simulation sim(s, velocity, cpu_options(0));
    sim.run({}, nullptr);
    const double dt = sim.plan().dt;
    const auto t = sim.raw_traces();
    std::vector<float> image(t.size());
    for (std::size_t n = 0; n < t.size(); ++n)
      image[n] = static_cast<float>(ricker(n * dt - r1 / c, f, t0) / (4 * kPi * r1) -
                                    ricker(n * dt - r2 / c, f, t0) / (4 * kPi * r2));
    return rel_l2(t, image);
  };
  const double single = error(Precision::Float32), half = error(Precision::Float16);
  std::printf("[float16] free-surface ghost: relative L2 %.4f against the image solution "
              "(float32 %.4f)\n",
              half, single);
  EXPECT_LT(half, 0.05);
  EXPECT_LT(half, single + 0.005);
}

// ---- The problem and the step's rules ----

TEST(Float16Problem, MediumIsCodedAndFloat32Unchanged) {
  const int nx = 20, ny = 18, nz = 16;
  Survey s = box_survey({nx, ny, nz}, 10, 15, {95, 85, 75});
  s.boundary.width = 4;
  const std::vector<float> velocity = layered_velocity(nx, ny, nz);
  const Plan plan = make_plan(s, velocity, 50);
  const AcousticProblem single = build_acoustic_problem(s, plan, velocity);
  EXPECT_EQ(single.precision, Precision::Float32);
  EXPECT_EQ(single.field_scale, 1.0f);
  EXPECT_TRUE(single.vp2dt2_code.empty());
  s.precision = Precision::Float16;
  const AcousticProblem half = build_acoustic_problem(s, plan, velocity);
  EXPECT_EQ(half.precision, Precision::Float16);
  ASSERT_EQ(half.vp2dt2_code.size(), half.vp2dt2.size());
  const FieldLayout& l = half.layout;
  // The source's largest increment times the scale is about 1.
  double peak = 0;
  for (std::size_t t = 0; t < half.sources.weight.size(); ++t)
    for (const float x : half.source_samples)
      peak = std::max(peak, std::fabs(static_cast<double>(half.sources.weight[t]) * x));
  EXPECT_EQ(half.field_scale, half_field_scale(peak));
  EXPECT_GT(peak * half.field_scale, 0.7);
  EXPECT_LT(peak * half.field_scale, 1.5);
  std::size_t off = 0;
  for (std::int64_t at = 0; at < l.size; ++at) {
    const auto n = static_cast<std::size_t>(at);
    const std::int64_t k = at / l.plane - kHalo, j = at % l.plane / l.pitch - kHalo,
                       i = at % l.pitch - l.x_offset;
    const bool point = i >= 0 && i < nx && j >= 0 && j < ny && k >= 0 && k < nz;
    if (!point) {
      off += half.vp2dt2[n] != 0.0f || half.vp2dt2_code[n] != 0;
      continue;
    }
    off += half.vp2dt2[n] != half.medium_code.decode(half.vp2dt2_code[n]);
    // Three velocities: the two ends exact, the middle within half a step.
    off += std::fabs(half.vp2dt2[n] - single.vp2dt2[n]) > half.medium_code.step;
  }
  EXPECT_EQ(off, 0u);
}

/// A float16 problem of a small homogeneous box without a layer, and the `cpu` kernel.
struct SmallRun {
  Survey survey;
  Plan plan;
  AcousticProblem problem;
  RegionKernels kernels{};
  std::unique_ptr<Backend> backend = make_cpu_backend();
  SmallRun(Precision precision, int width) {
    survey = box_survey({16, 16, 16}, 10, 15, {75, 75, 75});
    survey.boundary.width = width;
    survey.precision = precision;
    const std::vector<float> velocity(16 * 16 * 16, 2000.0f);
    plan = make_plan(survey, velocity, 60);
    problem = build_acoustic_problem(survey, plan, velocity);
    kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  }
};

TEST(Float16Step, TapsOnOnePointAddWithOneRounding) {
  SmallRun r(Precision::Float16, 0);
  AcousticProblem& p = r.problem;
  // Three taps of two sources on one point (and one elsewhere), samples that do not add up
  // exactly in binary16.
  const std::int64_t at = p.layout.index(8, 8, 8), other = p.layout.index(3, 4, 5);
  p.sources.begin = {0, 2, 4};
  p.sources.index = {at, other, at, at};
  p.sources.weight = {0.3f, 0.7f, 0.45f, 0.2f};
  p.source_samples.assign(2 * static_cast<std::size_t>(p.steps), 0.0f);
  p.source_samples[0] = 1.0003f;
  p.source_samples[static_cast<std::size_t>(p.steps)] = -0.77f;
  p.field_scale = 4.0f;
  r.backend->setup(p, r.kernels);
  r.backend->step(0);
  std::vector<float> u;
  r.backend->fetch_field(0, u);
  float sum = 0.0f;
  sum += (0.3f * 1.0003f) * 4.0f;
  sum += (0.45f * -0.77f) * 4.0f;
  sum += (0.2f * -0.77f) * 4.0f;
  EXPECT_EQ(u[(8 * 16 + 8) * 16 + 8], round_to_half(sum) / 4.0f);
  EXPECT_EQ(u[(5 * 16 + 4) * 16 + 3], round_to_half((0.7f * 1.0003f) * 4.0f) / 4.0f);
}

TEST(Float16Step, SinglePassAndScaledOutput) {
  // The trace of a receiver on the source point after step 0 is the injected value over S.
  SmallRun r(Precision::Float16, 0);
  AcousticProblem& p = r.problem;
  // A receiver on the source's largest tap, read after 50 steps (the Ricker peaks at 40).
  const auto tap = static_cast<std::size_t>(
      std::max_element(p.sources.weight.begin(), p.sources.weight.end(),
                       [](float a, float b) { return std::fabs(a) < std::fabs(b); }) -
      p.sources.weight.begin());
  p.receivers.begin = {0, 1};
  p.receivers.index = {p.sources.index[tap]};
  p.receivers.weight = {1.0f};
  r.backend->setup(p, r.kernels);
  EXPECT_EQ(r.backend->pass_steps(), 1);
  std::vector<float> u;
  for (int n = 0; n < 50; ++n)
    r.backend->step(n);
  r.backend->fetch_field(0, u);
  std::vector<float> traces;
  r.backend->fetch_traces(traces);
  const std::int64_t s = p.sources.index[tap];
  const int k = static_cast<int>(s / p.layout.plane) - kHalo;
  const int j = static_cast<int>(s % p.layout.plane / p.layout.pitch) - kHalo;
  const int i = static_cast<int>(s % p.layout.pitch) - p.layout.x_offset;
  EXPECT_EQ(traces[50], u[(static_cast<std::size_t>(k) * 16 + j) * 16 + i]);
  EXPECT_NE(traces[50], 0.0f);
  EXPECT_EQ(round_to_half(traces[50] * p.field_scale), traces[50] * p.field_scale);
  EXPECT_EQ(values_not_half(u, p.field_scale), 0u);
}

// The next shot of a survey (Backend::set_taps) with another field scale: the same traces as a
// run of that shot alone.
TEST(Float16Step, NextShotIsAFreshRun) {
  const int n = 20;
  Survey first = box_survey({n, n, n}, 10, 15, {95, 95, 50});
  first.boundary.width = 4;
  first.precision = Precision::Float16;
  add_receiver_line(first, 55, 95, 80, 20, 5);
  Survey second = first;
  second.sources[0].position = {105, 85, 150}; // in the faster layer: a larger source weight
  const std::vector<float> velocity = layered_velocity(n, n, n);
  Simulation sim(first, velocity, cpu_options(80));
  sim.run({}, nullptr);
  const float first_scale = sim.problem().field_scale;
  sim.load_shot(second);
  EXPECT_NE(sim.problem().field_scale, first_scale);
  sim.run({}, nullptr);
  Simulation alone(second, velocity, cpu_options(80));
  alone.run({}, nullptr);
  EXPECT_EQ(sim.problem().field_scale, alone.problem().field_scale);
  const std::vector<float> a = sim.raw_traces(), b = alone.raw_traces();
  ASSERT_EQ(a.size(), b.size());
  std::size_t differ = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    differ += float_bits(a[k]) != float_bits(b[k]);
  EXPECT_EQ(differ, 0u);
  EXPECT_GT(largest(a), 0.0f);
}

// ---- The design transcribed point by point, and its alternative ----

/// The pressure-free top of a padded field (docs/physics.md section 3).
void free_surface(std::vector<float>& u, const FieldLayout& l) {
  for (int j = 0; j < l.ny; ++j)
    for (int i = 0; i < l.nx; ++i) {
      u[static_cast<std::size_t>(l.index(i, j, 0))] = 0.0f;
      for (int m = 1; m <= kHalo && m < l.nz; ++m)
        u[static_cast<std::size_t>(l.index(i, j, -m))] =
            -u[static_cast<std::size_t>(l.index(i, j, m))];
    }
}

/// What a float16 run stores besides u^n: the step d^n (the design) or u^{n-1} (the alternative
/// the design rejected).
enum class Storage { Step, PreviousLevel };

/// The traces of a float16 problem stepped by a plain transcription of physics.md section 8
/// with the `cpu` kernel, one point at a time around it, storing `storage` besides u^n.
std::vector<float> design_traces(const AcousticProblem& p, Storage storage) {
  const bool two_level = storage == Storage::PreviousLevel;
  const FieldLayout& l = p.layout;
  const auto size = static_cast<std::size_t>(l.size);
  std::vector<float> u(size, 0.0f), next(size, 0.0f), d(size, 0.0f);
  std::vector<float> phi(p.eta.empty() ? 0 : size, 0.0f);
  std::vector<Region> regions;
  for (const Region& r : p.regions)
    if (!r.box.empty()) regions.push_back(r);
  const StencilKernel* cpu = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  const float scale = p.field_scale;
  const auto steps = static_cast<std::size_t>(p.steps);
  std::vector<float> traces(p.receivers.owners() * (steps + 1), 0.0f);
  auto each_point = [&](auto&& body) {
    for (const Region& r : regions)
      for (int k = r.box.z0; k < r.box.z1; ++k)
        for (int j = r.box.y0; j < r.box.y1; ++j)
          for (int i = r.box.x0; i < r.box.x1; ++i)
            body(static_cast<std::size_t>(l.index(i, j, k)), r.kind() == RegionKind::Layer);
  };
  for (std::size_t n = 0; n < steps; ++n) {
    if (!two_level) each_point([&](std::size_t at, bool) { next[at] = u[at] - d[at]; });
    IsoFields f;
    f.u = u.data();
    f.v = next.data();
    f.vp2dt2 = p.vp2dt2.data();
    f.phi = phi.empty() ? nullptr : phi.data();
    f.eta = p.eta.empty() ? nullptr : p.eta.data();
    cpu->launch_regions(f, l, p.coefs, regions.data(), static_cast<int>(regions.size()), nullptr);
    each_point([&](std::size_t at, bool layer) {
      const float next_u = next[at];
      if (!two_level) d[at] = round_to_half(next_u - u[at]);
      next[at] = round_to_half(next_u);
      if (layer && !phi.empty()) phi[at] = round_to_half(phi[at]);
    });
    // The sources: one sum a distinct point, in the order of its first tap.
    const TapTable& src = p.sources;
    std::vector<std::int64_t> done;
    for (std::size_t t = 0; t < src.index.size(); ++t) {
      const std::int64_t point = src.index[t];
      if (std::find(done.begin(), done.end(), point) != done.end()) continue;
      done.push_back(point);
      float sum = 0.0f;
      for (std::size_t owner = 0; owner < src.owners(); ++owner)
        for (std::int64_t k = src.begin[owner]; k < src.begin[owner + 1]; ++k)
          if (src.index[static_cast<std::size_t>(k)] == point)
            sum += (src.weight[static_cast<std::size_t>(k)] * p.source_samples[owner * steps + n]) *
                   scale;
      const auto at = static_cast<std::size_t>(point);
      next[at] = round_to_half(next[at] + sum);
      if (!two_level) d[at] = round_to_half(d[at] + sum);
    }
    std::swap(u, next);
    if (p.free_surface) {
      free_surface(u, l);
      if (!two_level) free_surface(d, l);
    }
    const TapTable& rcv = p.receivers;
    for (std::size_t r = 0; r < rcv.owners(); ++r) {
      float sum = 0.0f;
      for (std::int64_t t = rcv.begin[r]; t < rcv.begin[r + 1]; ++t)
        sum += rcv.weight[static_cast<std::size_t>(t)] * u[static_cast<std::size_t>(rcv.index[t])];
      traces[r * (steps + 1) + n + 1] = sum * (1.0f / scale);
    }
  }
  return traces;
}

/// The traces of `p` on the CPU backend.
std::vector<float> backend_traces(const AcousticProblem& p) {
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto backend = make_cpu_backend();
  backend->setup(p, kernels);
  for (int n = 0; n < p.steps; ++n)
    backend->step(n);
  std::vector<float> traces;
  backend->fetch_traces(traces);
  return traces;
}

/// Two layers (2000 and 3000 m/s, the boundary at k = nz / 2), a layer on every face but the top
/// (free surface) or on all of them.
AcousticProblem two_layer_problem(int n, int width, bool free_top, int steps, Precision precision,
                                  std::vector<float>& velocity) {
  Survey s = box_survey({n, n, n}, 10, 15, {n * 5.0 - 3, n * 5.0 + 2, n * 2.5});
  // A second source within a cell of the first: taps of two sources on the same points.
  SourceSpec second = s.sources[0];
  second.position = {n * 5.0 + 4, n * 5.0 - 1, n * 2.5 + 6};
  second.wavelet.frequency = 11;
  s.sources.push_back(second);
  s.boundary.free_surface = free_top;
  s.boundary.width = width;
  add_receiver_line(s, 60, n * 5.0, n * 6.0, 15, (n * 10 - 120) / 15);
  s.precision = precision;
  velocity.assign(static_cast<std::size_t>(n) * n * n, 2000.0f);
  std::fill(velocity.begin() + static_cast<std::size_t>(n / 2) * n * n, velocity.end(), 3000.0f);
  const Plan plan = make_plan(s, velocity, steps);
  return build_acoustic_problem(s, plan, velocity);
}

TEST(Float16Design, BackendStepsTheDesignBitForBit) {
  const test_support::OmpThreadCap threads(1); // a small grid (tests/omp_threads.hpp)
  std::vector<float> velocity;
  const AcousticProblem p = two_layer_problem(24, 5, true, 300, Precision::Float16, velocity);
  const std::vector<float> backend = backend_traces(p), design = design_traces(p, Storage::Step);
  ASSERT_EQ(backend.size(), design.size());
  std::size_t differ = 0;
  for (std::size_t n = 0; n < backend.size(); ++n)
    differ += float_bits(backend[n]) != float_bits(design[n]);
  EXPECT_EQ(differ, 0u) << "of " << backend.size() << " trace samples";
  EXPECT_GT(largest(backend), 0.0f);
}

// The design's reason for storing d: the same float16 run storing u^{n-1} instead is further off
// float32 (physics.md section 8; measured there on a 64^3 two-layer box over 1500 steps).
TEST(Float16Design, StoringTheStepBeatsStoringThePreviousLevel) {
  const test_support::OmpThreadCap threads(1); // a small grid (tests/omp_threads.hpp)
  std::vector<float> velocity;
  const AcousticProblem single =
      two_layer_problem(32, 6, false, 1500, Precision::Float32, velocity);
  const AcousticProblem half = two_layer_problem(32, 6, false, 1500, Precision::Float16, velocity);
  const std::vector<float> reference = backend_traces(single);
  const double step_form = rel_l2(backend_traces(half), reference);
  const double two_level = rel_l2(design_traces(half, Storage::PreviousLevel), reference);
  std::printf("[float16] 32^3 two layers, 1500 steps: gathers %.3g off float32 storing u and d, "
              "%.3g storing u^n and u^(n-1)\n",
              step_form, two_level);
  EXPECT_LT(step_form, two_level);
}

// ---- Refusals: they name `precision` ----

void expect_refusal(const std::function<void()>& what, const std::string& also) {
  try {
    what();
    ADD_FAILURE() << "not refused (" << also << ")";
  } catch (const InputError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("precision"), std::string::npos) << text;
    EXPECT_NE(text.find(also), std::string::npos) << text;
  }
}

TEST(Float16Refusal, CpmlThroughTheSolverAndTheBackend) {
  Survey s = box_survey({16, 16, 16}, 10, 15, {75, 75, 75});
  s.boundary.width = 4;
  s.boundary.type = BoundaryType::Cpml;
  s.precision = Precision::Float16;
  const std::vector<float> velocity(16 * 16 * 16, 2000.0f);
  expect_refusal([&] { Simulation sim(s, velocity, cpu_options(10)); }, "cpml");
  // A C-PML problem built at float32 and marked float16 is refused by the backend too.
  s.precision = Precision::Float32;
  const Plan plan = make_plan(s, velocity, 10);
  AcousticProblem p = build_acoustic_problem(s, plan, velocity);
  p.precision = Precision::Float16;
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto backend = make_cpu_backend();
  expect_refusal([&] { backend->setup(p, kernels); }, "cpml");
}

TEST(Float16Refusal, TtiProblem) {
  Grid g;
  g.nx = g.ny = g.nz = 16;
  g.dx = g.dy = g.dz = 10;
  TtiModel m;
  m.vp.assign(g.points(), 2000.0f);
  m.epsilon.assign(g.points(), 0.1f);
  m.delta.assign(g.points(), 0.05f);
  m.theta.assign(g.points(), 0.3f);
  m.phi.assign(g.points(), 0.0f);
  TtiPlanOptions o;
  o.steps = 10;
  o.layer_width = 3;
  const TtiPlan plan = make_tti_plan(g, m, o);
  TtiProblem p = build_tti_problem(plan, m, {}, {});
  p.precision = Precision::Float16;
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Tti));
  auto backend = make_cpu_backend();
  expect_refusal([&] { backend->setup(p, kernels); }, "tti");
}

TEST(Float16Refusal, DecomposedGrid) {
  SmallRun r(Precision::Float16, 4);
  r.problem.subdomain.neighbour[1] = true;
  expect_refusal([&] { r.backend->setup(r.problem, r.kernels); }, "decomposed");
}

/// The `cpu` kernel under another name, without a float16 form.
class Float32OnlyKernel final : public StencilKernel {
public:
  std::string name() const override { return "cpu_float32_only"; }
  std::string family() const override { return "cpu_float32_only"; }
  std::string description() const override { return "test: the cpu kernel without float16"; }
  BackendKind backend() const override { return BackendKind::Cpu; }
  Physics physics() const override { return Physics::Acoustic; }
  bool handles(RegionKind) const override { return true; }
  void launch(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c, const Region& r,
              void* stream) const override {
    m_cpu->launch(f, l, c, r, stream);
  }

private:
  const StencilKernel* m_cpu = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
};

TEST(Float16Refusal, KernelWithoutFloat16) {
  const Float32OnlyKernel other;
  SmallRun r(Precision::Float16, 4);
  r.kernels[static_cast<int>(RegionId::Inner)] = &other;
  expect_refusal([&] { r.backend->setup(r.problem, r.kernels); }, "cpu_float32_only");
  // The same kernel runs float32.
  SmallRun single(Precision::Float32, 4);
  single.kernels[static_cast<int>(RegionId::Inner)] = &other;
  EXPECT_NO_THROW(single.backend->setup(single.problem, single.kernels));
}

TEST(Float16Refusal, ModelInGpuMemory) {
  Survey s = box_survey({16, 16, 16}, 10, 15, {75, 75, 75});
  s.boundary.width = 4;
  s.precision = Precision::Float16;
  DeviceArray array;
  array.shape = {16, 16, 16};
  array.owner = "torch.Tensor on cuda:0";
  array.vmin = array.vmax = 2000;
  const Plan plan = make_plan(s, VelocityRange{2000, 2000}, 10);
  expect_refusal([&] { build_acoustic_problem(s, plan, array); }, "torch.Tensor on cuda:0");
}

} // namespace
} // namespace minimod
