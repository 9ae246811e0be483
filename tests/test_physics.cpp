/// Checks against physics that nobody here wrote (docs/physics.md section 6): the analytic
/// point-source solution in a homogeneous medium, the absorbing layer's reflection and left-over
/// energy, and source-receiver reciprocity. All on the CPU backend, which is the oracle of the GPU
/// kernels.
#include "solver/simulation.hpp"
#include "solver/wavelet.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// A homogeneous survey: n points per axis at spacing h, velocity c, one Ricker source.
Survey homogeneous_survey(std::array<int, 3> shape, double h, double c, double f, Vec3 source) {
  Survey s;
  s.path = "test";
  s.grid.shape = shape;
  s.grid.spacing = {h, h, h};
  s.model.kind = ModelSpec::Kind::Constant;
  s.model.velocity = c;
  s.time.steps = 1;
  SourceSpec src;
  src.position = source;
  src.wavelet.kind = WaveletSpec::Kind::Ricker;
  src.wavelet.frequency = f;
  src.injection = Injection::Physical;
  s.sources.push_back(src);
  return s;
}

std::vector<float> constant_velocity(const Survey& s, double c) {
  return std::vector<float>(static_cast<std::size_t>(s.grid.shape[0]) * s.grid.shape[1] *
                                s.grid.shape[2],
                            static_cast<float>(c));
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t n = 0; n < a.size(); ++n) {
    num += (a[n] - ref[n]) * (a[n] - ref[n]);
    den += ref[n] * ref[n];
  }
  return std::sqrt(num / den);
}

std::vector<double> trace_of(const std::vector<float>& traces, int r, int samples) {
  return std::vector<double>(traces.begin() + static_cast<std::size_t>(r) * samples,
                             traces.begin() + static_cast<std::size_t>(r + 1) * samples);
}

SimulationOptions cpu_options(int steps) {
  SimulationOptions o;
  o.backend = BackendChoice::Cpu;
  o.steps_override = steps;
  return o;
}

// u(r, t) = s(t - r/c) / (4 pi r) for a point source of strength s(t) in a homogeneous medium.
// fmax = 2.5 f (the Ricker's -30 dB point) gives 6 points per shortest wavelength lambda_min = 6 h;
// receivers at 10 and 15 shortest wavelengths along x and 10 off the axis. The layer is 36 points
// wide and 48 points from the source so that its oblique reflections stay small (the lateral
// reflections of a 24-point margin doubled the error at 15 wavelengths).
TEST(PhysicsAnalytic, PointSourceMatchesGreensFunction) {
  const double h = 10, c = 2000, f = c / (15 * h);
  const double lambda_min = c / (2.5 * f);
  const int width = 36;
  const Vec3 src{(width + 10) * h, (width + 48) * h, (width + 48) * h};
  Survey s = homogeneous_survey({182, 169, 169}, h, c, f, src);
  s.boundary.width = width;
  const std::vector<Vec3> receivers = {{src[0] + 10 * lambda_min, src[1], src[2]},
                                       {src[0] + 15 * lambda_min, src[1], src[2]},
                                       {src[0] + 55 * h, src[1], src[2] + 24 * h}};
  // Half the default cfl keeps the leapfrog's time dispersion small over 15 wavelengths.
  s.time.cfl = 0.4;
  s.time.duration = 15 * lambda_min / c + 3.0 / f;
  s.time.steps.reset();
  for (const auto& r : receivers)
    s.receivers.push_back(ReceiverSpec{r, {}});

  Simulation sim(s, constant_velocity(s, c), cpu_options(0));
  sim.run({}, nullptr);
  const Plan& p = sim.plan();
  ASSERT_GE(p.points_per_wavelength, 6.0 - 1e-9);
  const int samples = p.steps + 1;
  const std::vector<float> traces = sim.raw_traces();
  const double t0 = 1.5 / f;
  for (int r = 0; r < static_cast<int>(receivers.size()); ++r) {
    double dist = 0;
    for (int a = 0; a < 3; ++a)
      dist += (receivers[r][a] - src[a]) * (receivers[r][a] - src[a]);
    dist = std::sqrt(dist);
    std::vector<double> analytic(samples);
    for (int n = 0; n < samples; ++n) {
      analytic[n] = ricker(n * p.dt - dist / c, f, t0) / (4 * kPi * dist);
    }
    const double err = rel_l2(trace_of(traces, r, samples), analytic);
    std::printf("[analytic] receiver %d at %.1f shortest wavelengths: relative L2 %.4f\n", r,
                dist / lambda_min, err);
    EXPECT_LT(err, 0.03) << "receiver " << r << " at " << dist << " m";
  }
}

