/// The OpenMP CPU backend: the test oracle and the default when no GPU is present, for both
/// equations. What is the equation's own is small: how many wavefields it has, whether its layer
/// keeps a memory variable, and how its region kernels are launched (update_acoustic,
/// update_tti); the taps, the swap, the free surface, timing and the fields out are shared.
/// A float16 run (core/precision.hpp) keeps binary16 values in its float arrays and a third
/// field, the step d (kernels/cpu/cpu_half.hpp).
#include "core/errors.hpp"
#include "core/precision.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/cpu/cpu_half.hpp"
#include "kernels/cpu/cpu_huge_pages.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_tti_cpml.hpp"
#include "kernels/tti_problem.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace minimod {
namespace {

/// Pressure-free top face (docs/physics.md section 3): u(k = 0) = 0 and the ghost planes mirror
/// u(-m) = -u(m), so that the next step's stencil sees the image field.
/// The free surface of row j.
void free_surface_row(float* u, const FieldLayout& l, int j) {
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

void apply_free_surface(float* u, const FieldLayout& l) {
#pragma omp parallel for schedule(static)
  for (int j = 0; j < l.ny; ++j)
    free_surface_row(u, l, j);
}

/// MINIMOD_CPU_PASS_STEPS: the most steps the CPU backend advances in one pass over memory where
/// it can (1 to kCpuPassMaxSteps; 1 keeps one step a pass), or 0 when unset: the equation's
/// default (cpu_pass_default), kept only if the first passes beat single steps on this machine
/// (CpuBackend::trial). Anything else is an input error.
int cpu_pass_steps_setting() {
  const char* text = std::getenv("MINIMOD_CPU_PASS_STEPS");
  if (text == nullptr || *text == '\0') return 0;
  const std::string value(text);
  for (int n = 1; n <= kCpuPassMaxSteps; ++n)
    if (value == std::to_string(n)) return n;
  throw InputError("MINIMOD_CPU_PASS_STEPS is '" + value + "'; allowed: 1 to " +
                   std::to_string(kCpuPassMaxSteps) + ", or unset for the default");
}

/// Steps a pass by default and rows a band (docs/kernels.md, "The CPU multi-step pass", with the
/// measurements that chose them): 4 steps in bands of 48 rows for the acoustic equation; 2 steps
/// in bands of about 32 for TTI, whose step is bound by its arithmetic more than by memory
/// (cpu_pass_bands balances them), and at least the skew of the pass's last step (the acoustic
/// C-PML's steps lie 2 kHalo apart, its updates kHalo behind its memory update).
/// When MINIMOD_CPU_PASS_STEPS is unset: calls of step_pass timed as single steps and as a pass,
/// in turn, before the faster is kept (CpuBackend::trial): three of each, so that the fastest of
/// each, which a busy machine can only slow down, decide, and the first, single steps, takes
/// the run's first-touch and thread start-up costs.
constexpr int kPassTrials = 6;

int cpu_pass_default(Physics physics) {
  return physics == Physics::Tti ? 2 : 4;
}
int cpu_pass_band(Physics physics, int steps, bool cpml) {
  const CpuPassSkew skew = cpml ? CpuPassSkew{2 * kHalo, kHalo} : CpuPassSkew{};
  return std::max(physics == Physics::Tti ? 32 : 48, skew.least(steps));
}

class CpuBackend final : public Backend {
public:
  BackendKind kind() const override { return BackendKind::Cpu; }
  std::string device_name() const override { return cpu_model_name(); }

  void setup(const Problem& p, const RegionKernels& kernels) override {
    validate(p, kernels);
    m_problem = &p;
    m_kernels = kernels;
    // The layer's memory variable: phi of u wherever there is a layer; phi of p only where the
    // TTI layer drives it somewhere (tti_needs_phi).
    // The C-PML has none (its memory variables live in the slabs).
    m_cpml_on = p.boundary == BoundaryType::Cpml;
    const bool phi = !m_cpml_on && (p.physics() == Physics::Tti
                                        ? tti_needs_phi(static_cast<const TtiProblem&>(p))
                                        : !static_cast<const AcousticProblem&>(p).eta.empty());
    const auto size = static_cast<std::size_t>(p.layout.size);
    const std::size_t fields = wavefield_names(p.physics()).size();
    m_current.assign(fields, HostField(size, 0.0f));
    m_next.assign(fields, HostField(size, 0.0f));
    m_phi.assign(phi ? size : 0, 0.0f);
    m_half = p.precision == Precision::Float16;
    m_step.assign(m_half ? size : 0, 0.0f);
    setup_half_taps(p);
    setup_eta_rows(p);
    // The medium is read at every step like the fields: on huge pages too where it fills them.
    if (p.physics() == Physics::Tti) {
      const auto& t = static_cast<const TtiProblem&>(p);
      collapse_to_huge_pages(t.vp2dt2.data(), t.vp2dt2.size() * sizeof(float));
      collapse_to_huge_pages(t.aniso.data(), t.aniso.size() * sizeof(std::uint32_t));
      collapse_to_huge_pages(t.axis_xz.data(), t.axis_xz.size() * sizeof(std::uint32_t));
    } else {
      const auto& a = static_cast<const AcousticProblem&>(p);
      collapse_to_huge_pages(a.vp2dt2.data(), a.vp2dt2.size() * sizeof(float));
    }
    setup_cpml(p);
    m_parts[0] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Shell);
    m_parts[1] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Interior);
    m_pass_setting = cpu_pass_steps_setting();
    setup_pass();
    m_traces.assign(p.receivers.owners() * (static_cast<std::size_t>(p.steps) + 1), 0.0f);
  }

