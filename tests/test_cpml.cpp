/// The C-PML (kernels/cpml.hpp): its profile and storage, the survey keys, the reflection by
/// angle against the targets (tests/reflection_harness.hpp) and long-time stability.
#include "core/errors.hpp"
#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpml.hpp"
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"

#include "omp_threads.hpp"
#include "reflection_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace minimod {
namespace {

const std::string kSurvey = "grid: {shape: [20, 20, 20], spacing: 10}\n"
                            "model: {type: constant, velocity: 2000}\n"
                            "time: {steps: 10}\n"
                            "sources:\n"
                            "  - position: [100, 100, 50]\n"
                            "    wavelet: {type: ricker, frequency: 10}\n";

std::string error_of(const std::string& text) {
  try {
    parse_survey(text, "t.yaml", ".");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

void expect_error(const std::string& text, std::initializer_list<const char*> pieces) {
  const std::string message = error_of(text);
  for (const char* piece : pieces)
    EXPECT_NE(message.find(piece), std::string::npos) << message << "\nlacks: " << piece;
}

TEST(CpmlSurvey, TypeAndProfileKeys) {
  const Survey d = parse_survey(kSurvey, "t.yaml", ".");
  EXPECT_EQ(d.boundary.type, kDefaultBoundaryType);
  const Survey m = parse_survey(kSurvey + "boundary: {type: minimod, width: 5}\n", "t.yaml", ".");
  EXPECT_EQ(m.boundary.type, BoundaryType::Minimod);
  const Survey c = parse_survey(kSurvey + "boundary: {type: cpml, width: 6, reflection: 1e-3, "
                                          "power: 3, alpha: 20, kappa: 2}\n",
                                "t.yaml", ".");
  EXPECT_EQ(c.boundary.type, BoundaryType::Cpml);
  EXPECT_DOUBLE_EQ(*c.boundary.reflection, 1e-3);
  EXPECT_DOUBLE_EQ(*c.boundary.power, 3);
  EXPECT_DOUBLE_EQ(*c.boundary.alpha, 20);
  EXPECT_DOUBLE_EQ(*c.boundary.kappa, 2);
  const CpmlParams p =
      cpml_params(parse_survey(kSurvey + "boundary: {type: cpml}\n", "t.yaml", ".").boundary, 25.0);
  EXPECT_DOUBLE_EQ(p.reflection, 1e-4);
  EXPECT_DOUBLE_EQ(p.power, 2);
  EXPECT_NEAR(p.alpha, 3.14159265358979 * 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(p.kappa, 1);
}

TEST(CpmlSurvey, BadValuesNameFieldValueAndAllowed) {
  expect_error(kSurvey + "boundary: {type: pml}\n", {"boundary.type", "pml", "minimod", "cpml"});
  expect_error(kSurvey + "boundary: {type: cpml, reflection: 2}\n",
               {"boundary.reflection", "2", "(0, 1)"});
  expect_error(kSurvey + "boundary: {type: cpml, reflection: 0}\n", {"boundary.reflection"});
  expect_error(kSurvey + "boundary: {type: cpml, power: -1}\n", {"boundary.power", "-1"});
  expect_error(kSurvey + "boundary: {type: cpml, alpha: -3}\n", {"boundary.alpha", "-3", ">= 0"});
  expect_error(kSurvey + "boundary: {type: cpml, kappa: 0.5}\n", {"boundary.kappa", "0.5"});
  expect_error(kSurvey + "boundary: {type: minimod, kappa: 2}\n", {"boundary.kappa", "type: cpml"});
  expect_error(kSurvey + "boundary: {reflection: 1e-3}\n", {"boundary.reflection"});
}

TEST(CpmlProfile, CoefficientsAndSlabs) {
  const Grid g{30, 20, 25, 10, 10, 10, 0, 0, 0};
  const LayerWidths w{8, 6, 5, 0, 7, 7};
  const CpmlProfile p = make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{1e-4, 2, 30, 1});
  // Outside the slabs: no convolution (a = 0, b = 1).
  EXPECT_EQ(p.a[0][8], 0.0f);
  EXPECT_EQ(p.b[0][8], 1.0f);
  EXPECT_EQ(p.a[0][30 - 7], 0.0f);
  EXPECT_EQ(p.a[1][19], 0.0f); // no layer on the high y face
  // Inside: 0 < b < 1 and a < 0, stronger towards the outer face.
  for (int i = 0; i < 8; ++i) {
    EXPECT_GT(p.b[0][i], 0.0f);
    EXPECT_LT(p.b[0][i], 1.0f);
    EXPECT_LT(p.a[0][i], 0.0f);
    if (i > 0) {
      EXPECT_LT(p.b[0][i - 1], p.b[0][i]);
    }
  }
  EXPECT_EQ(p.ik[0][0], 1.0f);
  EXPECT_EQ(p.dik[0][0], 0.0f);
  // The slabs: width times the cross-section, psi with kHalo zero points on each side.
  EXPECT_EQ(cpml_slab_points(g, w, 0, false), 8u * 20 * 25);
  EXPECT_EQ(cpml_slab_points(g, w, 0, false, kHalo), 16u * 20 * 25);
  EXPECT_EQ(cpml_slab_points(g, w, 1, true, kHalo), 0u);
  // kappa > 1: 1 / kappa falls towards the outer face, and its derivative has the sign of that.
  const CpmlProfile k = make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{1e-4, 2, 30, 3});
  EXPECT_LT(k.ik[0][0], k.ik[0][7]);
  EXPECT_GT(k.dik[0][0], 0.0f);  // low face: 1/kappa grows with the index
  EXPECT_LT(k.dik[0][29], 0.0f); // high face: it falls
  EXPECT_THROW(make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{2, 2, 0, 1}), std::invalid_argument);
}

// The fused update's taps (cpml_psi_taps) against d_a psi^n formed as the reference forms it: the
// memory pass's psi^n = b psi^(n-1) + a d_a u^n at the neighbours, then its first derivative,
// reading psi of the point's own slab only. Random psi^(n-1) and u, u also outside the ghost
// (where the taps must have no weight); a wide grid and one whose interior is narrower than the
// stencil (the faces' slabs within 4 points of each other), along each axis, kappa > 1.
TEST(CpmlProfile, FusedTapsGiveTheDerivativeOfTheNextMemory) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(-1, 1);
  for (const int n : {31, 14}) {
    for (int axis = 0; axis < 3; ++axis) {
      int shape[3] = {12, 12, 12};
      shape[axis] = n;
      const Grid g{shape[0], shape[1], shape[2], 10, 12.5, 8, 0, 0, 0};
      int widths[6] = {3, 3, 3, 3, 3, 3};
      widths[2 * axis] = 6;
      widths[2 * axis + 1] = 5;
      const LayerWidths w{widths[0], widths[1], widths[2], widths[3], widths[4], widths[5]};
      const CpmlProfile prof = make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{1e-4, 2, 30, 2});
      const std::vector<float> taps = cpml_psi_taps(prof, w, axis);
      ASSERT_EQ(taps.size(), static_cast<std::size_t>(n) * kCpmlTaps);
      const auto face = [&](int c) {
        return c >= 0 && c < w.on(axis, false) ? 0 : (c >= n - w.on(axis, true) && c < n ? 1 : -1);
      };
      // u at indices -12 .. n + 11 and psi^(n-1) of each slab point.
      std::vector<double> u(static_cast<std::size_t>(n + 24)), psi(static_cast<std::size_t>(n));
      for (double& x : u)
        x = value(rng);
      for (int c = 0; c < n; ++c)
        psi[static_cast<std::size_t>(c)] = face(c) >= 0 ? value(rng) : 0.0;
      const auto U = [&](int c) { return u[static_cast<std::size_t>(c + 12)]; };
      const auto* w1 = prof.d1[static_cast<std::size_t>(axis)].data();
      const auto& a = prof.a[static_cast<std::size_t>(axis)];
      const auto& b = prof.b[static_cast<std::size_t>(axis)];
      for (int c = 0; c < n; ++c) {
        const int f = face(c);
        const float* t = taps.data() + static_cast<std::size_t>(c) * kCpmlTaps;
        if (f < 0) {
          for (int o = 0; o < kCpmlTaps; ++o)
            EXPECT_EQ(t[o], 0.0f) << "axis " << axis << " index " << c << " tap " << o;
          continue;
        }
        const auto old = [&](int q) {
          return face(q) == f ? psi[static_cast<std::size_t>(q)] : 0.0;
        };
        const auto next = [&](int q) {
          if (face(q) != f) return 0.0;
          double d = 0;
          for (int m = 1; m <= kHalo; ++m)
            d += w1[m] * (U(q + m) - U(q - m));
          return b[static_cast<std::size_t>(q)] * old(q) + a[static_cast<std::size_t>(q)] * d;
        };
        double want = 0, scale = 0;
        for (int m = 1; m <= kHalo; ++m) {
          want += w1[m] * (next(c + m) - next(c - m));
          scale += std::abs(w1[m]) * (std::abs(next(c + m)) + std::abs(next(c - m)));
        }
        double got = 0;
        for (int o = -2 * kHalo; o <= 2 * kHalo; ++o)
          got += t[o + 2 * kHalo] * U(c + o);
        for (int m = 1; m <= kHalo; ++m)
          got += t[4 * kHalo + m] * old(c + m) - t[5 * kHalo + m] * old(c - m);
        EXPECT_NEAR(got, want, 1e-6 * scale + 1e-12)
            << "n " << n << " axis " << axis << " index " << c;
      }
    }
  }
}

