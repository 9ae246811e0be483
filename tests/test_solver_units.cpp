/// Unit tests of solver/ and kernels/ against hand computations (docs/physics.md sections 1-4).
/// Every expected value here is computed independently in the test (formulas written out in
/// double), never taken from the code under test.

#include "core/errors.hpp"
#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "io/survey.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "kernels/stencil_K.hpp"
#include "solver/interpolation.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"
#include "solver/simulation.hpp"
#include "solver/wavelet.hpp"
#include "tests/grid_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

using namespace minimod;

namespace {

constexpr double kPi = 3.14159265358979323846;

// docs/physics.md section 2, written out again here (not taken from kernels/stencil_K.hpp).
constexpr double kC0 = -205.0 / 72.0, kC1 = 8.0 / 5.0, kC2 = -1.0 / 5.0, kC3 = 8.0 / 315.0,
                 kC4 = -1.0 / 560.0;
constexpr double kC[5] = {kC0, kC1, kC2, kC3, kC4};

using test_support::make_grid;
using test_support::widths;

/// Deterministic pseudo-random numbers in [0, 1) (a 64-bit LCG; no dependence on <random>).
struct Lcg {
  std::uint64_t s;
  explicit Lcg(std::uint64_t seed) : s(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * (1.0 / 9007199254740992.0);
  }
  double uniform(double a, double b) { return a + (b - a) * next(); }
};

/// Scratch directory for wavelet files, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_path = std::filesystem::temp_directory_path() /
             ("minimod_solver_units_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  std::string file(const std::string& name) const { return (m_path / name).string(); }

private:
  std::filesystem::path m_path;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

void write_raw(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// 1. Region table
// ---------------------------------------------------------------------------------------------

/// The region a point belongs to, from the rule in core/grid.hpp: top/bottom take whole xy
/// planes, front/back the y slabs of the remaining z range, left/right the x slabs of what is left.
RegionId expected_region(const Grid& g, const LayerWidths& w, int i, int j, int k) {
  if (k < w.z_lo) return RegionId::Top;
  if (k >= g.nz - w.z_hi) return RegionId::Bottom;
  if (j < w.y_lo) return RegionId::Front;
  if (j >= g.ny - w.y_hi) return RegionId::Back;
  if (i < w.x_lo) return RegionId::Left;
  if (i >= g.nx - w.x_hi) return RegionId::Right;
  return RegionId::Inner;
}

/// Checks one grid/width combination; returns false (with gtest failures recorded) on error.
bool check_region_table(int nx, int ny, int nz, const LayerWidths& w) {
  const Grid g = make_grid(nx, ny, nz, 10, 10, 10);
  const auto regions = make_regions(g, w);
  const std::size_t n = g.points();
  std::vector<std::uint8_t> visits(n, 0);
  std::vector<std::int8_t> owner(n, -1);
  std::size_t box_points = 0;
  bool ok = true;
  for (int r = 0; r < kRegionCount; ++r) {
    const Region& reg = regions[r];
    if (static_cast<int>(reg.id) != r) {
      ADD_FAILURE() << "region " << r << " has id " << static_cast<int>(reg.id);
      ok = false;
    }
    const Box& b = reg.box;
    if (!b.empty() && (b.x0 < 0 || b.y0 < 0 || b.z0 < 0 || b.x1 > nx || b.y1 > ny || b.z1 > nz)) {
      ADD_FAILURE() << "region " << region_name(reg.id) << " box leaves the grid";
      ok = false;
      continue;
    }
    box_points += b.points();
    for (int k = b.z0; k < b.z1; ++k)
      for (int j = b.y0; j < b.y1; ++j)
        for (int i = b.x0; i < b.x1; ++i) {
          const std::size_t p = (static_cast<std::size_t>(k) * ny + j) * nx + i;
          ++visits[p];
          owner[p] = static_cast<std::int8_t>(r);
        }
  }
  for (int k = 0; k < nz && ok; ++k)
    for (int j = 0; j < ny && ok; ++j)
      for (int i = 0; i < nx && ok; ++i) {
        const std::size_t p = (static_cast<std::size_t>(k) * ny + j) * nx + i;
        if (visits[p] != 1) {
          ADD_FAILURE() << "point (" << i << "," << j << "," << k << ") visited " << int(visits[p])
                        << " times";
          ok = false;
        } else if (owner[p] != static_cast<int>(expected_region(g, w, i, j, k))) {
          ADD_FAILURE() << "point (" << i << "," << j << "," << k << ") in region " << int(owner[p])
                        << ", expected " << static_cast<int>(expected_region(g, w, i, j, k));
          ok = false;
        }
      }
  if (box_points != n) {
    ADD_FAILURE() << "box point counts sum to " << box_points << ", grid has " << n;
    ok = false;
  }
  // The inner box is exactly the complement of the layers.
  const Box& in = regions[0].box;
  const bool inner_ok = in.x0 == w.x_lo && in.x1 == nx - w.x_hi && in.y0 == w.y_lo &&
                        in.y1 == ny - w.y_hi && in.z0 == w.z_lo && in.z1 == nz - w.z_hi;
  if (!inner_ok) {
    ADD_FAILURE() << "inner box [" << in.x0 << "," << in.x1 << ")x[" << in.y0 << "," << in.y1
                  << ")x[" << in.z0 << "," << in.z1 << ")";
    ok = false;
  }
  if (!ok) {
    ADD_FAILURE() << "grid " << nx << "x" << ny << "x" << nz << " widths " << w.x_lo << "/"
                  << w.x_hi << " " << w.y_lo << "/" << w.y_hi << " " << w.z_lo << "/" << w.z_hi;
  }
  return ok;
}

TEST(RegionTable, NamesKindsAndIds) {
  const char* names[kRegionCount] = {"inner", "top", "bottom", "front", "back", "left", "right"};
  for (int r = 0; r < kRegionCount; ++r) {
    const auto id = static_cast<RegionId>(r);
    EXPECT_STREQ(region_name(id), names[r]);
    EXPECT_EQ(region_kind(id), r == 0 ? RegionKind::Inner : RegionKind::Layer);
  }
  const auto regions = make_regions(make_grid(20, 21, 22, 10, 10, 10), widths(3, 4, 5, 2, 1, 6));
  for (int r = 0; r < kRegionCount; ++r) {
    EXPECT_EQ(static_cast<int>(regions[r].id), r);
    EXPECT_EQ(regions[r].kind(), r == 0 ? RegionKind::Inner : RegionKind::Layer);
  }
}

TEST(RegionTable, HandCheckedBoxes) {
  // 20 x 21 x 22, widths x 3/4, y 5/2, z 1/6, written out by hand.
  const auto r = make_regions(make_grid(20, 21, 22, 10, 10, 10), widths(3, 4, 5, 2, 1, 6));
  auto eq = [](const Box& b, int x0, int x1, int y0, int y1, int z0, int z1) {
    return b.x0 == x0 && b.x1 == x1 && b.y0 == y0 && b.y1 == y1 && b.z0 == z0 && b.z1 == z1;
  };
  EXPECT_TRUE(eq(r[0].box, 3, 16, 5, 19, 1, 16));  // inner
  EXPECT_TRUE(eq(r[1].box, 0, 20, 0, 21, 0, 1));   // top
  EXPECT_TRUE(eq(r[2].box, 0, 20, 0, 21, 16, 22)); // bottom
  EXPECT_TRUE(eq(r[3].box, 0, 20, 0, 5, 1, 16));   // front
  EXPECT_TRUE(eq(r[4].box, 0, 20, 19, 21, 1, 16)); // back
  EXPECT_TRUE(eq(r[5].box, 0, 3, 5, 19, 1, 16));   // left
  EXPECT_TRUE(eq(r[6].box, 16, 20, 5, 19, 1, 16)); // right
}

TEST(RegionTable, EveryPointInExactlyOneRegionThinAndAsymmetricLayers) {
  const int w[4] = {0, 1, 2, 5};
  const int sizes[2][3] = {{11, 13, 12}, {17, 11, 14}};
  int failures = 0;
  for (const auto& s : sizes)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 4; ++c)
          for (int d = 0; d < 4; ++d)
            for (int e = 0; e < 4; ++e)
              for (int f = 0; f < 4; ++f) {
                if (failures > 3) return;
                if (!check_region_table(s[0], s[1], s[2],
                                        widths(w[a], w[b], w[c], w[d], w[e], w[f])))
                  ++failures;
              }
}

TEST(RegionTable, EveryPointInExactlyOneRegionSpecialSizes) {
  EXPECT_TRUE(check_region_table(9, 9, 9, widths(4, 4, 4, 4, 4, 4))); // inner is one point
  EXPECT_TRUE(check_region_table(1, 1, 1, widths(0, 0, 0, 0, 0, 0)));
  EXPECT_TRUE(check_region_table(1, 7, 3, widths(0, 0, 3, 3, 1, 1)));
  EXPECT_TRUE(check_region_table(131, 97, 83, widths(27, 27, 27, 27, 27, 27)));
  EXPECT_TRUE(check_region_table(131, 97, 83, widths(27, 5, 5, 27, 27, 5)));
  EXPECT_TRUE(check_region_table(131, 97, 83, widths(5, 27, 27, 5, 0, 27)));
}

TEST(RegionTable, ImpossibleLayersThrow) {
  // 2 * width >= n leaves no inner region.
  EXPECT_THROW(make_regions(make_grid(8, 20, 20, 1, 1, 1), widths(4, 4, 0, 0, 0, 0)),
               std::invalid_argument);
  EXPECT_THROW(make_regions(make_grid(20, 10, 20, 1, 1, 1), widths(0, 0, 5, 5, 0, 0)),
               std::invalid_argument);
  EXPECT_THROW(make_regions(make_grid(20, 20, 9, 1, 1, 1), widths(0, 0, 0, 0, 4, 5)),
               std::invalid_argument);
  EXPECT_THROW(make_regions(make_grid(54, 60, 60, 1, 1, 1), widths(27, 27, 27, 27, 27, 27)),
               std::invalid_argument);
  EXPECT_THROW(make_regions(make_grid(20, 20, 20, 1, 1, 1), widths(0, 0, 0, 0, 20, 0)),
               std::invalid_argument);
  EXPECT_THROW(make_regions(make_grid(20, 20, 20, 1, 1, 1), widths(-1, 0, 0, 0, 0, 0)),
               std::invalid_argument);
  // One point left is fine.
  EXPECT_NO_THROW(make_regions(make_grid(9, 9, 9, 1, 1, 1), widths(4, 4, 4, 4, 4, 4)));
  EXPECT_NO_THROW(make_regions(make_grid(55, 55, 55, 1, 1, 1), widths(27, 27, 27, 27, 27, 27)));
}

// ---------------------------------------------------------------------------------------------
// 2. Field layout
// ---------------------------------------------------------------------------------------------

TEST(LayoutPadded, AlignmentPitchGhostsAndInjectivity) {
  const int nxs[] = {1, 5, 27, 31, 32, 33, 64, 100};
  const int aligns[] = {0, 1, 3, 4, 5, 27, 28, 31, 32, 33, 63};
  const int ny = 3, nz = 2;
  for (int nx : nxs) {
    for (int ax : aligns) {
      SCOPED_TRACE("nx=" + std::to_string(nx) + " align_x=" + std::to_string(ax));
      const FieldLayout l = make_field_layout(nx, ny, nz, ax);
      EXPECT_EQ(l.nx, nx);
      EXPECT_EQ(l.ny, ny);
      EXPECT_EQ(l.nz, nz);
      EXPECT_GE(l.x_offset, 4);
      EXPECT_LT(l.x_offset, 4 + 32); // no gratuitous padding
      EXPECT_EQ(l.pitch % 32, 0);
      EXPECT_GE(l.pitch, l.x_offset + nx + 4); // right ghosts fit in the row
      EXPECT_EQ(l.plane, static_cast<std::int64_t>(l.pitch) * (ny + 8));
      EXPECT_EQ(l.size, l.plane * (nz + 8));
      // The inner x = align_x point of every row (ghost rows included) is 128-byte aligned.
      for (int k = -4; k < nz + 4; ++k)
        for (int j = -4; j < ny + 4; ++j)
          ASSERT_EQ(l.index(ax, j, k) % 32, 0) << "row j=" << j << " k=" << k;
      // Every point, ghosts included, maps into [0, size) and no two share an index.
      std::vector<std::uint8_t> seen(static_cast<std::size_t>(l.size), 0);
      for (int k = -4; k < nz + 4; ++k)
        for (int j = -4; j < ny + 4; ++j)
          for (int i = -4; i < nx + 4; ++i) {
            const std::int64_t p = l.index(i, j, k);
            ASSERT_GE(p, 0);
            ASSERT_LT(p, l.size);
            ASSERT_EQ(seen[static_cast<std::size_t>(p)], 0)
                << "(" << i << "," << j << "," << k << ") collides";
            seen[static_cast<std::size_t>(p)] = 1;
          }
      // Unit strides along x, pitch along y, plane along z.
      EXPECT_EQ(l.index(1, 0, 0) - l.index(0, 0, 0), 1);
      EXPECT_EQ(l.index(0, 1, 0) - l.index(0, 0, 0), l.pitch);
      EXPECT_EQ(l.index(0, 0, 1) - l.index(0, 0, 0), l.plane);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Stable dt and the Gershgorin bound
// ---------------------------------------------------------------------------------------------

double hand_row_sum() {
  return std::abs(kC0) + 2.0 * (std::abs(kC1) + std::abs(kC2) + std::abs(kC3) + std::abs(kC4));
}

TEST(StableDt, RowSumByHand) {
  // 205/72 + 2 (8/5 + 1/5 + 8/315 + 1/560) = 6.5015873015873...
  EXPECT_NEAR(hand_row_sum(), 6.501587301587302, 1e-14);
}

TEST(StableDt, EqualSpacing) {
  const Grid g = make_grid(100, 100, 100, 20, 20, 20);
  const double bound = std::sqrt(3.0 * hand_row_sum() / (20.0 * 20.0));
  EXPECT_NEAR(laplacian_bound(g), bound, 1e-14 * bound);
  EXPECT_NEAR(laplacian_bound(g), 0.22082097898955336, 1e-12);
  const double dt = 2.0 / (4500.0 * bound);
  EXPECT_NEAR(stable_dt_limit(g, 4500.0), dt, 1e-14 * dt);
  // The seeds' benchmark: 20 m, vmax 4500 m/s: cfl = 1 limit 2.0127 ms, cfl 0.8 gives 1.6102 ms.
  EXPECT_NEAR(stable_dt_limit(g, 4500.0), 2.0126912147485332e-3, 1e-12);
  EXPECT_NEAR(0.8 * stable_dt_limit(g, 4500.0), 1.6101529717988266e-3, 1e-12);
}

TEST(StableDt, UnequalSpacing) {
  const Grid g = make_grid(10, 10, 10, 10.0, 12.5, 20.0);
  const double row = hand_row_sum();
  const double bound = std::sqrt(row / 100.0 + row / 156.25 + row / 400.0);
  EXPECT_NEAR(laplacian_bound(g), bound, 1e-14 * bound);
  const double dt = 2.0 / (3000.0 * bound);
  EXPECT_NEAR(stable_dt_limit(g, 3000.0), dt, 1e-14 * dt);
  // Halving vmax doubles dt.
  EXPECT_NEAR(stable_dt_limit(g, 1500.0), 2.0 * dt, 1e-14 * dt);
}

TEST(StableDt, LayerWidthPoints) {
  EXPECT_EQ(layer_width_points(3, 4500, 25, 20), 27); // the seeds' benchmark
  EXPECT_EQ(layer_width_points(3, 4000, 25, 20), 24); // exactly 24
  EXPECT_EQ(layer_width_points(3, 4100, 25, 20), 25); // 24.6 rounds up
  EXPECT_EQ(layer_width_points(3, 3000, 20, 10), 45);
}

TEST(StableDt, StencilCoefsScaledBySpacing) {
  const Grid g = make_grid(5, 5, 5, 10.0, 12.5, 20.0);
  const StencilCoefs c = make_stencil_coefs(g);
  const double h[3] = {10.0, 12.5, 20.0};
  for (int m = 1; m <= 4; ++m) {
    EXPECT_FLOAT_EQ(c.cx[m], static_cast<float>(kC[m] / (h[0] * h[0])));
    EXPECT_FLOAT_EQ(c.cy[m], static_cast<float>(kC[m] / (h[1] * h[1])));
    EXPECT_FLOAT_EQ(c.cz[m], static_cast<float>(kC[m] / (h[2] * h[2])));
  }
  EXPECT_FLOAT_EQ(c.c0, static_cast<float>(kC0 * (1 / 100.0 + 1 / 156.25 + 1 / 400.0)));
  EXPECT_FLOAT_EQ(c.px, static_cast<float>(1.0 / 400.0));
  EXPECT_FLOAT_EQ(c.py, static_cast<float>(1.0 / 625.0));
  EXPECT_FLOAT_EQ(c.pz, static_cast<float>(1.0 / 1600.0));
}

TEST(StableDt, CheckerboardAttainsGershgorinBound) {
  // The checkerboard (-1)^(i+j+k) is the extremal eigenvector of the star operator:
  // L u = -(sum_axis (|c0| + 2 sum_m |c_m|) / h^2) u = -bound^2 u.
  const Grid g = make_grid(9, 10, 11, 10.0, 12.5, 20.0);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, 0);
  std::vector<float> u(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = -4; k < g.nz + 4; ++k)
    for (int j = -4; j < g.ny + 4; ++j)
      for (int i = -4; i < g.nx + 4; ++i)
        u[l.index(i, j, k)] = ((i + j + k) % 2 == 0) ? 1.0f : -1.0f;
  const StencilCoefs c = make_stencil_coefs(g);
  const double row = hand_row_sum();
  const double bound2 = row / 100.0 + row / 156.25 + row / 400.0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const std::int64_t p = l.index(i, j, k);
        const double lap = laplacian_25(u.data(), p, l.pitch, l.plane, c);
        ASSERT_NEAR(lap, -bound2 * u[p], 1e-5 * bound2) << i << "," << j << "," << k;
      }
  const double b = laplacian_bound(g);
  EXPECT_NEAR(b * b, bound2, 1e-12 * bound2);
}

// ---------------------------------------------------------------------------------------------
// 4. Laplacian accuracy
// ---------------------------------------------------------------------------------------------

// u = 5 + 3X - 2Y + X^4 + 2Y^4 + Z^4 + X^2 Y^2 + 0.01 X^6 + 20 (X^2 + Y^2 + Z^2), X = (x - xc)/s.
// The 8th-order stencil differentiates polynomials of degree <= 9 exactly.
double poly(double X, double Y, double Z) {
  return 5 + 3 * X - 2 * Y + std::pow(X, 4) + 2 * std::pow(Y, 4) + std::pow(Z, 4) + X * X * Y * Y +
         0.01 * std::pow(X, 6) + 20 * (X * X + Y * Y + Z * Z);
}
// Its Laplacian, differentiated by hand: always >= 120 / s^2.
double poly_laplacian(double X, double Y, double Z, double s) {
  const double uxx = 12 * X * X + 2 * Y * Y + 0.3 * std::pow(X, 4) + 40;
  const double uyy = 24 * Y * Y + 2 * X * X + 40;
  const double uzz = 12 * Z * Z + 40;
  return (uxx + uyy + uzz) / (s * s);
}

TEST(LaplacianAccuracy, PolynomialExactToFloatRounding) {
  const Grid g = make_grid(12, 10, 11, 10.0, 12.5, 8.0);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, 3);
  const double s = 10.0, xc = 55.0, yc = 56.25, zc = 40.0;
  std::vector<float> u(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = -4; k < g.nz + 4; ++k)
    for (int j = -4; j < g.ny + 4; ++j)
      for (int i = -4; i < g.nx + 4; ++i)
        u[l.index(i, j, k)] =
            static_cast<float>(poly((i * g.dx - xc) / s, (j * g.dy - yc) / s, (k * g.dz - zc) / s));
  const StencilCoefs c = make_stencil_coefs(g);
  double worst = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const double exact =
            poly_laplacian((i * g.dx - xc) / s, (j * g.dy - yc) / s, (k * g.dz - zc) / s, s);
        const double got = laplacian_25(u.data(), l.index(i, j, k), l.pitch, l.plane, c);
        worst = std::max(worst, std::abs(got - exact) / std::abs(exact));
        ASSERT_NEAR(got, exact, 1e-4 * std::abs(exact)) << i << "," << j << "," << k;
      }
  RecordProperty("worst_relative_error", std::to_string(worst));
}

TEST(LaplacianAccuracy, SmoothSineConverges) {
  // sin(kx x) sin(ky y) sin(kz z) at about 8 points per wavelength: the 8th-order stencil's
  // relative error (sum_m 2 c_m (cos(m k h) - 1) / (k h)^2 + 1) is below 1e-3 there.
  const Grid g = make_grid(16, 16, 16, 10.0, 10.0, 10.0);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, 0);
  const double kx = 2 * kPi / 80.0, ky = 2 * kPi / 100.0, kz = 2 * kPi / 120.0;
  std::vector<float> u(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = -4; k < g.nz + 4; ++k)
    for (int j = -4; j < g.ny + 4; ++j)
      for (int i = -4; i < g.nx + 4; ++i)
        u[l.index(i, j, k)] =
            static_cast<float>(std::sin(kx * (i * 10.0 + 3)) * std::sin(ky * (j * 10.0 + 7)) *
                               std::sin(kz * (k * 10.0 + 11)));
  const StencilCoefs c = make_stencil_coefs(g);
  const double ksum = kx * kx + ky * ky + kz * kz;
  for (int k = 0; k < g.nz; k += 3)
    for (int j = 0; j < g.ny; j += 3)
      for (int i = 0; i < g.nx; i += 3) {
        const double f = std::sin(kx * (i * 10.0 + 3)) * std::sin(ky * (j * 10.0 + 7)) *
                         std::sin(kz * (k * 10.0 + 11));
        const double got = laplacian_25(u.data(), l.index(i, j, k), l.pitch, l.plane, c);
        ASSERT_NEAR(got, -ksum * f, 1e-3 * ksum + 1e-6) << i << "," << j << "," << k;
      }
}

