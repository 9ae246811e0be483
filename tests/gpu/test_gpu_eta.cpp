/// eta's 3D array on the GPU backend: held on the device only while a chosen layer kernel reads
/// it. With eta's profiles gmem_3d_f4 (CUDA's default layer kernel) reads eta's table instead, so
/// a run on it holds one field less; choosing a kernel that reads the array forms it
/// on the device from the table, bit for bit the array the problem carries. Skipped without a
/// GPU.

#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/cpu_reference.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/problem_builder.hpp"
#if defined(MINIMOD_HAVE_GPU)
#include "kernels/gpu/device_buffer.hpp"
#endif

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test_support::build_acoustic_problem;
using test_support::expect_close;
using test_support::ProblemSpec;

#if defined(MINIMOD_HAVE_GPU)
/// Device bytes held by the process (every DeviceBuffer).
std::size_t held() {
  return gpu::DeviceBuffer::held_bytes();
}

/// The final wavefield and the traces of a run that switches kernels twice: `first` for steps
/// [0, 9), `second` for [9, 19), `first` again for the rest.
struct Switched {
  std::vector<float> u, traces;
  std::size_t on_first = 0, on_second = 0, back = 0; ///< bytes the backend holds in each phase
};

Switched run_switched(const AcousticProblem& p, const RegionKernels& first,
                      const RegionKernels& second) {
  Switched r;
  const std::size_t before = held();
  auto gpu = make_cuda_backend();
  gpu->setup(p, first);
  r.on_first = held() - before;
  for (int n = 0; n < 9; ++n)
    gpu->step(n);
  gpu->set_kernels(second);
  r.on_second = held() - before;
  for (int n = 9; n < 19; ++n)
    gpu->step(n);
  gpu->set_kernels(first);
  r.back = held() - before;
  for (int n = 19; n < p.steps; ++n)
    gpu->step(n);
  gpu->fetch_field(0, r.u);
  gpu->fetch_traces(r.traces);
  return r;
}
#endif

TEST(GpuEtaArray, HeldOnlyWhileALayerKernelReadsIt) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  ProblemSpec s;
  s.nx = 67;
  s.ny = 45;
  s.nz = 39;
  s.n_layer = 6;
  s.steps = 28;
  s.eta_profiles = true;
  const AcousticProblem with_table = build_acoustic_problem(s);
  ASSERT_FALSE(with_table.eta_axes.empty());
  // The same problem without eta's profiles: no table, so the array is uploaded at setup and
  // gmem_3d_f4 reads it (the table holds the same bits: checked_eta_rows).
  AcousticProblem array_only = with_table;
  array_only.eta_axes = {};
  const std::size_t field = static_cast<std::size_t>(with_table.layout.size) * sizeof(float);

  const RegionKernels table_reader =
      resolve_kernels("inner=st_reg_shft_25d_32x16,pml=gmem_3d_f4_32x4x4", kGpuBackend,
                      Physics::Acoustic, with_table.regions, with_table.layout, "--kernel");
  const RegionKernels array_reader =
      resolve_kernels("inner=st_reg_shft_25d_32x16,pml=gmem_3d_32x4x4", kGpuBackend,
                      Physics::Acoustic, with_table.regions, with_table.layout, "--kernel");
  ASSERT_FALSE(table_reader[static_cast<int>(RegionId::Top)]->reads_eta_array());
  ASSERT_TRUE(array_reader[static_cast<int>(RegionId::Top)]->reads_eta_array());

  const Switched table = run_switched(with_table, table_reader, array_reader);
  const Switched array = run_switched(array_only, table_reader, array_reader);
  // The array is on the device only while gmem_3d reads it, or where there is no table.
  EXPECT_EQ(table.on_second, table.on_first + field);
  EXPECT_EQ(table.back, table.on_first);
  EXPECT_EQ(array.on_first, array.on_second);
  EXPECT_EQ(array.back, array.on_first);
  // The array formed from the table is the problem's array, bit for bit: both runs read it in
  // their second phase and agree exactly.
  EXPECT_EQ(table.u, array.u);
  EXPECT_EQ(table.traces, array.traces);

  // And both follow the CPU reference.
  const test_support::CpuRun ref = test_support::cpu_run(with_table);
  expect_close(table.u, ref.final_u, "wavefield, eta's array formed from its table mid-run");
  expect_close(table.traces, ref.traces, "traces, eta's array formed from its table mid-run");

  // A backend set up on a kernel that reads the array holds it from the start.
  const std::size_t before = held();
  auto gpu = make_cuda_backend();
  gpu->setup(with_table, array_reader);
  EXPECT_EQ(held() - before, table.on_first + field);
#endif
}

} // namespace
} // namespace minimod
