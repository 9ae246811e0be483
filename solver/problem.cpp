#include "solver/problem.hpp"

#include "core/errors.hpp"
#include "core/precision.hpp"
#include "io/limits.hpp"
#include "kernels/device_array.hpp"
#include "kernels/precision_problem.hpp"
#include "kernels/stencil_K.hpp"
#include "solver/interpolation.hpp"
#include "solver/wavelet.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace minimod {
namespace {

/// Damping along one axis at index i (-1 .. n), layers lo/hi points wide.
double axis_eta(int i, int n, int lo, int hi, double dt, double vmax, double h) {
  int d = 0, width = 0;
  if (i < lo) {
    d = lo - i;
    width = lo;
  } else if (i > n - 1 - hi) {
    d = i - (n - 1 - hi);
    width = hi;
  }
  if (d == 0 || width == 0) return 0.0;
  const double a = dt * 3.0 * vmax * std::log(1000.0) / (2.0 * width * h);
  const double r = static_cast<double>(d) / width;
  return a * r * r;
}

/// Append the taps of `position` to `table` as one owner; `scale(i, j, k)` multiplies each weight.
template <typename Scale>
void add_owner(TapTable& table, const Grid& grid, const FieldLayout& layout, const Vec3& position,
               const SourceLoc& loc, Interpolation kind, bool free_surface, Scale scale) {
  if (table.begin.empty()) table.begin.push_back(0);
  std::vector<GridTap> taps;
  try {
    taps = point_taps(grid, position, kind, free_surface);
  } catch (const std::out_of_range& e) {
    throw InputError(loc.where() + ": " + e.what());
  }
  for (const auto& t : taps) {
    table.index.push_back(layout.index(t.i, t.j, t.k));
    table.weight.push_back(static_cast<float>(t.weight * scale(t.i, t.j, t.k)));
  }
  table.begin.push_back(static_cast<std::int64_t>(table.index.size()));
}

} // namespace

EtaProfiles eta_profiles(const Grid& g, const LayerWidths& w, double dt, double vmax) {
  EtaProfiles e;
  e.x.resize(static_cast<std::size_t>(g.nx) + 2);
  e.y.resize(static_cast<std::size_t>(g.ny) + 2);
  e.z.resize(static_cast<std::size_t>(g.nz) + 2);
  for (int i = -1; i <= g.nx; ++i)
    e.x[i + 1] = axis_eta(i, g.nx, w.x_lo, w.x_hi, dt, vmax, g.dx);
  for (int j = -1; j <= g.ny; ++j)
    e.y[j + 1] = axis_eta(j, g.ny, w.y_lo, w.y_hi, dt, vmax, g.dy);
  for (int k = -1; k <= g.nz; ++k)
    e.z[k + 1] = axis_eta(k, g.nz, w.z_lo, w.z_hi, dt, vmax, g.dz);
  return e;
}

std::vector<float> build_eta(const Grid& g, const EtaProfiles& e, const FieldLayout& l) {
  std::vector<float> eta(static_cast<std::size_t>(l.size), 0.0f);
  const std::vector<double>&ex = e.x, &ey = e.y, &ez = e.z;
#pragma omp parallel for schedule(static)
  for (int k = -1; k <= g.nz; ++k) {
    for (int j = -1; j <= g.ny; ++j) {
      for (int i = -1; i <= g.nx; ++i) {
        eta[l.index(i, j, k)] = static_cast<float>(ex[i + 1] + ey[j + 1] + ez[k + 1]);
      }
    }
  }
  return eta;
}

std::vector<float> build_eta(const Grid& g, const LayerWidths& w, const FieldLayout& l, double dt,
                             double vmax) {
  return build_eta(g, eta_profiles(g, w, dt, vmax), l);
}

CpmlParams cpml_params(const BoundarySpec& boundary, double fmax) {
  CpmlParams c;
  c.reflection = boundary.reflection.value_or(1e-4);
  c.power = boundary.power.value_or(2.0);
  c.alpha = boundary.alpha.value_or(3.14159265358979323846 * fmax / 2.5);
  c.kappa = boundary.kappa.value_or(1.0);
  return c;
}

