/// GPU tests of the TTI kernels (CTest label gpu): every registered CUDA TTI kernel against the
/// CPU reference (TtiCpuRun) after 100 steps on a grid that is no multiple of any tile, with
/// and without azimuth; one launch per region on poisoned fields; the registry's TTI names (those
/// run without a GPU too).

#include "core/errors.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "kernels/tti_problem.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/padded.hpp"
#include "tests/gpu/registered.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/tti_cpu.hpp"
#if defined(MINIMOD_HAVE_GPU)
#include "tests/gpu/device_copies.hpp"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test_support::expect_close;
using test_support::fill_padded;
using test_support::for_each_padded;
using test_support::matches_slot;
using test_support::registered_cuda_kernel;
using test_support::test_name_of;

constexpr double kDeg = 3.14159265358979323846 / 180.0;

/// The test problem: 45 x 38 x 133 points (no multiple of 4, 8, 16 or 32; deeper than two
/// streaming chunks), a 6-point layer, vp, epsilon and the tilt varying in space, an elliptic
/// (epsilon = delta) upper part where the layer's phi drive acts and an anelliptic lower part.
struct TtiCase {
  TtiPlan plan;
  TtiModel model;
  std::vector<TtiSource> sources;
  std::vector<Vec3> receivers;
};

TtiCase make_case(bool azimuth, int steps = 100) {
  const Grid g = test_support::make_grid(45, 38, 133, 10.0, 10.0, 10.0);
  TtiCase c;
  const std::size_t n = g.points();
  c.model.vp.resize(n);
  c.model.epsilon.resize(n);
  c.model.delta.resize(n);
  c.model.theta.resize(n);
  if (azimuth) c.model.phi.resize(n);
  std::size_t idx = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i, ++idx) {
        c.model.vp[idx] = static_cast<float>(1800.0 + 4.0 * k + 2.0 * i);
        const bool elliptic = k < g.nz / 3;
        c.model.delta[idx] = 0.08f;
        c.model.epsilon[idx] = elliptic ? 0.08f : static_cast<float>(0.2 + 0.001 * j);
        c.model.theta[idx] = static_cast<float>((10.0 + 0.3 * i + 0.1 * k) * kDeg);
        if (azimuth) c.model.phi[idx] = static_cast<float>((30.0 - 0.5 * j) * kDeg);
      }
  TtiPlanOptions o;
  o.steps = steps;
  o.layer_width = 6;
  o.cfl = 0.7;
  c.plan = make_tti_plan(g, c.model, o);
  // An off-grid source in the anelliptic part and one in the elliptic part near the layer.
  for (const Vec3 at : {Vec3{223.0, 187.0, 804.0}, Vec3{118.0, 95.0, 96.0}}) {
    std::vector<float> s(static_cast<std::size_t>(steps));
    for (int t = 0; t < steps; ++t)
      s[static_cast<std::size_t>(t)] = static_cast<float>(ricker(t * c.plan.dt, 30.0, 0.02));
    c.sources.push_back(TtiSource{at, s, Injection::Physical});
  }
  c.receivers = {{300.0, 200.0, 700.0}, {60.0, 60.0, 60.0}, {222.0, 181.5, 1210.0}};
  return c;
}

/// What the CPU reference produced, once per azimuth choice.
struct TtiReference {
  std::vector<float> p, q, traces;
};

const TtiReference& reference(bool azimuth) {
  static std::map<bool, TtiReference> cache;
  auto it = cache.find(azimuth);
  if (it != cache.end()) return it->second;
  const TtiCase c = make_case(azimuth);
  TtiCpuRun sim(c.plan, c.model, c.sources, c.receivers, Interpolation::Sinc);
  EXPECT_EQ(sim.has_azimuth(), azimuth);
  sim.run();
  TtiReference r{sim.wavefield_p(), sim.wavefield_q(), sim.traces()};
  return cache.emplace(azimuth, std::move(r)).first->second;
}

std::vector<const StencilKernel*> tti_cuda_kernels() {
  std::vector<const StencilKernel*> out;
  for (const StencilKernel* k : kernel_registry().all())
    if (k->backend() == kGpuBackend && k->physics() == Physics::Tti) out.push_back(k);
  return out;
}

// ---- Registry (no GPU needed) -------------------------------------------------------------