/// The mirror of the free surface (kernels/cpu/cpu_backend.cpp): u(k = 0) = 0, u(-m) = -u(m).
void mirror_free_surface(std::vector<float>& u, const FieldLayout& l) {
  for (int j = 0; j < l.ny; ++j)
    for (int i = 0; i < l.nx; ++i) {
      u[static_cast<std::size_t>(l.index(i, j, 0))] = 0.0f;
      for (int m = 1; m <= kHalo && m < l.nz; ++m)
        u[static_cast<std::size_t>(l.index(i, j, -m))] =
            -u[static_cast<std::size_t>(l.index(i, j, m))];
    }
}

/// The memory variables of a view as one vector, for comparison.
std::vector<float> memory_of(const Grid& g, const LayerWidths& w, const CpmlView& v) {
  std::vector<float> out;
  for (int axis = 0; axis < 3; ++axis)
    for (int face = 0; face < 2; ++face) {
      if (v.psi[axis][face] == nullptr) continue;
      const std::size_t np = cpml_slab_points(g, w, axis, face == 1, kHalo);
      const std::size_t nz = cpml_slab_points(g, w, axis, face == 1, 0);
      out.insert(out.end(), v.psi[axis][face], v.psi[axis][face] + np);
      out.insert(out.end(), v.zeta[axis][face], v.zeta[axis][face] + nz);
    }
  return out;
}

