/// The OpenMP CPU backend: the test oracle and the default when no GPU is present, for both
/// equations. What is the equation's own is small: how many wavefields it has, whether its layer
/// keeps a memory variable, and how its region kernels are launched (update_acoustic,
/// update_tti); the taps, the swap, the free surface, timing and the fields out are shared.
#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_cpml.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/cpu/cpu_huge_pages.hpp"
#include "kernels/cpu/cpu_tti_cpml.hpp"
#include "kernels/tti_problem.hpp"

#include <algorithm>
#include <chrono>
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
    m_traces.assign(p.receivers.owners() * (static_cast<std::size_t>(p.steps) + 1), 0.0f);
  }

  void set_taps(const Problem& p) override {
    require_ready("set_taps");
    if (p.physics() != m_problem->physics() || p.steps != m_problem->steps)
      throw std::invalid_argument("CPU backend: set_taps with a problem of another equation or "
                                  "step count than setup's");
    // The taps are read from the problem at every step: only the trace buffer follows them.
    m_problem = &p;
    // The C-PML view points at the problem's profile arrays.
    setup_cpml(p);
    reset();
  }

  void reset() override {
    require_ready("reset");
    for (auto* set : {&m_current, &m_next})
      for (auto& f : *set)
        std::fill(f.begin(), f.end(), 0.0f);
    std::fill(m_phi.begin(), m_phi.end(), 0.0f);
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
  }

  void update(StepPart part) override {
    require_ready("update");
    // The C-PML's memory pass reads u^n at every slab point: once a step, before any region.
    if (m_cpml_on && part == StepPart::Shell) {
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
    const Problem& p = *m_problem;
    if (n < 0 || n >= p.steps)
      throw std::out_of_range("step " + std::to_string(n) + " outside [0, " +
                              std::to_string(p.steps) + ")");
    // Sources enter the first field's next step after the update of step n (TTI: p only; q is
    // the auxiliary field, zero in an isotropic medium).
    const TapTable& s = p.sources;
    HostField& next = m_next[0];
    for (std::size_t src = 0; src < s.owners(); ++src) {
      const float amplitude =
          p.source_samples[src * static_cast<std::size_t>(p.steps) + static_cast<std::size_t>(n)];
      for (std::int64_t t = s.begin[src]; t < s.begin[src + 1]; ++t)
        next[static_cast<std::size_t>(s.index[t])] += s.weight[t] * amplitude;
    }
    std::swap(m_current, m_next);
    // The free surface of both TTI fields: p and q are odd across it (docs/tti.md).
    if (p.free_surface)
      for (auto& field : m_current)
        apply_free_surface(field.data(), p.layout);
    const HostField& u = m_current[0];
    const TapTable& rcv = p.receivers;
    const std::size_t samples = static_cast<std::size_t>(p.steps) + 1;
    for (std::size_t r = 0; r < rcv.owners(); ++r) {
      float sum = 0.0f;
      for (std::int64_t t = rcv.begin[r]; t < rcv.begin[r + 1]; ++t)
        sum += rcv.weight[t] * u[static_cast<std::size_t>(rcv.index[t])];
      m_traces[r * samples + static_cast<std::size_t>(n) + 1] = sum;
    }
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

  FiniteScan scan_field(int field) override {
    return scan_finite(m_problem->layout, current(field, "scan_field").data());
  }
  // The copy is made at once: on the CPU nothing could overlap it.
  void snapshot_begin(int field) override {
    const HostField& f = current(field, "snapshot_begin");
    const FieldLayout& l = m_problem->layout;
    m_snapshot.resize(static_cast<std::size_t>(l.nx) * l.ny * l.nz);
    unpad_field(l, f.data(), m_snapshot.data());
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
  /// The acoustic update: consecutive pieces that share a kernel in one launch_regions (one
  /// parallel region a step for the CPU reference), u and v swapped per step.
  void update_acoustic(const AcousticProblem& p, const std::vector<Region>& regions) {
    IsoFields f;
    f.u = m_current[0].data();
    f.v = m_next[0].data();
    f.vp2dt2 = p.vp2dt2.data();
    f.phi = m_phi.empty() ? nullptr : m_phi.data();
    f.eta = p.eta.empty() ? nullptr : p.eta.data();
    f.cpml = m_cpml_on ? &m_cpml.view() : nullptr;
    f.eta_rows = m_eta_rows.get();
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
    TtiFields f = tti_medium_fields(p);
    f.p = m_current[0].data();
    f.p_next = m_next[0].data();
    f.q = m_current[1].data();
    f.q_next = m_next[1].data();
    f.phi_p = m_phi.empty() ? nullptr : m_phi.data();
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
    const auto& a = static_cast<const AcousticProblem&>(p);
    if (a.eta_axes.empty()) return;
    auto rows = std::make_unique<EtaRows>(a.eta_axes, p.layout.nx, p.layout.ny, p.layout.nz);
    if (!a.eta.empty()) {
      const std::string at = rows->first_difference(a.eta, p.layout);
      if (!at.empty())
        throw std::invalid_argument("CPU backend: the problem's eta profiles and its eta array "
                                    "differ at point " +
                                    at);
    }
    m_eta_rows = std::move(rows);
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
    for (int r = 0; r < kRegionCount; ++r) {
      const Region& region = p.regions[r];
      if (region.box.empty()) continue;
      const StencilKernel* k = kernels[r];
      if (!k || k->backend() != BackendKind::Cpu || k->physics() != p.physics()) {
        throw RuntimeFailure(std::string("no CPU ") + physics_name(p.physics()) +
                             " kernel chosen for region " + region_name(region.id));
      }
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
  std::vector<float> m_traces;
  std::vector<float> m_snapshot; ///< the dense copy snapshot_begin made
  bool m_snapshot_pending = false;
};

} // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

} // namespace minimod
