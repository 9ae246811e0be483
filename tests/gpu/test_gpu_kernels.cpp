/// GPU tests (CTest label gpu): every registered CUDA kernel against the CPU reference. This file
/// holds the binary's main and the environment that enumerates devices once; every test that
/// needs a device skips with the runtime's reason when there is none.

#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/kernel.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/cpu_reference.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/padded.hpp"
#include "tests/gpu/problem_builder.hpp"
#include "tests/gpu/registered.hpp"
#if defined(MINIMOD_HAVE_GPU)
#include "tests/gpu/device_copies.hpp"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test_support::build_acoustic_problem;
using test_support::expect_close;
using test_support::fill_padded;
using test_support::for_each_padded;
using test_support::matches_slot;
using test_support::ProblemSpec;
using test_support::registered_cuda_kernel;
using test_support::test_name_of;

// ---- Helpers ---------------------------------------------------------------------------------

const StencilKernel* cpu_kernel() {
  return kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic);
}

/// The kernel under test for each region kind it handles; the other kind (a family that
/// implements only one) falls back to the first registered CUDA kernel that handles it.
std::array<const StencilKernel*, kRegionCount>
cuda_kernels_for(const StencilKernel& under_test, const std::array<Region, kRegionCount>& regions) {
  std::array<const StencilKernel*, kRegionCount> out{};
  for (int r = 0; r < kRegionCount; ++r) {
    const RegionKind kind = regions[r].kind();
    if (under_test.handles(kind)) {
      out[r] = &under_test;
      continue;
    }
    for (const StencilKernel* k : kernel_registry().all())
      if (k->backend() == kGpuBackend && k->physics() == Physics::Acoustic && k->handles(kind)) {
        out[r] = k;
        break;
      }
  }
  return out;
}

ProblemSpec spec_for_layer(int n_layer) {
  ProblemSpec s;
  s.n_layer = n_layer;
  return s;
}

/// The CPU reference of the problem of a layer width (computed once per width): u after
/// `steps / 2` steps and after all, the traces.
const test_support::CpuRun& cpu_reference(int n_layer) {
  static std::map<int, test_support::CpuRun> cache;
  auto it = cache.find(n_layer);
  if (it != cache.end()) return it->second;
  const AcousticProblem p = build_acoustic_problem(spec_for_layer(n_layer));
  return cache.emplace(n_layer, test_support::cpu_run(p, p.steps / 2)).first->second;
}

// ---- The parameterised suite over every registered CUDA kernel --------------------------------

struct KernelCase {
  std::string kernel; ///< registered name
  int n_layer = 8;    ///< layer width on every face
};

/// How gtest prints a case (ctest shows it beside each test name).
void PrintTo(const KernelCase& c, std::ostream* os) {
  *os << c.kernel << " layer " << c.n_layer;
}

std::vector<KernelCase> cuda_kernel_cases() {
  std::vector<KernelCase> out;
  for (const StencilKernel* k : kernel_registry().all())
    if (k->backend() == kGpuBackend && k->physics() == Physics::Acoustic)
      for (const int n_layer : {8, 5})
        out.push_back({k->name(), n_layer});
  return out;
}

/// Test names allow only letters, digits and '_': other characters of kernel names become '_'.
std::string case_name(const ::testing::TestParamInfo<KernelCase>& info) {
  return test_name_of(info.param.kernel + "_layer" + std::to_string(info.param.n_layer));
}

class CudaKernelTest : public ::testing::TestWithParam<KernelCase> {
protected:
  const StencilKernel& kernel() const {
    return registered_cuda_kernel(GetParam().kernel, Physics::Acoustic);
  }
};