/// One step of a C-PML path under test: u^n in u, u^(n-1) in v (overwritten with u^(n+1)), the
/// memory variables in f.cpml.
using CpmlStep = std::function<void(const IsoFields& f, const FieldLayout& l,
                                    const StencilCoefs& coefs, const Region* regions)>;

/// Steps a C-PML problem on grid g with widths w with `step` and with the point-by-point
/// formulation of kernels/cpml.hpp (cpml_memory_pass_reference, cpml_update_layer_reference, the
/// inner region by the kernel `cpu`) from the same random fields (u mirrored under a free surface
/// when w has no layer on the top face, kappa 2.5 so that d(1/kappa) is not zero) and expects the
/// same bits in u and in every memory variable after each of `steps` steps.
void expect_reference_bits(const Grid& g, const LayerWidths& w, int steps, const CpmlStep& step) {
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const auto regions = make_regions(g, w);
  const StencilCoefs coefs = make_stencil_coefs(g);
  const double vmax = 3000, dt = 0.5 * stable_dt_limit(g, vmax);
  const CpmlProfile profile = make_cpml_profile(g, w, dt, vmax, CpmlParams{1e-4, 2, 30, 2.5});
  const bool free_surface = w.z_lo == 0;
  CpmlHostMemory fast, reference;
  fast.setup(g, w, profile);
  reference.setup(g, w, profile);
  const auto size = static_cast<std::size_t>(l.size);
  std::vector<float> u(size), v(size), vp2dt2(size);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> field(-1.0f, 1.0f), speed(0.1f, 0.3f);
  for (std::size_t n = 0; n < size; ++n) {
    u[n] = field(rng);
    v[n] = field(rng);
    vp2dt2[n] = speed(rng);
  }
  if (free_surface) mirror_free_surface(u, l);
  std::vector<float> u_ref = u, v_ref = v;
  const StencilKernel* cpu = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  ASSERT_NE(cpu, nullptr);
  for (int s = 0; s < steps; ++s) {
    IsoFields f;
    f.u = u.data();
    f.v = v.data();
    f.vp2dt2 = vp2dt2.data();
    f.cpml = &fast.view();
    step(f, l, coefs, regions.data());
    IsoFields r = f;
    r.u = u_ref.data();
    r.v = v_ref.data();
    r.cpml = &reference.view();
    cpml_memory_pass_reference(reference.view(), u_ref.data(), l);
    for (const Region& region : regions) {
      if (region.box.empty()) continue;
      if (region.kind() == RegionKind::Layer) {
        cpml_update_layer_reference(r, l, coefs, region.box);
      } else {
        IsoFields inner = r;
        inner.cpml = nullptr;
        cpu->launch_regions(inner, l, coefs, &region, 1, nullptr);
      }
    }
    std::swap(u, v);
    std::swap(u_ref, v_ref);
    if (free_surface) {
      mirror_free_surface(u, l);
      mirror_free_surface(u_ref, l);
    }
    std::size_t differ = 0;
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i) {
          const auto p = static_cast<std::size_t>(l.index(i, j, k));
          if (std::memcmp(&u[p], &u_ref[p], sizeof(float)) != 0 && ++differ <= 5)
            ADD_FAILURE() << "step " << s << " u(" << i << ", " << j << ", " << k << "): " << u[p]
                          << " against " << u_ref[p];
        }
    EXPECT_EQ(differ, 0u) << "step " << s;
    const std::vector<float> m = memory_of(g, w, fast.view());
    const std::vector<float> m_ref = memory_of(g, w, reference.view());
    ASSERT_EQ(m.size(), m_ref.size());
    EXPECT_EQ(std::memcmp(m.data(), m_ref.data(), m.size() * sizeof(float)), 0)
        << "step " << s << ": the memory variables differ";
  }
  float peak = 0;
  for (const float x : memory_of(g, w, fast.view()))
    peak = std::max(peak, std::fabs(x));
  EXPECT_GT(peak, 0.0f) << "the memory variables stayed zero: nothing was compared";
}

