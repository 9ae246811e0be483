/// The CPU kernels' sweep (kernels/cpu/cpu_sweep.hpp) over lists of region pieces other than the
/// seven regions: every point of the pieces is visited once whatever the tiles, the cuts, the order
/// and the empty pieces, and the kernels `cpu` of both equations give the same bits on such a list
/// as on the regions one at a time.
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/cpu/cpu_sweep.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"
#include "kernels/tti_problem.hpp"
#include "solver/problem.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/grid_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace minimod {
namespace {

using test_support::make_grid;
using test_support::widths;

/// Cuts of [lo, hi) at up to `cuts` random places, as the bounds of the parts.
std::vector<int> cut_points(int lo, int hi, int cuts, std::mt19937& rng) {
  std::vector<int> at{lo, hi};
  for (int c = 0; c < cuts && hi - lo > 1; ++c)
    at.push_back(lo + 1 + static_cast<int>(rng() % static_cast<unsigned>(hi - lo - 1)));
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

/// The regions cut into boxes along every axis, with empty pieces among them, shuffled.
std::vector<Region> cut_pieces(const std::array<Region, kRegionCount>& regions, int cuts,
                               std::mt19937& rng) {
  std::vector<Region> out;
  for (const Region& r : regions) {
    const Box& b = r.box;
    if (b.empty()) continue;
    const auto xs = cut_points(b.x0, b.x1, cuts, rng), ys = cut_points(b.y0, b.y1, cuts, rng),
               zs = cut_points(b.z0, b.z1, cuts, rng);
    for (std::size_t a = 0; a + 1 < xs.size(); ++a)
      for (std::size_t c = 0; c + 1 < ys.size(); ++c)
        for (std::size_t d = 0; d + 1 < zs.size(); ++d)
          out.push_back(Region{r.id, Box{xs[a], xs[a + 1], ys[c], ys[c + 1], zs[d], zs[d + 1]}});
    out.push_back(Region{r.id, Box{b.x0, b.x0, b.y0, b.y1, b.z0, b.z1}}); // empty
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

/// Visits of every point of an nx x ny x nz grid by cpu_sweep over `pieces`.
std::vector<int> visits(const Grid& g, const std::vector<Region>& pieces, CpuTile tile) {
  std::vector<int> count(g.points(), 0);
  cpu_sweep(pieces.data(), static_cast<int>(pieces.size()), tile,
            [&](const Region& r, int j, int k) {
              for (int i = r.box.x0; i < r.box.x1; ++i) {
#pragma omp atomic
                ++count[(static_cast<std::size_t>(k) * g.ny + j) * g.nx + i];
              }
            });
  return count;
}

TEST(CpuSweep, EveryPointOnceForAnyPiecesAndTiles) {
  const Grid g = make_grid(23, 19, 17, 10, 10, 10);
  std::mt19937 rng(7);
  for (const LayerWidths& layer : {widths(0, 0, 0, 0, 0, 0), widths(5, 3, 2, 6, 0, 4)}) {
    const auto regions = make_regions(g, layer);
    for (const int cuts : {0, 2, 6}) {
      const std::vector<Region> pieces = cut_pieces(regions, cuts, rng);
      for (const CpuTile tile : {CpuTile{1, 1}, CpuTile{3, 5}, CpuTile{32, 64}, CpuTile{}}) {
        const std::vector<int> count = visits(g, pieces, tile);
        EXPECT_EQ(std::count(count.begin(), count.end(), 1),
                  static_cast<std::ptrdiff_t>(count.size()))
            << pieces.size() << " pieces, tile " << tile.y << "x" << tile.z;
      }
    }
  }
  // More pieces in one tile than it holds without a heap list: one-row slabs of one region.
  std::vector<Region> rows;
  for (int j = 0; j < g.ny; ++j)
    rows.push_back(Region{RegionId::Inner, Box{0, g.nx, j, j + 1, 2, 9}});
  ASSERT_GT(rows.size(), static_cast<std::size_t>(kCpuTilePieces) / 2);
  rows.insert(rows.end(), rows.size(), Region{RegionId::Inner, Box{}}); // empty ones too
  std::vector<Region> both = rows;
  for (int j = 0; j < g.ny; ++j)
    both.push_back(Region{RegionId::Left, Box{0, g.nx, j, j + 1, 9, 12}});
  ASSERT_GT(both.size(), static_cast<std::size_t>(kCpuTilePieces));
  const std::vector<int> count = visits(g, both, CpuTile{});
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i)
        ASSERT_EQ(count[(static_cast<std::size_t>(k) * g.ny + j) * g.nx + i],
                  k >= 2 && k < 12 ? 1 : 0)
            << i << " " << j << " " << k;
  // Nothing at all.
  EXPECT_EQ(std::count(count.begin(), count.end(), 0),
            static_cast<std::ptrdiff_t>(g.points()) -
                static_cast<std::ptrdiff_t>(10) * g.nx * g.ny);
  const std::vector<int> none = visits(g, {}, CpuTile{});
  EXPECT_EQ(std::count(none.begin(), none.end(), 0), static_cast<std::ptrdiff_t>(g.points()));
}

/// A field of the layout with values in [lo, hi), the ghosts included.
std::vector<float> random_field(const FieldLayout& l, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> f(static_cast<std::size_t>(l.size));
  for (float& x : f)
    x = d(rng);
  return f;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Random fields of one acoustic update: u^n, (c dt)^2, eta, u^(n-1) and phi, in that order of
/// draws from `rng`.
struct RandomAcoustic {
  std::vector<float> u, vp2dt2, eta, v0, phi0;
  RandomAcoustic(const FieldLayout& l, std::mt19937& rng)
      : u(random_field(l, -1.0f, 1.0f, rng)), vp2dt2(random_field(l, 0.0f, 1e-3f, rng)),
        eta(random_field(l, 0.0f, 0.2f, rng)), v0(random_field(l, -1.0f, 1.0f, rng)),
        phi0(random_field(l, -0.1f, 0.1f, rng)) {}
};

TEST(CpuKernels, AcousticPiecesInAnyOrderGiveTheSameBits) {
  const Grid g = make_grid(37, 29, 23, 10, 12, 9);
  const auto regions = make_regions(g, widths(5, 3, 2, 6, 0, 4));
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, 5);
  const StencilCoefs c = make_stencil_coefs(g);
  std::mt19937 rng(11);
  const RandomAcoustic m(l, rng);
  const std::vector<float>&u = m.u, &vp2dt2 = m.vp2dt2, &eta = m.eta, &v0 = m.v0, &phi0 = m.phi0;
  const StencilKernel* k = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  ASSERT_NE(k, nullptr);
  auto run = [&](const std::vector<Region>& pieces, bool one_at_a_time) {
    std::vector<float> v = v0, phi = phi0;
    IsoFields f{u.data(), v.data(), vp2dt2.data(), phi.data(), eta.data()};
    if (one_at_a_time) {
      for (const Region& r : pieces)
        k->launch(f, l, c, r, nullptr);
    } else {
      k->launch_regions(f, l, c, pieces.data(), static_cast<int>(pieces.size()), nullptr);
    }
    v.insert(v.end(), phi.begin(), phi.end());
    return v;
  };
  const std::vector<float> reference = run({regions.begin(), regions.end()}, true);
  EXPECT_FALSE(same_bits(reference, run({}, false))) << "the update changed nothing";
  EXPECT_TRUE(same_bits(reference, run({regions.begin(), regions.end()}, false)));
  for (const int cuts : {1, 3}) {
    const std::vector<Region> pieces = cut_pieces(regions, cuts, rng);
    EXPECT_TRUE(same_bits(reference, run(pieces, false))) << pieces.size() << " pieces";
  }
}

TEST(CpuKernels, AcousticGivesTheBitsOfThePerPointFunctions) {
  // The kernel's row sweep (intrinsics where the build has AVX-512, omp simd loops elsewhere)
  // against stencil_K.hpp's functions called one point at a time. Row segments of every length
  // and start: x slabs of 1 to 19 points, unaligned starts, inner rows of whole and partial
  // vectors, and the pieces cut at random places.
  for (const int nx : {37, 70}) {
    const Grid g = make_grid(nx, 21, 13, 10, 12, 9);
    const LayerWidths w = widths(nx == 37 ? 5 : 19, nx == 37 ? 1 : 17, 2, 6, 0, 4);
    const auto regions = make_regions(g, w);
    const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
    const StencilCoefs c = make_stencil_coefs(g);
    std::mt19937 rng(23);
    const RandomAcoustic m(l, rng);
    const std::vector<float>&u = m.u, &vp2dt2 = m.vp2dt2, &eta = m.eta, &v0 = m.v0, &phi0 = m.phi0;
    std::vector<float> v_ref = v0, phi_ref = phi0;
    const std::int64_t sy = l.pitch, sz = l.plane;
    for (const Region& r : regions) {
      for (int k = r.box.z0; k < r.box.z1; ++k)
        for (int j = r.box.y0; j < r.box.y1; ++j)
          for (int i = r.box.x0; i < r.box.x1; ++i) {
            const std::int64_t p = l.index(i, j, k);
            const float lap = laplacian_25(u.data(), p, sy, sz, c);
            if (r.kind() == RegionKind::Inner) {
              v_ref[p] = inner_update(u[p], v0[p], vp2dt2[p], lap);
            } else {
              const float grad = eta_gradient_term(u.data(), eta.data(), p, sy, sz, c);
              v_ref[p] =
                  layer_update(u[p], v0[p], vp2dt2[p], lap, phi0[p], eta[p], grad, &phi_ref[p]);
            }
          }
    }
    v_ref.insert(v_ref.end(), phi_ref.begin(), phi_ref.end());
    const StencilKernel* k = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
    ASSERT_NE(k, nullptr);
    auto run = [&](const std::vector<Region>& pieces) {
      std::vector<float> v = v0, phi = phi0;
      IsoFields f{u.data(), v.data(), vp2dt2.data(), phi.data(), eta.data()};
      k->launch_regions(f, l, c, pieces.data(), static_cast<int>(pieces.size()), nullptr);
      v.insert(v.end(), phi.begin(), phi.end());
      return v;
    };
    EXPECT_TRUE(same_bits(v_ref, run({regions.begin(), regions.end()}))) << "nx " << nx;
    const std::vector<Region> pieces = cut_pieces(regions, 3, rng);
    EXPECT_TRUE(same_bits(v_ref, run(pieces))) << "nx " << nx << ", " << pieces.size() << " pieces";
  }
}

TEST(CpuKernels, AcousticEtaFromItsProfilesGivesTheArraysBits) {
  // Asymmetric layers, one face without, and a grid spacing per axis: the profiles take several
  // distinct values each, and eta's sums round differently from point to point.
  const Grid g = make_grid(41, 29, 23, 10, 12, 9);
  const LayerWidths w = widths(7, 3, 2, 6, 0, 5);
  const auto regions = make_regions(g, w);
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, w.x_lo);
  const StencilCoefs c = make_stencil_coefs(g);
  const EtaProfiles axes = eta_profiles(g, w, 1.3e-3, 4321.0);
  const std::vector<float> eta = build_eta(g, axes, l);
  const EtaRows rows(axes, g.nx, g.ny, g.nz);
  EXPECT_EQ(rows.first_difference(eta, l), "");
  // One row a pair of distinct y and z values (11 along y: zero, 3 depths and 7 on the other
  // face, ghosts included; 6 along z), fewer than the array's rows.
  EXPECT_LT(rows.rows(), static_cast<std::size_t>((g.ny + 2) * (g.nz + 2)));
  std::mt19937 rng(17);
  const std::vector<float> u = random_field(l, -1.0f, 1.0f, rng),
                           vp2dt2 = random_field(l, 0.0f, 1e-3f, rng),
                           v0 = random_field(l, -1.0f, 1.0f, rng),
                           phi0 = random_field(l, -0.1f, 0.1f, rng);
  const StencilKernel* k = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
  ASSERT_NE(k, nullptr);
  auto run = [&](const float* array, const EtaRows* table) {
    std::vector<float> v = v0, phi = phi0;
    IsoFields f{u.data(), v.data(), vp2dt2.data(), phi.data(), array};
    f.eta_rows = table;
    k->launch_regions(f, l, c, regions.data(), kRegionCount, nullptr);
    v.insert(v.end(), phi.begin(), phi.end());
    return v;
  };
  const std::vector<float> from_array = run(eta.data(), nullptr);
  EXPECT_TRUE(same_bits(from_array, run(nullptr, &rows)));
  // One profile value off changes the table and the result: the kernel does read the table.
  EtaProfiles off = axes;
  off.y[2] *= 1.5;
  const EtaRows other(off, g.nx, g.ny, g.nz);
  EXPECT_NE(other.first_difference(eta, l), "");
  EXPECT_FALSE(same_bits(from_array, run(nullptr, &other)));
  EXPECT_THROW(EtaRows(axes, g.nx + 1, g.ny, g.nz), std::invalid_argument);
}

TEST(CpuKernels, TtiPiecesInAnyOrderGiveTheSameBits) {
  const Grid g = make_grid(31, 27, 25, 10, 10, 10);
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2000.0f);
  m.epsilon.assign(n, 0.2f);
  m.delta.assign(n, 0.1f);
  // An elliptic block (epsilon = delta) in the layer, so that the form with phi runs too.
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 10; ++j)
      for (int i = 0; i < 10; ++i)
        m.epsilon[(static_cast<std::size_t>(k) * g.ny + j) * g.nx + i] = 0.1f;
  m.theta.assign(n, 0.5f);
  m.phi.assign(n, 0.3f);
  TtiPlanOptions o;
  o.steps = 4;
  o.layer_width = 5;
  const TtiPlan plan = make_tti_plan(g, m, o);
  WaveletSpec w;
  w.kind = WaveletSpec::Kind::Ricker;
  w.frequency = 25;
  const TtiSource src{{131.0, 122.0, 108.0}, sample_wavelet(w, plan.dt, plan.steps, "w")};
  const TtiProblem p = build_tti_problem(plan, m, {src}, {{60, 70, 80}});
  ASSERT_TRUE(tti_needs_phi(p));
  const FieldLayout& l = p.layout;
  std::mt19937 rng(13);
  const std::vector<float> pf = random_field(l, -1.0f, 1.0f, rng),
                           qf = random_field(l, -0.5f, 0.5f, rng),
                           p0 = random_field(l, -1.0f, 1.0f, rng),
                           q0 = random_field(l, -0.5f, 0.5f, rng),
                           phi0 = random_field(l, -0.1f, 0.1f, rng);
  const StencilKernel* k = kernel_registry().find("cpu", BackendKind::Cpu, Physics::Tti);
  ASSERT_NE(k, nullptr);
  auto run = [&](const std::vector<Region>& pieces, bool one_at_a_time) {
    std::vector<float> pn = p0, qn = q0, phi = phi0;
    TtiFields f = tti_medium_fields(p);
    f.p = pf.data();
    f.q = qf.data();
    f.p_next = pn.data();
    f.q_next = qn.data();
    f.phi_p = phi.data();
    if (one_at_a_time) {
      for (const Region& r : pieces)
        k->launch_tti(f, l, p.coefs, r, nullptr);
    } else {
      k->launch_tti_regions(f, l, p.coefs, pieces.data(), static_cast<int>(pieces.size()), nullptr);
    }
    pn.insert(pn.end(), qn.begin(), qn.end());
    pn.insert(pn.end(), phi.begin(), phi.end());
    return pn;
  };
  const std::vector<Region> regions(p.regions.begin(), p.regions.end());
  const std::vector<float> reference = run(regions, true);
  EXPECT_FALSE(same_bits(reference, run({}, false))) << "the update changed nothing";
  EXPECT_TRUE(same_bits(reference, run(regions, false)));
  for (const int cuts : {1, 3}) {
    const std::vector<Region> pieces = cut_pieces(p.regions, cuts, rng);
    EXPECT_TRUE(same_bits(reference, run(pieces, false))) << pieces.size() << " pieces";
  }
}

} // namespace
} // namespace minimod
