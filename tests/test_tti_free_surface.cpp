/// The TTI free surface: p and q odd across the top face, checked against the image-source
/// solution (a grid mirrored upwards, the medium mirrored with it, the source and its negative
/// image), in a VTI and in a tilted medium with azimuth.
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace minimod {
namespace {

constexpr double kDeg = 3.14159265358979323846 / 180.0;

/// A model of nz points along z whose axis is tilted by theta below z = 0 (k >= k0), by -theta
/// above it (the mirror image), and vertical on the plane z = 0 itself: so that the mirrored
/// medium maps an odd field to an odd field, as the free surface assumes.
TtiModel mirrored_model(const Grid& g, int k0, double theta, double azimuth) {
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2000.0f);
  m.epsilon.assign(n, 0.2f);
  m.delta.assign(n, 0.05f);
  m.theta.assign(n, 0.0f);
  m.phi.assign(n, static_cast<float>(azimuth));
  std::size_t p = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i, ++p)
        m.theta[p] = static_cast<float>(k > k0 ? theta : (k < k0 ? -theta : 0.0));
  return m;
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

/// p of the free-surface run and of the image run (its points z >= 0), and p of the run without
/// a free surface, after `steps` steps.
struct Fields {
  std::vector<float> surface, image, open;
};

Fields run_pair(double theta, double azimuth) {
  const int nx = 24, ny = 24, nz = 16, steps = 140, width = 4;
  const double h = 10;
  const Grid fs = test_support::make_grid(nx, ny, nz, h, h, h);
  const Grid ext = test_support::make_grid(nx, ny, 2 * nz - 1, h, h, h, 0, 0, -(nz - 1) * h);
  const TtiModel m_fs = mirrored_model(fs, 0, theta, azimuth);
  const TtiModel m_ext = mirrored_model(ext, nz - 1, theta, azimuth);
  TtiPlanOptions o;
  o.steps = steps;
  o.layer_width = width;
  o.vmax = 2000;
  o.free_surface = true;
  const TtiPlan p_fs = make_tti_plan(fs, m_fs, o);
  o.free_surface = false;
  o.dt = p_fs.dt;
  const TtiPlan p_ext = make_tti_plan(ext, m_ext, o);
  const TtiPlan p_open = make_tti_plan(fs, m_fs, o);
  EXPECT_EQ(p_fs.layer.z_lo, 0);
  EXPECT_TRUE(p_fs.free_surface);

  const std::vector<float> wavelet = [&] {
    std::vector<float> s(steps);
    for (int n = 0; n < steps; ++n)
      s[static_cast<std::size_t>(n)] = static_cast<float>(ricker(n * p_fs.dt, 25, 0.06));
    return s;
  }();
  std::vector<float> negative(wavelet);
  for (float& v : negative)
    v = -v;
  const Vec3 source{120, 120, 40};
  const std::vector<TtiSource> one{{source, wavelet, Injection::Physical}};
  const std::vector<TtiSource> pair{{source, wavelet, Injection::Physical},
                                    {{120, 120, -40}, negative, Injection::Physical}};
  TtiCpuRun a(p_fs, m_fs, one, {}, Interpolation::Trilinear);
  TtiCpuRun b(p_ext, m_ext, pair, {}, Interpolation::Trilinear);
  TtiCpuRun c(p_open, m_fs, one, {}, Interpolation::Trilinear);
  a.run();
  b.run();
  c.run();
  Fields f;
  f.surface = a.wavefield_p();
  f.open = c.wavefield_p();
  const std::vector<float> whole = b.wavefield_p();
  const std::size_t plane = static_cast<std::size_t>(nx) * ny;
  f.image.assign(whole.begin() + static_cast<std::ptrdiff_t>((nz - 1) * plane), whole.end());
  // q obeys the same mirror: compare it too (folded into p's vectors, after p).
  const std::vector<float> qa = a.wavefield_q(), qb = b.wavefield_q();
  f.surface.insert(f.surface.end(), qa.begin(), qa.end());
  f.image.insert(f.image.end(), qb.begin() + static_cast<std::ptrdiff_t>((nz - 1) * plane),
                 qb.end());
  return f;
}

void check(double theta, double azimuth, const char* what) {
  const Fields f = run_pair(theta, azimuth);
  ASSERT_EQ(f.surface.size(), f.image.size());
  const double err = rel_l2(f.surface, f.image);
  const std::vector<float> p_surface(f.surface.begin(), f.surface.begin() + f.open.size());
  const double ghost = rel_l2(f.open, p_surface);
  std::printf("[tti free surface, %s] relative L2 against the image solution %.3g; the surface "
              "changes p by %.3g\n",
              what, err, ghost);
  EXPECT_LT(err, 1e-5) << what;
  EXPECT_GT(ghost, 0.05) << what << ": the wave never met the surface";
}

TEST(TtiFreeSurface, MatchesTheImageSolutionInVti) {
  check(0.0, 0.0, "VTI");
}

TEST(TtiFreeSurface, MatchesTheImageSolutionInATiltedMediumWithAzimuth) {
  check(30 * kDeg, 20 * kDeg, "tilt 30, azimuth 20");
}

} // namespace
} // namespace minimod
