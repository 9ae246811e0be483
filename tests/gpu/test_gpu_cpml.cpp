/// The C-PML on the GPU against the CPU reference (kernels/cpml.hpp): the default acoustic pair
/// and the baseline on an awkward grid, with kappa = 1 and kappa > 1, and the refusal of a layer
/// kernel that has no C-PML (which leaves a live backend as it was).
#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpml.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/cpu_reference.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/problem_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test_support::ProblemSpec;

/// The problem of `s` with a C-PML of `layer` instead of Minimod's layer (x_lo must be s's
/// n_layer: the fields' layout was made for it), free surface on top or not.
AcousticProblem cpml_problem(const ProblemSpec& s, const LayerWidths& layer, double kappa,
                             bool free_surface) {
  AcousticProblem p = test_support::build_acoustic_problem(s);
  p.eta.clear();
  p.boundary = BoundaryType::Cpml;
  p.free_surface = free_surface;
  p.layer = layer;
  p.regions = make_regions(p.grid, p.layer);
  const float c2 = *std::max_element(p.vp2dt2.begin(), p.vp2dt2.end());
  const double vmax = std::sqrt(static_cast<double>(c2)) / p.dt;
  p.cpml = make_cpml_profile(p.grid, p.layer, p.dt, vmax,
                             CpmlParams{1e-4, 2, 3.14159265358979 * 15.0, kappa});
  return p;
}

/// An awkward grid (no size a multiple of a tile) with a C-PML of 9 points on every face.
AcousticProblem cpml_problem(double kappa) {
  ProblemSpec s;
  s.nx = 67;
  s.ny = 45;
  s.nz = 38;
  s.n_layer = 9;
  s.steps = 160;
  return cpml_problem(s, LayerWidths{9, 9, 9, 9, 9, 9}, kappa, false);
}

using Result = test_support::RunResult;
using test_support::run_to_end;

void compare_spec(const std::string& spec, double kappa) {
  const AcousticProblem p = cpml_problem(kappa);
  RegionKernels cpu_k;
  cpu_k.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto cpu = make_cpu_backend();
  const Result ref = run_to_end(*cpu, p, cpu_k);
  const RegionKernels gpu_k =
      resolve_kernels(spec, kGpuBackend, Physics::Acoustic, p.regions, p.layout, "test");
  auto gpu = make_cuda_backend();
  const Result got = run_to_end(*gpu, p, gpu_k);
  const std::string what = "C-PML " + (spec.empty() ? std::string("default pair") : spec) +
                           ", kappa " + std::to_string(kappa);
  test_support::expect_close(got.field, ref.field, (what + ": field").c_str());
  test_support::expect_close(got.traces, ref.traces, (what + ": traces").c_str());
}

/// Problem p on the CPU reference and on the GPU with the default pair: the fields within
/// `field_tolerance` (relative L2), the traces within the default bound.
void compare_default_pair(const AcousticProblem& p, const std::string& what,
                          double field_tolerance) {
  RegionKernels cpu_k;
  cpu_k.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto cpu = make_cpu_backend();
  const Result ref = run_to_end(*cpu, p, cpu_k);
  const RegionKernels gpu_k =
      resolve_kernels("", kGpuBackend, Physics::Acoustic, p.regions, p.layout, "test");
  auto gpu = make_cuda_backend();
  const Result got = run_to_end(*gpu, p, gpu_k);
  test_support::expect_close(got.field, ref.field, (what + ": field").c_str(), field_tolerance);
  test_support::expect_close(got.traces, ref.traces, (what + ": traces").c_str());
}

TEST(GpuCpml, DefaultPairMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_spec("", 1.0);
}

TEST(GpuCpml, DefaultPairWithKappaMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_spec("", 2.5);
}

// The fused layer update where its cases meet: a different width on every face, none on the top
// (a free surface there), and an x interior of 4 points, narrower than the stencil, so that the x
// slabs of both faces lie within each other's reach (each reads only its own slab's psi).
TEST(GpuCpml, UnequalFacesANarrowInteriorAndAFreeSurfaceMatchTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  ProblemSpec s;
  s.nx = 21;
  s.ny = 29;
  s.nz = 26;
  s.n_layer = 9;
  s.steps = 220;
  const AcousticProblem p = cpml_problem(s, LayerWidths{9, 8, 7, 9, 0, 9}, 2.0, true);
  // The grid is 90% layer, much of it the z slabs' edges, where the GPU forms d_a psi^n through the
  // taps (cpml_psi_taps) and the CPU from psi^n: float rounding in another order, which the
  // decaying field shows more (1.08e-5 on the H200 after 220 steps). The traces keep 1e-5.
  compare_default_pair(p, "C-PML, unequal faces, free surface", 3e-5);
}