// ---------------------------------------------------------------------------------------------
// 5. Wavelets
// ---------------------------------------------------------------------------------------------

double hand_ricker(double t, double f, double t0) {
  const double tau = t - t0;
  return (1 - 2 * kPi * kPi * f * f * tau * tau) * std::exp(-kPi * kPi * f * f * tau * tau);
}

double hand_minimod(double t, double fmax) {
  const double sigma = 0.6 * fmax, tau0 = 1.0, a = 8.0;
  const double q = sigma * t - tau0;
  return -2 * a * sigma * (sigma - 2 * sigma * a * q * q) * std::exp(-a * q * q);
}

WaveletSpec ricker_spec(double f) {
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::Ricker;
  w.frequency = f;
  return w;
}

TEST(WaveletRicker, PeakAtDefaultDelayAndSymmetric) {
  const double f = 10.0, dt = 1e-3;
  const auto s = sample_wavelet(ricker_spec(f), dt, 400, "sources[0].wavelet");
  ASSERT_EQ(s.size(), 400u);
  // Default t0 = 1.5 / f = 0.15 s = sample 150.
  EXPECT_NEAR(s[150], 1.0f, 1e-6);
  for (std::size_t n = 0; n < s.size(); ++n)
    EXPECT_LE(s[n], s[150]) << n;
  for (int m = 1; m < 150; ++m)
    ASSERT_NEAR(s[150 - m], s[150 + m], 2e-6) << m;
  for (int n = 0; n < 400; n += 7)
    EXPECT_NEAR(s[n], hand_ricker(n * dt, f, 0.15), 1e-6) << n;
}

