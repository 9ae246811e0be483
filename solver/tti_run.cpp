#include "solver/tti_run.hpp"

#include "core/errors.hpp"
#include "io/h5_output.hpp"
#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "kernels/tti_cpml.hpp"
#include "kernels/tti_problem.hpp"
#include "models/velocity.hpp"
#include "solver/equation.hpp"
#include "solver/problem.hpp"
#include "solver/wavelet.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// Highest frequency of the survey: boundary.fmax, else the highest of every shot's sources.
double survey_fmax(const Survey& s) {
  if (s.boundary.fmax) return *s.boundary.fmax;
  double fmax = 0;
  for (const auto& shot : s.shots) {
    for (const auto& src : shot.sources) {
      fmax = std::max(fmax, wavelet_fmax(src.wavelet, src.wavelet.loc.where() + ".file"));
    }
  }
  return fmax;
}

} // namespace

TtiModel build_tti_model(const Survey& s, const Grid& g) {
  if (!s.anisotropy) throw InputError(s.path + ": anisotropy: missing for physics: tti");
  const AnisotropySpec& a = *s.anisotropy;
  const double angle = a.degrees ? kPi / 180.0 : 1.0;
  TtiModel m;
  m.vp = build_velocity(s.model, g, &m.notice);
  m.epsilon = build_property(a.epsilon, g);
  m.delta = build_property(a.delta, g);
  m.theta = build_property(a.theta, g, angle);
  if (a.phi) m.phi = build_property(*a.phi, g, angle);
  validate_tti_model(g, m, a.loc.where());
  return m;
}

TtiPlan plan_tti(const Survey& s, const TtiModel& m, int steps_override) {
  TtiPlanOptions o;
  o.steps = steps_override > 0 ? steps_override : (s.time.steps ? *s.time.steps : 0);
  o.duration = s.time.duration;
  o.cfl = s.time.cfl;
  o.dt = s.time.dt;
  o.vmax = s.model.vmax;
  o.layer_width = s.boundary.width;
  // A C-PML given neither width nor ntaper: the width that meets its reflection target, refused
  // here, at the survey's key, when it is wider than half the grid.
  if (layer_target_db(s.boundary)) {
    const int w = chosen_cpml_width(s.boundary);
    const LayerWidths layer{w, w, w, w, s.boundary.free_surface ? 0 : w, w};
    check_layer_fits_grid(make_grid(s.grid), layer, s.boundary.reflection_db_loc,
                          " (" + layer_target_text(s.boundary) + ")");
    o.layer_width = w;
  }
  o.ntaper = s.boundary.ntaper.value_or(kDefaultNtaper);
  o.fmax = survey_fmax(s);
  o.free_surface = s.boundary.free_surface;
  o.duration_key = SourceLoc{s.time.loc.file, s.time.loc.line, "time.duration"}.where();
  TtiPlan p = make_tti_plan(make_grid(s.grid), m, o);
  // The survey checks of the acoustic plan, on the TTI layer and time axis.
  const auto [vmin, vmax] = std::minmax_element(m.vp.begin(), m.vp.end());
  if (!m.notice.empty()) p.warnings.push_back(m.notice);
  // Dispersion, as for the acoustic plan, at the slowest P wave of any direction.
  p.fmax = o.fmax;
  if (o.fmax > 0) {
    const Grid& g = p.grid;
    double slowest = *vmin;
    for (std::size_t n = 0; n < m.vp.size(); ++n) {
      const double lowest =
          std::min({0.0, static_cast<double>(m.epsilon[n]), static_cast<double>(m.delta[n])});
      slowest = std::min(slowest, m.vp[n] * std::sqrt(std::max(0.0, 1.0 + 2.0 * lowest)));
    }
    const double hmax = std::max({g.dx, g.dy, g.dz});
    p.points_per_wavelength = slowest / (o.fmax * hmax);
    if (p.points_per_wavelength < kMinPointsPerWavelength) {
      p.warnings.push_back(dispersion_warning(p.points_per_wavelength, slowest, o.fmax, hmax));
    }
  }
  check_survey_traps(s, {p.grid, p.layer, *vmin, *vmax, o.fmax, p.steps * p.dt, p.dt}, p.warnings);
  return p;
}