/// Whether this build registers semi+b+tma (CUDA builds do; HIP has no tensor copies).
bool has_tensor_copies() {
  return kernel_registry().find("semi+b+tma_32x4", kGpuBackend, Physics::Tti) != nullptr;
}

TEST(TtiRegistry, EveryFamilyOfThePaperIsRegistered) {
  if (tti_cuda_kernels().empty()) GTEST_SKIP() << "this build has no CUDA backend";
  std::set<std::string> families;
  for (const StencilKernel* k : tti_cuda_kernels()) {
    families.insert(k->family());
    EXPECT_TRUE(k->handles(RegionKind::Inner)) << k->name();
    EXPECT_TRUE(k->handles(RegionKind::Layer)) << k->name();
    EXPECT_EQ(k->name().rfind(k->family() + "_", 0), 0u) << k->name();
    // The family name finds its default tile.
    EXPECT_NE(kernel_registry().find(k->family(), kGpuBackend, Physics::Tti), nullptr);
  }
  for (const char* f : {"gmem_3d", "smem_3d", "smem_25d", "semi_25d", "semi+b", "semi+2z"})
    EXPECT_TRUE(families.count(f)) << f << " is not registered for TTI";
  // semi+b+a copies with cp.async, which only the CUDA build has (MINIMOD_GPU_CP_ASYNC).
  if (kGpuBackend == BackendKind::Hip) {
    EXPECT_FALSE(families.count("semi+b+a")) << "semi+b+a needs cp.async";
  } else {
    EXPECT_TRUE(families.count("semi+b+a")) << "semi+b+a is not registered for TTI";
    EXPECT_NE(kernel_registry().find("semi+b+a_32x16", kGpuBackend, Physics::Tti), nullptr)
        << "the paper's best kernel on the A100";
  }
}

TEST(TtiRegistry, TensorCopyFamilyIsRegistered) {
  if (tti_cuda_kernels().empty()) GTEST_SKIP() << "this build has no CUDA backend";
  if (!has_tensor_copies()) GTEST_SKIP() << "this build has no tensor copies (HIP)";
  // semi+b+a with the Hopper tensor memory accelerator's copies (every CUDA build has it; it runs
  // where the device and the compiled architecture are 9.0 or newer).
  for (const char* name : {"semi+b+tma_32x8", "semi+b+tma_32x16", "semi+b+tma_16x16",
                           "semi+b+tma_64x8", "semi+b+tma_32x4", "semi+b+tma_32x6"})
    EXPECT_NE(kernel_registry().find(name, kGpuBackend, Physics::Tti), nullptr) << name;
  // The family's default tile: on the H100 the fastest with azimuth, and within 0.3% of the
  // fastest (32x6) without (docs/kernels.md).
  const StencilKernel* k = kernel_registry().find("semi+b+tma", kGpuBackend, Physics::Tti);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name(), "semi+b+tma_32x4");
}

TEST(TtiRegistry, IsotropicLaunchOfATtiKernelThrows) {
  const StencilKernel* k = kernel_registry().find("semi_25d", kGpuBackend, Physics::Tti);
  if (k == nullptr) GTEST_SKIP() << "this build has no CUDA backend";
  Region r;
  EXPECT_THROW(k->launch(IsoFields{}, FieldLayout{}, StencilCoefs{}, r, nullptr), std::logic_error);
  const StencilKernel* iso = kernel_registry().find("gmem_3d", kGpuBackend, Physics::Acoustic);
  ASSERT_NE(iso, nullptr);
  EXPECT_THROW(iso->launch_tti(TtiFields{}, FieldLayout{}, TtiCoefs{}, r, nullptr),
               std::logic_error);
}