  void set_taps(const Problem& p) override {
    require_ready("set_taps");
    if (p.physics() != m_problem->physics() || p.steps != m_problem->steps)
      throw std::invalid_argument("CPU backend: set_taps with a problem of another equation or "
                                  "step count than setup's");
    if (p.precision != m_problem->precision)
      throw std::invalid_argument("CPU backend: set_taps with a problem of another precision "
                                  "than setup's");
    // The taps are read from the problem at every step: only the trace buffer follows them.
    m_problem = &p;
    // The C-PML view points at the problem's profile arrays.
    setup_cpml(p);
    setup_half_taps(p);
    setup_pass();
    reset();
  }

  void reset() override {
    require_ready("reset");
    for (auto* set : {&m_current, &m_next})
      for (auto& f : *set)
        std::fill(f.begin(), f.end(), 0.0f);
    std::fill(m_phi.begin(), m_phi.end(), 0.0f);
    std::fill(m_step.begin(), m_step.end(), 0.0f);
    if (m_cpml_on) {
      m_cpml.reset();
      m_tti_cpml.reset();
    }
    m_traces.assign(
        m_problem->receivers.owners() * (static_cast<std::size_t>(m_problem->steps) + 1), 0.0f);
  }

  void set_kernels(const RegionKernels& kernels) override {
    require_ready("set_kernels");
    validate(*m_problem, kernels);
    m_kernels = kernels;
    setup_pass();
  }

  void update(StepPart part) override {
    require_ready("update");
    // The C-PML's memory pass reads u^n at every slab point: once a step, before any region,
    // unless the step is one sweep of the whole grid that updates the memory itself.
    const bool fused = cpml_fused();
    if (m_cpml_on && part == StepPart::Shell && !fused) {
      if (m_problem->physics() == Physics::Tti)
        tti_cpml_memory_pass_cpu(m_tti_cpml.view(), m_current[0].data(), m_current[1].data(),
                                 m_problem->layout);
      else
        cpml_memory_pass_cpu(m_cpml.view(), m_current[0].data(), m_problem->layout);
    }
    const std::vector<Region>& regions = m_parts[part == StepPart::Shell ? 0 : 1];
    if (regions.empty()) return;
    if (m_problem->physics() == Physics::Tti) {
      update_tti(static_cast<const TtiProblem&>(*m_problem), regions);
    } else if (fused) {
      const auto& p = static_cast<const AcousticProblem&>(*m_problem);
      IsoFields f = acoustic_medium(p);
      f.u = m_current[0].data();
      f.v = m_next[0].data();
      f.cpml = &m_cpml.view();
      cpml_fused_step_cpu(f, p.layout, p.coefs, regions.data(), static_cast<int>(regions.size()));
    } else if (m_half) {
      // u^{n-1} = u^n - d^n into the array the kernel reads as v; the float32 update; then the
      // binary16 values of u^{n+1}, of the step u^{n+1} - u^n and of phi.
      const auto& p = static_cast<const AcousticProblem&>(*m_problem);
      const int count = static_cast<int>(regions.size());
      half_previous_step(m_current[0].data(), m_step.data(), m_next[0].data(), p.layout,
                         regions.data(), count);
      update_acoustic(p, regions);
      half_store_step(m_current[0].data(), m_next[0].data(), m_step.data(),
                      m_phi.empty() ? nullptr : m_phi.data(), p.layout, regions.data(), count);
    } else {
      update_acoustic(static_cast<const AcousticProblem&>(*m_problem), regions);
    }
  }