std::string describe_tti_plan(const Survey& s, const TtiModel& m, const TtiPlan& p) {
  std::ostringstream o;
  const Grid& g = p.grid;
  const auto [emin, emax] = std::minmax_element(m.epsilon.begin(), m.epsilon.end());
  const auto [dmin, dmax] = std::minmax_element(m.delta.begin(), m.delta.end());
  o << "survey      " << s.path << (s.name.empty() ? "" : " (" + s.name + ")") << "\n";
  o << "physics     tti (acoustic, tilted transversely isotropic), "
    << (tti_model_has_azimuth(m) ? "tilt and azimuth" : "tilt only (no azimuth array)") << "\n";
  o << "grid        " << g.nx << " x " << g.ny << " x " << g.nz << " points (" << g.points()
    << "), spacing " << g.dx << " x " << g.dy << " x " << g.dz << " m\n";
  o << "model       vmax " << p.vmax << " m/s, epsilon " << *emin << " .. " << *emax << ", delta "
    << *dmin << " .. " << *dmax << ", fastest P wave " << p.speed_max << " m/s\n";
  o << "time        dt " << p.dt << " s (TTI stability limit " << p.dt_limit
    << " s; the isotropic one would be " << p.dt_limit_iso << " s), " << p.steps << " steps\n";
  const bool cpml = s.boundary.type == BoundaryType::Cpml && p.layer.any();
  o << "layer       x " << p.layer.x_lo << "/" << p.layer.x_hi << ", y " << p.layer.y_lo << "/"
    << p.layer.y_hi << ", z " << p.layer.z_lo << "/" << p.layer.z_hi << " points"
    << (cpml ? " (C-PML)" : "") << "\n";
  o << describe_boundary(s, p.layer);
  o << "wavelength  fmax " << p.fmax << " Hz, " << p.points_per_wavelength
    << " points per shortest wavelength (the slowest P wave of any direction)\n";
  o << "shots       " << s.shots.size() << ", receivers " << s.receivers.size() << "\n";
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, p.layer.x_lo);
  const bool azimuth = tti_model_has_azimuth(m);
  const bool phi = !cpml && tti_layer_has_elliptic_point(g, p.layer, m);
  const double memory = cpml ? 4.0 * static_cast<double>(tti_cpml_memory_points(g, p.layer)) : 0;
  const auto bytes =
      static_cast<double>(tti_array_bytes(l.size, azimuth, p.layer.any() && !cpml, phi)) + memory;
  const double arrays = bytes / (static_cast<double>(l.size) * 4.0); // 7 to 9.5
  o << "memory      " << format_bytes(bytes) << " (" << arrays
    << " padded float arrays: p, q and their previous steps, vp2dt2, the 16-bit anisotropy and "
       "axis"
    << (azimuth ? " with n_y" : "")
    << (!p.layer.any() ? ""
        : cpml         ? ", and the C-PML's memory variables in the layer slabs"
        : phi          ? ", eta and phi"
                       : ", eta (no phi: the layer is nowhere elliptic)")
    << ")\n";
  std::string why;
  o << "backend     ";
  if (cuda_device_available(&why)) {
    // What the default resolves to on this GPU (semi+b+tma needs the Hopper tensor copies).
    std::string kernels = default_kernel_spec(kGpuBackend, Physics::Tti);
    try {
      const RegionKernels k =
          resolve_kernels("", kGpuBackend, Physics::Tti, make_regions(g, p.layer), l, "--kernel");
      kernels = "inner " + k[0]->name();
      if (p.layer.any()) kernels += ", layers " + k[1]->name();
    } catch (const InputError&) {
      // The run reports it; the summary shows the spec.
    }
    o << backend_name(kGpuBackend) << " (TTI kernels " << kernels
      << " unless --kernel says otherwise)";
  } else {
    o << "cpu reference (no GPU: " << why << ")";
  }
  o << "\n";
  for (const auto& w : p.warnings)
    o << "warning: " << w << "\n";
  return o.str();
}

Plan tti_run_plan(const Survey& shot, const TtiModel& m, const TtiPlan& tti) {
  // Trace and snapshot sampling, and the acoustic plan's checks of the output, on the TTI time
  // axis: the acoustic plan of one step, its time axis and layer replaced.
  Plan p = make_plan(shot, m.vp, 1);
  const Grid& g = tti.grid;
  p.layer = tti.layer;
  p.vmax = tti.vmax;
  p.dt = tti.dt;
  p.dt_limit = tti.dt_limit;
  p.cfl = tti.cfl;
  p.steps = tti.steps;
  p.duration = tti.steps * tti.dt;
  p.snapshot_count = p.snapshot_every > 0 ? p.steps / p.snapshot_every : 0;
  plan_output(shot, p); // on the TTI time axis
  p.warnings = tti.warnings;
  // Memory: the TTI arrays on the device; on the host the model's arrays, the padded medium
  // (vp2dt2, the two pairs, n_y, eta), the source samples and the traces (recorded, resampled).
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, tti.layer.x_lo);
  const bool azimuth = tti_model_has_azimuth(m);
  // The C-PML: no eta and no phi, its memory variables in the slabs instead.
  const bool cpml = shot.boundary.type == BoundaryType::Cpml && tti.layer.any();
  const bool phi = !cpml && tti.layer.any() && tti_layer_has_elliptic_point(g, tti.layer, m);
  const double memory = cpml ? 4.0 * static_cast<double>(tti_cpml_memory_points(g, tti.layer)) : 0;
  const double receivers = static_cast<double>(shot.receivers.size());
  const double sources = static_cast<double>(shot.sources.size());
  const double steps = static_cast<double>(p.steps);
  const double taps = (receivers + sources) * 8 * 12;
  p.device_bytes =
      tti_array_bytes(l.size, azimuth, tti.layer.any() && !cpml, phi) +
      static_cast<std::size_t>(memory + receivers * (steps + 1) * 4 + sources * steps * 4 + taps);
  const double field = 4.0 * static_cast<double>(l.size);
  const double model_arrays = m.phi.empty() ? 4 : 5;
  p.host_bytes = model_arrays * 4.0 * static_cast<double>(g.points()) +
                 field * (3 + (azimuth ? 0.5 : 0) + (tti.layer.any() && !cpml ? 1 : 0)) + memory +
                 sources * steps * 4 + 2 * receivers * (steps + 1) * 4;
  return p;
}