TEST(TtiRegistry, DefaultSpecResolvesForTti) {
  if (tti_cuda_kernels().empty()) GTEST_SKIP() << "this build has no CUDA backend";
  const TtiCase c = make_case(false, 2);
  const TtiProblem p = build_tti_problem(c.plan, c.model, {}, {});
  RegionKernels k = resolve_kernels("", kGpuBackend, Physics::Tti, p.regions, p.layout, "--kernel");
  for (int r = 0; r < kRegionCount; ++r) {
    ASSERT_NE(k[r], nullptr);
    EXPECT_EQ(k[r]->physics(), Physics::Tti);
  }
  // The measured default (selection.cpp): semi+b+tma_32x4 inside and semi+b+tma_32x8 on the
  // layers where the tensor copies run (this device, or no device to ask), else the fallback
  // semi+b+a_32x8; HIP, without cp.async and tensor copies, semi+2z_32x8 everywhere.
  const bool hip = kGpuBackend == BackendKind::Hip;
  const std::string fallback = hip ? "semi+2z_32x8" : "semi+b+a_32x8";
  EXPECT_EQ(default_fallback_name(kGpuBackend, Physics::Tti), fallback);
  if (has_tensor_copies()) {
    EXPECT_EQ(default_kernel_spec(kGpuBackend, Physics::Tti),
              "inner=semi+b+tma_32x4,pml=semi+b+tma_32x8");
    for (int r = 0; r < kRegionCount; ++r) {
      const char* tile = r == 0 ? "semi+b+tma_32x4" : "semi+b+tma_32x8";
      const std::string why =
          kernel_registry().find(tile, kGpuBackend, Physics::Tti)->can_run(p.regions[r], p.layout);
      EXPECT_EQ(k[r]->name(), why.empty() ? tile : fallback) << r << ": " << why;
    }
  } else {
    EXPECT_EQ(default_kernel_spec(kGpuBackend, Physics::Tti), fallback);
    for (int r = 0; r < kRegionCount; ++r)
      EXPECT_EQ(k[r]->name(), fallback) << r;
  }
  // A pair keeps its layer kernel.
  const std::string semi = hip ? "semi+2z" : "semi+b+a";
  k = resolve_kernels("inner=" + semi + "_32x16,pml=smem_25d_32x8", kGpuBackend, Physics::Tti,
                      p.regions, p.layout, "--kernel");
  EXPECT_EQ(k[0]->name(), semi + "_32x16");
  for (int r = 1; r < kRegionCount; ++r)
    EXPECT_EQ(k[r]->name(), "smem_25d_32x8") << r;
  // A bare family name sets every region.
  k = resolve_kernels(semi, kGpuBackend, Physics::Tti, p.regions, p.layout, "--kernel");
  for (int r = 0; r < kRegionCount; ++r)
    EXPECT_EQ(k[r]->family(), semi) << r;
  EXPECT_THROW(resolve_kernels("st_reg_shft_25d", kGpuBackend, Physics::Tti, p.regions, p.layout,
                               "--kernel"),
               InputError);
}

TEST(TtiRegistry, DefaultFallsBackWhereItsKernelsCannotRun) {
  if (tti_cuda_kernels().empty()) GTEST_SKIP() << "this build has no CUDA backend";
  if (!has_tensor_copies()) GTEST_SKIP() << "this build has no tensor copies (HIP)";
  const TtiCase c = make_case(false, 2);
  const TtiProblem p = build_tti_problem(c.plan, c.model, {}, {});
  // Rows of 4k + 1 floats: no tensor map can describe them, so semi+b+tma refuses, and every
  // region, inner and layers, gets the fallback, semi+b+a_32x8 (make_field_layout never sizes rows
  // like this; here only the kernels' checks read the layout).
  FieldLayout odd = p.layout;
  odd.pitch += 1;
  odd.plane = static_cast<std::int64_t>(odd.pitch) * (odd.ny + 2 * kHalo);
  odd.size = odd.plane * (odd.nz + 2 * kHalo);
  const StencilKernel* tma = kernel_registry().find("semi+b+tma_32x4", kGpuBackend, Physics::Tti);
  EXPECT_NE(tma->can_run(p.regions[0], odd).find("multiple of 4 floats"), std::string::npos);
  RegionKernels k = resolve_kernels("", kGpuBackend, Physics::Tti, p.regions, odd, "--kernel");
  for (int r = 0; r < kRegionCount; ++r)
    EXPECT_EQ(k[r]->name(), "semi+b+a_32x8") << r;
  // Planes too large for the streaming kernels' int offsets: neither the default nor the fallback
  // runs, and every region gets the baseline, gmem_3d.
  FieldLayout huge = p.layout;
  huge.pitch = 1 << 20;
  huge.plane = static_cast<std::int64_t>(huge.pitch) * 4096;
  huge.size = huge.plane * (huge.nz + 2 * kHalo);
  k = resolve_kernels("", kGpuBackend, Physics::Tti, p.regions, huge, "--kernel");
  for (int r = 0; r < kRegionCount; ++r)
    EXPECT_EQ(k[r]->name(), "gmem_3d_32x4x4") << r;
  // Asked for by name, a kernel that cannot run its region is an error, not a fallback.
  EXPECT_THROW(
      resolve_kernels("semi+b+tma_32x4", kGpuBackend, Physics::Tti, p.regions, odd, "--kernel"),
      InputError);
}