/// 200 steps of the CUDA backend with the kernel under test against the CPU backend: the final
/// wavefield, a snapshot taken mid-run while steps continue, and the receiver traces.
TEST_P(CudaKernelTest, MatchesCpuBackend) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const AcousticProblem p = build_acoustic_problem(spec_for_layer(GetParam().n_layer));
  const auto kernels = cuda_kernels_for(kernel(), p.regions);
  for (int r = 0; r < kRegionCount; ++r) {
    if (p.regions[r].box.empty()) continue;
    ASSERT_NE(kernels[r], nullptr)
        << "no CUDA kernel handles region " << region_name(p.regions[r].id);
    const std::string why = kernels[r]->can_run(p.regions[r], p.layout);
    if (!why.empty())
      GTEST_SKIP() << kernels[r]->name() << " declines region " << region_name(p.regions[r].id)
                   << ": " << why;
  }
  const test_support::CpuRun& ref = cpu_reference(GetParam().n_layer);

  auto gpu = make_cuda_backend();
  gpu->setup(p, kernels);
  std::vector<float> mid;
  for (int n = 0; n < p.steps; ++n) {
    if (n == p.steps / 2) gpu->snapshot_begin();
    gpu->step(n);
    // Collect two steps later: the second step overwrites the copied buffer, so this also checks
    // that the step waits for the copy.
    if (n == p.steps / 2 + 2) gpu->snapshot_end(mid);
  }
  std::vector<float> final_u, traces;
  gpu->fetch_field(0, final_u);
  gpu->fetch_traces(traces);

  expect_close(mid, ref.mid, "snapshot at mid-run");
  expect_close(final_u, ref.final_u, "final wavefield");
  expect_close(traces, ref.traces, "receiver traces");
}

/// One launch per region on poisoned fields: v holds random values inside the grid and NaN
/// outside it, u is random inside with zero ghosts and NaN beyond them, eta is NaN beyond its
/// ghost ring. Every point of every launched region must then hold the CPU's one-step value (an
/// unwritten point keeps its old random value), every other point its old value, and every point
/// outside the grid its NaN (nothing written there, and no NaN read into the grid).
TEST_P(CudaKernelTest, OneStepPerRegionWritesExactlyItsPoints) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  ProblemSpec spec = spec_for_layer(GetParam().n_layer);
  spec.steps = 1;
  const AcousticProblem p = build_acoustic_problem(spec);
  const FieldLayout& l = p.layout;
  const float nan = std::numeric_limits<float>::quiet_NaN();

  auto in_grid = [&](int i, int j, int k) {
    return i >= 0 && i < l.nx && j >= 0 && j < l.ny && k >= 0 && k < l.nz;
  };

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> u, v_in, vp2dt2, phi_in, eta;
  fill_padded(l, u, [&](int i, int j, int k) {
    if (in_grid(i, j, k)) return unit(rng);
    const bool in_ghost = i >= -kHalo && i < l.nx + kHalo;
    return in_ghost ? 0.0f : nan; // y and z have no padding beyond their ghosts
  });
  fill_padded(l, v_in, [&](int i, int j, int k) { return in_grid(i, j, k) ? unit(rng) : nan; });
  fill_padded(l, phi_in,
              [&](int i, int j, int k) { return in_grid(i, j, k) ? 1e-2f * unit(rng) : nan; });
  fill_padded(l, vp2dt2, [&](int i, int j, int k) {
    return in_grid(i, j, k) ? p.vp2dt2[l.index(i, j, k)] : nan;
  });
  fill_padded(l, eta, [&](int i, int j, int k) {
    const bool ring = i >= -1 && i <= l.nx && j >= -1 && j <= l.ny && k >= -1 && k <= l.nz;
    return ring ? p.eta[l.index(i, j, k)] : nan;
  });

  const gpu::DeviceBuffer d_u = test_support::upload_copy(u, "u"),
                          d_v = test_support::upload_copy(v_in, "v"),
                          d_vp2dt2 = test_support::upload_copy(vp2dt2, "vp2dt2"),
                          d_phi = test_support::upload_copy(phi_in, "phi"),
                          d_eta = test_support::upload_copy(eta, "eta");
  IsoFields f;
  f.u = d_u.as<const float>();
  f.v = d_v.as<float>();
  f.vp2dt2 = d_vp2dt2.as<const float>();
  f.phi = d_phi.as<float>();
  f.eta = d_eta.as<const float>();

  // The expected result, computed on the host with the same per-point functions.
  std::vector<float> v_want = v_in, phi_want = phi_in;
  std::array<bool, kRegionCount> launched{};
  const std::int64_t sy = l.pitch, sz = l.plane;
  for (int r = 0; r < kRegionCount; ++r) {
    const Region& region = p.regions[r];
    if (region.box.empty() || !kernel().handles(region.kind())) continue;
    ASSERT_EQ(kernel().can_run(region, l), "") << region_name(region.id);
    kernel().launch(f, l, p.coefs, region, nullptr); // default stream: ordered with the copies
    launched[r] = true;
    const Box& b = region.box;
    for (int k = b.z0; k < b.z1; ++k)
      for (int j = b.y0; j < b.y1; ++j)
        for (int i = b.x0; i < b.x1; ++i) {
          const std::int64_t q = l.index(i, j, k);
          const float lap = laplacian_25(u.data(), q, sy, sz, p.coefs);
          if (region.kind() == RegionKind::Inner) {
            v_want[q] = inner_update(u[q], v_in[q], vp2dt2[q], lap);
          } else {
            const float grad = eta_gradient_term(u.data(), eta.data(), q, sy, sz, p.coefs);
            v_want[q] =
                layer_update(u[q], v_in[q], vp2dt2[q], lap, phi_in[q], eta[q], grad, &phi_want[q]);
          }
        }
  }
  const std::vector<float> v_got = test_support::download_floats(d_v),
                           phi_got = test_support::download_floats(d_phi);

  auto region_of = [&](int i, int j, int k) -> int {
    for (int r = 0; r < kRegionCount; ++r)
      if (p.regions[r].box.contains(i, j, k)) return r;
    return -1;
  };
  int reported = 0;
  std::size_t bad = 0;
  auto check = [&](const char* field, const std::vector<float>& got, const std::vector<float>& want,
                   int i, int j, int k) {
    const std::int64_t q = l.index(i, j, k);
    if (matches_slot(got[q], want[q], 2e-5f)) return;
    ++bad;
    if (reported++ < 12) {
      const int r = region_of(i, j, k);
      ADD_FAILURE() << field << "(" << i << "," << j << "," << k << ") in "
                    << (r < 0 ? "padding" : region_name(p.regions[r].id))
                    << (r >= 0 && !launched[r] ? " (not launched)" : "") << ": got " << got[q]
                    << ", want " << want[q];
    }
  };
  for_each_padded(l, [&](int i, int j, int k) {
    check("v", v_got, v_want, i, j, k);
    check("phi", phi_got, phi_want, i, j, k);
  });
  EXPECT_EQ(bad, 0u) << "points wrong in total";
  EXPECT_TRUE(std::any_of(launched.begin(), launched.end(), [](bool b) { return b; }));
