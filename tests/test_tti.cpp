/// Checks of the acoustic TTI CPU reference (solver/tti.hpp, docs/tti.md) against physics nobody
/// here wrote (docs/physics.md sections 5 and 6): the isotropic reduction against the isotropic CPU
/// backend, the P velocities along and across the symmetry axis, the rotational consistency of a
/// horizontal axis with a vertical one on a transposed grid, the model checks and the stable dt.
#include "solver/plan.hpp"
#include "solver/simulation.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/tti_cpu.hpp"

#include "core/errors.hpp"
#include "kernels/tti_K.hpp"
#include "tests/grid_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kDeg = kPi / 180.0;

using test_support::make_grid;

/// A model with the same parameters everywhere; phi empty when `azimuth` is nullopt.
TtiModel uniform_model(const Grid& g, double vp, double epsilon, double delta, double theta,
                       std::optional<double> azimuth) {
  const std::size_t n = g.points();
  TtiModel m;
  m.vp.assign(n, static_cast<float>(vp));
  m.epsilon.assign(n, static_cast<float>(epsilon));
  m.delta.assign(n, static_cast<float>(delta));
  m.theta.assign(n, static_cast<float>(theta));
  if (azimuth) m.phi.assign(n, static_cast<float>(*azimuth));
  return m;
}

/// Calls f(i, j, k, n) for every point, n the dense index (x fastest).
void for_each_point(const Grid& g, const std::function<void(int, int, int, std::size_t)>& f) {
  std::size_t n = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i, ++n)
        f(i, j, k, n);
}

std::vector<float> ricker_samples(double f, double dt, int steps) {
  std::vector<float> s(static_cast<std::size_t>(steps));
  for (int n = 0; n < steps; ++n)
    s[static_cast<std::size_t>(n)] = static_cast<float>(ricker(n * dt, f, 1.5 / f));
  return s;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t n = 0; n < ref.size(); ++n) {
    const double d = static_cast<double>(a[n]) - ref[n];
    num += d * d;
    den += static_cast<double>(ref[n]) * ref[n];
  }
  return std::sqrt(num / den);
}

std::vector<float> trace_of(const std::vector<float>& traces, int r, int samples) {
  return std::vector<float>(traces.begin() + static_cast<std::ptrdiff_t>(r) * samples,
                            traces.begin() + static_cast<std::ptrdiff_t>(r + 1) * samples);
}

/// Time of a trace's largest sample, refined by a parabola through it and its neighbours.
double peak_time(const std::vector<float>& trace, double dt) {
  const auto it = std::max_element(trace.begin() + 1, trace.end() - 1);
  const auto i = static_cast<std::size_t>(it - trace.begin());
  const double a = trace[i - 1], b = trace[i], c = trace[i + 1];
  return (static_cast<double>(i) + 0.5 * (a - c) / (a - 2 * b + c)) * dt;
}

double field_energy(const std::vector<float>& u) {
  double e = 0;
  for (float x : u)
    e += static_cast<double>(x) * x;
  return e;
}

