#pragma once
/// What the TTI GPU boundary tests (test_gpu_tti_cpml.cpp, test_gpu_tti_free_surface.cpp) share:
/// their medium, their source wavelet, and the run of a problem on the GPU compared with the CPU
/// reference's p, q and traces.
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/tti_cpu.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace minimod::test_support {

/// An anelliptic medium (epsilon 0.25, delta 0.08) with a tilt that varies along x and z and a
/// 25-degree azimuth, so that every mixed derivative pair is exercised.
inline TtiModel tilted_anelliptic_medium(const Grid& g) {
  constexpr double kDeg = 3.14159265358979323846 / 180.0;
  TtiModel m;
  const std::size_t n = g.points();
  m.vp.assign(n, 2000.0f);
  m.epsilon.assign(n, 0.25f);
  m.delta.assign(n, 0.08f);
  m.theta.resize(n);
  m.phi.assign(n, static_cast<float>(25 * kDeg));
  std::size_t idx = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i, ++idx)
        m.theta[idx] = static_cast<float>((20.0 + 0.3 * i + 0.2 * k) * kDeg);
  return m;
}

/// A 30 Hz Ricker wavelet delayed by 0.02 s, sampled at every step of `plan`.
inline std::vector<float> ricker_30hz(const TtiPlan& plan) {
  std::vector<float> s(static_cast<std::size_t>(plan.steps));
  for (int t = 0; t < plan.steps; ++t)
    s[static_cast<std::size_t>(t)] = static_cast<float>(::minimod::ricker(t * plan.dt, 30.0, 0.02));
  return s;
}

/// Every step of `p` on the GPU with kernel spec `spec` (empty: the default pair); p, q and the
/// traces compared with `cpu`'s after its run, the failures named by `what`.
inline void expect_gpu_matches_cpu(const TtiProblem& p, TtiCpuRun& cpu, const std::string& spec,
                                   const std::string& what) {
  const RegionKernels k =
      resolve_kernels(spec, kGpuBackend, Physics::Tti, p.regions, p.layout, "test");
  auto gpu = make_cuda_backend(Physics::Tti);
  gpu->setup(p, k);
  for (int t = 0; t < p.steps; ++t)
    gpu->step(t);
  std::vector<float> gp, gq, traces;
  gpu->fetch_field(0, gp);
  gpu->fetch_field(1, gq);
  gpu->fetch_traces(traces);
  expect_close(gp, cpu.wavefield_p(), (what + ": p").c_str());
  expect_close(gq, cpu.wavefield_q(), (what + ": q").c_str());
  expect_close(traces, cpu.traces(), (what + ": traces").c_str());
}

} // namespace minimod::test_support