TEST(WaveletRicker, ExplicitDelayAndZeroCrossings) {
  const double f = 25.0, t0 = 0.2;
  EXPECT_DOUBLE_EQ(ricker(t0, f, t0), 1.0);
  const double tz = 1.0 / (kPi * f * std::sqrt(2.0));
  EXPECT_NEAR(ricker(t0 + tz, f, t0), 0.0, 1e-12);
  EXPECT_NEAR(ricker(t0 - tz, f, t0), 0.0, 1e-12);
  EXPECT_GT(ricker(t0 + 0.9 * tz, f, t0), 0.0);
  EXPECT_LT(ricker(t0 + 1.1 * tz, f, t0), 0.0);
  EXPECT_LT(ricker(t0 - 1.1 * tz, f, t0), 0.0);
  for (double tau : {0.001, 0.007, 0.013, 0.05})
    EXPECT_NEAR(ricker(t0 + tau, f, t0), ricker(t0 - tau, f, t0), 1e-14);
  // Minimum value -2 exp(-3/2) at tau^2 = 3 / (2 pi^2 f^2).
  const double tmin = std::sqrt(1.5) / (kPi * f);
  EXPECT_NEAR(ricker(t0 + tmin, f, t0), -2.0 * std::exp(-1.5), 1e-12);

  WaveletSpec w = ricker_spec(f);
  w.delay = t0;
  const double dt = 5e-4;
  const auto s = sample_wavelet(w, dt, 800, "k");
  EXPECT_NEAR(s[400], 1.0f, 1e-6); // t0 / dt = 400
  for (int n = 0; n < 800; n += 13)
    EXPECT_NEAR(s[n], hand_ricker(n * dt, f, t0), 1e-6) << n;
}

TEST(WaveletMinimod, MatchesFormula) {
  const double fmax = 25.0; // sigma = 15
  // At sigma t = tau0 the Gaussian is 1: s = -2 a sigma^2 = -16 * 225 = -3600.
  EXPECT_NEAR(minimod_wavelet(1.0 / 15.0, fmax), -3600.0, 1e-9);
  for (double t : {0.0, 0.01, 0.05, 0.0666, 0.08, 0.1, 0.2})
    EXPECT_NEAR(minimod_wavelet(t, fmax), hand_minimod(t, fmax),
                1e-12 * std::max(1.0, std::abs(hand_minimod(t, fmax))))
        << t;
  // Hand value at t = 0: q = -1: -2*8*15*(15 - 2*15*8) * e^-8 = 54000 e^-8.
  EXPECT_NEAR(minimod_wavelet(0.0, fmax), 54000.0 * std::exp(-8.0), 1e-9);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::Minimod;
  w.fmax = fmax;
  const double dt = 1.6e-3;
  const auto s = sample_wavelet(w, dt, 200, "k");
  ASSERT_EQ(s.size(), 200u);
  for (int n = 0; n < 200; ++n)
    ASSERT_NEAR(s[n], hand_minimod(n * dt, fmax), 1e-6 * 3600.0) << n;
}

TEST(WaveletFmax, RickerMinimodAndDeclared) {
  EXPECT_DOUBLE_EQ(wavelet_fmax(ricker_spec(10.0)), 25.0);
  WaveletSpec m;
  m.kind = WaveletSpec::Kind::Minimod;
  m.fmax = 30.0;
  EXPECT_DOUBLE_EQ(wavelet_fmax(m), 30.0);
  WaveletSpec f;
  f.kind = WaveletSpec::Kind::File;
  f.file = "/nonexistent/never/read.txt";
  f.file_dt = 1e-3;
  f.fmax = 40.0;
  EXPECT_DOUBLE_EQ(wavelet_fmax(f), 40.0);
}

TEST(WaveletFmax, EstimatedFromFileSpectrum) {
  // A Ricker's amplitude spectrum is r^2 exp(-r^2) (r = freq / f), 1% of its peak at r ~ 2.76.
  TempDir dir;
  const double f = 10.0, dt = 1e-3;
  std::string text;
  for (int n = 0; n < 400; ++n)
    text += std::to_string(hand_ricker(n * dt, f, 0.15)) + "\n";
  write_text(dir.file("r.txt"), text);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::File;
  w.file = dir.file("r.txt");
  w.file_dt = dt;
  const double est = wavelet_fmax(w);
  EXPECT_GT(est, 2.5 * f);
  EXPECT_LT(est, 3.0 * f);
}

TEST(WaveletAmplitude, ScalesEveryKind) {
  TempDir dir;
  write_text(dir.file("w.txt"), "0\n0.5\n1\n-0.25\n");
  WaveletSpec specs[3];
  specs[0] = ricker_spec(12.0);
  specs[1].kind = WaveletSpec::Kind::Minimod;
  specs[1].fmax = 20.0;
  specs[2].kind = WaveletSpec::Kind::File;
  specs[2].file = dir.file("w.txt");
  specs[2].file_dt = 1e-3;
  for (auto& w : specs) {
    const auto one = sample_wavelet(w, 1e-3, 100, "k");
    w.amplitude = -2.5;
    const auto scaled = sample_wavelet(w, 1e-3, 100, "k");
    ASSERT_EQ(one.size(), scaled.size());
    for (std::size_t n = 0; n < one.size(); ++n)
      ASSERT_NEAR(scaled[n], -2.5 * one[n], 1e-6 * std::max(1.0f, std::abs(one[n]))) << n;
  }
  // The file wavelet at its own interval: the samples times the amplitude, then zeros.
  const auto s = sample_wavelet(specs[2], 1e-3, 6, "k");
  const float expect[6] = {0.0f, -1.25f, -2.5f, 0.625f, 0.0f, 0.0f};
  for (int n = 0; n < 6; ++n)
    EXPECT_FLOAT_EQ(s[n], expect[n]) << n;
}