#endif
}

INSTANTIATE_TEST_SUITE_P(Registered, CudaKernelTest, ::testing::ValuesIn(cuda_kernel_cases()),
                         case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaKernelTest);

// ---- Tests of the registry and the backend's refusals ----------------------------------------

/// Names encode the tile, the family name selects its default, descriptions are one line.
TEST(CudaRegistry, NamesAndFamilyDefault) {
#if defined(MINIMOD_HAVE_GPU)
  const KernelRegistry& reg = kernel_registry();
  int count = 0;
  for (const StencilKernel* k : reg.all()) {
    if (k->backend() != kGpuBackend) continue;
    ++count;
    EXPECT_EQ(k->name().rfind(k->family(), 0), 0u) << k->name();
    EXPECT_EQ(reg.find(k->name(), kGpuBackend, k->physics()), k) << k->name();
    EXPECT_FALSE(k->description().empty()) << k->name();
    EXPECT_EQ(k->description().find('\n'), std::string::npos) << k->name();
  }
  EXPECT_GE(count, 4);
  const StencilKernel* def = reg.find("gmem_3d", kGpuBackend, Physics::Acoustic);
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->name(), "gmem_3d_32x4x4");
  for (const char* name : {"gmem_3d_32x4x4", "gmem_3d_32x8x4", "gmem_3d_64x4x2", "gmem_3d_16x8x8"})
    EXPECT_NE(reg.find(name, kGpuBackend, Physics::Acoustic), nullptr) << name;
#else
  GTEST_SKIP() << "this build has no CUDA backend";
