#include "solver/tti.hpp"

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/text.hpp"
#include "kernels/backend.hpp"
#include "solver/interpolation.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string point_name(const Grid& g, int i, int j, int k) {
  return "point (" + std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) +
         ") = (" + num(g.ox + i * g.dx) + ", " + num(g.oy + j * g.dy) + ", " +
         num(g.oz + k * g.dz) + ") m";
}

/// Row sum of |coefficients| of alpha L + beta H for the axis n (the operator is symmetric, so
/// this is also its column sum). Per axis a the star carries (alpha + beta n_a^2) c_m / h_a^2, the
/// centre their sum; each plane ab adds 4 points of |beta 2 n_a n_b c_m| / (4 h_a h_b) per m.
double abs_sum(const Grid& g, const std::array<double, 3>& n, double alpha, double beta) {
  double sum_cm = 0;
  for (int m = 1; m <= kHalo; ++m)
    sum_cm += std::abs(kLaplacianWeights[m]);
  double centre = 0, star = 0, mixed = 0;
  for (int a = 0; a < 3; ++a) {
    const double h2 = g.spacing(a) * g.spacing(a);
    const double f = alpha + beta * n[a] * n[a];
    centre += kLaplacianWeights[0] * f / h2;
    star += 2.0 * sum_cm * std::abs(f) / h2;
    for (int b = a + 1; b < 3; ++b)
      mixed += std::abs(beta * 2.0 * n[a] * n[b]) * sum_cm / (g.spacing(a) * g.spacing(b));
  }
  return std::abs(centre) + star + mixed;
}

/// The four medium parameters of a point; consecutive points often share them (constant and
/// layered models), so the trigonometry is done once per run of equal values.
struct PointMedium {
  float epsilon = 0, delta = 0, theta = 0, phi = 0;
  bool operator==(const PointMedium& o) const {
    return epsilon == o.epsilon && delta == o.delta && theta == o.theta && phi == o.phi;
  }
};

PointMedium medium_at(const TtiModel& m, std::size_t n) {
  return PointMedium{m.epsilon[n], m.delta[n], m.theta[n], m.phi.empty() ? 0.0f : m.phi[n]};
}

/// InputError for a bad value at point (i, j, k).
[[noreturn]] void reject(const std::string& where, const Grid& g, int i, int j, int k,
                         const std::string& what) {
  throw InputError(where + ": at " + point_name(g, i, j, k) + ": " + what);
}

double degrees(double radians) {
  return radians * 180.0 / kPi;
}

} // namespace

void validate_tti_model(const Grid& g, const TtiModel& m, const std::string& where) {
  const std::size_t n = g.points();
  auto check_size = [&](const std::vector<float>& a, const char* name) {
    if (a.size() != n) {
      throw InputError(where + ": " + name + " has " + std::to_string(a.size()) +
                       " values for a grid of " + std::to_string(n) + " points");
    }
  };
  check_size(m.vp, "vp");
  check_size(m.epsilon, "epsilon");
  check_size(m.delta, "delta");
  check_size(m.theta, "theta");
  if (!m.phi.empty()) check_size(m.phi, "phi");
  const double theta_max = kPi / 2 + kTtiAngleSlack, phi_max = kPi + kTtiAngleSlack;
  std::size_t idx = 0;
  for (int k = 0; k < g.nz; ++k) {
    for (int j = 0; j < g.ny; ++j) {
      for (int i = 0; i < g.nx; ++i, ++idx) {
        const double vp = m.vp[idx], eps = m.epsilon[idx], del = m.delta[idx];
        const double theta = m.theta[idx], phi = m.phi.empty() ? 0.0 : m.phi[idx];
        if (!(std::isfinite(vp) && vp > 0)) {
          reject(where, g, i, j, k, "vp " + num(vp) + " m/s; allowed: a finite velocity > 0");
        }
        if (!std::isfinite(eps) || !std::isfinite(del)) {
          reject(where, g, i, j, k,
                 "epsilon " + num(eps) + ", delta " + num(del) + "; allowed: finite values");
        }
        if (!(del > -0.5)) {
          reject(where, g, i, j, k,
                 "delta " + num(del) +
                     " makes 1 + 2 delta <= 0 (no real P velocity); allowed: delta > -0.5");
        }
        if (eps < del) {
          reject(where, g, i, j, k,
                 "epsilon " + num(eps) + " < delta " + num(del) +
                     ": the coupled p-q system is unstable there; allowed: epsilon >= delta");
        }
        if (!(eps - del < kTtiAnisotropyMax && del < kTtiAnisotropyMax)) {
          reject(where, g, i, j, k,
                 "epsilon " + num(eps) + ", delta " + num(del) +
                     " do not fit the medium's 16-bit floats (docs/tti.md); allowed: delta < " +
                     num(kTtiAnisotropyMax) + " and epsilon - delta < " + num(kTtiAnisotropyMax));
        }
        if (!(std::abs(theta) <= theta_max)) {
          reject(where, g, i, j, k,
                 "tilt theta " + num(theta) + " (" + num(degrees(theta)) +
                     " degrees if radians) is out of range; angles are in radians; allowed: "
                     "-pi/2 <= theta <= pi/2");
        }
        if (!(std::abs(phi) <= phi_max)) {
          reject(where, g, i, j, k,
                 "azimuth phi " + num(phi) + " (" + num(degrees(phi)) +
                     " degrees if radians) is out of range; angles are in radians; allowed: "
                     "-pi <= phi <= pi");
        }
      }
    }
  }
}