// The largest return of the absorbing layer at a receiver near it, against the same run embedded
// in a grid so large that nothing comes back within the window. The grid is a cube with the layer
// on all six faces and the source at its centre, 25 points from the layer on every side; the
// receiver is 18 points from the source along +x, 7 from the +x layer. The largest return there
// is that of the four lateral faces (+-y, +-z), which arrive together after meeting their faces
// about 20 degrees from the normal; the +x face's normal-incidence return is weaker
// (docs/physics-checks.md). Minimod's layer (docs/physics.md section 3) gives -37 dB at the
// default width (3 wavelengths of vmax/fmax: 16 points here) and -43 dB at 20 points; -40 dB is
// the aim.
TEST(PhysicsAbsorbingLayer, ReflectionOfAFace) {
  const double h = 10, c = 2000, f = 15;
  const double dt =
      0.8 * 2.0 /
      (c * std::sqrt(3 * (205.0 / 72 + 2 * (8.0 / 5 + 1.0 / 5 + 8.0 / 315 + 1.0 / 560)) / (h * h)));
  // Window: until the reference grid's own layer could send something back.
  const int steps = static_cast<int>((2 * 64 - 18 - 20) * h / c / dt);
  auto run = [&](int n, int centre, std::optional<int> width) {
    const Vec3 src{centre * h, centre * h, centre * h};
    Survey s = homogeneous_survey({n, n, n}, h, c, f, src);
    s.receivers.push_back(ReceiverSpec{{src[0] + 18 * h, src[1], src[2]}, {}});
    s.time.dt = dt;
    s.boundary.width = width;
    Simulation sim(s, constant_velocity(s, c), cpu_options(steps));
    sim.run({}, nullptr);
    return std::make_pair(sim.raw_traces(), sim.plan().layer.x_hi);
  };
  const auto [reference, ref_width] = run(161, 80, std::nullopt); // layer 64 points from source
  ASSERT_EQ(ref_width, 16);
  double direct = 0;
  for (float x : reference)
    direct = std::max(direct, std::abs(static_cast<double>(x)));
  auto reflection = [&](std::optional<int> width) {
    const int w = width.value_or(16);
    const auto [trace, used] = run(2 * (24 + w) + 1, 24 + w, width);
    EXPECT_EQ(used, w);
    double worst = 0;
    for (std::size_t n = 0; n < trace.size(); ++n) {
      worst = std::max(worst, std::abs(static_cast<double>(trace[n]) - reference[n]));
    }
    std::printf("[layer] %d points: reflection %.3g of the direct arrival (%.1f dB)\n", w,
                worst / direct, 20 * std::log10(worst / direct));
    return worst / direct;
  };
  EXPECT_LT(reflection(std::nullopt), 0.015); // default width: -37 dB measured
  EXPECT_LT(reflection(20), 0.01);            // -40 dB from 20 points on
}

// Energy left in the grid after the direct wave has crossed the layer, relative to the energy
// once the whole pulse is inside the grid.
TEST(PhysicsAbsorbingLayer, EnergyLeftAfterCrossing) {
  const double h = 10, c = 2000, f = 15;
  const Vec3 src{400, 400, 400};
  Survey s = homogeneous_survey({81, 81, 81}, h, c, f, src);
  auto energy_after = [&](double t) {
    Simulation probe(s, constant_velocity(s, c), cpu_options(1));
    const int steps = static_cast<int>(std::ceil(t / probe.plan().dt));
    Simulation sim(s, constant_velocity(s, c), cpu_options(steps));
    sim.run({}, nullptr);
    double e = 0;
    for (float u : sim.wavefield())
      e += static_cast<double>(u) * u;
    return e;
  };
  const double t0 = 1.5 / f;
  // The pulse has left the source (t0 + 1.5/f) and not yet reached the layer (24 points away).
  const double e_inside = energy_after(2 * t0 + 0.02);
  // The slowest part of the pulse has crossed to the corners of the grid (40 sqrt(3) points).
  const double e_left = energy_after(2 * t0 + 40 * std::sqrt(3.0) * h / c + 0.1);
  const double db = 10 * std::log10(e_left / e_inside);
  std::printf("[layer] energy left %.3g of the energy inside (%.1f dB)\n", e_left / e_inside, db);
  EXPECT_LT(e_left / e_inside, 1e-3);
}