TEST(WaveletFile, TextAndRawAreRead) {
  TempDir dir;
  write_text(dir.file("a.txt"), "# a comment line\n0.0\n1.5, 2.5\n  -3.25   # trailing\n\n4e0\n");
  write_text(dir.file("b.csv"), "1,2,3\n");
  write_raw(dir.file("c.bin"), {0.0f, 1.5f, 2.5f, -3.25f, 4.0f});
  const std::vector<float> expect = {0.0f, 1.5f, 2.5f, -3.25f, 4.0f};
  EXPECT_EQ(read_wavelet_file(dir.file("a.txt"), "k"), expect);
  EXPECT_EQ(read_wavelet_file(dir.file("c.bin"), "k"), expect);
  EXPECT_EQ(read_wavelet_file(dir.file("b.csv"), "k"), (std::vector<float>{1.0f, 2.0f, 3.0f}));
}

TEST(WaveletFile, EqualIntervalIsTheSamplesAndACoarserOneIsLowPassed) {
  TempDir dir;
  std::vector<float> a(900);
  for (std::size_t n = 0; n < a.size(); ++n)
    a[n] = static_cast<float>(3.0 * std::sin(0.37 * n)); // 0.12 of the file's Nyquist
  write_raw(dir.file("w.f32"), a);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::File;
  w.file = dir.file("w.f32");
  w.file_dt = 1e-3;
  // Equal interval: the samples themselves.
  auto s = sample_wavelet(w, 1e-3, 900, "k");
  EXPECT_EQ(s, a);
  // dt = 3 file_dt: low-passed at the run's Nyquist (the sine lies at 0.35 of it and passes);
  // away from the file's ends every third sample, and zeros beyond the filter's reach.
  s = sample_wavelet(w, 3e-3, 340, "k");
  ASSERT_EQ(s.size(), 340u);
  for (int n = kResampleRadius; n < 300 - kResampleRadius; ++n)
    EXPECT_NEAR(s[n], a[3 * n], 3 * 2e-3) << n;
  for (int n = 300 + kResampleRadius + 1; n < 340; ++n)
    EXPECT_EQ(s[n], 0.0f) << n;
}