// ---- Every kernel against the CPU reference ----------------------------------------------------

struct TtiKernelCase {
  std::string kernel;
  bool azimuth = false;
};

void PrintTo(const TtiKernelCase& c, std::ostream* os) {
  *os << c.kernel << (c.azimuth ? " azimuth" : " tilt only");
}

std::vector<TtiKernelCase> tti_cases() {
  std::vector<TtiKernelCase> out;
  for (const StencilKernel* k : tti_cuda_kernels())
    for (const bool az : {false, true})
      out.push_back({k->name(), az});
  return out;
}

std::string tti_case_name(const ::testing::TestParamInfo<TtiKernelCase>& info) {
  return test_name_of(info.param.kernel + (info.param.azimuth ? "_azimuth" : "_tilt"));
}

class TtiKernelTest : public ::testing::TestWithParam<TtiKernelCase> {
protected:
  const StencilKernel& kernel() const {
    return registered_cuda_kernel(GetParam().kernel, Physics::Tti);
  }
};

/// Why this device cannot run semi+b+tma kernel `k` on `p` (a GPU older than the H100, or a build
/// without sm_90 code: can_run says so), for a skip; empty for other kernels, whose refusals are
/// failures.
std::string tensor_copy_refusal(const StencilKernel& k, const TtiProblem& p) {
  return k.family() == "semi+b+tma" ? k.can_run(p.regions[0], p.layout) : std::string();
}

/// p and q after all of a problem's steps on `gpu`, set up with `kernels`.
struct TtiGpuFields {
  std::vector<float> p, q;
};
TtiGpuFields run_all_steps(Backend& gpu, const TtiProblem& p, const RegionKernels& kernels) {
  gpu.setup(p, kernels);
  for (int n = 0; n < p.steps; ++n)
    gpu.step(n);
  TtiGpuFields out;
  gpu.fetch_field(0, out.p);
  gpu.fetch_field(1, out.q);
  return out;
}

/// 100 steps on the GPU with the kernel under test in every region: p, q and the traces.
TEST_P(TtiKernelTest, MatchesCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const bool az = GetParam().azimuth;
  const TtiCase c = make_case(az);
  const TtiProblem p =
      build_tti_problem(c.plan, c.model, c.sources, c.receivers, Interpolation::Sinc);
  ASSERT_EQ(p.has_azimuth(), az);
  RegionKernels kernels;
  kernels.fill(&kernel());
  if (const std::string why = tensor_copy_refusal(kernel(), p); !why.empty()) GTEST_SKIP() << why;
  for (const Region& r : p.regions)
    ASSERT_EQ(kernel().can_run(r, p.layout), "") << region_name(r.id);
  const TtiReference& ref = reference(az);

  auto gpu = make_cuda_backend(Physics::Tti);
  const TtiGpuFields got = run_all_steps(*gpu, p, kernels);
  std::vector<float> traces;
  gpu->fetch_traces(traces);
  expect_close(got.p, ref.p, "p after 100 steps");
  expect_close(got.q, ref.q, "q after 100 steps");
  expect_close(traces, ref.traces, "receiver traces of p");

  // The same backend again after reset: the same numbers (nothing left over from the first run).
  gpu->reset();
  for (int n = 0; n < p.steps; ++n)
    gpu->step(n);
  std::vector<float> again;
  gpu->fetch_field(0, again);
  EXPECT_EQ(again, got.p) << "a reset run differs from the first";
}

#if defined(MINIMOD_HAVE_GPU)
using test_support::download_floats;
using test_support::upload_copy;