#endif
}

/// can_run refuses a box outside the field, with a reason (no device needed).
TEST(CudaRegistry, CanRunRefusesBoxOutsideField) {
  const StencilKernel* k = kernel_registry().find("gmem_3d", kGpuBackend, Physics::Acoustic);
  if (k == nullptr) GTEST_SKIP() << "this build has no CUDA backend";
  const FieldLayout l = make_field_layout(40, 30, 20, 4);
  Region inside{RegionId::Top, Box{0, 40, 0, 30, 0, 4}};
  Region outside{RegionId::Right, Box{36, 41, 4, 26, 4, 16}};
  EXPECT_EQ(k->can_run(inside, l), "");
  EXPECT_NE(k->can_run(outside, l), "");
}

/// Without a device, make_cuda_backend throws RuntimeFailure (exit code 3) saying why.
TEST(CudaBackend, NoDeviceIsARuntimeFailure) {
  if (test_support::GpuEnvironment::available()) GTEST_SKIP() << "a device is present";
  try {
    (void)make_cuda_backend();
    FAIL() << "make_cuda_backend did not throw without a device";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()), "");
  }
}

/// The eta table tests' problem: a grid that is no multiple of any tile, 6-point layers, eta's
/// profiles set as the solver sets them.
ProblemSpec eta_table_spec(int steps) {
  ProblemSpec spec;
  spec.nx = 77;
  spec.ny = 53;
  spec.nz = 45;
  spec.n_layer = 6;
  spec.steps = steps;
  spec.eta_profiles = true;
  return spec;
}

/// eta's table of rows (the problem has eta's profiles, as the solver's problems do), read by
/// gmem_3d_f4's layer update, gives the bits of the eta array: the same run with and without the
/// profiles, on a grid that is no multiple of any tile, with a free surface. Profiles that differ
/// from the array are refused at setup.
TEST(CudaBackend, EtaTableGivesTheBitsOfTheEtaArray) {
  MINIMOD_SKIP_WITHOUT_GPU();
  AcousticProblem with = build_acoustic_problem(eta_table_spec(60));
  with.free_surface = true;
  ASSERT_FALSE(with.eta_axes.empty());
  AcousticProblem without = with;
  without.eta_axes = EtaProfiles{};
  std::array<const StencilKernel*, kRegionCount> kernels;
  kernels.fill(&registered_cuda_kernel("gmem_3d_f4_32x4x4", Physics::Acoustic));
  auto run = [&](const AcousticProblem& p, std::vector<float>& u, std::vector<float>& traces) {
    auto gpu = make_cuda_backend();
    gpu->setup(p, kernels);
    for (int n = 0; n < p.steps; ++n)
      gpu->step(n);
    gpu->fetch_field(0, u);
    gpu->fetch_traces(traces);
  };
  std::vector<float> u_table, traces_table, u_array, traces_array;
  run(with, u_table, traces_table);
  run(without, u_array, traces_array);
  EXPECT_EQ(u_table, u_array);
  EXPECT_EQ(traces_table, traces_array);
  float peak = 0.0f;
  for (const float x : u_array)
    peak = std::max(peak, std::abs(x));
  EXPECT_GT(peak, 0.0f) << "the wavefield stayed zero: the comparison proves nothing";

  AcousticProblem wrong = with;
  wrong.eta_axes.y[3] *= 1.5;
  auto gpu = make_cuda_backend();
  try {
    gpu->setup(wrong, kernels);
    FAIL() << "setup accepted eta profiles that differ from the eta array";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("eta profiles"), std::string::npos) << e.what();
  }
}