TEST(WaveletFile, NonIntegerUpsamplingOfBandLimitedSine) {
  TempDir dir;
  const double fs = 20.0, file_dt = 4e-3, dt = 1.5e-3; // 20 Hz, file Nyquist 125 Hz
  std::string text = "# 20 Hz sine\n";
  const int n_file = 200;
  for (int n = 0; n < n_file; ++n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g\n", std::sin(2 * kPi * fs * n * file_dt));
    text += buf;
  }
  write_text(dir.file("sine.txt"), text);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::File;
  w.file = dir.file("sine.txt");
  w.file_dt = file_dt;
  const int steps = 500;
  const auto s = sample_wavelet(w, dt, steps, "k");
  ASSERT_EQ(s.size(), static_cast<std::size_t>(steps));
  const double t_lo = 16 * file_dt, t_hi = (n_file - 1 - 16) * file_dt;
  int checked = 0;
  for (int n = 0; n < steps; ++n) {
    const double t = n * dt;
    if (t < t_lo || t > t_hi) continue;
    ASSERT_NEAR(s[n], std::sin(2 * kPi * fs * t), 1e-3) << "t=" << t;
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

TEST(WaveletFile, BadFilesThrowInputErrorNamingKey) {
  TempDir dir;
  write_text(dir.file("empty.txt"), "");
  write_text(dir.file("comments.txt"), "# nothing here\n\n");
  write_bytes(dir.file("empty.f32"), "");
  write_text(dir.file("garbage.txt"), "1.0\nabc\n2.0\n");
  write_text(dir.file("suffix.txt"), "1.0\n2.0x\n");
  write_text(dir.file("nan.txt"), "1.0\nnan\n");
  write_bytes(dir.file("odd.f32"), "abcdef"); // 6 bytes: not whole float32 samples
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  write_raw(dir.file("nan.f32"), {1.0f, qnan});
  const std::string key = "sources[3].wavelet.file";
  const char* names[] = {"missing.txt", "missing.f32", "empty.txt", "comments.txt", "empty.f32",
                         "garbage.txt", "suffix.txt",  "nan.txt",   "odd.f32",      "nan.f32"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    WaveletSpec w;
    w.kind = WaveletSpec::Kind::File;
    w.file = dir.file(name);
    w.file_dt = 1e-3;
    bool threw = false;
    try {
      (void)sample_wavelet(w, 1e-3, 10, key);
    } catch (const InputError& e) {
      threw = true;
      EXPECT_TRUE(contains(e.what(), key)) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong exception type: " << e.what();
    }
    EXPECT_TRUE(threw);
    EXPECT_THROW(read_wavelet_file(dir.file(name), key), InputError);
  }
}

// ---------------------------------------------------------------------------------------------
// 6. resample
// ---------------------------------------------------------------------------------------------

TEST(ResampleSignal, SameIntervalIsACopy) {
  std::vector<float> in(100);
  for (std::size_t n = 0; n < in.size(); ++n)
    in[n] = static_cast<float>(std::cos(0.1 * n) + 0.01 * n);
  const auto out = resample(in, 2e-3, 2e-3, 120);
  ASSERT_EQ(out.size(), 120u);
  for (int k = 0; k < 120; ++k)
    EXPECT_EQ(out[k], k < 100 ? in[k] : 0.0f) << k;
  // A ratio that is 1 only up to floating-point noise (0.1 written via 0.3 / 3).
  const auto same = resample(in, 0.3 / 3, 0.1, 10);
  for (int k = 0; k < 10; ++k)
    EXPECT_EQ(same[k], in[k]) << k;
}

/// Max |out - expected(t)| over the output samples at least a filter's reach from either end.
template <typename F>
double interior_error(const std::vector<float>& out, double dt_out, F expected) {
  double worst = 0;
  const int margin = kResampleRadius + 1;
  for (int k = margin; k + margin < static_cast<int>(out.size()); ++k)
    worst = std::max(worst, std::abs(out[k] - expected(k * dt_out)));
  return worst;
}

TEST(ResampleSignal, IntegerRatioIsLowPassedNotDecimated) {
  // 1 ms to 4 ms: the output Nyquist is 125 Hz. Every 4th sample of a 150 Hz sine is a 100 Hz
  // sine of full amplitude (an alias); the low-pass leaves less than 0.2% of it.
  const double dt_in = 1e-3, dt_out = 4e-3, nyquist = 125;
  std::vector<float> above(4000), below(4000);
  for (std::size_t n = 0; n < above.size(); ++n) {
    above[n] = static_cast<float>(std::sin(2 * kPi * 1.2 * nyquist * n * dt_in + 0.3));
    below[n] = static_cast<float>(std::sin(2 * kPi * 0.6 * nyquist * n * dt_in + 0.3));
  }
  double decimated = 0;
  for (std::size_t n = 0; n < above.size(); n += 4)
    decimated = std::max(decimated, static_cast<double>(std::abs(above[n])));
  EXPECT_GT(decimated, 0.99); // what plain decimation keeps
  const auto out = resample(above, dt_in, dt_out, 1000);
  EXPECT_LT(interior_error(out, dt_out, [](double) { return 0.0; }), 2e-3);
  // Below the pass band's edge (0.82 of the Nyquist) a sine passes within 0.1%.
  const auto kept = resample(below, dt_in, dt_out, 1000);
  EXPECT_LT(interior_error(kept, dt_out,
                           [&](double t) { return std::sin(2 * kPi * 0.6 * nyquist * t + 0.3); }),
            1e-3);
}

TEST(ResampleSignal, FilterPassesBelowItsEdgeAndStopsFromTheNyquistOn) {
  // At ratios 2, 3 (integer) and 2.5 (not): sines across the band, against the filter's own
  // figures: within 0.2% below the pass edge, at most 0.2% of the amplitude from the Nyquist on.
  for (double ratio : {2.0, 2.5, 3.0}) {
    const ResampleFilter f = resample_filter(ratio);
    EXPECT_GT(f.pass, 0.8);
    EXPECT_LT(f.pass, 0.85);
    const double dt_in = 1e-3, dt_out = ratio * dt_in, nyquist = 0.5 / dt_out;
    const int n_out = static_cast<int>(3.0 / dt_out);
    for (double fraction : {0.1, 0.5, 0.8, 1.0, 1.05, 1.3, 2.0}) {
      const double hz = fraction * nyquist;
      std::vector<float> in(3000);
      for (std::size_t n = 0; n < in.size(); ++n)
        in[n] = static_cast<float>(std::cos(2 * kPi * hz * n * dt_in + 0.7));
      const auto out = resample(in, dt_in, dt_out, n_out);
      const double error =
          fraction < 1 ? interior_error(out, dt_out,
                                        [&](double t) { return std::cos(2 * kPi * hz * t + 0.7); })
                       : interior_error(out, dt_out, [](double) { return 0.0; });
      EXPECT_LT(error, 2e-3) << "ratio " << ratio << ", " << fraction << " x Nyquist";
    }
  }
}

TEST(ResampleSignal, RickerAboveTheOutputNyquistIsAttenuatedOneBelowKept) {
  // A Ricker of 150 Hz peak sampled every 1 ms, resampled to 10 ms (Nyquist 50 Hz): its peak
  // falls on a kept sample, so decimation would keep all of it; the low-pass keeps what lies
  // below 50 Hz, a few percent. A Ricker of 10 Hz (band to 25 Hz) comes through within 0.05%.
  const double dt_in = 1e-3, dt_out = 1e-2, t0 = 0.5;
  std::vector<float> high(3000), low(3000);
  for (std::size_t n = 0; n < high.size(); ++n) {
    high[n] = static_cast<float>(ricker(n * dt_in, 150, t0));
    low[n] = static_cast<float>(ricker(n * dt_in, 10, t0));
  }
  EXPECT_FLOAT_EQ(high[500], 1.0f);
  const auto out = resample(high, dt_in, dt_out, 300);
  EXPECT_LT(interior_error(out, dt_out, [](double) { return 0.0; }), 0.03);
  const auto kept = resample(low, dt_in, dt_out, 300);
  EXPECT_LT(interior_error(kept, dt_out, [&](double t) { return ricker(t, 10, t0); }), 5e-4);
}

TEST(ResampleSignal, ManyTracesEqualEachTraceAloneBitForBit) {
  // resample_traces filters the traces in parallel: each must come out as resample gives it alone,
  // at integer and non-integer ratios, down and up, with more traces than threads.
  const std::size_t traces = 37, len = 411;
  std::vector<float> in(traces * len);
  for (std::size_t t = 0; t < traces; ++t)
    for (std::size_t n = 0; n < len; ++n)
      in[t * len + n] = static_cast<float>(std::sin(0.013 * (t + 1) * n) * std::exp(-1e-3 * n));
  for (const double dt_out : {2e-3, 3.3e-3, 4e-3, 0.7e-3}) {
    const int n_out = static_cast<int>(len * 1e-3 / dt_out);
    const auto all = resample_traces(in, traces, 1e-3, dt_out, n_out);
    ASSERT_EQ(all.size(), traces * static_cast<std::size_t>(n_out));
    for (std::size_t t = 0; t < traces; ++t) {
      const std::vector<float> one(in.begin() + t * len, in.begin() + (t + 1) * len);
      const auto alone = resample(one, 1e-3, dt_out, n_out);
      ASSERT_EQ(0, std::memcmp(alone.data(), all.data() + t * n_out, alone.size() * sizeof(float)))
          << "trace " << t << ", dt_out " << dt_out;
    }
  }
}

TEST(ResampleSignal, OutputLengthAsRequested) {
  const std::vector<float> in(50, 1.0f);
  for (int n : {0, 1, 7, 50, 333}) {
    EXPECT_EQ(resample(in, 1e-3, 2e-3, n).size(), static_cast<std::size_t>(n));
    EXPECT_EQ(resample(in, 1e-3, 2.5e-3, n).size(), static_cast<std::size_t>(n));
    EXPECT_EQ(resample(in, 1e-3, 0.4e-3, n).size(), static_cast<std::size_t>(n));
  }
}

TEST(ResampleSignal, NonIntegerDownsamplingOfLowFrequencySine) {
  const double dt_in = 1e-3, dt_out = 2.5e-3, f = 5.0; // new Nyquist 200 Hz
  std::vector<float> in(2000);
  for (std::size_t n = 0; n < in.size(); ++n)
    in[n] = static_cast<float>(std::sin(2 * kPi * f * n * dt_in));
  const auto out = resample(in, dt_in, dt_out, 800);
  ASSERT_EQ(out.size(), 800u);
  for (int k = 0; k < 800; ++k) {
    const double t = k * dt_out;
    if (t < 0.05 || t > 1.95) continue;
    ASSERT_NEAR(out[k], std::sin(2 * kPi * f * t), 1e-3) << "t=" << t;
  }
}

TEST(ResampleSignal, NonIntegerUpsamplingOfSine) {
  const double dt_in = 2e-3, dt_out = 0.8e-3, f = 30.0; // input Nyquist 250 Hz
  std::vector<float> in(500);
  for (std::size_t n = 0; n < in.size(); ++n)
    in[n] = static_cast<float>(std::cos(2 * kPi * f * n * dt_in + 0.3));
  const auto out = resample(in, dt_in, dt_out, 1250);
  for (int k = 0; k < 1250; ++k) {
    const double t = k * dt_out;
    if (t < 0.04 || t > 0.95) continue;
    ASSERT_NEAR(out[k], std::cos(2 * kPi * f * t + 0.3), 1e-3) << "t=" << t;
  }
}

TEST(ResampleSignal, DownsamplingRemovesFrequenciesAboveNewNyquist) {
  // 350 Hz at 1 kHz, resampled to 2.5 ms (Nyquist 200 Hz): must not alias into the output.
  const double dt_in = 1e-3, dt_out = 2.5e-3;
  std::vector<float> in(2000);
  for (std::size_t n = 0; n < in.size(); ++n)
    in[n] = static_cast<float>(std::sin(2 * kPi * 350.0 * n * dt_in));
  const auto out = resample(in, dt_in, dt_out, 800);
  double peak = 0;
  for (int k = 40; k < 760; ++k)
    peak = std::max(peak, static_cast<double>(std::abs(out[k])));
  EXPECT_LT(peak, 0.05);
}

TEST(ResampleSignal, ZeroBeyondTheInput) {
  const std::vector<float> in(100, 1.0f); // ends at t = 99 ms
  for (double dt_out : {2.5e-3, 0.7e-3, 4e-3}) {
    const int n_out = static_cast<int>(0.4 / dt_out);
    const auto out = resample(in, 1e-3, dt_out, n_out);
    for (int k = 0; k < n_out; ++k) {
      // Beyond the last input sample by more than the filter's reach (kResampleRadius output
      // samples when downsampling, 8 input samples when interpolating).
      if (k * dt_out > 0.099 + std::max(kResampleRadius * dt_out, 8e-3)) {
        ASSERT_EQ(out[k], 0.0f) << dt_out << " k=" << k;
      }
    }
  }
  // Empty input: all zero.
  const auto out = resample({}, 1e-3, 2.5e-3, 10);
  for (float x : out)
    EXPECT_EQ(x, 0.0f);
}

TEST(ResampleSignal, ManyTracesAtOnceEqualOneAtATime) {
  // A gather's traces share the interpolation weights; each trace must come out as if alone.
  const std::size_t traces = 4, len = 333;
  std::vector<float> all(traces * len);
  for (std::size_t t = 0; t < traces; ++t) {
    for (std::size_t n = 0; n < len; ++n)
      all[t * len + n] = static_cast<float>(std::sin(0.05 * (t + 1) * n) + 0.1 * t);
  }
  for (double dt_out : {3e-3, 2.5e-3, 0.7e-3}) {
    const int n_out = static_cast<int>(0.4 / dt_out);
    const auto batch = resample_traces(all, traces, 1e-3, dt_out, n_out);
    ASSERT_EQ(batch.size(), traces * static_cast<std::size_t>(n_out));
    for (std::size_t t = 0; t < traces; ++t) {
      const std::vector<float> one(all.begin() + t * len, all.begin() + (t + 1) * len);
      const auto single = resample(one, 1e-3, dt_out, n_out);
      for (int k = 0; k < n_out; ++k)
        ASSERT_EQ(batch[t * n_out + k], single[k]) << "trace " << t << " sample " << k;
    }
  }
  EXPECT_TRUE(resample_traces({}, 0, 1e-3, 2.5e-3, 10).empty());
}

// ---------------------------------------------------------------------------------------------
// 7. Trilinear taps
// ---------------------------------------------------------------------------------------------

const Grid kTapGrid = make_grid(5, 4, 6, 10.0, 20.0, 5.0, 100.0, -50.0, 7.0);

Vec3 at(double fi, double fj, double fk) {
  return {kTapGrid.ox + fi * kTapGrid.dx, kTapGrid.oy + fj * kTapGrid.dy,
          kTapGrid.oz + fk * kTapGrid.dz};
}

TEST(TrilinearTaps, OnANodeOneTap) {
  auto taps = trilinear_taps(kTapGrid, at(2, 1, 3));
  ASSERT_EQ(taps.size(), 1u);
  EXPECT_EQ(taps[0].i, 2);
  EXPECT_EQ(taps[0].j, 1);
  EXPECT_EQ(taps[0].k, 3);
  EXPECT_DOUBLE_EQ(taps[0].weight, 1.0);
  taps = trilinear_taps(kTapGrid, at(0, 0, 0));
  ASSERT_EQ(taps.size(), 1u);
  EXPECT_EQ(taps[0].i + taps[0].j + taps[0].k, 0);
  // The last node along every axis.
  taps = trilinear_taps(kTapGrid, at(4, 3, 5));
  ASSERT_EQ(taps.size(), 1u);
  EXPECT_EQ(taps[0].i, 4);
  EXPECT_EQ(taps[0].j, 3);
  EXPECT_EQ(taps[0].k, 5);
  EXPECT_DOUBLE_EQ(taps[0].weight, 1.0);
}

TEST(TrilinearTaps, LastNodeAlongOneAxis) {
  // x on the last node, y half way between 1 and 2, z on node 2.
  const auto taps = trilinear_taps(kTapGrid, at(4, 1.5, 2));
  ASSERT_EQ(taps.size(), 2u);
  double sum = 0;
  for (const auto& t : taps) {
    EXPECT_EQ(t.i, 4);
    EXPECT_TRUE(t.j == 1 || t.j == 2);
    EXPECT_EQ(t.k, 2);
    EXPECT_NEAR(t.weight, 0.5, 1e-12);
    sum += t.weight;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
  // The same on the last node along z.
  const auto tz = trilinear_taps(kTapGrid, at(0.5, 3, 5));
  ASSERT_EQ(tz.size(), 2u);
  for (const auto& t : tz) {
    EXPECT_EQ(t.j, 3);
    EXPECT_EQ(t.k, 5);
  }
}

TEST(TrilinearTaps, HandComputedWeights) {
  // Cell (1, 2, 3), fractions fx = 0.25, fy = 0.5, fz = 0.75.
  const auto taps = trilinear_taps(kTapGrid, at(1.25, 2.5, 3.75));
  ASSERT_EQ(taps.size(), 8u);
  // w(di, dj, dk) = (di ? .25 : .75) (dj ? .5 : .5) (dk ? .75 : .25)
  const double expect[2][2][2] = {
      {{0.75 * 0.5 * 0.25, 0.75 * 0.5 * 0.75}, {0.75 * 0.5 * 0.25, 0.75 * 0.5 * 0.75}},
      {{0.25 * 0.5 * 0.25, 0.25 * 0.5 * 0.75}, {0.25 * 0.5 * 0.25, 0.25 * 0.5 * 0.75}}};
  int seen[2][2][2] = {};
  for (const auto& t : taps) {
    const int di = t.i - 1, dj = t.j - 2, dk = t.k - 3;
    ASSERT_TRUE(di >= 0 && di <= 1 && dj >= 0 && dj <= 1 && dk >= 0 && dk <= 1);
    ++seen[di][dj][dk];
    EXPECT_NEAR(t.weight, expect[di][dj][dk], 1e-12) << di << dj << dk;
  }
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c)
        EXPECT_EQ(seen[a][b][c], 1);
  EXPECT_NEAR(expect[0][0][0], 0.09375, 1e-15);
}

TEST(TrilinearTaps, ReproducesLinearFunctionsAndSumsToOne) {
  const double a = 1.5, b = -2.0, c = 0.75, d = 3.0;
  Lcg rng(7);
  for (int n = 0; n < 500; ++n) {
    const double fi = rng.uniform(0, 4), fj = rng.uniform(0, 3), fk = rng.uniform(0, 5);
    const auto taps = trilinear_taps(kTapGrid, at(fi, fj, fk));
    ASSERT_GE(taps.size(), 1u);
    ASSERT_LE(taps.size(), 8u);
    double sum = 0, value = 0;
    for (const auto& t : taps) {
      ASSERT_TRUE(t.i >= 0 && t.i < 5 && t.j >= 0 && t.j < 4 && t.k >= 0 && t.k < 6);
      ASSERT_GT(t.weight, 0.0);
      sum += t.weight;
      value += t.weight * (a + b * t.i + c * t.j + d * t.k);
    }
    ASSERT_NEAR(sum, 1.0, 1e-12);
    ASSERT_NEAR(value, a + b * fi + c * fj + d * fk, 1e-9) << fi << " " << fj << " " << fk;
  }
}

TEST(TrilinearTaps, OutsideTheGridThrows) {
  EXPECT_THROW(trilinear_taps(kTapGrid, at(-0.01, 1, 1)), std::out_of_range);
  EXPECT_THROW(trilinear_taps(kTapGrid, at(4.01, 1, 1)), std::out_of_range);
  EXPECT_THROW(trilinear_taps(kTapGrid, at(1, -0.5, 1)), std::out_of_range);
  EXPECT_THROW(trilinear_taps(kTapGrid, at(1, 3.001, 1)), std::out_of_range);
  EXPECT_THROW(trilinear_taps(kTapGrid, at(1, 1, -1)), std::out_of_range);
  EXPECT_THROW(trilinear_taps(kTapGrid, at(1, 1, 5.5)), std::out_of_range);
  // Origin taken into account: x = 0 m is 10 cells left of the grid.
  EXPECT_THROW(trilinear_taps(kTapGrid, Vec3{0.0, 0.0, 10.0}), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// 8. build_eta
// ---------------------------------------------------------------------------------------------

TEST(EtaProfile, HandComputedFacesEdgesCornersAndGhosts) {
  const Grid g = make_grid(14, 12, 16, 10.0, 12.5, 8.0);
  // x 3/5, y 0/4 (no front layer), z 6/2.
  const LayerWidths w = widths(3, 5, 0, 4, 6, 2);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const double dt = 1e-3, vmax = 3000.0, ln1000 = std::log(1000.0);
  const auto eta = build_eta(g, w, l, dt, vmax);
  ASSERT_EQ(eta.size(), static_cast<std::size_t>(l.size));
  auto A = [&](int n, double h) { return dt * 3 * vmax * ln1000 / (2 * n * h); };
  const double axl = A(3, 10.0), axh = A(5, 10.0), ayh = A(4, 12.5), azl = A(6, 8.0),
               azh = A(2, 8.0);
  auto E = [&](int i, int j, int k) { return static_cast<double>(eta[l.index(i, j, k)]); };
  auto near = [](double got, double want) {
    return std::abs(got - want) <= 1e-6 * std::max(1e-3, std::abs(want));
  };
  // A point inside in y and z: (j, k) = (6, 9); y inner is [0, 8), z inner [6, 14).
  const int j = 6, k = 9;
  EXPECT_TRUE(near(E(0, j, k), axl));                // d = n = 3, outermost
  EXPECT_TRUE(near(E(1, j, k), axl * 4.0 / 9.0));    // d = 2
  EXPECT_TRUE(near(E(2, j, k), axl / 9.0));          // d = 1
  EXPECT_EQ(E(3, j, k), 0.0);                        // inner
  EXPECT_TRUE(near(E(-1, j, k), axl * 16.0 / 9.0));  // ghost: d = n + 1 = 4
  EXPECT_EQ(E(8, j, k), 0.0);                        // last inner x
  EXPECT_TRUE(near(E(9, j, k), axh / 25.0));         // d = 1
  EXPECT_TRUE(near(E(13, j, k), axh));               // d = 5, outermost
  EXPECT_TRUE(near(E(14, j, k), axh * 36.0 / 25.0)); // ghost: d = 6
  EXPECT_EQ(E(6, 0, k), 0.0);                        // width-0 front face
  EXPECT_EQ(E(6, -1, k), 0.0);                       // ... and its ghost
  EXPECT_TRUE(near(E(6, 11, k), ayh));               // back, outermost
  EXPECT_TRUE(near(E(6, 12, k), ayh * 25.0 / 16.0)); // back ghost
  EXPECT_TRUE(near(E(6, j, 0), azl));                // top
  EXPECT_TRUE(near(E(6, j, -1), azl * 49.0 / 36.0)); // top ghost
  EXPECT_TRUE(near(E(6, j, 15), azh));               // bottom
  EXPECT_TRUE(near(E(6, j, 14), azh / 4.0));         // bottom, d = 1
  EXPECT_TRUE(near(E(6, j, 16), azh * 9.0 / 4.0));   // bottom ghost
  // Edges and corners are sums.
  EXPECT_TRUE(near(E(0, 11, k), axl + ayh));
  EXPECT_TRUE(near(E(13, j, 0), axh + azl));
  EXPECT_TRUE(near(E(0, 11, 0), axl + ayh + azl));
  EXPECT_TRUE(near(E(13, 11, 15), axh + ayh + azh));
  EXPECT_TRUE(near(E(-1, 12, -1), axl * 16.0 / 9.0 + ayh * 25.0 / 16.0 + azl * 49.0 / 36.0));
  EXPECT_TRUE(near(E(1, 10, 16), axl * 4.0 / 9.0 + ayh * 9.0 / 16.0 + azh * 9.0 / 4.0));
  // Second ghost ring and beyond: nothing set.
  EXPECT_EQ(E(-2, j, k), 0.0);
  EXPECT_EQ(E(6, j, 17), 0.0);
}

TEST(EtaProfile, FullSweepAgainstHandProfile) {
  const Grid g = make_grid(13, 11, 10, 20.0, 10.0, 15.0);
  const LayerWidths w = widths(4, 2, 1, 3, 0, 5);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const double dt = 2e-3, vmax = 4500.0;
  const auto eta = build_eta(g, w, l, dt, vmax);
  // Depth into the layer of index i along an axis of n points (0 when not in a layer), written
  // from the definition: the outermost grid point has d = width, the ghost beyond it width + 1.
  auto prof = [&](int i, int n, int lo, int hi, double h) {
    double d = 0, width = 0;
    if (lo > 0 && i < lo) {
      d = lo - i;
      width = lo;
    } else if (hi > 0 && i >= n - hi) {
      d = i - (n - hi) + 1;
      width = hi;
    }
    if (width == 0) return 0.0;
    const double a = dt * 3 * vmax * std::log(1000.0) / (2 * width * h);
    return a * (d / width) * (d / width);
  };
  for (int k = -1; k <= g.nz; ++k)
    for (int j = -1; j <= g.ny; ++j)
      for (int i = -1; i <= g.nx; ++i) {
        const double want = prof(i, g.nx, w.x_lo, w.x_hi, g.dx) +
                            prof(j, g.ny, w.y_lo, w.y_hi, g.dy) +
                            prof(k, g.nz, w.z_lo, w.z_hi, g.dz);
        ASSERT_NEAR(eta[l.index(i, j, k)], want, 1e-6 * want + 1e-12) << i << "," << j << "," << k;
      }
  // Zero on the whole inner box.
  const auto regions = make_regions(g, w);
  const Box& in = regions[0].box;
  for (int k = in.z0; k < in.z1; ++k)
    for (int j = in.y0; j < in.y1; ++j)
      for (int i = in.x0; i < in.x1; ++i)
        ASSERT_EQ(eta[l.index(i, j, k)], 0.0f);
}

TEST(EtaProfile, NoLayersNoDamping) {
  const Grid g = make_grid(7, 6, 5, 10.0, 10.0, 10.0);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, 0);
  const auto eta = build_eta(g, widths(0, 0, 0, 0, 0, 0), l, 1e-3, 3000.0);
  ASSERT_EQ(eta.size(), static_cast<std::size_t>(l.size));
  for (float e : eta)
    ASSERT_EQ(e, 0.0f);
}

// ---------------------------------------------------------------------------------------------
// 9. Kernel selection
// ---------------------------------------------------------------------------------------------

struct SelectionFixture {
  Grid grid = make_grid(20, 18, 16, 10, 10, 10);
  std::array<Region, kRegionCount> regions = make_regions(grid, widths(3, 3, 3, 3, 3, 3));
  FieldLayout layout = make_field_layout(20, 18, 16, 3);
  RegionKernels resolve(const std::string& spec) const {
    return resolve_kernels(spec, BackendKind::Cpu, Physics::Acoustic, regions, layout, "--kernel");
  }
};

TEST(SelectionKernels, DefaultAndCpuResolveEveryRegion) {
  const SelectionFixture fx;
  EXPECT_STREQ(default_kernel_name(BackendKind::Cpu), "cpu");
  const StencilKernel* cpu = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_EQ(cpu->backend(), BackendKind::Cpu);
  EXPECT_TRUE(cpu->handles(RegionKind::Inner));
  EXPECT_TRUE(cpu->handles(RegionKind::Layer));
  for (const std::string spec :
       {"", "cpu", "  cpu ", "inner=cpu,pml=cpu", "pml=cpu", "inner=cpu",
        "top=cpu,bottom=cpu,front=cpu,back=cpu,left=cpu,right=cpu,inner=cpu",
        " inner = cpu , left = cpu ", "pml=cpu,top=cpu"}) {
    SCOPED_TRACE("spec '" + spec + "'");
    RegionKernels k{};
    ASSERT_NO_THROW(k = fx.resolve(spec));
    for (int r = 0; r < kRegionCount; ++r) {
      ASSERT_NE(k[r], nullptr) << r;
      EXPECT_EQ(k[r], cpu) << region_name(static_cast<RegionId>(r));
    }
  }
}

TEST(SelectionKernels, BadSpecsThrowInputErrorNamingSpecAndAllowed) {
  const SelectionFixture fx;
  for (const std::string spec :
       {"nosuch", "inner=nosuch", "middle=cpu", "inner=cpu,middle=cpu", "inner=cpu,,pml=cpu",
        ",inner=cpu", "inner=cpu,pml", "cpu,pml=cpu", "inner=", "=cpu", "gmem_3d", "inner=gmem_3d",
        "pml=gmem_3d_32x4x4"}) {
    SCOPED_TRACE("spec '" + spec + "'");
    bool threw = false;
    try {
      (void)fx.resolve(spec);
    } catch (const InputError& e) {
      threw = true;
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("--kernel", 0), 0u) << msg;
      EXPECT_TRUE(contains(msg, spec)) << msg;
      EXPECT_TRUE(contains(msg, "allowed")) << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong exception type: " << e.what();
    }
    EXPECT_TRUE(threw);
  }
}

TEST(SelectionKernels, GpuKernelOnCpuBackend) {
  const SelectionFixture fx;
  try {
    (void)fx.resolve("gmem_3d");
    FAIL() << "gmem_3d resolved on the CPU backend";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "gmem_3d")) << msg;
#if !defined(MINIMOD_HAVE_GPU)
    EXPECT_TRUE(contains(msg, "allowed: cpu")) << msg;
#else
    EXPECT_TRUE(contains(msg, backend_name(kGpuBackend))) << msg;
#endif
  }
}