namespace {

/// The TTI equation: vp, epsilon, delta, theta and phi; the 73-point operator's plan; the TTI
/// problem (solver/tti.cpp) with sources into p and receivers of p.
class TtiEquation final : public Equation {
public:
  Physics physics() const override { return Physics::Tti; }

  void build_model(const Survey& survey) override {
    m_model = build_tti_model(survey, make_grid(survey.grid));
  }
  std::vector<std::vector<float>*> model_arrays() override {
    return {&m_model.vp, &m_model.epsilon, &m_model.delta, &m_model.theta, &m_model.phi};
  }
  double model_bytes() const override {
    return 4.0 *
           static_cast<double>(m_model.vp.size() + m_model.epsilon.size() + m_model.delta.size() +
                               m_model.theta.size() + m_model.phi.size());
  }
  std::string model_notice() const override { return m_model.notice; }

  Plan make_plan(const Survey& shot, int steps_override) const override {
    const TtiPlan tti = plan_tti(shot, m_model, steps_override);
    Plan p = tti_run_plan(shot, m_model, tti);
    m_tti = tti;
    return p;
  }

  std::unique_ptr<Problem> build_problem(const Survey& shot, const Plan& plan) const override {
    // The medium once (the taps of the shot with it); later shots replace the taps (set_shot).
    const TtiPlan tti = tti_plan(shot, plan);
    auto p = std::make_unique<TtiProblem>(
        build_tti_problem(tti, m_model, sources(shot, plan), receivers(shot), shot.interpolation));
    if (shot.boundary.type == BoundaryType::Cpml)
      use_tti_cpml(*p, tti, cpml_params(shot.boundary, plan.fmax));
    return p;
  }

  void set_shot(const Survey& shot, const Plan& plan, Problem& problem) const override {
    if (problem.physics() != Physics::Tti)
      throw std::logic_error("TTI equation: a problem of another equation");
    set_tti_shot(static_cast<TtiProblem&>(problem), sources(shot, plan), receivers(shot),
                 shot.interpolation);
  }

  void release_host_medium(Problem& problem) const override {
    // Everything but vp2dt2: set_tti_shot scales physical sources by it.
    auto& p = static_cast<TtiProblem&>(problem);
    for (auto* a : {&p.aniso, &p.axis_xz})
      std::vector<std::uint32_t>().swap(*a);
    std::vector<std::int16_t>().swap(p.axis_y);
    std::vector<float>().swap(p.eta);
  }

  StoredModel stored_model(const Grid& grid) const override {
    // phi, when the survey gives none, is 0 everywhere.
    StoredModel stored = model_geometry({grid.nx, grid.ny, grid.nz}, {grid.ox, grid.oy, grid.oz},
                                        {grid.dx, grid.dy, grid.dz});
    add_model_property(stored, "vp", "m/s", m_model.vp);
    add_model_property(stored, "epsilon", "1", m_model.epsilon);
    add_model_property(stored, "delta", "1", m_model.delta);
    add_model_property(stored, "theta", "rad", m_model.theta);
    add_model_property(stored, "phi", "rad",
                       m_model.phi.empty() ? std::vector<float>(grid.points(), 0.0f) : m_model.phi);
    return stored;
  }

private:
  /// The TTI plan behind `plan` (the one make_plan made, or made again for another plan).
  TtiPlan tti_plan(const Survey& shot, const Plan& plan) const {
    if (m_tti.steps == plan.steps && m_tti.dt == plan.dt) return m_tti;
    TtiPlan tti = plan_tti(shot, m_model, plan.steps);
    if (tti.dt != plan.dt)
      throw std::logic_error("TTI equation: a plan that make_plan did not make");
    return tti;
  }

  /// The shot's sources, their wavelets sampled on the plan's time axis.
  static std::vector<TtiSource> sources(const Survey& shot, const Plan& plan) {
    std::vector<TtiSource> out;
    for (const auto& src : shot.sources) {
      out.push_back(TtiSource{
          src.position,
          sample_wavelet(src.wavelet, plan.dt, plan.steps, src.wavelet.loc.where() + ".file"),
          src.injection});
    }
    return out;
  }

  static std::vector<Vec3> receivers(const Survey& shot) {
    std::vector<Vec3> out;
    for (const auto& r : shot.receivers)
      out.push_back(r.position);
    return out;
  }

  TtiModel m_model;
  mutable TtiPlan m_tti; ///< the last plan make_plan made
};

} // namespace

std::unique_ptr<Equation> make_tti_equation() {
  return std::make_unique<TtiEquation>();
}

} // namespace minimod