bool tti_model_has_azimuth(const TtiModel& model) {
  for (std::size_t n = 0; n < model.phi.size(); ++n)
    if (model.phi[n] != 0.0f && model.theta[n] != 0.0f) return true;
  return false;
}

bool tti_layer_has_elliptic_point(const Grid& g, const LayerWidths& layer, const TtiModel& m) {
  if (!layer.any()) return false;
  return any_layer_point(make_regions(g, layer), [&](int i, int j, int k) {
    const std::size_t n = (static_cast<std::size_t>(k) * g.ny + j) * g.nx + i;
    // The encoding build_tti_problem stores (the model is valid: no throw).
    const double two_emd = 2.0 * (static_cast<double>(m.epsilon[n]) - m.delta[n]);
    return tti_layer_driven(tti_half_to_float(tti_half_bits(two_emd, "2 (epsilon - delta)")));
  });
}

std::array<double, 3> tti_symmetry_axis(double theta, double phi) {
  const double s = std::sin(theta);
  return {s * std::cos(phi), s * std::sin(phi), std::cos(theta)};
}

double tti_gershgorin_bound(const Grid& g, double epsilon, double delta, double theta, double phi) {
  const std::array<double, 3> n = tti_symmetry_axis(theta, phi);
  // Operator on (p, q): [[A, B], [C, C]] with A = (1 + 2d) L - 2d H, B = (1 + 2d)(L - H),
  // C = 2(e - d)(L - H). Column of p: |A| + |C|; column of q: |B| + |C|.
  const double a = 1.0 + 2.0 * delta, c = 2.0 * (epsilon - delta);
  const double col_c = abs_sum(g, n, c, -c);
  const double col_p = abs_sum(g, n, a, -2.0 * delta) + col_c;
  const double col_q = abs_sum(g, n, a, -a) + col_c;
  return std::max(col_p, col_q);
}

double tti_dt_limit(const Grid& g, const TtiModel& m, double vmax) {
  const std::size_t n = g.points();
  if (m.vp.size() != n || n == 0) throw std::invalid_argument("tti_dt_limit: model size");
  double model_vmax = 0, eps_max = -1e30, worst = 0;
#pragma omp parallel reduction(max : model_vmax, eps_max, worst) if (n > 100000)
  {
    PointMedium last;
    double last_bound = -1;
#pragma omp for schedule(static)
    for (std::int64_t idx = 0; idx < static_cast<std::int64_t>(n); ++idx) {
      const auto u = static_cast<std::size_t>(idx);
      const PointMedium pm = medium_at(m, u);
      if (last_bound < 0 || !(pm == last)) {
        last_bound = tti_gershgorin_bound(g, pm.epsilon, pm.delta, pm.theta, pm.phi);
        last = pm;
      }
      const double vp = m.vp[u];
      model_vmax = std::max(model_vmax, vp);
      eps_max = std::max(eps_max, static_cast<double>(pm.epsilon));
      worst = std::max(worst, vp * vp * last_bound);
    }
  }
  if (vmax <= 0) vmax = model_vmax;
  const double scale = (vmax / model_vmax) * (vmax / model_vmax);
  const double lb = laplacian_bound(g);
  const double iso = vmax * vmax * (1.0 + 2.0 * std::max(eps_max, 0.0)) * lb * lb;
  return 2.0 / std::sqrt(std::max(iso, worst * scale));
}