// Swapping source and receiver gives the same trace (the discrete operator is symmetric).
TEST(PhysicsReciprocity, SwapSourceAndReceiver) {
  const double h = 10, f = 12;
  const Vec3 a{305, 402, 215}, b{552, 318, 463}; // off-grid, in different layers of the model
  auto run = [&](const Vec3& from, const Vec3& to, int width) {
    Survey s = homogeneous_survey({91, 81, 71}, h, 1800, f, from);
    s.model.kind = ModelSpec::Kind::Layered;
    s.receivers.push_back(ReceiverSpec{to, {}});
    s.boundary.width = width;
    s.time.dt = 1.2e-3;
    std::vector<float> velocity(static_cast<std::size_t>(91) * 81 * 71);
    for (int k = 0; k < 71; ++k) {
      const float v = k < 30 ? 1800.0f : (k < 50 ? 2400.0f : 3000.0f);
      std::fill_n(velocity.begin() + static_cast<std::size_t>(k) * 81 * 91, 81 * 91, v);
    }
    Simulation sim(s, velocity, cpu_options(400));
    sim.run({}, nullptr);
    const auto t = sim.raw_traces();
    return std::vector<double>(t.begin(), t.end());
  };
  for (int width : {0, 12}) {
    const auto ab = run(a, b, width), ba = run(b, a, width);
    const double err = rel_l2(ab, ba);
    std::printf("[reciprocity] layer %d points: relative L2 %.3g\n", width, err);
    // Without a layer the discrete operator is exactly symmetric; Minimod's PML is not quite.
    EXPECT_LT(err, width == 0 ? 1e-4 : 1e-2) << "layer width " << width;
  }
}

} // namespace
} // namespace minimod

namespace minimod {
namespace {

/// Trace at a receiver from a source, on a grid whose origin is shifted by `shift` (metres).
std::vector<double> shifted_trace(const Vec3& source, const Vec3& receiver, const Vec3& shift,
                                  Interpolation kind, double dt, int steps) {
  const double h = 10, c = 2000, f = 15;
  Survey s = homogeneous_survey({81, 81, 81}, h, c, f, source);
  s.grid.origin = shift;
  s.interpolation = kind;
  s.receivers.push_back(ReceiverSpec{receiver, {}});
  s.time.dt = dt;
  Simulation sim(s, constant_velocity(s, c), cpu_options(steps));
  sim.run({}, nullptr);
  const auto t = sim.raw_traces();
  return std::vector<double>(t.begin(), t.end());
}

// Source and receiver halfway between grid points (the grid shifted by half a cell along every
// axis) against the same physical positions on grid points: Hicks' windowed sinc within 1%.
TEST(PhysicsSinc, HalfCellShiftMatchesOnGrid) {
  const Vec3 source{400, 400, 400}, receiver{550, 450, 420};
  const double dt = 1.5e-3;
  const int steps = 180;
  const auto on_grid = shifted_trace(source, receiver, {0, 0, 0}, Interpolation::Sinc, dt, steps);
  const auto shifted = shifted_trace(source, receiver, {5, 5, 5}, Interpolation::Sinc, dt, steps);
  const auto linear =
      shifted_trace(source, receiver, {5, 5, 5}, Interpolation::Trilinear, dt, steps);
  const double err_sinc = rel_l2(shifted, on_grid), err_linear = rel_l2(linear, on_grid);
  std::printf("[sinc] half-cell shift: relative L2 %.4f (trilinear %.4f)\n", err_sinc, err_linear);
  EXPECT_LT(err_sinc, 0.01);
}

// A source off the grid matches the analytic solution as well as one on a grid point does.
TEST(PhysicsSinc, OffGridSourceMatchesAnalytic) {
  const double h = 10, c = 2000, f = c / (15 * h);
  auto error = [&](const Vec3& offset) {
    const Vec3 src{460 + offset[0], 600 + offset[1], 600 + offset[2]};
    Survey s = homogeneous_survey({120, 121, 121}, h, c, f, src);
    s.boundary.width = 30;
    s.time.cfl = 0.4;
    const Vec3 rec{src[0] + 400, src[1], src[2]}; // receivers follow the source: same distance
    s.receivers.push_back(ReceiverSpec{rec, {}});
    s.time.duration = 400 / c + 3.0 / f;
    s.time.steps.reset();
    Simulation sim(s, constant_velocity(s, c), cpu_options(0));
    sim.run({}, nullptr);
    const auto t = sim.raw_traces();
    std::vector<double> analytic(t.size());
    for (std::size_t n = 0; n < t.size(); ++n) {
      analytic[n] = ricker(n * sim.plan().dt - 400 / c, f, 1.5 / f) / (4 * kPi * 400);
    }
    return rel_l2(std::vector<double>(t.begin(), t.end()), analytic);
  };
  const double on_grid = error({0, 0, 0});
  const double off_grid = error({3.7, 5.0, 2.2});
  std::printf("[sinc] analytic at 400 m: on-grid source %.4f, off-grid source %.4f\n", on_grid,
              off_grid);
  EXPECT_LT(off_grid, 0.03);
  EXPECT_LT(off_grid, on_grid + 0.005);
}

} // namespace
} // namespace minimod

