#pragma once
/// The GPU tests' reference: an AcousticProblem stepped to its end by the CPU backend, one step at
/// a time with the kernel `cpu` on every region (header-only, host C++).

#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"

#include <array>
#include <vector>

namespace minimod::test_support {

/// What the CPU reference produced for one problem.
struct CpuRun {
  std::vector<float> mid;     ///< u after `snapshot` steps (empty without a snapshot)
  std::vector<float> final_u; ///< u after all steps
  std::vector<float> traces;  ///< [receivers][steps + 1]
};

/// A problem's last field (u) and traces.
struct RunResult {
  std::vector<float> field, traces;
};

/// Set `b` up for `p` with `kernels`, step it to the end, and fetch u and the traces.
inline RunResult run_to_end(Backend& b, const AcousticProblem& p,
                            const std::array<const StencilKernel*, kRegionCount>& kernels) {
  b.setup(p, kernels);
  for (int n = 0; n < p.steps; ++n)
    b.step(n);
  RunResult r;
  b.fetch_field(0, r.field);
  b.fetch_traces(r.traces);
  return r;
}

/// Step `p` to its end on the CPU backend; with 0 <= snapshot < steps, also keep u after
/// `snapshot` steps.
inline CpuRun cpu_run(const AcousticProblem& p, int snapshot = -1) {
  std::array<const StencilKernel*, kRegionCount> kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  auto cpu = make_cpu_backend();
  cpu->setup(p, kernels);
  CpuRun r;
  for (int n = 0; n < p.steps; ++n) {
    if (n == snapshot) cpu->fetch_field(0, r.mid);
    cpu->step(n);
  }
  cpu->fetch_field(0, r.final_u);
  cpu->fetch_traces(r.traces);
  return r;
}

} // namespace minimod::test_support