/// The device arrays of one TTI step, and a TtiFields over them (null where a buffer is empty:
/// axis_y without azimuth).
struct TtiDeviceArrays {
  gpu::DeviceBuffer p, q, p_next, q_next, vp2dt2, aniso, axis_xz, axis_y, phi_p, eta;
  TtiFields fields() const {
    TtiFields f;
    f.p = p.as<const float>();
    f.q = q.as<const float>();
    f.p_next = p_next.as<float>();
    f.q_next = q_next.as<float>();
    f.vp2dt2 = vp2dt2.as<const float>();
    f.aniso = aniso.as<const std::uint32_t>();
    f.axis_xz = axis_xz.as<const std::uint32_t>();
    f.axis_y = axis_y.as<const std::int16_t>();
    f.phi_p = phi_p.as<float>();
    f.eta = eta.as<const float>();
    return f;
  }
};
#endif

#if defined(MINIMOD_HAVE_GPU)
/// The start of the one-launch tests, in layout l: p and q random in [-1, 1] inside the grid, zero
/// in the ghosts, NaN beyond; p_next and q_next random inside and NaN outside; phi_p random in
/// [-0.01, 0.01] inside and NaN outside.
struct TtiStart {
  std::vector<float> p, q, p_next, q_next, phi;
};
TtiStart random_tti_start(const FieldLayout& l, std::mt19937& rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto in_grid = [&](int i, int j, int k) {
    return i >= 0 && i < l.nx && j >= 0 && j < l.ny && k >= 0 && k < l.nz;
  };
  auto field_in = [&](int i, int j, int k) {
    if (in_grid(i, j, k)) return unit(rng);
    return i >= -kHalo && i < l.nx + kHalo ? 0.0f : nan;
  };
  auto random_in = [&](int i, int j, int k) { return in_grid(i, j, k) ? unit(rng) : nan; };
  TtiStart s;
  fill_padded(l, s.p, field_in);
  fill_padded(l, s.q, field_in);
  fill_padded(l, s.p_next, random_in);
  fill_padded(l, s.q_next, random_in);
  fill_padded(l, s.phi,
              [&](int i, int j, int k) { return in_grid(i, j, k) ? 1e-2f * unit(rng) : nan; });
  return s;
}
#endif

