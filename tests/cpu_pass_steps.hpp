#pragma once
/// Stepping a problem on the CPU backend in multi-step passes (MINIMOD_CPU_PASS_STEPS) and the
/// check that passes give the bits of single steps, for the CPU pass tests of both layers.

#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "tests/scoped_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace minimod::test_support {

/// Every field, the fields before them (the halo fields: the step before), the traces and the
/// backend's pass_steps, after stepping `p` with passes of at most `most` steps
/// (MINIMOD_CPU_PASS_STEPS), in the lengths `lengths` cycled (each cut to the steps left).
struct Stepped {
  std::vector<std::vector<float>> fields, before;
  std::vector<float> traces;
  int pass_steps = 0;
};
inline Stepped step_with_passes(const Problem& p, int most, const std::vector<int>& lengths) {
  const ScopedEnv env("MINIMOD_CPU_PASS_STEPS", std::to_string(most));
  auto backend = make_cpu_backend();
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, p.physics()));
  backend->setup(p, kernels);
  Stepped out;
  out.pass_steps = backend->pass_steps();
  for (int n = 0, at = 0; n < p.steps; ++at) {
    const int count = std::min(lengths[static_cast<std::size_t>(at) % lengths.size()], p.steps - n);
    backend->step_pass(n, count);
    n += count;
  }
  const std::vector<float*> before = backend->halo_fields();
  for (std::size_t f = 0; f < before.size(); ++f) {
    out.fields.emplace_back();
    backend->fetch_field(static_cast<int>(f), out.fields.back());
    out.before.emplace_back(before[f], before[f] + p.layout.size);
  }
  backend->fetch_traces(out.traces);
  return out;
}

/// Steps `p` with passes of every length and thread count and expects the bits of single steps.
inline void expect_passes_give_single_steps(const Problem& p, const std::string& problem) {
  const Stepped single = step_with_passes(p, 1, {1});
  EXPECT_EQ(single.pass_steps, 1);
  double peak = 0;
  for (const float x : single.traces)
    peak = std::max(peak, static_cast<double>(std::abs(x)));
  ASSERT_GT(peak, 0) << problem << ": the receivers recorded nothing";
  for (const int threads : {1, 2, 3}) {
    const ScopedThreads t(threads);
    for (const int most : {2, 3, 4, 8}) {
      const std::vector<std::vector<int>> patterns = {{most}, {1, most, 2}};
      for (const std::vector<int>& lengths : patterns) {
        const Stepped passes = step_with_passes(p, most, lengths);
        const std::string what = problem + ", " + std::to_string(threads) +
                                 " threads, passes of at most " + std::to_string(most) +
                                 ", first length " + std::to_string(lengths.front());
        EXPECT_EQ(passes.pass_steps, most) << what;
        ASSERT_EQ(passes.fields.size(), single.fields.size()) << what;
        for (std::size_t f = 0; f < single.fields.size(); ++f) {
          EXPECT_EQ(passes.fields[f], single.fields[f]) << what << ", field " << f;
          EXPECT_EQ(std::memcmp(passes.before[f].data(), single.before[f].data(),
                                single.before[f].size() * sizeof(float)),
                    0)
              << what << ", field " << f << " before";
        }
        EXPECT_EQ(passes.traces, single.traces) << what;
      }
    }
  }
}

} // namespace minimod::test_support