// The TTI CPU reference is the kernel `cpu` of Physics::Tti, the default on the CPU backend; a
// GPU kernel's name is no CPU kernel.
TEST(SelectionKernels, TtiKernelNamedCpuIsTheTtiReference) {
  const SelectionFixture fx;
  for (const std::string spec : {"cpu", ""}) {
    const RegionKernels k =
        resolve_kernels(spec, BackendKind::Cpu, Physics::Tti, fx.regions, fx.layout, "--kernel");
    for (int r = 0; r < kRegionCount; ++r) {
      if (fx.regions[r].box.empty()) continue;
      ASSERT_NE(k[r], nullptr);
      EXPECT_EQ(k[r]->name(), "cpu");
      EXPECT_EQ(k[r]->physics(), Physics::Tti);
      EXPECT_EQ(k[r]->backend(), BackendKind::Cpu);
    }
  }
  EXPECT_THROW(
      resolve_kernels("semi+b", BackendKind::Cpu, Physics::Tti, fx.regions, fx.layout, "--kernel"),
      InputError);
}

#if defined(MINIMOD_HAVE_CUDA)
// The CUDA default is the measured pair; a spec naming some regions keeps the pair for the rest.
TEST(SelectionKernels, CudaDefaultIsTheMeasuredPair) {
  const Grid grid = make_grid(70, 50, 40, 10, 10, 10);
  const auto regions = make_regions(grid, widths(8, 8, 8, 8, 8, 8));
  const FieldLayout layout = make_field_layout(70, 50, 40, 8);
  auto resolve = [&](const std::string& spec) {
    return resolve_kernels(spec, BackendKind::Cuda, Physics::Acoustic, regions, layout, "--kernel");
  };
  EXPECT_EQ(default_kernel_spec(BackendKind::Cuda, Physics::Acoustic),
            "inner=st_reg_shft_25d_32x16,pml=gmem_3d_f4_32x4x4");
  RegionKernels k = resolve("");
  EXPECT_EQ(k[0]->name(), "st_reg_shft_25d_32x16");
  for (int r = 1; r < kRegionCount; ++r)
    EXPECT_EQ(k[r]->name(), "gmem_3d_f4_32x4x4") << r;
  k = resolve("inner=semi+b+a");
  EXPECT_EQ(k[0]->family(), "semi+b+a");
  EXPECT_EQ(k[1]->name(), "gmem_3d_f4_32x4x4");
  k = resolve("gmem_3d");
  for (int r = 0; r < kRegionCount; ++r)
    EXPECT_EQ(k[r]->name(), "gmem_3d_32x4x4") << r;
  k = resolve("top=smem_eta");
  EXPECT_EQ(k[0]->name(), "st_reg_shft_25d_32x16");
  EXPECT_EQ(k[static_cast<int>(RegionId::Top)]->family(), "smem_eta");
  EXPECT_EQ(k[static_cast<int>(RegionId::Bottom)]->name(), "gmem_3d_f4_32x4x4");
}
#endif