#if defined(MINIMOD_HAVE_GPU)
/// One launch of `kernel` per region on poisoned fields: p_next, q_next and phi_p random inside
/// the grid and NaN outside; p and q random inside, zero in the ghosts, NaN beyond; eta NaN beyond
/// its ghost ring. Each launched point must hold the host's one-step value (tti_update_point),
/// every other point its old value, and every point outside the grid its NaN. with_phi = false:
/// the medium anelliptic everywhere and no phi_p, so the layer forms without phi run.
void one_step_per_region(const StencilKernel& kernel, bool az, bool with_phi) {
  TtiCase c = make_case(az, 2);
  if (!with_phi) {
    for (std::size_t n = 0; n < c.model.epsilon.size(); ++n)
      c.model.epsilon[n] = c.model.delta[n] + 0.1f;
  }
  const TtiProblem p = build_tti_problem(c.plan, c.model, {}, {});
  ASSERT_EQ(tti_needs_phi(p), with_phi);
  if (const std::string why = tensor_copy_refusal(kernel, p); !why.empty()) GTEST_SKIP() << why;
  const FieldLayout& l = p.layout;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto in_grid = [&](int i, int j, int k) {
    return i >= 0 && i < l.nx && j >= 0 && j < l.ny && k >= 0 && k < l.nz;
  };

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  auto copy_in = [&](const std::vector<float>& a) {
    return [&a, &in_grid, &l, nan](int i, int j, int k) {
      return in_grid(i, j, k) ? a[static_cast<std::size_t>(l.index(i, j, k))] : nan;
    };
  };
  const TtiStart start = random_tti_start(l, rng);
  const std::vector<float>&hp = start.p, &hq = start.q, &hpn = start.p_next, &hqn = start.q_next,
        &hphi = start.phi;
  std::vector<float> vp, eta;
  fill_padded(l, vp, copy_in(p.vp2dt2));
  fill_padded(l, eta, [&](int i, int j, int k) {
    const bool ring = i >= -1 && i <= l.nx && j >= -1 && j <= l.ny && k >= -1 && k <= l.nz;
    return ring ? p.eta[static_cast<std::size_t>(l.index(i, j, k))] : nan;
  });
  // The 16-bit medium outside the grid: binary16 NaNs for the anisotropy; the axis has no NaN, so
  // it holds -2 there (fixed point -32768), far from any unit vector.
  const std::uint32_t aniso_poison = tti_pair(0x7e00u, 0x7e00u), axis_poison = 0x80008000u;
  std::vector<std::uint32_t> aniso, axis_xz;
  std::vector<std::int16_t> axis_y;
  fill_padded(
      l, aniso,
      [&](int i, int j, int k) {
        return in_grid(i, j, k) ? p.aniso[static_cast<std::size_t>(l.index(i, j, k))]
                                : aniso_poison;
      },
      aniso_poison);
  fill_padded(
      l, axis_xz, [](int, int, int) { return 0x80008000u; }, axis_poison);
  if (az) {
    fill_padded(
        l, axis_y, [](int, int, int) { return std::int16_t{-32768}; }, std::int16_t{-32768});
  }
  // vp2dt2 and the symmetry axis at random point by point (the problem's smooth medium would let
  // a kernel that weighs a point with its neighbour's medium pass: semi+b+a loads a point's axis a
  // plane ahead to fold its in-plane derivatives).
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j)
      for (int i = 0; i < l.nx; ++i) {
        const auto q = static_cast<std::size_t>(l.index(i, j, k));
        vp[q] *= 1.0f + 0.2f * unit(rng);
        const double nx = unit(rng), ny = az ? unit(rng) : 0.0, nz = std::fabs(unit(rng)) + 0.1;
        const double norm = std::sqrt(nx * nx + ny * ny + nz * nz);
        axis_xz[q] = tti_pair(static_cast<std::uint16_t>(tti_axis_fixed(nx / norm)),
                              static_cast<std::uint16_t>(tti_axis_fixed(nz / norm)));
        if (az) axis_y[q] = tti_axis_fixed(ny / norm);
      }

  // axis_y is empty without azimuth. Without phi the kernels get no phi_p, and its buffer stays
  // to show that nothing wrote it.
  const TtiDeviceArrays d{upload_copy(hp, "p"),
                          upload_copy(hq, "q"),
                          upload_copy(hpn, "p_next"),
                          upload_copy(hqn, "q_next"),
                          upload_copy(vp, "vp2dt2"),
                          upload_copy(aniso, "aniso"),
                          upload_copy(axis_xz, "axis x, z"),
                          upload_copy(axis_y, "axis y"),
                          upload_copy(hphi, "phi_p"),
                          upload_copy(eta, "eta")};
  TtiFields f = d.fields();
  if (!with_phi) f.phi_p = nullptr;

  // Expected: the host's per-point update on host copies.
  TtiFields h = f;
  std::vector<float> wpn = hpn, wqn = hqn, wphi = hphi;
  h.p = hp.data();
  h.q = hq.data();
  h.p_next = wpn.data();
  h.q_next = wqn.data();
  h.vp2dt2 = vp.data();
  h.aniso = aniso.data();
  h.axis_xz = axis_xz.data();
  h.axis_y = az ? axis_y.data() : nullptr;
  h.phi_p = with_phi ? wphi.data() : nullptr;
  h.eta = eta.data();
  for (const Region& region : p.regions) {
    if (region.box.empty()) continue;
    ASSERT_EQ(kernel.can_run(region, l), "") << region_name(region.id);
    kernel.launch_tti(f, l, p.coefs, region, nullptr); // default stream
    const Box& b = region.box;
    const bool layer = region.kind() == RegionKind::Layer;
    tti_with_form(az, layer, with_phi, [&](auto kAz, auto kLayer, auto kPhi) {
      for (int k = b.z0; k < b.z1; ++k)
        for (int j = b.y0; j < b.y1; ++j)
          for (int i = b.x0; i < b.x1; ++i)
            tti_update_point<decltype(kAz)::value, decltype(kLayer)::value, decltype(kPhi)::value>(
                h, l.index(i, j, k), l.pitch, l.plane, p.coefs);
    });
  }
  const std::vector<float> gpn = download_floats(d.p_next), gqn = download_floats(d.q_next),
                           gphi = download_floats(d.phi_p);

  std::size_t bad = 0;
  int reported = 0;
  auto check = [&](const char* what, const std::vector<float>& got, const std::vector<float>& want,
                   int i, int j, int k) {
    const auto q = static_cast<std::size_t>(l.index(i, j, k));
    // Random fields: the 146-point sums cancel, and the kernels sum in other orders.
    if (matches_slot(got[q], want[q], 5e-5f)) return;
    ++bad;
    if (reported++ < 12)
      ADD_FAILURE() << what << "(" << i << "," << j << "," << k << "): got " << got[q] << ", want "
                    << want[q];
  };
  for_each_padded(l, [&](int i, int j, int k) {
    check("p_next", gpn, wpn, i, j, k);
    check("q_next", gqn, wqn, i, j, k);
    check("phi_p", gphi, wphi, i, j, k);
  });
  EXPECT_EQ(bad, 0u) << "points wrong in total";
}
#endif