// The kernel `cpu`'s C-PML after the vectorised memory pass (the path of a step cut into shell and
// interior parts: the row runs of cpml_layer_segment in its tiled sweep) against the
// point-by-point formulation: on a grid that is no multiple of a tile or a vector, with a
// different layer width on every face, none on the free surface, four steps. The same bits.
TEST(CpmlCpu, RowRunsGiveTheBitsOfThePerPointFormulation) {
  expect_reference_bits(Grid{45, 38, 41, 10, 12, 9, 0, 0, 0}, LayerWidths{7, 11, 5, 9, 0, 6}, 4,
                        [](const IsoFields& f, const FieldLayout& l, const StencilCoefs& coefs,
                           const Region* regions) {
                          cpml_memory_pass_cpu(*f.cpml, f.u, l);
                          kernel_registry()
                              .find("cpu", BackendKind::Cpu, Physics::Acoustic)
                              ->launch_regions(f, l, coefs, regions, kRegionCount, nullptr);
                        });
}

// The step with the memory update fused into the sweep (cpml_fused_step_cpu, the CPU backend's
// path for a whole grid) against the point-by-point formulation, on grids no multiple of a tile or
// a vector with a different width on every face and a free surface: an interior of 7 points along
// x (narrower than the stencil), a y slab of 35 rows (wider than a tile) and two interior tiles
// along y and z; and one whose interior is 3 points along y and 1 along z. Five steps, on one
// thread and on up to three (the tiles' order differs). The same bits.
TEST(CpmlCpu, FusedStepGivesTheBitsOfThePerPointFormulation) {
  const CpmlStep fused = [](const IsoFields& f, const FieldLayout& l, const StencilCoefs& coefs,
                            const Region* regions) {
    cpml_fused_step_cpu(f, l, coefs, regions, kRegionCount);
  };
  for (const int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const test_support::OmpThreadCap cap(threads);
    expect_reference_bits(Grid{29, 75, 83, 10, 12, 9, 0, 0, 0}, LayerWidths{9, 13, 35, 6, 0, 11}, 5,
                          fused);
    expect_reference_bits(Grid{37, 30, 22, 10, 10, 10, 0, 0, 0}, LayerWidths{6, 5, 14, 13, 0, 21},
                          5, fused);
  }
}

// The fused step refuses pieces that are not the whole grid (a step cut into parts needs the
// memory pass first).
TEST(CpmlCpu, FusedStepRefusesPartOfTheGrid) {
  const Grid g{20, 20, 20, 10, 10, 10, 0, 0, 0};
  const LayerWidths w{5, 5, 5, 5, 5, 5};
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const auto regions = make_regions(g, w);
  const CpmlProfile profile = make_cpml_profile(g, w, 1e-3, 3000, CpmlParams{});
  CpmlHostMemory memory;
  memory.setup(g, w, profile);
  std::vector<float> u(static_cast<std::size_t>(l.size)), v = u, vp2dt2 = u;
  IsoFields f;
  f.u = u.data();
  f.v = v.data();
  f.vp2dt2 = vp2dt2.data();
  f.cpml = &memory.view();
  EXPECT_THROW(cpml_fused_step_cpu(f, l, make_stencil_coefs(g), regions.data(), kRegionCount - 1),
               std::logic_error);
}

