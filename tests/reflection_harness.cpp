#include "reflection_harness.hpp"

#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "kernels/stencil_K.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace minimod {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct Geometry {
  int nx = 0, ny = 0, nz = 0;
  int sx = 0, sy = 0, sz = 0;
  std::array<int, kReflectionAngles.size()> rz{}; ///< receiver z index per angle (x = sx, y = sy)
};

/// The grid of the measurement: the face under test at high x with `width` points of layer,
/// `extension` more points before it (the reference).
Geometry geometry(const ReflectionSetup& s, int width, int extension) {
  Geometry g;
  const int margin = 6; // points between a source or receiver and a layer of another face
  g.sx = s.other_width + margin;
  g.nx = g.sx + s.distance + extension + width;
  g.sy = s.other_width + margin;
  g.ny = 2 * g.sy + 1;
  g.sz = s.other_width + margin;
  int last = g.sz;
  for (std::size_t n = 0; n < kReflectionAngles.size(); ++n) {
    const double offset = 2.0 * s.distance * std::tan(kReflectionAngles[n] * kPi / 180.0);
    g.rz[n] = g.sz + static_cast<int>(std::lround(offset));
    last = std::max(last, g.rz[n]);
  }
  g.nz = last + margin + s.other_width + 1;
  return g;
}

/// The traces [receiver][step] of one run.
std::vector<std::vector<float>> run(const ReflectionSetup& s, const Geometry& geo,
                                    const LayerWidths& layer, BoundaryType type,
                                    const CpmlParams& params, double dt, int steps) {
  AcousticProblem p;
  p.grid = Grid{geo.nx, geo.ny, geo.nz, s.h, s.h, s.h, 0, 0, 0};
  p.layer = layer;
  p.regions = make_regions(p.grid, layer);
  p.layout = make_field_layout(geo.nx, geo.ny, geo.nz, layer.x_lo);
  p.coefs = make_stencil_coefs(p.grid);
  p.dt = dt;
  p.steps = steps;
  const float c2 = static_cast<float>(s.velocity * dt * s.velocity * dt);
  p.vp2dt2.assign(static_cast<std::size_t>(p.layout.size), 0.0f);
  for (int k = 0; k < geo.nz; ++k)
    for (int j = 0; j < geo.ny; ++j)
      for (int i = 0; i < geo.nx; ++i)
        p.vp2dt2[static_cast<std::size_t>(p.layout.index(i, j, k))] = c2;
  p.boundary = type;
  if (type == BoundaryType::Cpml) {
    p.cpml = make_cpml_profile(p.grid, layer, dt, s.velocity, params);
  } else {
    p.eta = build_eta(p.grid, layer, p.layout, dt, s.velocity);
  }
  // One physical point source and one tap a receiver.
  p.sources.begin = {0, 1};
  p.sources.index = {p.layout.index(geo.sx, geo.sy, geo.sz)};
  p.sources.weight = {c2 / static_cast<float>(s.h * s.h * s.h)};
  const double t0 = 1.5 / s.peak;
  p.source_samples.resize(static_cast<std::size_t>(steps));
  for (int n = 0; n < steps; ++n) {
    const double a = kPi * s.peak * (n * dt - t0);
    p.source_samples[static_cast<std::size_t>(n)] =
        static_cast<float>((1 - 2 * a * a) * std::exp(-a * a));
  }
  p.receivers.begin = {0};
  for (const int rz : geo.rz) {
    p.receivers.index.push_back(p.layout.index(geo.sx, geo.sy, rz));
    p.receivers.weight.push_back(1.0f);
    p.receivers.begin.push_back(static_cast<std::int64_t>(p.receivers.index.size()));
  }

  auto backend = make_cpu_backend();
  RegionKernels kernels;
  kernels.fill(kernel_registry().find("cpu", BackendKind::Cpu, Physics::Acoustic));
  backend->setup(p, kernels);
  for (int n = 0; n < steps; ++n)
    backend->step(n);
  std::vector<float> traces;
  backend->fetch_traces(traces);
  std::vector<std::vector<float>> out(geo.rz.size());
  const std::size_t samples = static_cast<std::size_t>(steps) + 1;
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r].assign(traces.begin() + static_cast<std::ptrdiff_t>(r * samples),
                  traces.begin() + static_cast<std::ptrdiff_t>((r + 1) * samples));
  return out;
}

} // namespace