TEST_P(TtiKernelTest, OneStepPerRegionWritesExactlyItsPoints) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  one_step_per_region(kernel(), GetParam().azimuth, true);
#endif
}

/// The same with the layer forms without phi (an anelliptic medium, no phi_p): every tile's, where
/// AnellipticLayerRunsWithoutPhi runs each family's default through the backend.
TEST_P(TtiKernelTest, OneStepPerRegionWithoutPhiWritesExactlyItsPoints) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  one_step_per_region(kernel(), GetParam().azimuth, false);
#endif
}

/// The six layer slabs in one launch_tti_regions (one grid for the streaming kernels) compute
/// what six launch_tti calls compute, bit for bit, and write nothing else: random fields inside
/// the grid, NaN beyond, both runs from the same start. For the streaming kernels both sides
/// decode their tiles through TtiBoxes (one box or six), so this checks the choice of the box;
/// the decode itself is checked against the CPU reference (two z chunks, 100 steps), and the 3D
/// methods launch region by region either way.
TEST_P(TtiKernelTest, LayerSlabsInOneLaunchEqualOneLaunchEach) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  const bool az = GetParam().azimuth;
  const TtiCase c = make_case(az, 2);
  const TtiProblem p = build_tti_problem(c.plan, c.model, {}, {});
  if (const std::string why = tensor_copy_refusal(kernel(), p); !why.empty()) GTEST_SKIP() << why;
  const FieldLayout& l = p.layout;
  const auto size = static_cast<std::size_t>(l.size);
  std::mt19937 rng(5);
  const TtiStart start = random_tti_start(l, rng);
  const std::vector<float>&hp = start.p, &hq = start.q, &hpn = start.p_next, &hqn = start.q_next,
        &hphi = start.phi;
  ASSERT_EQ(p.has_azimuth(), az);
  // Each run gets fresh p_next, q_next and phi_p from the same start.
  auto run = [&](bool batched) {
    TtiDeviceArrays d{upload_copy(hp, "p"),
                      upload_copy(hq, "q"),
                      upload_copy(hpn, "p_next"),
                      upload_copy(hqn, "q_next"),
                      upload_copy(p.vp2dt2, "vp2dt2"),
                      upload_copy(p.aniso, "aniso"),
                      upload_copy(p.axis_xz, "axis x, z"),
                      upload_copy(p.axis_y, "axis y"),
                      upload_copy(hphi, "phi_p"),
                      upload_copy(p.eta, "eta")};
    const TtiFields f = d.fields();
    std::vector<Region> slabs;
    for (const Region& r : p.regions)
      if (r.kind() == RegionKind::Layer) slabs.push_back(r);
    EXPECT_EQ(slabs.size(), 6u);
    if (batched) {
      kernel().launch_tti_regions(f, l, p.coefs, slabs.data(), static_cast<int>(slabs.size()),
                                  nullptr);
    } else {
      for (const Region& r : slabs)
        kernel().launch_tti(f, l, p.coefs, r, nullptr);
    }
    return d;
  };
  const TtiDeviceArrays one = run(false), all = run(true);
  const std::vector<float> pn1 = download_floats(one.p_next), pn6 = download_floats(all.p_next),
                           qn1 = download_floats(one.q_next), qn6 = download_floats(all.q_next),
                           phi1 = download_floats(one.phi_p), phi6 = download_floats(all.phi_p);
  // Bitwise (NaN where nothing was written in both).
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(pn1, pn6)) << "p_next";
  EXPECT_TRUE(same(qn1, qn6)) << "q_next";
  EXPECT_TRUE(same(phi1, phi6)) << "phi_p";
  // And the slabs were written (not a pair of runs that both did nothing).
  EXPECT_NE(std::memcmp(pn1.data(), hpn.data(), size * sizeof(float)), 0);
  // Regions of two kinds in one call are refused.
  TtiFields none;
  const Region mixed[2] = {p.regions[0], p.regions[1]};
  EXPECT_THROW(kernel().launch_tti_regions(none, l, p.coefs, mixed, 2, nullptr),
               std::invalid_argument);