// (a) epsilon = delta = 0 with a tilted axis is the isotropic equation: the TTI run matches the
// isotropic CPU backend (same survey, model, source, receivers, layer and dt) and q stays zero.
TEST(TtiIsoReduction, TiltedAxisMatchesIsotropicRun) {
  const Grid g = make_grid(57, 53, 49, 10, 11, 9);
  const int steps = 200, width = 10;
  const double f = 15;
  std::vector<float> velocity(g.points());
  for_each_point(g, [&](int i, int, int k, std::size_t n) {
    velocity[n] = static_cast<float>(1800 + 8 * k + 3 * i);
  });
  TtiModel model = uniform_model(g, 0, 0, 0, 30 * kDeg, 20 * kDeg);
  model.vp = velocity;
  TtiPlanOptions o;
  o.steps = steps;
  o.layer_width = width;
  const TtiPlan plan = make_tti_plan(g, model, o);

  const Vec3 source{283.3, 261.7, 205.1};
  const std::vector<Vec3> receivers = {
      {283.3, 261.7, 331.4}, {402.6, 300.2, 205.1}, {150.5, 190.0, 120.3}, {351.0, 400.4, 290.7}};
  Survey s;
  s.path = "test";
  s.grid.shape = {g.nx, g.ny, g.nz};
  s.grid.spacing = {g.dx, g.dy, g.dz};
  s.model.kind = ModelSpec::Kind::Layered;
  s.time.dt = plan.dt;
  s.boundary.width = width;
  SourceSpec src;
  src.position = source;
  src.wavelet.kind = WaveletSpec::Kind::Ricker;
  src.wavelet.frequency = f;
  src.injection = Injection::Physical;
  s.sources.push_back(src);
  for (const Vec3& r : receivers)
    s.receivers.push_back(ReceiverSpec{r, {}});
  SimulationOptions so;
  so.backend = BackendChoice::Cpu;
  so.steps_override = steps;
  Simulation iso(s, velocity, so);
  iso.run({}, nullptr);
  // The TTI bound reduces to the isotropic one (check (e) as well).
  EXPECT_NEAR(plan.dt_limit / iso.plan().dt_limit, 1.0, 1e-12);

  const std::vector<TtiSource> sources = {
      {source, sample_wavelet(src.wavelet, plan.dt, steps, "test"), Injection::Physical}};
  TtiCpuRun tti(plan, model, sources, receivers, Interpolation::Sinc);
  ASSERT_TRUE(tti.has_azimuth());
  tti.run();

  const double trace_err = rel_l2(tti.traces(), iso.raw_traces());
  const double field_err = rel_l2(tti.wavefield_p(), iso.wavefield());
  double q_max = 0;
  for (float q : tti.wavefield_q())
    q_max = std::max(q_max, std::abs(static_cast<double>(q)));
  std::printf("[tti iso] traces relative L2 %.3g, wavefield %.3g, max |q| %g\n", trace_err,
              field_err, q_max);
  // The same operations in the same order, the layer's phi drive included (docs/tti.md): equal
  // bit for bit, which a tolerance would not notice losing (a drive summed without the acoustic
  // eta gradient's fused adds gave 2.8e-7 and 3.2e-6 here).
  EXPECT_EQ(trace_err, 0.0);
  EXPECT_EQ(field_err, 0.0);
  EXPECT_EQ(q_max, 0.0);
}

// (b) Homogeneous TTI, tilt 30 degrees, epsilon 0.2, delta 0.1: the P wave travels at vp along
// the symmetry axis and at vp sqrt(1 + 2 epsilon) across it (x-z plane). Peak times are compared
// with the isotropic run (epsilon = delta = 0, same dt and geometry) at the same distance, which
// cancels the wavelet's delay: v = r / (r / vp + t_tti - t_iso).
TEST(TtiKinematics, VelocitiesAlongAndAcrossTheAxis) {
  const double h = 10, vp = 2000, f = 15, tilt = 30 * kDeg, eps = 0.2, del = 0.1, r = 250;
  const Grid g = make_grid(81, 51, 81, h, h, h);
  const int width = 10;
  const Vec3 src{40 * h, 25 * h, 40 * h};
  const auto axis = tti_symmetry_axis(tilt, 0);
  const Vec3 along{src[0] + r * axis[0], src[1], src[2] + r * axis[2]};
  const Vec3 across{src[0] + r * axis[2], src[1], src[2] - r * axis[0]};
  const double t_end = 1.5 / f + r / vp + 0.8 / f;

  const TtiModel aniso = uniform_model(g, vp, eps, del, tilt, std::nullopt);
  TtiPlanOptions o;
  o.layer_width = width;
  o.steps = 1;
  const TtiPlan probe = make_tti_plan(g, aniso, o);
  o.dt = probe.dt;
  o.steps = static_cast<int>(std::ceil(t_end / probe.dt));
  auto run = [&](const TtiModel& m) {
    const TtiPlan plan = make_tti_plan(g, m, o);
    TtiCpuRun sim(plan, m, {{src, ricker_samples(f, plan.dt, plan.steps)}}, {along, across});
    sim.run();
    const int samples = plan.steps + 1;
    return std::vector<double>{peak_time(trace_of(sim.traces(), 0, samples), plan.dt),
                               peak_time(trace_of(sim.traces(), 1, samples), plan.dt)};
  };
  const auto t_tti = run(aniso);
  const auto t_iso = run(uniform_model(g, vp, 0, 0, tilt, std::nullopt));
  const double v_along = r / (r / vp + t_tti[0] - t_iso[0]);
  const double v_across = r / (r / vp + t_tti[1] - t_iso[1]);
  const double want_across = vp * std::sqrt(1 + 2 * eps);
  std::printf("[tti kinematics] along the axis %.1f m/s (want %.1f, %+.2f%%), across %.1f m/s "
              "(want %.1f, %+.2f%%)\n",
              v_along, vp, 100 * (v_along / vp - 1), v_across, want_across,
              100 * (v_across / want_across - 1));
  EXPECT_NEAR(v_along / vp, 1.0, 0.01);
  EXPECT_NEAR(v_across / want_across, 1.0, 0.01);
}

