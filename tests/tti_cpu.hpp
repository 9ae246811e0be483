#pragma once
/// The TTI CPU reference as the tests drive it: a TtiProblem stepped by the CPU backend with the
/// TTI kernel `cpu` (kernels/cpu/cpu_tti_kernel.cpp) on every region, one step at a time.

#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "solver/tti.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace minimod {

class TtiCpuRun {
public:
  TtiCpuRun(const TtiPlan& plan, const TtiModel& model, const std::vector<TtiSource>& sources,
            const std::vector<Vec3>& receivers, Interpolation interpolation = Interpolation::Sinc)
      : TtiCpuRun(plan, build_tti_problem(plan, model, sources, receivers, interpolation)) {}
  TtiCpuRun(const TtiPlan& plan, TtiProblem problem)
      : m_plan(plan), m_problem(std::move(problem)), m_backend(make_cpu_backend()) {
    RegionKernels kernels;
    kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Tti));
    m_backend->setup(m_problem, kernels);
  }
  TtiCpuRun(const TtiCpuRun&) = delete; ///< the backend points into m_problem
  TtiCpuRun& operator=(const TtiCpuRun&) = delete;

  /// The next shot on the same medium: new taps and samples, fields and traces zero, step 0 next.
  void load_shot(const std::vector<TtiSource>& sources, const std::vector<Vec3>& receivers,
                 Interpolation interpolation = Interpolation::Sinc) {
    set_tti_shot(m_problem, sources, receivers, interpolation);
    m_backend->set_taps(m_problem);
    m_done = 0;
  }
  void step(int n) {
    m_backend->step(n);
    m_done = n + 1;
  }
  /// Every step not done yet.
  void run() {
    for (int n = m_done; n < m_plan.steps; ++n)
      step(n);
  }
  const TtiPlan& plan() const { return m_plan; }
  /// Steps done so far (0 after load_shot).
  int steps_done() const { return m_done; }
  /// Whether the azimuth terms are computed (some point has n_y != 0).
  bool has_azimuth() const { return m_problem.has_azimuth(); }
  const TtiProblem& problem() const { return m_problem; }
  Backend& backend() { return *m_backend; }
  /// Traces of p: [receivers][steps + 1].
  std::vector<float> traces() {
    std::vector<float> t;
    m_backend->fetch_traces(t);
    return t;
  }
  std::vector<float> wavefield_p() { return field(0); }
  std::vector<float> wavefield_q() { return field(1); }
  FiniteScan scan_field(bool q) { return m_backend->scan_field(q ? 1 : 0); }

private:
  std::vector<float> field(int f) {
    std::vector<float> dense;
    m_backend->fetch_field(f, dense);
    return dense;
  }

  TtiPlan m_plan;
  TtiProblem m_problem;
  std::unique_ptr<Backend> m_backend;
  int m_done = 0;
};

/// The largest |p| and |q| of the run's fields now (infinite for a non-finite value).
inline float peak_of(TtiCpuRun& run) {
  float m = 0;
  for (const bool q : {false, true}) {
    const std::vector<float> f = q ? run.wavefield_q() : run.wavefield_p();
    for (const float x : f)
      m = std::max(m, std::isfinite(x) ? std::fabs(x) : INFINITY);
  }
  return m;
}

/// The relative L2 difference of `field` from `reference`, both n^3 fields (x fastest), over the
/// points at least `width` from every face: a layer's return into the interior against a grid
/// whose faces return nothing in time.
inline double interior_difference(const std::vector<float>& field,
                                  const std::vector<float>& reference, int n, int width) {
  double num = 0, den = 0;
  for (int k = width; k < n - width; ++k)
    for (int j = width; j < n - width; ++j)
      for (int i = width; i < n - width; ++i) {
        const std::size_t p = (static_cast<std::size_t>(k) * n + j) * n + i;
        const double d = static_cast<double>(field[p]) - reference[p];
        num += d * d;
        den += static_cast<double>(reference[p]) * reference[p];
      }
  return std::sqrt(num / den);
}

} // namespace minimod