namespace minimod {
namespace {

// Free surface: the ghost (the reflection from the pressure-free top) arrives at the image source's
// distance with opposite polarity: u = s(t - r1/c)/(4 pi r1) - s(t - r2/c)/(4 pi r2).
TEST(PhysicsFreeSurface, GhostArrivesOnTimeWithOppositePolarity) {
  const double h = 10, c = 2000, f = 15;
  const Vec3 src{350, 350, 100};
  Survey s = homogeneous_survey({111, 71, 61}, h, c, f, src);
  s.boundary.free_surface = true;
  s.boundary.width = 20; // the layer's oblique reflections are the largest error at 15 points
  s.time.cfl = 0.4;
  const Vec3 rec{650, 350, 100};
  s.receivers.push_back(ReceiverSpec{rec, {}});
  const double r1 = 300, r2 = std::sqrt(300.0 * 300.0 + 200.0 * 200.0);
  const double t0 = 1.5 / f;
  s.time.duration = r2 / c + 2 * t0;
  s.time.steps.reset();
  Simulation sim(s, constant_velocity(s, c), cpu_options(0));
  ASSERT_EQ(sim.plan().layer.z_lo, 0);
  sim.run({}, nullptr);
  const double dt = sim.plan().dt;
  const auto t = sim.raw_traces();
  std::vector<double> trace(t.begin(), t.end()), image(t.size()), direct(t.size());
  for (std::size_t n = 0; n < t.size(); ++n) {
    direct[n] = ricker(n * dt - r1 / c, f, t0) / (4 * kPi * r1);
    image[n] = direct[n] - ricker(n * dt - r2 / c, f, t0) / (4 * kPi * r2);
  }
  const double err = rel_l2(trace, image);
  // The ghost alone: what is left after the direct wave; its extreme is its (negative) peak.
  std::size_t peak = 0;
  for (std::size_t n = 0; n < t.size(); ++n) {
    if (std::abs(trace[n] - direct[n]) > std::abs(trace[peak] - direct[peak])) peak = n;
  }
  const double ghost_time = peak * dt, expected = r2 / c + t0;
  std::printf("[free surface] relative L2 %.4f against the image solution; ghost peak at %.4f s "
              "(expected %.4f s), value %.3g\n",
              err, ghost_time, expected, trace[peak] - direct[peak]);
  EXPECT_LT(err, 0.05);
  EXPECT_NEAR(ghost_time, expected, 2 * dt);
  EXPECT_LT(trace[peak] - direct[peak], 0) << "the ghost has the opposite polarity";
}

} // namespace
} // namespace minimod