TtiPlan make_tti_plan(const Grid& g, const TtiModel& m, const TtiPlanOptions& o) {
  validate_tti_model(g, m);
  TtiPlan p;
  p.grid = g;
  if (o.steps < 0 || (o.steps == 0 && !(o.duration && *o.duration > 0))) {
    throw InputError("tti plan: steps " + std::to_string(o.steps) +
                     " and no positive duration; allowed: steps > 0, or a duration > 0");
  }
  const double model_vmax = *std::max_element(m.vp.begin(), m.vp.end());
  p.vmax = model_vmax;
  if (o.vmax) {
    if (!(*o.vmax >= model_vmax)) {
      throw InputError("tti plan: vmax " + num(*o.vmax) + " m/s is below the model's largest vp " +
                       num(model_vmax) +
                       " m/s: the time step would be unstable; allowed: >= " + num(model_vmax));
    }
    p.vmax = *o.vmax;
  }
  p.epsilon_max = *std::max_element(m.epsilon.begin(), m.epsilon.end());
  p.speed_max = p.vmax * std::sqrt(1.0 + 2.0 * std::max(p.epsilon_max, 0.0));
  p.dt_limit_iso = stable_dt_limit(g, p.vmax);
  p.dt_limit = tti_dt_limit(g, m, p.vmax);
  if (o.dt) {
    if (!(*o.dt > 0 && *o.dt <= p.dt_limit)) {
      throw InputError("tti plan: dt " + num(*o.dt) + " s is outside the stable range (limit " +
                       num(p.dt_limit) + " s at cfl = 1, fastest P wave " + num(p.speed_max) +
                       " m/s); allowed: 0 < dt <= " + num(p.dt_limit));
    }
    p.dt = *o.dt;
  } else {
    if (!(o.cfl > 0 && o.cfl <= 1)) {
      throw InputError("tti plan: cfl " + num(o.cfl) + "; allowed: 0 < cfl <= 1");
    }
    p.dt = o.cfl * p.dt_limit;
  }
  p.cfl = p.dt / p.dt_limit;
  if (o.steps > 0) {
    p.steps = o.steps;
  } else {
    // In double first: a long duration at a small dt is more steps than an int holds.
    const double steps = std::ceil(*o.duration / p.dt - 1e-9);
    if (!(steps <= static_cast<double>(kMaxSteps))) {
      throw InputError(o.duration_key + ": steps (duration / dt, dt = " + num(p.dt) +
                       " s) = " + format_number(steps) + " is not allowed: at most " +
                       std::to_string(kMaxSteps) +
                       " (2^31 - 2: the traces hold steps + 1 samples)");
    }
    p.steps = std::max(1, static_cast<int>(steps));
  }

  if (o.layer_width) {
    const int w = *o.layer_width;
    if (w < 0) throw InputError("tti plan: layer width " + std::to_string(w) + "; allowed: >= 0");
    p.layer = LayerWidths{w, w, w, w, w, w};
  } else {
    if (!(o.fmax > 0)) {
      throw InputError("tti plan: the layer width needs a maximum frequency; give fmax > 0 or a "
                       "layer width");
    }
    int w[3];
    for (int a = 0; a < 3; ++a)
      w[a] = layer_width_points(o.ntaper, p.speed_max, o.fmax, g.spacing(a));
    p.layer = LayerWidths{w[0], w[0], w[1], w[1], w[2], w[2]};
  }
  // A free surface replaces the top layer, as in the acoustic plan.
  p.free_surface = o.free_surface;
  if (o.free_surface) p.layer.z_lo = 0;
  for (int a = 0; a < 3; ++a) {
    if (p.layer.on(a, false) + p.layer.on(a, true) >= g.extent(a)) {
      throw InputError("tti plan: a layer of " + std::to_string(p.layer.on(a, false)) +
                       " points on each " + std::string(1, "xyz"[a]) +
                       " face is wider than half the grid (" + std::to_string(g.extent(a)) +
                       " points); allowed: 2 x width < " + std::to_string(g.extent(a)));
    }
  }
  return p;
}