ReflectionRow measure_reflection(BoundaryType type, int width, CpmlParams params,
                                 const ReflectionSetup& s) {
  if (width < 1) throw std::invalid_argument("reflection harness: width must be >= 1");
  const double fmax = 2.5 * s.peak;
  const CpmlParams defaults{};
  if (params.reflection < 0) params.reflection = defaults.reflection;
  if (params.power < 0) params.power = defaults.power;
  if (params.alpha < 0) params.alpha = kPi * fmax / 2.5;
  if (params.kappa < 0) params.kappa = defaults.kappa;

  // The window: the source's delay, the longest path of a wave returned by the layer and the
  // pulse. A layer returns waves from its inner edge (the specular ray of each receiver) and from
  // its outer face, as if from an image 2 (distance + width) away: the longest is the outer
  // face's return to the farthest receiver.
  const double t0 = 1.5 / s.peak;
  const double offset = s.distance * std::tan(kReflectionAngles.back() * kPi / 180.0);
  const double depth = s.distance + width;
  const double longest = 2.0 * s.h * std::sqrt(depth * depth + offset * offset);
  const double window = t0 + longest / s.velocity + 1.2 / s.peak;
  // The reference's face is far enough that its echo (path 2 (distance + extension), starting
  // half a pulse early) arrives after the window.
  const double early = t0 - 0.7 / s.peak;
  const int extension =
      static_cast<int>(std::ceil((window - early) * s.velocity / (2 * s.h))) - s.distance + 2;
  const Geometry test = geometry(s, width, 0);
  const Geometry reference = geometry(s, width, extension);
  const LayerWidths layer{s.other_width, width,         s.other_width,
                          s.other_width, s.other_width, s.other_width};
  const Grid probe{test.nx, test.ny, test.nz, s.h, s.h, s.h, 0, 0, 0};
  const double dt = 0.8 * stable_dt_limit(probe, s.velocity);
  const int steps = static_cast<int>(std::ceil(window / dt));

  const auto face = run(s, test, layer, type, params, dt, steps);
  const auto ref = run(s, reference, layer, type, params, dt, steps);

  // The direct wave's peak at the 45-degree receiver (2 x distance from the source) in the
  // reference, where the face returns nothing within the window.
  std::size_t r45 = 0;
  while (kReflectionAngles[r45] != 45.0)
    ++r45;
  float direct = 0.0f;
  for (const float v : ref[r45])
    direct = std::max(direct, std::fabs(v));
  const double r_direct = 2.0 * s.distance;

  ReflectionRow row{};
  for (std::size_t n = 0; n < kReflectionAngles.size(); ++n) {
    float reflected = 0.0f;
    std::size_t at = 0;
    for (std::size_t t = 0; t < face[n].size(); ++t)
      if (std::fabs(face[n][t] - ref[n][t]) > reflected) {
        reflected = std::fabs(face[n][t] - ref[n][t]);
        at = t;
      }
    if (std::getenv("REFLECTION_DEBUG"))
      std::fprintf(stderr, "angle %g: max diff %g at t=%g (arrival %g), steps %d ext %d\n",
                   kReflectionAngles[n], reflected, at * dt,
                   t0 + 2.0 * s.distance * s.h / std::cos(kReflectionAngles[n] * kPi / 180.0) /
                            s.velocity,
                   steps, extension);
    const double image = 2.0 * s.distance / std::cos(kReflectionAngles[n] * kPi / 180.0);
    const double incident = direct * r_direct / image;
    row[n] = 20.0 * std::log10(std::max(static_cast<double>(reflected), 1e-30) / incident);
  }
  return row;
}

std::string reflection_table(const std::vector<int>& widths, const ReflectionSetup& s) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %6s", "layer", "width");
  o << line;
  for (const double a : kReflectionAngles) {
    std::snprintf(line, sizeof line, " %8.0f deg", a);
    o << line;
  }
  o << "\n";
  for (const BoundaryType type : {BoundaryType::Minimod, BoundaryType::Cpml}) {
    for (const int w : widths) {
      const ReflectionRow row = measure_reflection(type, w, {-1, -1, -1, -1}, s);
      std::snprintf(line, sizeof line, "%-8s %6d", boundary_type_name(type), w);
      o << line;
      for (const double db : row) {
        std::snprintf(line, sizeof line, " %9.1f dB", db);
        o << line;
      }
      o << "\n" << std::flush;
    }
  }
  return o.str();
}

} // namespace minimod