// (c) A horizontal symmetry axis (tilt 90 degrees, azimuth 0) is a VTI medium with x and z
// swapped: the run on grid G equals the VTI run on the transposed grid G' (spacings, model,
// source and receivers transposed), with a model that varies along x in G (along z in G').
TEST(TtiRotation, HorizontalAxisEqualsTransposedVti) {
  const Grid g = make_grid(61, 41, 51, 10, 11, 12);
  const Grid gt = make_grid(51, 41, 61, 12, 11, 10);
  const int steps = 150;
  TtiModel m = uniform_model(g, 0, 0, 0.1, kPi / 2, std::nullopt);
  for_each_point(g, [&](int i, int, int, std::size_t n) {
    m.vp[n] = static_cast<float>(2000 + 10 * i);
    m.epsilon[n] = static_cast<float>(0.25 + 0.002 * i);
  });
  TtiModel mt = uniform_model(gt, 0, 0, 0.1, 0, std::nullopt);
  for_each_point(gt, [&](int, int, int k, std::size_t n) {
    mt.vp[n] = static_cast<float>(2000 + 10 * k);
    mt.epsilon[n] = static_cast<float>(0.25 + 0.002 * k);
  });
  TtiPlanOptions o;
  o.steps = steps;
  o.layer_width = 8;
  const TtiPlan plan = make_tti_plan(g, m, o);
  o.dt = plan.dt;
  const TtiPlan plan_t = make_tti_plan(gt, mt, o);
  EXPECT_NEAR(plan_t.dt_limit / plan.dt_limit, 1.0, 1e-12);

  auto swap = [](const Vec3& x) { return Vec3{x[2], x[1], x[0]}; };
  const Vec3 src{251.7, 223.4, 305.2};
  const std::vector<Vec3> rcv = {
      {420.3, 223.4, 305.2}, {251.7, 223.4, 452.9}, {330.1, 300.6, 200.4}};
  std::vector<Vec3> rcv_t;
  for (const Vec3& r : rcv)
    rcv_t.push_back(swap(r));
  const std::vector<float> wavelet = ricker_samples(15, plan.dt, steps);
  TtiCpuRun a(plan, m, {{src, wavelet}}, rcv);
  TtiCpuRun b(plan_t, mt, {{swap(src), wavelet}}, rcv_t);
  a.run();
  b.run();
  const double trace_err = rel_l2(a.traces(), b.traces());
  // Wavefields: p(i, j, k) on G against p'(k, j, i) on G'.
  const std::vector<float> pa = a.wavefield_p(), pb = b.wavefield_p();
  std::vector<float> pb_back(pa.size());
  for_each_point(g, [&](int i, int j, int k, std::size_t n) {
    pb_back[n] = pb[(static_cast<std::size_t>(i) * gt.ny + j) * gt.nx + k];
  });
  const double field_err = rel_l2(pa, pb_back);
  std::printf("[tti rotation] traces relative L2 %.3g, wavefield %.3g\n", trace_err, field_err);
  EXPECT_LE(trace_err, 1e-4);
  EXPECT_LE(field_err, 1e-4);
}