  std::vector<float*> halo_fields() override {
    std::vector<float*> out;
    for (auto& f : m_next)
      out.push_back(f.data());
    return out;
  }

  void* stream() override { return nullptr; }

  void finish_step(int n) override {
    require_ready("finish_step");
    require_step(n, "finish_step");
    // Sources enter the first field's next step after the update of step n (TTI: p only; q is
    // the auxiliary field, zero in an isotropic medium).
    if (m_half)
      inject_sources_half(n);
    else
      inject_sources(n, m_next[0]);
    std::swap(m_current, m_next);
    // The free surface of both TTI fields: p and q are odd across it (docs/tti.md); at float16
    // of u and of its step.
    if (m_problem->free_surface) {
      for (auto& field : m_current)
        apply_free_surface(field.data(), m_problem->layout);
      if (m_half) apply_free_surface(m_step.data(), m_problem->layout);
    }
    record_receivers(n, m_current[0]);
  }

  int pass_steps() const override { return m_pass_on ? m_pass_most : 1; }

  void step_pass(int n, int count) override {
    require_ready("step_pass");
    require_step(n, "step_pass");
    require_step(n + count - 1, "step_pass");
    if (!m_pass_on || count < 2 || count > m_pass_most) {
      Backend::step_pass(n, count);
      return;
    }
    if (m_trials_left > 0) {
      trial(n, count);
      return;
    }
    pass(n, count);
  }

private:
  /// Steps n .. n + count - 1 in one pass (cpu_multi_step_pass, cpu_tti_multi_step_pass).
  void pass(int n, int count) {
    const Problem& p = *m_problem;
    const FieldLayout& l = p.layout;
    // m_current holds the fields at step n and m_next those at n - 1. Step s of the pass writes
    // m_next's arrays when s is even and m_current's when it is odd, as single steps would
    // before their swaps.
    const std::size_t fields = m_current.size();
    auto written = [&](std::size_t field, int s) {
      return (s % 2 == 0 ? m_next : m_current)[field].data();
    };
    const int surface_plane = std::min(kHalo, l.nz - 1);
    const std::size_t samples = static_cast<std::size_t>(p.steps);
    const TapTable& src = p.sources;
    const TapTable& rcv = p.receivers;
    const std::size_t rcv_taps = rcv.index.size();
    m_pass_samples.resize(static_cast<std::size_t>(count) * rcv_taps);
    // After step s has updated plane k of rows [j0, j1), in finish_step's order: its source
    // samples into the first field, then the free surface of every field (once the planes it
    // mirrors are done), then the receivers' tap values of the first field, summed after the
    // pass in finish_step's order.
    auto after_plane = [&](int s, int j0, int j1, int k) {
      float* first = written(0, s);
      const std::size_t step = static_cast<std::size_t>(n + s);
      for (const PassTap& t : m_pass_sources[static_cast<std::size_t>(k)]) {
        if (t.j < j0 || t.j >= j1) continue;
        const std::size_t at = static_cast<std::size_t>(t.tap);
        first[static_cast<std::size_t>(src.index[at])] +=
            src.weight[at] * p.source_samples[t.owner * samples + step];
      }
      if (p.free_surface && k < surface_plane) return; // receivers wait for the surface
      if (p.free_surface && k == surface_plane)
        for (std::size_t f = 0; f < fields; ++f)
          for (int j = j0; j < j1; ++j)
            free_surface_row(written(f, s), l, j);
      const int k0 = p.free_surface && k == surface_plane ? 0 : k;
      float* kept = m_pass_samples.data() + static_cast<std::size_t>(s) * rcv_taps;
      for (int plane = k0; plane <= k; ++plane)
        for (const PassTap& t : m_pass_receivers[static_cast<std::size_t>(plane)]) {
          if (t.j < j0 || t.j >= j1) continue;
          const std::size_t at = static_cast<std::size_t>(t.tap);
          kept[at] = first[static_cast<std::size_t>(rcv.index[at])];
        }
    };
    const int band = cpu_pass_band(p.physics(), count, m_cpml_on);
    // Without a neighbour the shell is empty and the interior holds every piece.
    const std::vector<Region>& pieces = m_parts[1];
    if (p.physics() == Physics::Tti) {
      const auto& t = static_cast<const TtiProblem&>(p);
      cpu_tti_multi_step_pass(m_current[0].data(), m_next[0].data(), m_current[1].data(),
                              m_next[1].data(), tti_medium(t), l, t.coefs, pieces.data(),
                              static_cast<int>(pieces.size()), count, band, after_plane,
                              &m_pass_rates);
    } else {
      const auto& a = static_cast<const AcousticProblem&>(p);
      IsoFields medium = acoustic_medium(a);
      medium.cpml = m_cpml_on ? &m_cpml.view() : nullptr;
      cpu_multi_step_pass(m_current[0].data(), m_next[0].data(), medium, l, a.coefs, pieces.data(),
                          static_cast<int>(pieces.size()), count, band, after_plane, &m_pass_rates);
    }
    if (count % 2 == 1) std::swap(m_current, m_next);
    for (int s = 0; s < count; ++s) {
      const float* kept = m_pass_samples.data() + static_cast<std::size_t>(s) * rcv_taps;
      record_taps(n + s, [kept](std::int64_t t) { return kept[t]; });
    }
  }