TEST(CpmlReflection, MeetsTheTargetsAtTheDefaultWidth) {
  const test_support::OmpThreadCap threads(1); // small grids (tests/omp_threads.hpp)
  // Targets at 16 points: -45 dB at normal incidence, -40 dB at 45 degrees, -30 dB at 60.
  ReflectionSetup small;
  small.distance = 12;
  small.other_width = 8;
  const ReflectionRow row = measure_reflection(BoundaryType::Cpml, 16, {-1, -1, -1, -1}, small);
  EXPECT_LE(row[0], -45.0);
  EXPECT_LE(row[2], -40.0);
  EXPECT_LE(row[3], -30.0);
  EXPECT_LE(row[4], -30.0);
  for (const double db : row)
    EXPECT_GT(db, -120.0) << "no reflection measured at all: the harness is broken";
}

/// Steps an acoustic C-PML problem with strong contrasts for `steps` steps; returns the peak
/// |u| over the run and over its last `tail` steps.
std::pair<float, float> long_run(int steps, int tail, bool free_surface) {
  const int n = 24, width = 6;
  const double h = 10;
  AcousticProblem p;
  p.grid = Grid{n, n, n, h, h, h, 0, 0, 0};
  p.layer = LayerWidths{width, width, width, width, free_surface ? 0 : width, width};
  p.free_surface = free_surface;
  p.regions = make_regions(p.grid, p.layer);
  p.layout = make_field_layout(n, n, n, p.layer.x_lo);
  p.coefs = make_stencil_coefs(p.grid);
  const double vmax = 4500;
  p.dt = 0.8 * stable_dt_limit(p.grid, vmax);
  p.steps = steps;
  p.vp2dt2.assign(static_cast<std::size_t>(p.layout.size), 0.0f);
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        // Layers of 1500, 4500 and 2000 m/s, and a fast block that reaches into the layer.
        double v = k < 9 ? 1500 : (k < 15 ? 4500 : 2000);
        if (i > 16 && j > 15) v = 4500;
        const double c = v * p.dt;
        p.vp2dt2[static_cast<std::size_t>(p.layout.index(i, j, k))] = static_cast<float>(c * c);
      }
  p.boundary = BoundaryType::Cpml;
  p.cpml = make_cpml_profile(p.grid, p.layer, p.dt, vmax, CpmlParams{1e-4, 2, 3.14159 * 15, 1});
  p.sources.begin = {0, 1};
  p.sources.index = {p.layout.index(n / 2, n / 2, n / 2)};
  p.sources.weight = {1.0f};
  p.source_samples.assign(static_cast<std::size_t>(steps), 0.0f);
  for (int s = 0; s < steps; ++s) {
    const double a = 3.14159265 * 15 * (s * p.dt - 0.1);
    p.source_samples[static_cast<std::size_t>(s)] =
        static_cast<float>((1 - 2 * a * a) * std::exp(-a * a));
  }
  p.receivers.begin = {0};
  auto backend = make_cpu_backend();
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  backend->setup(p, kernels);
  float peak = 0, late = 0;
  std::vector<float> u;
  for (int s = 0; s < steps; ++s) {
    backend->step(s);
    if (s % 50 == 0 || s == steps - 1) {
      backend->fetch_field(0, u);
      float m = 0;
      for (const float x : u)
        m = std::max(m, std::isfinite(x) ? std::fabs(x) : INFINITY);
      peak = std::max(peak, m);
      if (s >= steps - tail) late = std::max(late, m);
    }
  }
  return {peak, late};
}

TEST(CpmlStability, TwentyThousandStepsWithStrongContrasts) {
  const test_support::OmpThreadCap threads(1); // small grids (tests/omp_threads.hpp)
  const auto [peak, late] = long_run(20000, 2000, false);
  ASSERT_TRUE(std::isfinite(peak));
  EXPECT_GT(peak, 0.0f);
  EXPECT_LT(late, 1e-4f * peak) << "peak " << peak << ", late " << late;
}

TEST(CpmlStability, TwentyThousandStepsUnderAFreeSurface) {
  const test_support::OmpThreadCap threads(1); // small grids (tests/omp_threads.hpp)
  const auto [peak, late] = long_run(20000, 2000, true);
  ASSERT_TRUE(std::isfinite(peak));
  EXPECT_LT(late, 1e-4f * peak) << "peak " << peak << ", late " << late;
}

} // namespace
} // namespace minimod