TtiProblem build_tti_problem(const TtiPlan& plan, const TtiModel& model,
                             const std::vector<TtiSource>& sources,
                             const std::vector<Vec3>& receivers, Interpolation interpolation) {
  const Grid& g = plan.grid;
  validate_tti_model(g, model);
  if (plan.steps <= 0 || !(plan.dt > 0)) {
    throw InputError("tti simulation: the plan has no steps or no time step");
  }
  TtiProblem p;
  p.grid = g;
  p.layer = plan.layer;
  p.free_surface = plan.free_surface;
  p.dt = plan.dt;
  p.steps = plan.steps;
  p.layout = make_field_layout(g.nx, g.ny, g.nz, plan.layer.x_lo);
  p.coefs = make_tti_coefs(g);
  p.regions = make_regions(g, plan.layer);
  const auto size = static_cast<std::size_t>(p.layout.size);
  p.vp2dt2.assign(size, 0.0f);
  p.aniso.assign(size, 0u);
  p.axis_xz.assign(size, 0u);

  // The medium, per point: vp2dt2, 2 delta, 2 (epsilon - delta), the axis (docs/tti.md).
  const bool azimuth = tti_model_has_azimuth(model);
  if (azimuth) p.axis_y.assign(size, 0);
  const FieldLayout& layout = p.layout;
  // The encoders throw on values the model check rejects; an exception must not leave the
  // parallel region, so the first one is kept and thrown after it.
  std::exception_ptr failure;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < g.nz; ++k) {
    PointMedium last;
    std::array<double, 3> axis{};
    bool have_last = false;
    try {
      for (int j = 0; j < g.ny; ++j) {
        for (int i = 0; i < g.nx; ++i) {
          const std::size_t n = (static_cast<std::size_t>(k) * g.ny + j) * g.nx + i;
          const std::int64_t idx = layout.index(i, j, k);
          const PointMedium pm = medium_at(model, n);
          if (!have_last || !(pm == last)) {
            axis = tti_symmetry_axis(pm.theta, pm.phi);
            last = pm;
            have_last = true;
          }
          const double c = model.vp[n] * plan.dt;
          p.vp2dt2[idx] = static_cast<float>(c * c);
          p.aniso[idx] = tti_pair(tti_half_bits(2.0 * pm.delta, "2 delta"),
                                  tti_half_bits(2.0 * (static_cast<double>(pm.epsilon) - pm.delta),
                                                "2 (epsilon - delta)"));
          p.axis_xz[idx] = tti_pair(static_cast<std::uint16_t>(tti_axis_fixed(axis[0])),
                                    static_cast<std::uint16_t>(tti_axis_fixed(axis[2])));
          if (azimuth) p.axis_y[idx] = tti_axis_fixed(axis[1]);
        }
      }
    } catch (...) {
#pragma omp critical(tti_medium_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (plan.layer.any()) p.eta = build_eta(g, plan.layer, layout, plan.dt, plan.speed_max);

  set_tti_shot(p, sources, receivers, interpolation);
  return p;
}

void use_tti_cpml(TtiProblem& p, const TtiPlan& plan, const CpmlParams& params) {
  if (!plan.layer.any()) return;
  p.cpml = make_cpml_profile(plan.grid, plan.layer, plan.dt, plan.speed_max, params);
  p.boundary = BoundaryType::Cpml;
  std::vector<float>().swap(p.eta);
}

void set_tti_shot(TtiProblem& p, const std::vector<TtiSource>& sources,
                  const std::vector<Vec3>& receivers, Interpolation interpolation) {
  const Grid& g = p.grid;
  const FieldLayout& layout = p.layout;
  p.sources = TapTable{};
  p.receivers = TapTable{};
  p.source_samples.clear();
  if (p.vp2dt2.size() != static_cast<std::size_t>(layout.size))
    throw std::logic_error("set_tti_shot: the problem has no vp2dt2 array (physical sources are "
                           "scaled by it)");
  // Taps: sources into p (physical: vp2dt2 / cell folded into the weight), receivers of p.
  const double cell = g.dx * g.dy * g.dz;
  auto add_taps = [&](TapTable& t, const Vec3& position, const std::string& what, bool physical) {
    std::vector<GridTap> taps;
    try {
      taps = point_taps(g, position, interpolation, p.free_surface);
    } catch (const std::out_of_range& e) {
      throw InputError("tti simulation: " + what + ": " + e.what());
    }
    for (const GridTap& tap : taps) {
      const std::int64_t idx = layout.index(tap.i, tap.j, tap.k);
      const double scale = physical ? p.vp2dt2[static_cast<std::size_t>(idx)] / cell : 1.0;
      t.index.push_back(idx);
      t.weight.push_back(static_cast<float>(tap.weight * scale));
    }
    t.begin.push_back(static_cast<std::int64_t>(t.index.size()));
  };
  p.sources.begin.assign(1, 0);
  p.receivers.begin.assign(1, 0);
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const std::string what = "sources[" + std::to_string(s) + "]";
    if (sources[s].samples.size() < static_cast<std::size_t>(p.steps)) {
      throw InputError("tti simulation: " + what + " has " +
                       std::to_string(sources[s].samples.size()) + " samples for " +
                       std::to_string(p.steps) + " steps");
    }
    add_taps(p.sources, sources[s].position, what, sources[s].injection == Injection::Physical);
    p.source_samples.insert(p.source_samples.end(), sources[s].samples.begin(),
                            sources[s].samples.begin() + p.steps);
  }
  for (std::size_t r = 0; r < receivers.size(); ++r)
    add_taps(p.receivers, receivers[r], "receivers[" + std::to_string(r) + "]", false);
}

} // namespace minimod