TEST(BackendChoice, ResolvesOnThisMachine) {
  std::vector<std::string> heard;
  auto notice = [&](const std::string& line) { heard.push_back(line); };
  EXPECT_EQ(resolve_backend_choice(BackendChoice::Cpu, notice), BackendKind::Cpu);
  const BackendChoice gpu_choice =
      kGpuBackend == BackendKind::Hip ? BackendChoice::Hip : BackendChoice::Cuda;
  EXPECT_EQ(resolve_backend_choice(gpu_choice, notice), kGpuBackend);
  EXPECT_TRUE(heard.empty()) << "an explicit choice says nothing";
  std::string why;
  const bool gpu = cuda_device_available(&why);
  const BackendKind kind = resolve_backend_choice(BackendChoice::Auto, notice, "running elsewhere");
  if (gpu) {
    EXPECT_EQ(kind, kGpuBackend);
    EXPECT_TRUE(heard.empty());
  } else {
    EXPECT_EQ(kind, BackendKind::Cpu);
    ASSERT_EQ(heard.size(), 1u);
    EXPECT_EQ(heard[0].rfind("no GPU found: running elsewhere (", 0), 0u) << heard[0];
  }
}

// A binary holds the CPU backend and one GPU backend at most (kGpuBackend): every registered
// kernel is of one of the two, the other GPU backend is refused by name, and the GPU defaults
// resolve to registered kernels. The HIP defaults are whole 64-lane wavefronts and use neither
// cp.async nor the tensor copies (docs/kernels.md, "HIP").
TEST(GpuRegistry, OneBackendItsDefaultsAndCapabilities) {
  EXPECT_STREQ(backend_name(BackendKind::Cpu), "cpu");
  EXPECT_STREQ(backend_name(BackendKind::Cuda), "cuda");
  EXPECT_STREQ(backend_name(BackendKind::Hip), "hip");
  EXPECT_EQ(parse_backend_choice("hip", "--backend"), BackendChoice::Hip);
  EXPECT_EQ(parse_backend_choice("cuda", "--backend"), BackendChoice::Cuda);
  try {
    (void)parse_backend_choice("rocm", "--backend");
    FAIL() << "rocm parsed as a backend";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "allowed: auto, cpu, cuda, hip")) << e.what();
  }
  EXPECT_EQ(default_kernel_spec(BackendKind::Hip, Physics::Acoustic),
            "inner=st_reg_shft_25d_32x32,pml=smem_3d_32x4x4");
  EXPECT_EQ(default_kernel_spec(BackendKind::Hip, Physics::Tti), "semi+2z_32x8");
  EXPECT_STREQ(default_fallback_name(BackendKind::Hip, Physics::Tti), "semi+2z_32x8");

  int gpu_kernels = 0;
  for (const StencilKernel* k : kernel_registry().all()) {
    EXPECT_TRUE(k->backend() == BackendKind::Cpu || k->backend() == kGpuBackend)
        << k->name() << " is a " << backend_name(k->backend()) << " kernel in a "
        << backend_name(kGpuBackend) << " binary";
    if (k->backend() == BackendKind::Cpu) continue;
    ++gpu_kernels;
    if (kGpuBackend == BackendKind::Hip) {
      // The CUDA-only families (cp.async, TMA) are not built for HIP.
      EXPECT_NE(k->family(), "semi+b+a") << k->name();
      EXPECT_NE(k->family(), "semi+b+tma") << k->name();
    }
  }
#if defined(MINIMOD_HAVE_GPU)
  EXPECT_GT(gpu_kernels, 50) << "the GPU families registered";
  const Grid grid = make_grid(70, 50, 40, 10, 10, 10);
  const auto regions = make_regions(grid, widths(8, 8, 8, 8, 8, 8));
  const FieldLayout layout = make_field_layout(70, 50, 40, 8);
  for (const Physics physics : {Physics::Acoustic, Physics::Tti}) {
    const RegionKernels k = resolve_kernels("", kGpuBackend, physics, regions, layout, "--kernel");
    for (int r = 0; r < kRegionCount; ++r) {
      ASSERT_NE(k[r], nullptr) << r;
      EXPECT_EQ(k[r]->backend(), kGpuBackend);
    }
  }
  const BackendChoice other =
      kGpuBackend == BackendKind::Hip ? BackendChoice::Cuda : BackendChoice::Hip;
  try {
    (void)resolve_backend_choice(other, nullptr);
    FAIL() << "the other GPU backend was accepted";
  } catch (const RuntimeFailure& e) {
    EXPECT_TRUE(contains(e.what(), "one GPU backend a binary")) << e.what();
  }
#else
  EXPECT_EQ(gpu_kernels, 0);
  EXPECT_THROW((void)make_backend(BackendKind::Hip, Physics::Acoustic), RuntimeFailure);
#endif
}