/// gmem_3d_f4's layer update with eta's table reads the table, not the array: one launch on every
/// layer region with the table and an eta array of NaN gives the bits of the launch that reads the
/// array (random u, v, phi; a grid that is no multiple of the tile).
TEST(CudaKernels, Gmem3dF4LayerReadsEtaFromTheTable) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  const AcousticProblem p = build_acoustic_problem(eta_table_spec(1));
  const FieldLayout& l = p.layout;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  auto in_grid = [&](int i, int j, int k) {
    return i >= 0 && i < l.nx && j >= 0 && j < l.ny && k >= 0 && k < l.nz;
  };
  std::vector<float> u, v, phi, nan_eta;
  fill_padded(l, u, [&](int i, int j, int k) { return in_grid(i, j, k) ? unit(rng) : 0.0f; });
  fill_padded(l, v, [&](int i, int j, int k) { return in_grid(i, j, k) ? unit(rng) : 0.0f; });
  fill_padded(l, phi,
              [&](int i, int j, int k) { return in_grid(i, j, k) ? 1e-2f * unit(rng) : 0.0f; });
  fill_padded(l, nan_eta, [](int, int, int) { return std::numeric_limits<float>::quiet_NaN(); });
  const EtaRows rows(p.eta_axes, l.nx, l.ny, l.nz);
  ASSERT_EQ(rows.first_difference(p.eta, l), "");
  const gpu::DeviceBuffer d_u = test_support::upload_copy(u, "u"),
                          d_vp2dt2 = test_support::upload_copy(p.vp2dt2, "vp2dt2"),
                          d_eta = test_support::upload_copy(p.eta, "eta"),
                          d_nan_eta = test_support::upload_copy(nan_eta, "eta of NaN"),
                          d_rows = test_support::upload_copy(rows.padded_rows(l), "eta table"),
                          d_y = test_support::upload_copy(rows.y_classes(), "y classes"),
                          d_z = test_support::upload_copy(rows.z_classes(), "z classes");
  // A pointer: binding the returned reference next to a temporary string argument is what gcc 13's
  // -Wdangling-reference flags.
  const StencilKernel* k = &registered_cuda_kernel("gmem_3d_f4_32x4x4", Physics::Acoustic);
  auto launch_layers = [&](bool table, std::vector<float>& v_out, std::vector<float>& phi_out) {
    const gpu::DeviceBuffer d_v = test_support::upload_copy(v, "v"),
                            d_phi = test_support::upload_copy(phi, "phi");
    IsoFields f;
    f.u = d_u.as<const float>();
    f.v = d_v.as<float>();
    f.vp2dt2 = d_vp2dt2.as<const float>();
    f.phi = d_phi.as<float>();
    f.eta = table ? d_nan_eta.as<const float>() : d_eta.as<const float>();
    if (table)
      f.eta_table = EtaTableView{d_rows.as<const float>(), d_y.as<const int>(), d_z.as<const int>(),
                                 static_cast<int>(rows.z_values())};
    for (const Region& r : p.regions)
      if (r.kind() == RegionKind::Layer && !r.box.empty()) k->launch(f, l, p.coefs, r, nullptr);
    v_out = test_support::download_floats(d_v);
    phi_out = test_support::download_floats(d_phi);
  };
  std::vector<float> v_array, phi_array, v_table, phi_table;
  launch_layers(false, v_array, phi_array);
  launch_layers(true, v_table, phi_table);
  EXPECT_EQ(v_table, v_array);
  EXPECT_EQ(phi_table, phi_array);
  EXPECT_TRUE(
      std::all_of(v_table.begin(), v_table.end(), [](float x) { return std::isfinite(x); }));
  EXPECT_NE(v_array, v) << "the launches wrote nothing: the comparison proves nothing";
#endif
}

/// setup refuses a CPU kernel for a region, before time stepping.
TEST(CudaBackend, SetupRefusesForeignKernel) {
  MINIMOD_SKIP_WITHOUT_GPU();
  ProblemSpec spec;
  spec.nx = 40;
  spec.ny = 36;
  spec.nz = 30;
  spec.steps = 2;
  const AcousticProblem p = build_acoustic_problem(spec);
  std::array<const StencilKernel*, kRegionCount> kernels;
  kernels.fill(kernel_registry().find("gmem_3d", kGpuBackend, Physics::Acoustic));
  kernels[static_cast<int>(RegionId::Left)] = cpu_kernel();
  auto gpu = make_cuda_backend();
  EXPECT_THROW(gpu->setup(p, kernels), RuntimeFailure);
}

} // namespace
} // namespace minimod

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new minimod::test_support::GpuEnvironment);
  return RUN_ALL_TESTS();
}