std::vector<float> build_layer(const Survey& s, const Plan& plan, Problem& p) {
  p.boundary = s.boundary.type;
  p.cpml = CpmlProfile{};
  if (!plan.layer.any()) return {};
  if (p.boundary == BoundaryType::Cpml) {
    p.cpml = make_cpml_profile(plan.grid, plan.layer, plan.dt, plan.vmax,
                               cpml_params(s.boundary, plan.fmax));
    return {};
  }
  return build_eta(plan.grid, plan.layer, p.layout, plan.dt, plan.vmax);
}

namespace {

/// set_shot_taps with the model read through `velocity_at(x-fastest index)`.
template <typename VelocityAt>
void set_taps(const Survey& s, const Plan& plan, VelocityAt velocity_at, AcousticProblem& p) {
  const Grid& g = plan.grid;
  p.sources = TapTable{};
  p.receivers = TapTable{};
  p.source_samples.clear();
  const double cell = g.dx * g.dy * g.dz;
  const Interpolation kind = s.interpolation;
  const bool fs = s.boundary.free_surface;
  p.source_samples.reserve(s.sources.size() * static_cast<std::size_t>(plan.steps));
  for (std::size_t n = 0; n < s.sources.size(); ++n) {
    const SourceSpec& src = s.sources[n];
    if (src.injection == Injection::Physical) {
      // u += (c dt)^2 s(t) / (dx dy dz): the point force of the PDE, spread over the taps.
      add_owner(p.sources, g, p.layout, src.position, src.loc, kind, fs, [&](int i, int j, int k) {
        const double c = velocity_at((static_cast<std::size_t>(k) * g.ny + j) * g.nx + i) * plan.dt;
        return static_cast<double>(static_cast<float>(c * c)) / cell;
      });
    } else {
      add_owner(p.sources, g, p.layout, src.position, src.loc, kind, fs,
                [](int, int, int) { return 1.0; });
    }
    const std::string key = src.wavelet.loc.key.empty()
                                ? "sources[" + std::to_string(n) + "].wavelet.file"
                                : src.wavelet.loc.where() + ".file";
    const auto samples = sample_wavelet(src.wavelet, plan.dt, plan.steps, key);
    p.source_samples.insert(p.source_samples.end(), samples.begin(), samples.end());
  }
  for (const auto& r : s.receivers) {
    add_owner(p.receivers, g, p.layout, r.position, r.loc, kind, fs,
              [](int, int, int) { return 1.0; });
  }
  if (p.receivers.begin.empty()) p.receivers.begin.push_back(0);
  if (p.sources.begin.empty()) p.sources.begin.push_back(0);
  p.field_scale = p.precision == Precision::Float16 ? source_field_scale(p) : 1.0f;
}

/// The problem without its medium: grid, regions, layout, time axis, layer (vp2dt2 empty).
AcousticProblem problem_frame(const Survey& s, const Plan& plan) {
  AcousticProblem p;
  const Grid& g = plan.grid;
  p.grid = g;
  p.layer = plan.layer;
  p.regions = make_regions(g, plan.layer);
  p.layout = make_field_layout(g.nx, g.ny, g.nz, plan.layer.x_lo);
  p.coefs = make_stencil_coefs(g);
  p.dt = plan.dt;
  p.steps = plan.steps;
  p.free_surface = s.boundary.free_surface;
  p.precision = s.precision;
  return p;
}

/// The layer's damping (and profiles) of `p`, after the host memory it needs was checked.
void add_layer(const Survey& s, const Plan& plan, AcousticProblem& p) {
  p.eta = build_layer(s, plan, p);
  if (!p.eta.empty()) p.eta_axes = eta_profiles(plan.grid, plan.layer, plan.dt, plan.vmax);
}

} // namespace