// The streaming update where the z slabs meet the y and x slabs: y and z interiors of 3 points,
// narrower than the stencil (each slab's column reads only its own face's psi), unequal widths, a
// z slab box cut at the x and y slabs' edges into pieces that are not quad or block multiples.
TEST(GpuCpml, NarrowYAndZInteriorsMatchTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  ProblemSpec s;
  s.nx = 31;
  s.ny = 20;
  s.nz = 22;
  s.n_layer = 7;
  s.steps = 200;
  const AcousticProblem p = cpml_problem(s, LayerWidths{7, 10, 9, 8, 11, 8}, 1.5, false);
  compare_default_pair(p, "C-PML, narrow y and z interiors", 3e-5);
}

// The z slabs' centre in st_reg_shft_25d's tiles (launch_cpml_z_slab): unequal z slabs, wider than
// the 8 planes of psi^n a column forms before its first point, and a centre whose x and y extents
// are not tile multiples (partial tiles load clamped columns and store nothing).
TEST(GpuCpml, ZSlabTilesMatchTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  ProblemSpec s;
  s.nx = 75;
  s.ny = 37;
  s.nz = 61;
  s.n_layer = 6;
  s.steps = 180;
  const AcousticProblem p = cpml_problem(s, LayerWidths{6, 9, 5, 7, 13, 10}, 1.0, false);
  compare_default_pair(p, "C-PML, z slabs in tiles", 3e-5);
}

TEST(GpuCpml, BaselineMatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
  compare_spec("gmem_3d", 1.0);
}

TEST(GpuCpml, ALayerKernelWithoutCpmlIsRefused) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const AcousticProblem p = cpml_problem(1.0);
  for (const StencilKernel* k : kernel_registry().all()) {
    if (k->backend() != kGpuBackend || k->physics() != Physics::Acoustic ||
        !k->handles(RegionKind::Layer) || k->handles_cpml())
      continue;
    RegionKernels kernels = resolve_kernels("pml=" + k->name(), kGpuBackend, Physics::Acoustic,
                                            p.regions, p.layout, "test");
    auto gpu = make_cuda_backend();
    try {
      gpu->setup(p, kernels);
      FAIL() << k->name() << " was accepted for the layer of a C-PML run";
    } catch (const RuntimeFailure& e) {
      EXPECT_NE(std::string(e.what()).find("C-PML"), std::string::npos) << e.what();
    }
    return;
  }
  GTEST_SKIP() << "every CUDA layer kernel has a C-PML update";
}

TEST(GpuCpml, ARefusedCpmlProblemLeavesALiveBackendAsItWas) {
  MINIMOD_SKIP_WITHOUT_GPU();
  // A backend stepping Minimod's layer on a layer kernel without a C-PML update.
  const AcousticProblem cpml = cpml_problem(1.0);
  ProblemSpec s;
  s.nx = cpml.grid.nx;
  s.ny = cpml.grid.ny;
  s.nz = cpml.grid.nz;
  s.n_layer = 9;
  s.steps = 60;
  const AcousticProblem minimod = test_support::build_acoustic_problem(s);
  const StencilKernel* plain = nullptr;
  for (const StencilKernel* k : kernel_registry().all())
    if (k->backend() == kGpuBackend && k->physics() == Physics::Acoustic &&
        k->handles(RegionKind::Layer) && !k->handles_cpml() && plain == nullptr)
      plain = k;
  if (plain == nullptr) GTEST_SKIP() << "every GPU layer kernel has a C-PML update";
  const RegionKernels kernels =
      resolve_kernels("pml=" + plain->name(), kGpuBackend, Physics::Acoustic, minimod.regions,
                      minimod.layout, "test");
  auto gpu = make_cuda_backend();
  gpu->setup(minimod, kernels);
  for (int n = 0; n < 20; ++n)
    gpu->step(n);
  // The C-PML problem on the same kernels is refused...
  EXPECT_THROW(gpu->setup(cpml, kernels), RuntimeFailure);
  // ...and the backend still steps Minimod's layer on them: choosing them again is no C-PML run.
  gpu->set_kernels(kernels);
  for (int n = 20; n < minimod.steps; ++n)
    gpu->step(n);
  Result got;
  gpu->fetch_field(0, got.field);
  gpu->fetch_traces(got.traces);
  RegionKernels cpu_k;
  cpu_k.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto cpu = make_cpu_backend();
  const Result ref = run_to_end(*cpu, minimod, cpu_k);
  test_support::expect_close(got.field, ref.field, "field after a refused C-PML setup");
  test_support::expect_close(got.traces, ref.traces, "traces after a refused C-PML setup");
}

} // namespace
} // namespace minimod