/// The message of the InputError that validate_tti_model throws, or "" when it accepts.
std::string rejection(const Grid& g, const TtiModel& m) {
  try {
    validate_tti_model(g, m);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// (d) epsilon < delta makes the system unstable: rejected, naming the first such point and values.
TEST(TtiModelChecks, EpsilonBelowDeltaNamesThePoint) {
  const Grid g = make_grid(9, 8, 9, 10, 10, 10);
  TtiModel m = uniform_model(g, 2000, 0.1, 0.1, 0.3, 0.2);
  EXPECT_EQ(rejection(g, m), "");
  m.delta[(8 * 8 + 6) * 9 + 2] = 0.2f;  // (2, 6, 8)
  m.delta[(7 * 8 + 5) * 9 + 3] = 0.15f; // (3, 5, 7): the first in memory order
  const std::string msg = rejection(g, m);
  std::printf("[tti checks] %s\n", msg.c_str());
  EXPECT_NE(msg.find("epsilon 0.1 < delta 0.15"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at point (3, 5, 7) = (30, 50, 70) m: epsilon"), std::string::npos) << msg;
  TtiPlanOptions o;
  o.steps = 1;
  o.layer_width = 0;
  EXPECT_THROW(make_tti_plan(g, m, o), InputError);
}

TEST(TtiModelChecks, AnglesSizesAndDelta) {
  const Grid g = make_grid(9, 8, 7, 10, 10, 10);
  const std::size_t at = (2 * 8 + 1) * 9 + 4; // (4, 1, 2)
  // A tilt of exactly float(pi/2) and an azimuth of float(+-pi) are accepted.
  TtiModel m = uniform_model(g, 2000, 0.2, 0.1, kPi / 2, kPi);
  m.phi[0] = static_cast<float>(-kPi);
  m.theta[1] = static_cast<float>(-kPi / 2);
  EXPECT_EQ(rejection(g, m), "");
  TtiModel bad = m;
  bad.theta[at] = 30.0f; // degrees given as radians
  std::string msg = rejection(g, bad);
  EXPECT_NE(msg.find("tilt theta 30"), std::string::npos) << msg;
  EXPECT_NE(msg.find("point (4, 1, 2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("radians"), std::string::npos) << msg;
  bad = m;
  bad.phi[at] = 3.2f;
  msg = rejection(g, bad);
  EXPECT_NE(msg.find("azimuth phi 3.2"), std::string::npos) << msg;
  bad = m;
  bad.theta[at] = std::nanf("");
  EXPECT_NE(rejection(g, bad).find("tilt theta nan"), std::string::npos);
  bad = m;
  bad.delta[at] = -0.5f;
  bad.epsilon[at] = 0.0f;
  EXPECT_NE(rejection(g, bad).find("delta > -0.5"), std::string::npos);
  bad = m;
  bad.vp[at] = 0.0f;
  EXPECT_NE(rejection(g, bad).find("vp 0 m/s"), std::string::npos);
  // 2 delta and 2 (epsilon - delta) are stored as 16-bit floats.
  bad = m;
  bad.delta[at] = 4e4f;
  bad.epsilon[at] = 4e4f;
  msg = rejection(g, bad);
  EXPECT_NE(msg.find("delta 40000 do not fit the medium's 16-bit floats"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("allowed: delta < 30000 and epsilon - delta < 30000"), std::string::npos)
      << msg;
  bad = m;
  bad.epsilon[at] = 3.5e4f;
  EXPECT_NE(rejection(g, bad).find("epsilon 35000, delta 0.1 do not fit"), std::string::npos);
  bad = m;
  bad.epsilon.pop_back();
  EXPECT_NE(rejection(g, bad).find("epsilon has 503 values for a grid of 504 points"),
            std::string::npos);
}

// The compact medium (kernels/tti_K.hpp): binary16 anisotropy and fixed-point axis.
TEST(TtiCompactMedium, HalfFloatsRoundTripAndRoundToNearestEven) {
  // Every finite binary16 decodes to a float that encodes back to the same bits (-0 included).
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    if (((h >> 10) & 0x1fu) == 0x1fu) continue; // infinities and NaNs are never stored
    const float v = tti_half_to_float(h);
    ASSERT_EQ(tti_half_bits(v, "v"), h) << "bits " << h << " value " << v;
  }
  EXPECT_EQ(tti_half_to_float(0x3c00u), 1.0f);
  EXPECT_EQ(tti_half_to_float(0xc000u), -2.0f);
  EXPECT_EQ(tti_half_to_float(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(tti_half_to_float(0xfc00u), -HUGE_VALF); // never encoded; decoded as a GPU does
  EXPECT_TRUE(std::isnan(tti_half_to_float(0x7e00u)));
  // Ties go to the even significand, in the normal and the subnormal range.
  EXPECT_EQ(tti_half_bits(1.0 + std::ldexp(1.0, -11), "v"), 0x3c00u);
  EXPECT_EQ(tti_half_bits(1.0 + 3 * std::ldexp(1.0, -11), "v"), 0x3c02u);
  EXPECT_EQ(tti_half_bits(std::ldexp(1.0, -25), "v"), 0x0000u);
  EXPECT_EQ(tti_half_bits(3 * std::ldexp(1.0, -25), "v"), 0x0002u);
  EXPECT_EQ(tti_half_bits(std::ldexp(1.0, -14) - std::ldexp(1.0, -25), "v"), 0x0400u);
  EXPECT_EQ(tti_half_bits(2.0 - std::ldexp(1.0, -12), "v"), 0x4000u); // carries into the exponent
  EXPECT_EQ(tti_half_bits(-0.4, "v"), 0x8000u | tti_half_bits(0.4, "v"));
  // Within half a unit in the last place (2^-11 relative) across the normal range.
  for (double v = 1e-4; v < 6e4; v *= 1.37)
    EXPECT_LE(std::fabs(tti_half_to_float(tti_half_bits(v, "v")) - v), std::ldexp(v, -11)) << v;
  // The largest binary16 is 65504; 65520 would round to infinity.
  EXPECT_EQ(tti_half_bits(65519.9, "v"), 0x7bffu);
  try {
    (void)tti_half_bits(65520.0, "2 delta");
    ADD_FAILURE() << "65520 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 delta = 65520"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)tti_half_bits(std::nan(""), "v"), std::invalid_argument);
  EXPECT_THROW((void)tti_half_bits(-HUGE_VAL, "v"), std::invalid_argument);
}

TEST(TtiCompactMedium, AxisFixedPointAndPairs) {
  EXPECT_EQ(tti_axis_fixed(1.0), 16384);
  EXPECT_EQ(tti_axis_fixed(-1.0), -16384);
  EXPECT_EQ(tti_axis_value(tti_axis_fixed(1.0)), 1.0f);
  EXPECT_EQ(tti_axis_value(tti_axis_fixed(-0.5)), -0.5f);
  for (double v = -1.0; v <= 1.0; v += 0.0123)
    EXPECT_LE(std::fabs(tti_axis_value(tti_axis_fixed(v)) - v), std::ldexp(1.0, -15) + 1e-12) << v;
  EXPECT_THROW((void)tti_axis_fixed(1.0001), std::invalid_argument);
  EXPECT_THROW((void)tti_axis_fixed(std::nan("")), std::invalid_argument);
  // Pairs: the low half first, each half signed for the axis.
  const std::uint32_t axis = tti_pair(static_cast<std::uint16_t>(tti_axis_fixed(-0.75)),
                                      static_cast<std::uint16_t>(tti_axis_fixed(0.25)));
  EXPECT_EQ(tti_pair_lo_axis(axis), -0.75f);
  EXPECT_EQ(tti_pair_hi_axis(axis), 0.25f);
  const std::uint32_t aniso = tti_pair(tti_half_bits(-0.2, "v"), tti_half_bits(0.3, "v"));
  EXPECT_EQ(tti_pair_lo_half(aniso), tti_half_to_float(tti_half_bits(-0.2, "v")));
  EXPECT_EQ(tti_pair_hi_half(aniso), tti_half_to_float(tti_half_bits(0.3, "v")));
  EXPECT_NEAR(tti_pair_hi_half(aniso), 0.3, 0.3 * std::ldexp(1.0, -11));
}

/// The layer form without phi (kPhi = false, for media with no driven layer point) computes what
/// the form with phi computes there, bit for bit: an anelliptic medium, random fields, one update
/// of every layer point each way (a phi array of zeros in the one, none in the other), with and
/// without azimuth. The GPU kernels' forms without phi are checked against the CPU solver's
/// (AnellipticLayerRunsWithoutPhi), which uses this one.
TEST(TtiLayer, FormWithoutPhiEqualsFormWithPhiWhereNothingIsDriven) {
  const Grid g = make_grid(23, 19, 17, 10.0, 12.0, 9.0);
  for (const bool az : {false, true}) {
    SCOPED_TRACE(az ? "azimuth" : "tilt only");
    const TtiModel m = uniform_model(g, 2100.0, 0.25, 0.1, 35.0 * kDeg,
                                     az ? std::optional<double>(20.0 * kDeg) : std::nullopt);
    TtiPlanOptions o;
    o.steps = 4;
    o.layer_width = 5;
    const TtiProblem p = build_tti_problem(make_tti_plan(g, m, o), m, {}, {});
    ASSERT_FALSE(tti_needs_phi(p));
    ASSERT_EQ(p.has_azimuth(), az);
    const FieldLayout& l = p.layout;
    const auto size = static_cast<std::size_t>(l.size);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<float> pf(size, 0.0f), qf(size, 0.0f), prev_p(size, 0.0f), prev_q(size, 0.0f);
    for_each_point(g, [&](int i, int j, int k, std::size_t) {
      const auto q = static_cast<std::size_t>(l.index(i, j, k));
      pf[q] = unit(rng);
      qf[q] = unit(rng);
      prev_p[q] = unit(rng);
      prev_q[q] = unit(rng);
    });
    std::vector<float> pn1 = prev_p, qn1 = prev_q, pn0 = prev_p, qn0 = prev_q, phi(size, 0.0f);
    TtiFields f = tti_medium_fields(p);
    f.p = pf.data();
    f.q = qf.data();
    TtiFields with = f, without = f;
    with.p_next = pn1.data();
    with.q_next = qn1.data();
    with.phi_p = phi.data();
    without.p_next = pn0.data();
    without.q_next = qn0.data();
    std::size_t points = 0;
    for (const Region& r : p.regions) {
      if (r.kind() != RegionKind::Layer) continue;
      for (int k = r.box.z0; k < r.box.z1; ++k)
        for (int j = r.box.y0; j < r.box.y1; ++j)
          for (int i = r.box.x0; i < r.box.x1; ++i, ++points) {
            const std::int64_t q = l.index(i, j, k);
            if (az) {
              tti_update_point<true, true, true>(with, q, l.pitch, l.plane, p.coefs);
              tti_update_point<true, true, false>(without, q, l.pitch, l.plane, p.coefs);
            } else {
              tti_update_point<false, true, true>(with, q, l.pitch, l.plane, p.coefs);
              tti_update_point<false, true, false>(without, q, l.pitch, l.plane, p.coefs);
            }
          }
    }
    EXPECT_GT(points, 0u);
    EXPECT_EQ(std::memcmp(pn1.data(), pn0.data(), size * sizeof(float)), 0) << "p_next";
    EXPECT_EQ(std::memcmp(qn1.data(), qn0.data(), size * sizeof(float)), 0) << "q_next";
    EXPECT_NE(std::memcmp(pn1.data(), prev_p.data(), size * sizeof(float)), 0) << "no update";
    EXPECT_TRUE(std::all_of(phi.begin(), phi.end(), [](float x) { return x == 0.0f; }));
  }
}

/// The layer touches phi_p only where the medium is elliptic: with phi NaN at the anelliptic
/// layer points, one step leaves it NaN there (neither read nor written) and finite fields;
/// at the elliptic points phi is driven (written, and non-zero next to the source's wave).
TEST(TtiLayer, PhiIsReadAndWrittenOnlyWhereElliptic) {
  const Grid g = make_grid(40, 24, 36, 10.0, 10.0, 10.0);
  TtiModel m = uniform_model(g, 2000.0, 0.2, 0.1, 25.0 * kDeg, 15.0 * kDeg);
  // Elliptic (epsilon = delta) in the upper half.
  for_each_point(g, [&](int, int, int k, std::size_t n) {
    if (k < g.nz / 2) m.epsilon[n] = m.delta[n];
  });
  TtiPlanOptions o;
  o.steps = 40;
  o.layer_width = 6;
  const TtiPlan plan = make_tti_plan(g, m, o);
  TtiProblem p = build_tti_problem(plan, m, {}, {});
  const FieldLayout& l = p.layout;
  const auto size = static_cast<std::size_t>(l.size);
  std::vector<float> pf(size, 0.0f), qf(size, 0.0f), pn(size, 0.0f), qn(size, 0.0f);
  std::vector<float> phi(size, std::numeric_limits<float>::quiet_NaN());
  // A smooth bump of p and q across the layer's corner, so that the drive is non-zero.
  for_each_point(g, [&](int i, int j, int k, std::size_t) {
    const double r2 = (i - 3.0) * (i - 3.0) + (j - 12.0) * (j - 12.0) + (k - 5.0) * (k - 5.0);
    const auto q = static_cast<std::size_t>(l.index(i, j, k));
    pf[q] = static_cast<float>(std::exp(-r2 / 20.0));
    qf[q] = 0.5f * pf[q];
  });
  TtiFields f = tti_medium_fields(p);
  f.p = pf.data();
  f.q = qf.data();
  f.p_next = pn.data();
  f.q_next = qn.data();
  ASSERT_TRUE(p.has_azimuth());
  f.phi_p = phi.data();
  // phi starts at zero at the elliptic points, as a run's does.
  std::size_t elliptic = 0, anelliptic = 0, driven_nonzero = 0;
  for (const Region& r : p.regions) {
    if (r.kind() != RegionKind::Layer) continue;
    for (int k = r.box.z0; k < r.box.z1; ++k)
      for (int j = r.box.y0; j < r.box.y1; ++j)
        for (int i = r.box.x0; i < r.box.x1; ++i)
          if (k < g.nz / 2) phi[static_cast<std::size_t>(l.index(i, j, k))] = 0.0f;
  }
  for (const Region& r : p.regions) {
    if (r.kind() != RegionKind::Layer) continue;
    for (int k = r.box.z0; k < r.box.z1; ++k)
      for (int j = r.box.y0; j < r.box.y1; ++j)
        for (int i = r.box.x0; i < r.box.x1; ++i)
          tti_update_point<true, true>(f, l.index(i, j, k), l.pitch, l.plane, p.coefs);
  }
  for (const Region& r : p.regions) {
    if (r.kind() != RegionKind::Layer) continue;
    for (int k = r.box.z0; k < r.box.z1; ++k)
      for (int j = r.box.y0; j < r.box.y1; ++j)
        for (int i = r.box.x0; i < r.box.x1; ++i) {
          const auto q = static_cast<std::size_t>(l.index(i, j, k));
          ASSERT_TRUE(std::isfinite(pn[q]) && std::isfinite(qn[q])) << i << "," << j << "," << k;
          if (k < g.nz / 2) {
            ++elliptic;
            ASSERT_TRUE(std::isfinite(phi[q])) << i << "," << j << "," << k;
            driven_nonzero += phi[q] != 0.0f ? 1 : 0;
          } else {
            ++anelliptic;
            ASSERT_TRUE(std::isnan(phi[q])) << "phi written at " << i << "," << j << "," << k;
          }
        }
  }
  EXPECT_GT(elliptic, 0u);
  EXPECT_GT(anelliptic, 0u);
  EXPECT_GT(driven_nonzero, 0u) << "the elliptic layer's phi was not driven";

  // The floor counts eta at every layer point and phi_p (8 bytes) at the elliptic ones.
  std::size_t layer = 0;
  for (const Region& r : p.regions)
    if (r.kind() == RegionKind::Layer) layer += static_cast<std::size_t>(r.box.points());
  EXPECT_EQ(layer, elliptic + anelliptic);
  EXPECT_NEAR(tti_floor_bytes_per_point(p),
              38.0 + (4.0 * static_cast<double>(layer) + 8.0 * static_cast<double>(elliptic)) /
                         static_cast<double>(g.points()),
              1e-12);
  const TtiModel anelliptic_model = uniform_model(g, 2000.0, 0.2, 0.1, 25.0 * kDeg, std::nullopt);
  const TtiProblem q =
      build_tti_problem(make_tti_plan(g, anelliptic_model, o), anelliptic_model, {}, {});
  EXPECT_NEAR(tti_floor_bytes_per_point(q),
              36.0 + 4.0 * static_cast<double>(layer) / static_cast<double>(g.points()), 1e-12);
  // Only the problem with an elliptic layer point needs phi_p; the model-level check agrees.
  EXPECT_TRUE(tti_needs_phi(p));
  EXPECT_FALSE(tti_needs_phi(q));
  EXPECT_TRUE(tti_layer_has_elliptic_point(g, plan.layer, m));
  EXPECT_FALSE(tti_layer_has_elliptic_point(g, plan.layer, anelliptic_model));
  EXPECT_EQ(p.device_bytes() - q.device_bytes(),
            static_cast<std::size_t>(l.size) * (sizeof(float) + sizeof(std::int16_t)));
}

// (e) The stable dt: equal to the isotropic bound when epsilon = delta = 0 whatever the axis and
// spacing, and below it (by at least sqrt(1 + 2 epsilon_max)) for anisotropic media.
TEST(TtiStableDt, ReducesToIsotropicAndShrinksWithAnisotropy) {
  for (const Grid& g : {make_grid(5, 5, 5, 10, 10, 10), make_grid(5, 6, 7, 10, 12.5, 7)}) {
    const double iso = stable_dt_limit(g, 3000);
    for (double theta : {0.0, 30 * kDeg, 45 * kDeg, 90 * kDeg, -60 * kDeg}) {
      for (double phi : {0.0, 20 * kDeg, -135 * kDeg}) {
        const TtiModel m0 = uniform_model(g, 3000, 0, 0, theta, phi);
        EXPECT_NEAR(tti_dt_limit(g, m0) / iso, 1.0, 1e-12) << theta << " " << phi;
        for (auto [eps, del] : {std::pair{0.2, 0.1}, {0.4, -0.2}, {0.1, 0.1}, {0.6, 0.3}}) {
          const TtiModel m = uniform_model(g, 3000, eps, del, theta, phi);
          const double dt = tti_dt_limit(g, m);
          EXPECT_LE(dt, iso / std::sqrt(1 + 2 * eps) * (1 + 1e-12)) << eps << " " << del;
        }
      }
    }
  }
  const Grid g = make_grid(5, 5, 5, 10, 10, 10);
  const TtiModel m = uniform_model(g, 3000, 0.2, 0.1, 30 * kDeg, 0);
  TtiPlanOptions o;
  o.steps = 10;
  o.layer_width = 1;
  const TtiPlan plan = make_tti_plan(g, m, o);
  std::printf("[tti dt] vp 3000, eps 0.2, delta 0.1, tilt 30: dt limit %.6g s, isotropic %.6g s "
              "(ratio %.4f, 1/sqrt(1.4) = %.4f)\n",
              plan.dt_limit, plan.dt_limit_iso, plan.dt_limit / plan.dt_limit_iso,
              1 / std::sqrt(1.4));
  EXPECT_NEAR(plan.dt, 0.8 * plan.dt_limit, 1e-15);
  o.steps = 0;
  o.duration = 0.1;
  EXPECT_EQ(make_tti_plan(g, m, o).steps, static_cast<int>(std::ceil(0.1 / plan.dt)));
  o.dt = plan.dt_limit * 1.001;
  EXPECT_THROW(make_tti_plan(g, m, o), InputError);
}

// (e) A strongly anisotropic, tilted, heterogeneous model with a layer stays bounded at the dt
// of the plan and at the cfl = 1 limit: the energy left once the waves have reached the layer
// falls instead of growing. The model has anelliptic zones (epsilon > delta) next to the layer,
// where Minimod's phi correction would grow exponentially (docs/tti.md, "Layer").
TEST(TtiStableDt, StronglyAnisotropicRunStaysBounded) {
  const double h = 10;
  const Grid g = make_grid(39, 35, 37, h, h, h);
  TtiModel m = uniform_model(g, 0, 0, 0, 45 * kDeg, 30 * kDeg);
  for_each_point(g, [&](int i, int, int k, std::size_t n) {
    const bool deep = k > 18, left = i < 15;
    m.vp[n] = deep ? 3000.0f : 2000.0f;
    m.epsilon[n] = left ? 0.12f : (deep ? 0.5f : 0.3f);
    m.delta[n] = left ? 0.1f : (deep ? -0.1f : 0.05f);
  });
  const int steps = 1000;
  for (double cfl : {0.8, 1.0}) {
    TtiPlanOptions o;
    o.steps = steps;
    o.cfl = cfl;
    o.layer_width = 8;
    const TtiPlan plan = make_tti_plan(g, m, o);
    TtiCpuRun sim(plan, m, {{{19 * h, 17 * h, 18 * h}, ricker_samples(20, plan.dt, steps)}}, {});
    double e_max = 0, e_end = 0;
    for (int n = 0; n < plan.steps; ++n) {
      sim.step(n);
      if ((n + 1) % 50 == 0) {
        e_end = field_energy(sim.wavefield_p()) + field_energy(sim.wavefield_q());
        ASSERT_TRUE(std::isfinite(e_end)) << "cfl " << cfl << ", step " << n;
        e_max = std::max(e_max, e_end);
      }
    }
    std::printf("[tti stability] cfl %.1f, dt %.4g s, %d steps (%.2f s): energy at the end %.3g "
                "of its largest\n",
                cfl, plan.dt, plan.steps, plan.steps * plan.dt, e_end / e_max);
    EXPECT_LT(e_end, 0.05 * e_max) << "cfl " << cfl;
  }
}

// A survey's later shot on the CPU reference: load_shot on a used simulation gives exactly what a
// fresh simulation of that shot gives (fields, phi and traces restart).
TEST(TtiShots, LoadShotEqualsAFreshSimulation) {
  const double h = 10;
  const Grid g = make_grid(31, 27, 29, h, h, h);
  const TtiModel m = uniform_model(g, 2000, 0.2, 0.1, 30 * kDeg, 20 * kDeg);
  TtiPlanOptions o;
  o.steps = 60;
  o.layer_width = 5;
  const TtiPlan plan = make_tti_plan(g, m, o);
  const std::vector<TtiSource> first = {
      {{100.0, 120.0, 140.0}, ricker_samples(25, plan.dt, plan.steps)}};
  const std::vector<TtiSource> second = {
      {{181.5, 133.0, 97.0}, ricker_samples(20, plan.dt, plan.steps)}};
  const std::vector<Vec3> rcv_first = {{200.0, 130.0, 140.0}};
  const std::vector<Vec3> rcv_second = {{60.0, 130.0, 150.0}, {250.0, 90.0, 200.0}};

  TtiCpuRun reused(plan, m, first, rcv_first);
  reused.run();
  reused.load_shot(second, rcv_second, Interpolation::Sinc);
  EXPECT_EQ(reused.steps_done(), 0);
  reused.run();
  TtiCpuRun fresh(plan, m, second, rcv_second, Interpolation::Sinc);
  fresh.run();
  EXPECT_EQ(reused.traces(), fresh.traces());
  EXPECT_EQ(reused.wavefield_p(), fresh.wavefield_p());
  EXPECT_EQ(reused.wavefield_q(), fresh.wavefield_q());
}

} // namespace
} // namespace minimod