#endif
}

INSTANTIATE_TEST_SUITE_P(Registered, TtiKernelTest, ::testing::ValuesIn(tti_cases()),
                         tti_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TtiKernelTest);

/// docs/physics.md's isotropic reduction on the GPU: epsilon = delta = 0 with a 30 degree tilt
/// keeps q exactly zero and gives the isotropic CPU reference's p within the kernel tolerances.
TEST(TtiGpu, IsotropicMediumKeepsQZero) {
  MINIMOD_SKIP_WITHOUT_GPU();
  TtiCase c = make_case(false, 80);
  std::fill(c.model.epsilon.begin(), c.model.epsilon.end(), 0.0f);
  std::fill(c.model.delta.begin(), c.model.delta.end(), 0.0f);
  std::fill(c.model.theta.begin(), c.model.theta.end(), static_cast<float>(30 * kDeg));
  const TtiProblem p = build_tti_problem(c.plan, c.model, c.sources, c.receivers);
  TtiCpuRun cpu(c.plan, p);
  cpu.run();
  const RegionKernels k =
      resolve_kernels("", kGpuBackend, Physics::Tti, p.regions, p.layout, "--kernel");
  auto gpu = make_cuda_backend(Physics::Tti);
  const TtiGpuFields got = run_all_steps(*gpu, p, k);
  EXPECT_TRUE(std::all_of(got.q.begin(), got.q.end(), [](float x) { return x == 0.0f; }));
  expect_close(got.p, cpu.wavefield_p(), "p, isotropic medium");
}

/// An anelliptic medium (epsilon > delta everywhere) needs no phi_p: tti_device_bytes counts one
/// padded array less, the backend allocates none, and every TTI family's default tile runs its
/// layer form without it to the CPU reference's result, with and without azimuth.
TEST(TtiGpu, AnellipticLayerRunsWithoutPhi) {
  MINIMOD_SKIP_WITHOUT_GPU();
  for (const bool az : {false, true}) {
    SCOPED_TRACE(az ? "with azimuth" : "tilt only");
    TtiCase c = make_case(az, 60);
    const TtiProblem mixed = build_tti_problem(c.plan, c.model, c.sources, c.receivers);
    for (std::size_t n = 0; n < c.model.epsilon.size(); ++n)
      c.model.epsilon[n] = c.model.delta[n] + 0.1f;
    const TtiProblem p = build_tti_problem(c.plan, c.model, c.sources, c.receivers);
    ASSERT_TRUE(tti_needs_phi(mixed));
    ASSERT_FALSE(tti_needs_phi(p));
    EXPECT_EQ(mixed.device_bytes() - p.device_bytes(),
              static_cast<std::size_t>(p.layout.size) * sizeof(float));
    TtiCpuRun cpu(c.plan, p);
    cpu.run();
    auto gpu = make_cuda_backend(Physics::Tti);
    std::set<std::string> families;
    for (const StencilKernel* k : tti_cuda_kernels())
      families.insert(k->family());
    for (const std::string& family : families) {
      SCOPED_TRACE("--kernel " + family);
      RegionKernels k;
      try {
        k = resolve_kernels(family, kGpuBackend, Physics::Tti, p.regions, p.layout, "--kernel");
      } catch (const InputError& e) {
        // semi+b+tma where the tensor copies cannot run: its refusal is tested elsewhere.
        EXPECT_EQ(family, "semi+b+tma") << e.what();
        continue;
      }
      const TtiGpuFields got = run_all_steps(*gpu, p, k);
      expect_close(got.p, cpu.wavefield_p(), "p, anelliptic medium");
      expect_close(got.q, cpu.wavefield_q(), "q, anelliptic medium");
    }
  }
}

} // namespace
} // namespace minimod