// The temporally blocked family tb2_25d is retired (docs/kernels.md, "Temporal blocking does not
// pay at radius 4"): its names, alone or in a region item, get the unknown-kernel refusal that
// lists the kernels that exist, on the GPU backend as on the CPU.
TEST(SelectionKernels, RetiredTemporalBlockingNamesAreUnknown) {
  const Grid grid = make_grid(70, 50, 40, 10, 10, 10);
  const FieldLayout layout = make_field_layout(70, 50, 40, 8);
  const auto regions = make_regions(grid, widths(8, 8, 8, 8, 8, 8));
  for (const BackendKind backend : {kGpuBackend, BackendKind::Cpu}) {
    const std::vector<std::string> names = kernel_registry().names(backend, Physics::Acoustic);
    if (names.empty()) continue; // a build without a GPU backend
    const std::string inner = default_kernel_name(backend);
    for (const std::string& spec : {std::string("tb2_25d"), std::string("tb2_25d_32x16"),
                                    "inner=" + inner + ",pml=tb2_25d_16x16"}) {
      const std::string name = spec.substr(spec.rfind('=') + 1);
      try {
        (void)resolve_kernels(spec, backend, Physics::Acoustic, regions, layout, "--kernel");
        ADD_FAILURE() << "--kernel " << spec << " was accepted on " << backend_name(backend);
      } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_TRUE(contains(what, "--kernel: '" + spec + "': no acoustic kernel named '" + name +
                                       "' for backend " + backend_name(backend)))
            << what;
        EXPECT_TRUE(contains(what, "; allowed: " + names.front())) << what;
      }
    }
  }
}

// std::getline drops a trailing empty item, so a spec ending in ',' needs its own check: the
// grammar (SPEC := ITEM (',' ITEM)*) makes it malformed, like an empty item in front or between.
TEST(SelectionKernels, TrailingCommaIsMalformed) {
  const SelectionFixture fx;
  EXPECT_THROW((void)fx.resolve("inner=cpu,"), InputError);
  EXPECT_THROW((void)fx.resolve("inner=cpu,pml=cpu,"), InputError);
}

// ---------------------------------------------------------------------------------------------
// 10. The CPU kernel
// ---------------------------------------------------------------------------------------------

const StencilKernel& cpu_kernel() {
  const StencilKernel* k = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  if (!k) throw std::runtime_error("no cpu kernel registered");
  return *k;
}

TEST(CpuKernelStep, InnerImpulseByHand) {
  const Grid g = make_grid(20, 18, 16, 10.0, 12.5, 8.0);
  const LayerWidths w = widths(3, 3, 3, 3, 3, 3);
  const auto regions = make_regions(g, w);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const StencilCoefs coefs = make_stencil_coefs(g);
  const double q = 0.05; // vp2dt2
  const std::size_t size = static_cast<std::size_t>(l.size);
  std::vector<float> u(size, 0.0f), v(size, 0.0f), vp(size, 0.0f);
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i)
        vp[l.index(i, j, k)] = static_cast<float>(q);
  const int ci = 10, cj = 9, ck = 8; // inner box [3,17) x [3,15) x [3,13): +-4 stays inside
  u[l.index(ci, cj, ck)] = 1.0f;
  // v holds u^{n-1}: a value at a far inner point, and a marker in a layer (must stay untouched).
  v[l.index(4, 4, 4)] = 0.5f;
  v[l.index(1, 9, 8)] = 7.0f;
  IsoFields f;
  f.u = u.data();
  f.v = v.data();
  f.vp2dt2 = vp.data();
  cpu_kernel().launch(f, l, coefs, regions[0], nullptr);

  const double h2[3] = {100.0, 156.25, 64.0};
  std::vector<double> want(size, 0.0);
  want[l.index(ci, cj, ck)] = 2.0 + q * kC0 * (1 / h2[0] + 1 / h2[1] + 1 / h2[2]);
  for (int m = 1; m <= 4; ++m) {
    want[l.index(ci + m, cj, ck)] = want[l.index(ci - m, cj, ck)] = q * kC[m] / h2[0];
    want[l.index(ci, cj + m, ck)] = want[l.index(ci, cj - m, ck)] = q * kC[m] / h2[1];
    want[l.index(ci, cj, ck + m)] = want[l.index(ci, cj, ck - m)] = q * kC[m] / h2[2];
  }
  want[l.index(4, 4, 4)] = -0.5; // 2 u - v with u = 0
  want[l.index(1, 9, 8)] = 7.0;  // outside the launched region
  // The centre value written out: 2 - 0.05 * 205/72 * (1/100 + 1/156.25 + 1/64).
  EXPECT_NEAR(want[l.index(ci, cj, ck)], 2.0 - 0.05 * 205.0 / 72.0 * 0.0320250, 1e-9);
  for (std::size_t p = 0; p < size; ++p)
    ASSERT_NEAR(v[p], want[p], 1e-6 * std::max(1.0, std::abs(want[p]))) << "index " << p;
  EXPECT_EQ(u[l.index(ci, cj, ck)], 1.0f); // u is read only
}

/// Pseudo-random fields for the layer tests; u, v, vp2dt2, phi zero in the ghosts, eta set on
/// the grid and its first ghost ring.
struct LayerFields {
  std::vector<float> u, v, vp, phi, eta;
  LayerFields(const Grid& g, const FieldLayout& l, bool zero_eta) {
    const std::size_t size = static_cast<std::size_t>(l.size);
    u.assign(size, 0.0f);
    v.assign(size, 0.0f);
    vp.assign(size, 0.0f);
    phi.assign(size, 0.0f);
    eta.assign(size, 0.0f);
    Lcg rng(42);
    for (int k = -1; k <= g.nz; ++k)
      for (int j = -1; j <= g.ny; ++j)
        for (int i = -1; i <= g.nx; ++i) {
          const std::int64_t p = l.index(i, j, k);
          eta[p] = zero_eta ? 0.0f : static_cast<float>(rng.uniform(0.0, 0.4));
          const bool inside = i >= 0 && i < g.nx && j >= 0 && j < g.ny && k >= 0 && k < g.nz;
          if (!inside) continue;
          u[p] = static_cast<float>(rng.uniform(-1, 1));
          v[p] = static_cast<float>(rng.uniform(-1, 1));
          vp[p] = static_cast<float>(rng.uniform(0.01, 0.1));
          phi[p] = zero_eta ? 0.0f : static_cast<float>(rng.uniform(-0.1, 0.1));
        }
  }
};

TEST(CpuKernelStep, LayerRegionMatchesPhysicsFormulaInDouble) {
  const Grid g = make_grid(16, 14, 13, 1.0, 1.25, 0.8);
  const LayerWidths w = widths(5, 4, 4, 4, 4, 4);
  const auto regions = make_regions(g, w);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const StencilCoefs coefs = make_stencil_coefs(g);
  const double h[3] = {1.0, 1.25, 0.8};
  const std::int64_t stride[3] = {1, l.pitch, l.plane};
  for (RegionId id : {RegionId::Left, RegionId::Top, RegionId::Back}) {
    const Region& reg = regions[static_cast<int>(id)];
    SCOPED_TRACE(region_name(id));
    ASSERT_FALSE(reg.box.empty());
    LayerFields in(g, l, false);
    LayerFields out = in;
    IsoFields f;
    f.u = out.u.data();
    f.v = out.v.data();
    f.vp2dt2 = out.vp.data();
    f.phi = out.phi.data();
    f.eta = out.eta.data();
    cpu_kernel().launch(f, l, coefs, reg, nullptr);
    int checked = 0;
    for (int k = -4; k < g.nz + 4; ++k)
      for (int j = -4; j < g.ny + 4; ++j)
        for (int i = -4; i < g.nx + 4; ++i) {
          const std::int64_t p = l.index(i, j, k);
          ASSERT_EQ(out.u[p], in.u[p]);
          if (!reg.box.contains(i, j, k)) {
            ASSERT_EQ(out.v[p], in.v[p]) << i << "," << j << "," << k;
            ASSERT_EQ(out.phi[p], in.phi[p]) << i << "," << j << "," << k;
            continue;
          }
          // docs/physics.md section 3, in double.
          const double u0 = in.u[p], v0 = in.v[p], q = in.vp[p], ph = in.phi[p], e = in.eta[p];
          double lap = 0, grad = 0;
          for (int a = 0; a < 3; ++a) {
            const std::int64_t s = stride[a];
            double axis = kC0 * u0;
            for (int m = 1; m <= 4; ++m)
              axis += kC[m] * (double(in.u[p + m * s]) + double(in.u[p - m * s]));
            lap += axis / (h[a] * h[a]);
            grad += (double(in.eta[p + s]) - double(in.eta[p - s])) *
                    (double(in.u[p + s]) - double(in.u[p - s])) / (4 * h[a] * h[a]);
          }
          const double vn = ((2 + 2 * e - e * e) * u0 - v0 + q * (lap + ph)) / (1 + 2 * e);
          const double phn = (ph - grad) / (1 + e);
          ASSERT_NEAR(out.v[p], vn, 2e-5 * std::max(1.0, std::abs(vn)))
              << i << "," << j << "," << k;
          ASSERT_NEAR(out.phi[p], phn, 2e-6 * std::max(1.0, std::abs(phn)))
              << i << "," << j << "," << k;
          ++checked;
        }
    EXPECT_EQ(checked, static_cast<int>(reg.box.points()));
  }
}

TEST(CpuKernelStep, LayerUpdateWithZeroEtaIsInnerUpdate) {
  const Grid g = make_grid(16, 14, 13, 1.0, 1.25, 0.8);
  const LayerWidths w = widths(5, 4, 4, 4, 4, 4);
  const auto regions = make_regions(g, w);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const StencilCoefs coefs = make_stencil_coefs(g);
  LayerFields a(g, l, true);
  LayerFields b = a;
  // Launch the Right slab as a layer region, and the same box relabelled as the inner region.
  const Region layer = regions[static_cast<int>(RegionId::Right)];
  Region inner = layer;
  inner.id = RegionId::Inner;
  IsoFields fa{a.u.data(), a.v.data(), a.vp.data(), a.phi.data(), a.eta.data()};
  IsoFields fb{b.u.data(), b.v.data(), b.vp.data(), nullptr, nullptr};
  cpu_kernel().launch(fa, l, coefs, layer, nullptr);
  cpu_kernel().launch(fb, l, coefs, inner, nullptr);
  for (std::size_t p = 0; p < a.v.size(); ++p) {
    ASSERT_NEAR(a.v[p], b.v[p], 1e-6 * std::max(1.0f, std::abs(b.v[p]))) << p;
    ASSERT_EQ(a.phi[p], 0.0f) << p;
  }
}

} // namespace
