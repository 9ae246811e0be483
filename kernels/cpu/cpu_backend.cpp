/// The OpenMP CPU backend: the test oracle and the default when no GPU is present.
#include "io/errors.hpp"
#include "kernels/backend.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace minimod {
namespace {

/// Pressure-free top face (docs/physics.md section 3): u(k = 0) = 0 and the ghost planes mirror
/// u(-m) = -u(m), so that the next step's stencil sees the image field.
void apply_free_surface(float* u, const FieldLayout& l) {
#pragma omp parallel for schedule(static)
  for (int j = 0; j < l.ny; ++j) {
    float* surface = u + l.index(0, j, 0);
    for (int i = 0; i < l.nx; ++i)
      surface[i] = 0.0f;
    for (int m = 1; m <= kHalo && m < l.nz; ++m) {
      float* ghost = u + l.index(0, j, -m);
      const float* image = u + l.index(0, j, m);
      for (int i = 0; i < l.nx; ++i)
        ghost[i] = -image[i];
    }
  }
}

class CpuBackend final : public Backend {
public:
  BackendKind kind() const override { return BackendKind::Cpu; }
  std::string device_name() const override { return cpu_model_name(); }

  void setup(const AcousticProblem& p,
             const std::array<const StencilKernel*, kRegionCount>& kernels) override {
    validate(p, kernels);
    m_problem = &p;
    m_kernels = kernels;
    const auto size = static_cast<std::size_t>(p.layout.size);
    m_u.assign(size, 0.0f);
    m_v.assign(size, 0.0f);
    m_vp2dt2 = p.vp2dt2;
    if (!p.eta.empty()) {
      m_eta = p.eta;
      m_phi.assign(size, 0.0f);
    } else {
      m_eta.clear();
      m_phi.clear();
    }
    m_traces.assign(p.receivers.owners() * (static_cast<std::size_t>(p.steps) + 1), 0.0f);
  }

  void step(int n) override {
    const AcousticProblem& p = *m_problem;
    IsoFields f;
    f.u = m_u.data();
    f.v = m_v.data();
    f.vp2dt2 = m_vp2dt2.data();
    f.phi = m_phi.empty() ? nullptr : m_phi.data();
    f.eta = m_eta.empty() ? nullptr : m_eta.data();
    for (int r = 0; r < kRegionCount; ++r) {
      if (!p.regions[r].box.empty())
        m_kernels[r]->launch(f, p.layout, p.coefs, p.regions[r], nullptr);
    }
    // Sources enter u^{n+1} after the stencil update of step n.
    const TapTable& s = p.sources;
    for (std::size_t src = 0; src < s.owners(); ++src) {
      const float amplitude = p.source_samples[src * p.steps + n];
      for (std::int64_t t = s.begin[src]; t < s.begin[src + 1]; ++t) {
        m_v[s.index[t]] += s.weight[t] * amplitude;
      }
    }
    std::swap(m_u, m_v);
    if (p.free_surface) apply_free_surface(m_u.data(), p.layout);
    const TapTable& rcv = p.receivers;
    const std::size_t samples = static_cast<std::size_t>(p.steps) + 1;
    for (std::size_t r = 0; r < rcv.owners(); ++r) {
      float sum = 0.0f;
      for (std::int64_t t = rcv.begin[r]; t < rcv.begin[r + 1]; ++t) {
        sum += rcv.weight[t] * m_u[rcv.index[t]];
      }
      m_traces[r * samples + n + 1] = sum;
    }
  }

  void set_taps(const AcousticProblem& p) override {
    require_ready("set_taps");
    // The taps are read from the problem at every step: only the trace buffer follows them.
    m_problem = &p;
    m_traces.assign(p.receivers.owners() * (static_cast<std::size_t>(p.steps) + 1), 0.0f);
  }

  void reset() override {
    require_ready("reset");
    std::fill(m_u.begin(), m_u.end(), 0.0f);
    std::fill(m_v.begin(), m_v.end(), 0.0f);
    std::fill(m_phi.begin(), m_phi.end(), 0.0f);
    std::fill(m_traces.begin(), m_traces.end(), 0.0f);
  }

  void set_kernels(const std::array<const StencilKernel*, kRegionCount>& kernels) override {
    require_ready("set_kernels");
    validate(*m_problem, kernels);
    m_kernels = kernels;
  }

  double time_steps(int first_step, int count) override {
    require_ready("time_steps");
    const int steps = m_problem->steps;
    if (count < 0 || first_step < 0)
      throw std::invalid_argument("time_steps: negative first step or count");
    if (count > 0 && steps <= 0)
      throw std::invalid_argument("time_steps: the problem has no steps");
    const auto t0 = std::chrono::steady_clock::now();
    for (int n = 0; n < count; ++n)
      step(static_cast<int>((static_cast<long long>(first_step) + n) % steps));
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  void snapshot_begin() override {}
  void snapshot_end(std::vector<float>& dense) override {
    const FieldLayout& l = m_problem->layout;
    dense.resize(static_cast<std::size_t>(l.nx) * l.ny * l.nz);
    unpad_field(l, m_u.data(), dense.data());
  }
  FiniteScan scan_wavefield() override {
    require_ready("scan_wavefield");
    return scan_finite(m_problem->layout, m_u.data());
  }
  void synchronize() override {}
  void fetch_traces(std::vector<float>& traces) override { traces = m_traces; }

private:
  /// Throws unless every non-empty region of `p` has a CPU kernel that can update it.
  static void validate(const AcousticProblem& p,
                       const std::array<const StencilKernel*, kRegionCount>& kernels) {
    for (int r = 0; r < kRegionCount; ++r) {
      const Region& region = p.regions[r];
      if (region.box.empty()) continue;
      if (!kernels[r] || kernels[r]->backend() != BackendKind::Cpu) {
        throw RuntimeFailure(std::string("no CPU kernel chosen for region ") +
                             region_name(region.id));
      }
      const std::string why = kernels[r]->can_run(region, p.layout);
      if (!why.empty())
        throw RuntimeFailure("kernel " + kernels[r]->name() + " cannot update region " +
                             region_name(region.id) + ": " + why);
      if (region.kind() == RegionKind::Layer && p.eta.empty()) {
        throw RuntimeFailure(std::string("region ") + region_name(region.id) +
                             " is an absorbing layer but the problem has no eta field");
      }
    }
  }

  void require_ready(const char* what) const {
    if (!m_problem) throw std::logic_error(std::string("CPU backend: ") + what + " before setup");
  }

  const AcousticProblem* m_problem = nullptr;
  std::array<const StencilKernel*, kRegionCount> m_kernels{};
  std::vector<float> m_u, m_v, m_vp2dt2, m_phi, m_eta, m_traces;
};

} // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

} // namespace minimod