  /// One call of the trial that decides between passes and single steps when
  /// MINIMOD_CPU_PASS_STEPS is unset: the run's own steps, as single steps and as a pass in turn
  /// (the same results either way), timed a step; after kPassTrials calls the one with the
  /// faster best call stays. On the 2-core host of docs/perf, where passes are 1.3 times faster,
  /// two calls of each, summed, sometimes kept single steps.
  void trial(int n, int count) {
    const bool as_pass = m_trials_left % 2 == 1;
    const auto t0 = std::chrono::steady_clock::now();
    if (as_pass)
      pass(n, count);
    else
      Backend::step_pass(n, count);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double& best = as_pass ? m_trial_pass_ms : m_trial_single_ms;
    best = std::min(best, ms / count);
    if (--m_trials_left == 0 && m_trial_single_ms < m_trial_pass_ms) m_pass_on = false;
  }

public:
  double time_steps(int first_step, int count) override {
    require_ready("time_steps");
    const int steps = m_problem->steps;
    if (count < 0 || first_step < 0)
      throw std::invalid_argument("time_steps: negative first step or count");
    if (count > 0 && steps <= 0)
      throw std::invalid_argument("time_steps: the problem has no steps");
    const auto t0 = std::chrono::steady_clock::now();
    for (int n = 0; n < count;) {
      const int at = static_cast<int>((static_cast<long long>(first_step) + n) % steps);
      const int pass = std::min({pass_steps(), count - n, steps - at});
      if (pass > 1) {
        step_pass(at, pass);
        n += pass;
      } else {
        step(at);
        ++n;
      }
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  FiniteScan scan_field(int field) override {
    FiniteScan scan = scan_finite(m_problem->layout, current(field, "scan_field").data());
    // A float16 field holds its values times the field scale (a power of two: exact).
    if (m_half) scan.max_abs *= 1.0f / m_problem->field_scale;
    return scan;
  }
  // The copy is made at once: on the CPU nothing could overlap it.
  void snapshot_begin(int field) override {
    const HostField& f = current(field, "snapshot_begin");
    const FieldLayout& l = m_problem->layout;
    m_snapshot.resize(static_cast<std::size_t>(l.nx) * l.ny * l.nz);
    unpad_field(l, f.data(), m_snapshot.data());
    if (m_half) {
      const float inverse = 1.0f / m_problem->field_scale;
      for (float& x : m_snapshot)
        x *= inverse;
    }
    m_snapshot_pending = true;
  }
  void snapshot_end(std::vector<float>& dense) override {
    if (!m_snapshot_pending) throw std::logic_error("snapshot_end without snapshot_begin");
    m_snapshot_pending = false;
    dense.swap(m_snapshot);
  }
  void synchronize() override {}
  void fetch_traces(std::vector<float>& traces) override { traces = m_traces; }

private:
  /// A source or receiver tap of the multi-step pass: its row, its owner (source or receiver)
  /// and its place in the TapTable.
  struct PassTap {
    int j;
    std::size_t owner;
    std::int64_t tap;
  };

  void require_step(int n, const char* what) const {
    if (n < 0 || n >= m_problem->steps)
      throw std::out_of_range(std::string(what) + ": step " + std::to_string(n) + " outside [0, " +
                              std::to_string(m_problem->steps) + ")");
  }

  /// Adds step n's source samples to `next` (the first field's next step).
  void inject_sources(int n, HostField& next) {
    const Problem& p = *m_problem;
    const TapTable& s = p.sources;
    for (std::size_t src = 0; src < s.owners(); ++src) {
      const float amplitude =
          p.source_samples[src * static_cast<std::size_t>(p.steps) + static_cast<std::size_t>(n)];
      for (std::int64_t t = s.begin[src]; t < s.begin[src + 1]; ++t)
        next[static_cast<std::size_t>(s.index[t])] += s.weight[t] * amplitude;
    }
  }

  /// The float16 injection of step n into u^{n+1} and its step d (docs/physics.md, "16-bit
  /// storage"): at each distinct tap point, in the order of its first tap, the sum in float of
  /// (weight x sample) x field scale over its taps in table order, added to both with one rounding
  /// each.
  void inject_sources_half(int n) {
    const Problem& p = *m_problem;
    const TapTable& s = p.sources;
    const float scale = p.field_scale;
    float* next = m_next[0].data();
    const auto steps = static_cast<std::size_t>(p.steps);
    for (std::size_t point = 0; point + 1 < m_half_point_begin.size(); ++point) {
      float sum = 0.0f;
      for (std::size_t at = m_half_point_begin[point]; at < m_half_point_begin[point + 1]; ++at) {
        const std::int64_t t = m_half_point_taps[at];
        const float sample =
            p.source_samples[m_half_tap_owner[static_cast<std::size_t>(t)] * steps +
                             static_cast<std::size_t>(n)];
        sum += (s.weight[static_cast<std::size_t>(t)] * sample) * scale;
      }
      const auto i =
          static_cast<std::size_t>(s.index[m_half_point_taps[m_half_point_begin[point]]]);
      next[i] = round_to_half(next[i] + sum);
      m_step[i] = round_to_half(m_step[i] + sum);
    }
  }

  /// The source taps of a float16 run grouped by point, for inject_sources_half: the points in
  /// the order of their first tap, each point's taps in table order, and each tap's source.
  void setup_half_taps(const Problem& p) {
    m_half_point_begin.clear();
    m_half_point_taps.clear();
    m_half_tap_owner.clear();
    if (!m_half) return;
    const TapTable& s = p.sources;
    std::unordered_map<std::int64_t, std::size_t> point_of; // padded index -> point number
    std::vector<std::vector<std::int64_t>> taps;
    m_half_tap_owner.resize(s.index.size());
    for (std::size_t owner = 0; owner < s.owners(); ++owner)
      for (std::int64_t t = s.begin[owner]; t < s.begin[owner + 1]; ++t) {
        m_half_tap_owner[static_cast<std::size_t>(t)] = owner;
        const auto found = point_of.emplace(s.index[static_cast<std::size_t>(t)], taps.size());
        if (found.second) taps.emplace_back();
        taps[found.first->second].push_back(t);
      }
    m_half_point_begin.push_back(0);
    for (const auto& list : taps) {
      m_half_point_taps.insert(m_half_point_taps.end(), list.begin(), list.end());
      m_half_point_begin.push_back(m_half_point_taps.size());
    }
  }

  /// Records trace sample n + 1 from u (the first field after step n).
  void record_receivers(int n, const HostField& u) {
    const TapTable& rcv = m_problem->receivers;
    record_taps(n, [&](std::int64_t t) { return u[static_cast<std::size_t>(rcv.index[t])]; });
  }

  /// Records trace sample n + 1 from the receiver taps' values value(t), t the tap's place in
  /// the TapTable: each trace the weighted sum of its taps in the table's order.
  template <class TapValue> void record_taps(int n, TapValue&& value) {
    const TapTable& rcv = m_problem->receivers;
    const std::size_t samples = static_cast<std::size_t>(m_problem->steps) + 1;
    for (std::size_t r = 0; r < rcv.owners(); ++r) {
      float sum = 0.0f;
      for (std::int64_t t = rcv.begin[r]; t < rcv.begin[r + 1]; ++t)
        sum += rcv.weight[t] * value(t);
      // A float16 field holds its values times the field scale.
      if (m_half) sum *= 1.0f / m_problem->field_scale;
      m_traces[r * samples + static_cast<std::size_t>(n) + 1] = sum;
    }
  }

  /// The taps of `table` by plane, each plane's in the table's order (so that taps on one point
  /// add in finish_step's order); false when a tap lies off the grid's points.
  static bool taps_by_plane(const TapTable& table, const FieldLayout& l,
                            std::vector<std::vector<PassTap>>& planes) {
    planes.assign(static_cast<std::size_t>(l.nz), {});
    for (std::size_t owner = 0; owner < table.owners(); ++owner)
      for (std::int64_t t = table.begin[owner]; t < table.begin[owner + 1]; ++t) {
        const std::int64_t at = table.index[static_cast<std::size_t>(t)];
        const int k = static_cast<int>(at / l.plane) - kHalo;
        const std::int64_t in_plane = at % l.plane;
        const int j = static_cast<int>(in_plane / l.pitch) - kHalo;
        const int i = static_cast<int>(in_plane % l.pitch) - l.x_offset;
        if (k < 0 || k >= l.nz || j < 0 || j >= l.ny || i < 0 || i >= l.nx) return false;
        planes[static_cast<std::size_t>(k)].push_back(PassTap{j, owner, t});
      }
    return true;
  }

  /// Whether the problem set up can take the multi-step pass (m_pass_on), with its source and
  /// receiver taps by plane. The pass needs Minimod's layer, none, or the acoustic C-PML (whose
  /// pass updates its memory variables; the TTI C-PML's memory pass runs between steps), the
  /// `cpu` kernel in every region, no neighbour (no halo exchange between the steps) and every
  /// tap on a grid point.
  void setup_pass() {
    m_pass_on = false;
    const Problem& p = *m_problem;
    m_pass_most = m_pass_setting > 0 ? m_pass_setting : cpu_pass_default(p.physics());
    // A float16 run steps one step at a time (its rounding between the kernel and the next step
    // has no place in the pass).
    if (m_pass_most < 2 || (m_cpml_on && p.physics() != Physics::Acoustic) ||
        p.subdomain.has_neighbour() || p.layout.nz < 1 || m_half)
      return;
    for (int r = 0; r < kRegionCount; ++r)
      if (!p.regions[r].box.empty() && m_kernels[r]->name() != "cpu") return;
    if (!taps_by_plane(p.sources, p.layout, m_pass_sources) ||
        !taps_by_plane(p.receivers, p.layout, m_pass_receivers))
      return;
    m_pass_on = true;
    // Unset: time passes against single steps on the first steps (kPassTrials calls).
    m_trials_left = m_pass_setting == 0 ? kPassTrials : 0;
    m_trial_pass_ms = m_trial_single_ms = std::numeric_limits<double>::infinity();
    m_pass_rates = {};
  }

  /// What the acoustic kernels read besides the wavefields: the medium, phi and eta (the table
  /// of its profiles where there is one). No wavefield, no C-PML.
  IsoFields acoustic_medium(const AcousticProblem& p) {
    IsoFields f;
    f.vp2dt2 = p.vp2dt2.data();
    f.phi = m_phi.empty() ? nullptr : m_phi.data();
    f.eta = p.eta.empty() ? nullptr : p.eta.data();
    f.eta_rows = m_eta_rows.get();
    return f;
  }

  /// The same for TTI: the medium and phi_p.
  TtiFields tti_medium(const TtiProblem& p) {
    TtiFields f = tti_medium_fields(p);
    f.phi_p = m_phi.empty() ? nullptr : m_phi.data();
    return f;
  }

  /// The acoustic update: consecutive pieces that share a kernel in one launch_regions (one
  /// parallel region a step for the CPU reference), u and v swapped per step.
  void update_acoustic(const AcousticProblem& p, const std::vector<Region>& regions) {
    IsoFields f = acoustic_medium(p);
    f.u = m_current[0].data();
    f.v = m_next[0].data();
    f.cpml = m_cpml_on ? &m_cpml.view() : nullptr;
    for (std::size_t first = 0; first < regions.size();) {
      const StencilKernel* k = m_kernels[static_cast<int>(regions[first].id)];
      std::size_t last = first + 1;
      while (last < regions.size() && m_kernels[static_cast<int>(regions[last].id)] == k)
        ++last;
      k->launch_regions(f, p.layout, p.coefs, regions.data() + first,
                        static_cast<int>(last - first), nullptr);
      first = last;
    }
  }

  /// The TTI update: consecutive pieces that share a kernel in one launch_tti_regions (one
  /// parallel region a step for the CPU reference).
  void update_tti(const TtiProblem& p, const std::vector<Region>& regions) {
    TtiFields f = tti_medium(p);
    f.p = m_current[0].data();
    f.p_next = m_next[0].data();
    f.q = m_current[1].data();
    f.q_next = m_next[1].data();
    f.cpml = m_cpml_on ? &m_tti_cpml.view() : nullptr;
    for (std::size_t first = 0; first < regions.size();) {
      const StencilKernel* k = m_kernels[static_cast<int>(regions[first].id)];
      std::size_t last = first + 1;
      while (last < regions.size() && m_kernels[static_cast<int>(regions[last].id)] == k)
        ++last;
      k->launch_tti_regions(f, p.layout, p.coefs, regions.data() + first,
                            static_cast<int>(last - first), nullptr);
      first = last;
    }
  }

  /// eta of an acoustic problem with Minimod's layer from its profiles, where the problem has
  /// them; checked against the padded array where the problem has that too, so that the kernel
  /// reads the same bits either way.
  void setup_eta_rows(const Problem& p) {
    m_eta_rows.reset();
    if (p.physics() != Physics::Acoustic || m_cpml_on) return;
    m_eta_rows = checked_eta_rows(static_cast<const AcousticProblem&>(p), "CPU backend");
  }

  /// Whether an acoustic C-PML step is one sweep with its memory update fused
  /// (cpml_fused_step_cpu): the whole grid in one step part (no neighbour, so no shell) and the
  /// kernel `cpu` in every region.
  bool cpml_fused() const {
    const Problem& p = *m_problem;
    if (!m_cpml_on || p.physics() != Physics::Acoustic || !m_parts[0].empty()) return false;
    for (int r = 0; r < kRegionCount; ++r)
      if (!p.regions[r].box.empty() && m_kernels[r]->name() != "cpu") return false;
    return true;
  }

  /// The C-PML's memory variables of the problem's equation (its view points at p.cpml).
  void setup_cpml(const Problem& p) {
    if (!m_cpml_on) return;
    if (p.physics() == Physics::Tti)
      m_tti_cpml.setup(p.grid, p.layer, p.cpml);
    else
      m_cpml.setup(p.grid, p.layer, p.cpml);
  }

  const HostField& current(int field, const char* what) const {
    require_ready(what);
    if (field < 0 || field >= static_cast<int>(m_current.size()))
      throw std::out_of_range(std::string("CPU backend: ") + what + ": field " +
                              std::to_string(field) + " of " + std::to_string(m_current.size()));
    return m_current[static_cast<std::size_t>(field)];
  }

  /// Throws unless every non-empty region of `p` has a CPU kernel of its physics that can update
  /// it, and the medium covers the layout.
  static void validate(const Problem& p, const RegionKernels& kernels) {
    const bool tti = p.physics() == Physics::Tti;
    const std::vector<float>& vp2dt2 = tti ? static_cast<const TtiProblem&>(p).vp2dt2
                                           : static_cast<const AcousticProblem&>(p).vp2dt2;
    const std::vector<float>& eta =
        tti ? static_cast<const TtiProblem&>(p).eta : static_cast<const AcousticProblem&>(p).eta;
    const auto size = static_cast<std::size_t>(p.layout.size);
    if (vp2dt2.size() != size || !(eta.empty() || eta.size() == size))
      throw std::invalid_argument("CPU backend: the medium does not cover the padded layout");
    if (p.source_samples.size() != p.sources.owners() * static_cast<std::size_t>(p.steps))
      throw std::invalid_argument("CPU backend: source samples do not match the sources and "
                                  "steps");
    validate_precision(p);
    for (int r = 0; r < kRegionCount; ++r) {
      const Region& region = p.regions[r];
      if (region.box.empty()) continue;
      const StencilKernel* k = kernels[r];
      if (!k || k->backend() != BackendKind::Cpu || k->physics() != p.physics()) {
        throw RuntimeFailure(std::string("no CPU ") + physics_name(p.physics()) +
                             " kernel chosen for region " + region_name(region.id));
      }
      if (!k->handles_precision(p.precision))
        throw InputError("kernel " + k->name() + " cannot update region " + region_name(region.id) +
                         ": it has no " + precision_name(p.precision) + " form (precision: " +
                         precision_name(p.precision) + "); allowed: cpu, or precision: float32");
      const std::string why = k->can_run(region, p.layout);
      if (!why.empty())
        throw RuntimeFailure("kernel " + k->name() + " cannot update region " +
                             region_name(region.id) + ": " + why);
      const bool cpml = p.boundary == BoundaryType::Cpml;
      if (region.kind() == RegionKind::Layer && cpml && !k->handles_cpml()) {
        throw RuntimeFailure("kernel " + k->name() + " cannot update region " +
                             region_name(region.id) +
                             ": it has no C-PML layer update (boundary.type: cpml)");
      }
      if (region.kind() == RegionKind::Layer && !cpml && eta.empty()) {
        throw RuntimeFailure(std::string("region ") + region_name(region.id) +
                             " is an absorbing layer but the problem has no eta field");
      }
    }
  }

  /// The float16 storage is the acoustic equation's, with Minimod's layer or none, on a whole
  /// grid (docs/physics.md, "16-bit storage"): anything else is refused by name before any step.
  static void validate_precision(const Problem& p) {
    if (p.precision != Precision::Float16) return;
    if (p.physics() != Physics::Acoustic)
      throw InputError(std::string("precision: float16 is not available for physics: ") +
                       physics_name(p.physics()) +
                       " yet (the acoustic equation only); allowed: precision: float32");
    if (p.boundary == BoundaryType::Cpml)
      throw InputError("precision: float16 is not available with boundary.type: cpml yet; "
                       "allowed: precision: float32, or boundary.type: minimod");
    if (p.subdomain.has_neighbour())
      throw InputError("precision: float16 is not available on a decomposed grid "
                       "(decomposition, ranks_per_shot > 1) yet; allowed: precision: float32, or "
                       "one rank a shot");
    if (!(p.field_scale > 0.0f) || !std::isfinite(p.field_scale))
      throw std::invalid_argument("CPU backend: precision float16 with a field scale that is not "
                                  "finite and > 0");
  }

  void require_ready(const char* what) const {
    if (!m_problem) throw std::logic_error(std::string("CPU backend: ") + what + " before setup");
  }

  const Problem* m_problem = nullptr;
  RegionKernels m_kernels{};
  std::array<std::vector<Region>, 2> m_parts; ///< the pieces of StepPart::Shell and ::Interior
  std::vector<HostField> m_current;           ///< the fields at step n (wavefield_names order)
  std::vector<HostField> m_next;              ///< step n - 1 on entry to update, n + 1 after it
  HostField m_phi;                            ///< the layer's memory variable; may be empty
  std::unique_ptr<EtaRows> m_eta_rows;        ///< eta from its profiles, where the problem has them
  bool m_cpml_on = false;                     ///< the problem's layer is a C-PML
  CpmlHostMemory m_cpml;                      ///< its memory variables (acoustic)
  TtiCpmlHostMemory m_tti_cpml;               ///< those of p and q (TTI)
  int m_pass_setting = 0;                     ///< MINIMOD_CPU_PASS_STEPS (0: unset)
  int m_pass_most = 1;                        ///< the most steps a pass takes for the problem
  bool m_pass_on = false;                     ///< the problem set up takes passes
  int m_trials_left = 0;                      ///< calls of the pass-or-steps trial still to come
  /// The trial's best ms a step as a pass and as single steps (none yet: infinity).
  double m_trial_pass_ms = std::numeric_limits<double>::infinity();
  double m_trial_single_ms = std::numeric_limits<double>::infinity();
  CpuPassRates m_pass_rates;                          ///< the threads' rates in the passes
  std::vector<std::vector<PassTap>> m_pass_sources;   ///< source taps by plane, for the pass
  std::vector<std::vector<PassTap>> m_pass_receivers; ///< receiver taps by plane
  std::vector<float> m_pass_samples; ///< receiver tap values of each step of a pass
  std::vector<float> m_traces;
  std::vector<float> m_snapshot; ///< the dense copy snapshot_begin made
  bool m_snapshot_pending = false;
  bool m_half = false; ///< a float16 run: binary16 values in the arrays
  HostField m_step;    ///< float16: the step d^n = u^n - u^{n-1}; else empty
  /// Float16 injection: the source taps grouped by point (setup_half_taps), each point's taps
  /// m_half_point_taps[m_half_point_begin[p], m_half_point_begin[p + 1]), and each tap's source.
  std::vector<std::size_t> m_half_point_begin;
  std::vector<std::int64_t> m_half_point_taps;
  std::vector<std::size_t> m_half_tap_owner;
};

} // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

} // namespace minimod