void set_shot_taps(const Survey& s, const Plan& plan, const std::vector<float>& velocity,
                   AcousticProblem& p) {
  set_taps(
      s, plan, [&](std::size_t idx) { return velocity[idx]; }, p);
}

void set_shot_taps(const Survey& s, const Plan& plan, const DeviceArray& velocity,
                   AcousticProblem& p) {
  // The taps' points first (weights unused), their velocities gathered on the device in one
  // go, then the taps as from a host model.
  std::vector<std::int64_t> points;
  set_taps(
      s, plan,
      [&](std::size_t idx) {
        points.push_back(static_cast<std::int64_t>(idx));
        return 1.0f;
      },
      p);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  const std::vector<float> values = device_array_values(velocity, points);
  set_taps(
      s, plan,
      [&](std::size_t idx) {
        const auto at =
            std::lower_bound(points.begin(), points.end(), static_cast<std::int64_t>(idx));
        return values[static_cast<std::size_t>(at - points.begin())];
      },
      p);
}

AcousticProblem build_acoustic_problem(const Survey& s, const Plan& plan,
                                       const std::vector<float>& velocity) {
  check_precision_support(s);
  AcousticProblem p = problem_frame(s, plan);
  const Grid& g = plan.grid;
  // The padded medium and damping, and the source samples: refused with the sizes when they do
  // not fit (the model is already held, and counted in what is available). A float16 run adds
  // the medium's 16-bit codes.
  const bool eta = plan.layer.any() && s.boundary.type == BoundaryType::Minimod;
  const bool half = s.precision == Precision::Float16;
  require_host_memory(static_cast<double>(p.layout.size) * (4.0 * (eta ? 2 : 1) + (half ? 2 : 0)) +
                          4.0 * static_cast<double>(s.sources.size()) * plan.steps,
                      "the padded medium (vp^2 dt^2" + std::string(eta ? ", eta" : "") +
                          std::string(half ? ", its 16-bit codes" : "") +
                          ") and the source samples");
  // Straight into the padded layout (ghosts and padding stay zero), in parallel.
  p.vp2dt2.assign(static_cast<std::size_t>(p.layout.size), 0.0f);
  const FieldLayout& l = p.layout;
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < g.nz; ++k) {
    for (int j = 0; j < g.ny; ++j) {
      const std::size_t row = (static_cast<std::size_t>(k) * g.ny + j) * g.nx;
      float* dst = p.vp2dt2.data() + l.index(0, j, k);
      for (int i = 0; i < g.nx; ++i) {
        const double c = velocity[row + i] * plan.dt;
        dst[i] = static_cast<float>(c * c);
      }
    }
  }
  if (half) code_medium(p);
  add_layer(s, plan, p);
  set_shot_taps(s, plan, velocity, p);
  return p;
}

AcousticProblem build_acoustic_problem(const Survey& s, const Plan& plan,
                                       const DeviceArray& velocity) {
  if (s.precision == Precision::Float16) {
    const std::string model =
        s.model.file_loc.key.empty() ? std::string("model.file") : s.model.file_loc.where();
    const std::string where =
        s.precision_loc.key.empty() ? std::string("precision") : s.precision_loc.where();
    throw InputError(where + ": float16 is not available with a model in GPU memory (" + model +
                     ": " + velocity.owner +
                     ") yet; allowed: precision: float32, or a host array or a file as the model");
  }
  AcousticProblem p = problem_frame(s, plan);
  const bool eta = plan.layer.any() && s.boundary.type == BoundaryType::Minimod;
  require_host_memory(4.0 * static_cast<double>(p.layout.size) * (eta ? 1 : 0) +
                          4.0 * static_cast<double>(s.sources.size()) * plan.steps,
                      "the damping (eta) and the source samples");
  p.device_velocity = &velocity; // the GPU backend builds (c dt)^2 from it (kernels/device_array)
  add_layer(s, plan, p);
  set_shot_taps(s, plan, velocity, p);
  return p;
}

} // namespace minimod
