#include "solver/plan.hpp"

#include "core/errors.hpp"
#include "core/field_layout.hpp"
#include "io/segy.hpp"
#include "io/text.hpp"
#include "kernels/cpml.hpp"
#include "kernels/selection.hpp"
#include "kernels/stencil_K.hpp"
#include "models/velocity.hpp"
#include "solver/interpolation.hpp"
#include "solver/simulation.hpp"
#include "solver/wavelet.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <omp.h>
#include <sstream>
#include <utility>

namespace minimod {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Three significant digits, for derived figures.
std::string short_num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// Grid index range [lo, hi] of the metres interval [a, b] along an axis.
void index_range(double a, double b, double origin, double h, int n, int* lo, int* hi) {
  *lo = std::max(0, static_cast<int>(std::ceil((a - origin) / h - 1e-9)));
  *hi = std::min(n - 1, static_cast<int>(std::floor((b - origin) / h + 1e-9)));
}

constexpr double kPi = 3.14159265358979323846;

/// Below this, a velocity in m/s is almost surely one in km/s: no rock or fluid is that slow.
constexpr double kSlowestVelocity = 100;

} // namespace

Grid make_grid(const GridSpec& s) {
  Grid g;
  g.nx = s.shape[0];
  g.ny = s.shape[1];
  g.nz = s.shape[2];
  g.dx = s.spacing[0];
  g.dy = s.spacing[1];
  g.dz = s.spacing[2];
  g.ox = s.origin[0];
  g.oy = s.origin[1];
  g.oz = s.origin[2];
  return g;
}

double laplacian_bound(const Grid& g) {
  double row = std::abs(kLaplacianWeights[0]);
  for (int m = 1; m <= kHalo; ++m)
    row += 2.0 * std::abs(kLaplacianWeights[m]);
  double sum = 0;
  for (int a = 0; a < 3; ++a)
    sum += row / (g.spacing(a) * g.spacing(a));
  return std::sqrt(sum);
}

double stable_dt_limit(const Grid& g, double vmax) {
  return 2.0 / (vmax * laplacian_bound(g));
}

int layer_width_points(double ntaper, double vmax, double fmax, double h) {
  return static_cast<int>(std::ceil(ntaper * vmax / fmax / h - 1e-9));
}

Plan make_plan(const Survey& s, const std::vector<float>& velocity, int steps_override) {
  const Grid g = make_grid(s.grid);
  if (velocity.size() != g.points()) {
    throw InputError("model: " + std::to_string(velocity.size()) + " values for a grid of " +
                     std::to_string(g.points()) + " points");
  }
  const auto [lo, hi] = std::minmax_element(velocity.begin(), velocity.end());
  Plan p = make_plan(s, VelocityRange{*lo, *hi}, steps_override);
  // A model file resampled onto the grid says so, in `validate` and `run` alike.
  const std::string notice = model_file_notice(s.model, g);
  if (!notice.empty()) p.warnings.insert(p.warnings.begin(), notice);
  return p;
}

namespace {

/// The count `value` (computed in double) as an int, or InputError naming `loc` and the limit.
int checked_count(double value, const SourceLoc& loc, const std::string& what,
                  long long limit = kMaxCount) {
  if (!(value <= static_cast<double>(limit))) {
    throw InputError(
        loc.where() + ": " + what + " = " + format_number(value) + " is not allowed: at most " +
        std::to_string(limit) +
        (limit == kMaxCount ? " (2^31 - 1)" : " (2^31 - 2: the traces hold steps + 1 samples)"));
  }
  return static_cast<int>(value);
}

/// The wavelet checks run and validate make before any work (the same samples run computes).
void check_source_wavelets(const Survey& s, const Plan& p) {
  // Every shot of `shots:` shares one wavelet; `sources:` is one shot.
  const std::vector<SourceSpec>& sources = s.shots.empty() ? s.sources : s.shots.front().sources;
  const double nyquist = 0.5 / p.dt;
  for (std::size_t n = 0; n < sources.size(); ++n) {
    const WaveletSpec& w = sources[n].wavelet;
    const std::string key =
        w.loc.key.empty() ? "sources[" + std::to_string(n) + "].wavelet" : w.loc.key;
    const SourceLoc loc{w.loc.file.empty() ? s.path : w.loc.file, w.loc.line, key};
    // An analytic wavelet is evaluated at the steps: above the time step's Nyquist frequency its
    // samples are aliases of another wavelet.
    const bool ricker = w.kind == WaveletSpec::Kind::Ricker;
    if (w.kind != WaveletSpec::Kind::File && wavelet_fmax(w) > nyquist) {
      const double value = ricker ? w.frequency : w.fmax;
      // A model in km/s makes dt a thousand times too large: that, not the wavelet, is the fault.
      const std::string cause =
          p.model_vmax < kSlowestVelocity
              ? s.model.loc.where() + ": velocities look like km/s (the model's largest is " +
                    num(p.model_vmax) + " m/s; the survey's velocities are in m/s, 1500 for " +
                    "water, not 1.5), which makes the time step " + num(p.dt) +
                    " s, a thousand times too long; hence: "
              : "";
      throw InputError(
          cause + SourceLoc{loc.file, loc.line, key + (ricker ? ".frequency" : ".fmax")}.where() +
          ": " + format_number(value) + " Hz is not allowed: " +
          (ricker ? "2.5 x frequency (the Ricker's highest frequency)" : "fmax") +
          " at most the Nyquist frequency 1/(2 dt) = " + format_number(nyquist) +
          " Hz of the time step dt = " + format_number(p.dt) + " s");
    }
    check_wavelet(w, p.dt, p.steps,
                  loc.where() + (w.kind == WaveletSpec::Kind::File ? ".file" : ""));
  }
}

/// The survey's `kernel:` names kernels this binary has, whichever backend runs it: `run` leaves
/// the key out where `auto` falls back to the CPU (a survey written for a GPU still runs there),
/// and would otherwise refuse a name that does not exist only on a machine with a GPU. Checked
/// for the grammar and the names (regions left empty: what can run a region is the run's check),
/// against the GPU backend's kernels and then the CPU's. A build without GPU kernels cannot tell
/// a GPU kernel's name from a wrong one: there the run's own check is all.
void check_survey_kernel(const Survey& s) {
  if (!s.kernel || is_auto_kernel_spec(*s.kernel)) return;
  const Physics physics = s.physics == "tti" ? Physics::Tti : Physics::Acoustic;
  if (kernel_registry().names(kGpuBackend, physics).empty()) return;
  std::array<Region, kRegionCount> none{};
  for (int r = 0; r < kRegionCount; ++r)
    none[static_cast<std::size_t>(r)].id = static_cast<RegionId>(r);
  const FieldLayout layout = make_field_layout(1, 1, 1, 0);
  const std::string what = s.kernel_loc.where();
  try {
    resolve_kernels(*s.kernel, kGpuBackend, physics, none, layout, what);
  } catch (const InputError& gpu) {
    try {
      resolve_kernels(*s.kernel, BackendKind::Cpu, physics, none, layout, what);
      return;
    } catch (const InputError& cpu) {
      // A spec of CPU kernels gets the CPU backend's error (its grammar, its regions); any other
      // the GPU backend's, which lists the kernels a survey's key usually names.
      if (std::string(gpu.what()).find("(it is a cpu kernel") != std::string::npos) throw cpu;
    }
    throw gpu;
  }
}

/// Round trace intervals to propose for SEG-Y: 1 or 2 ms where they sample the band (at most
/// 1/(2 fmax)) and are no finer than dt, else the nearest such of 0.25 .. 8 ms.
std::string round_intervals(double dt, double fmax) {
  const double finest = dt * (1 - 1e-9);
  const double coarsest = fmax > 0 ? 0.5 / fmax : 1.0;
  std::vector<double> picked;
  for (double c : {0.001, 0.002, 0.0005, 0.004, 0.00025, 0.008})
    if (c >= finest && c <= coarsest && picked.size() < 2) picked.push_back(c);
  if (picked.empty()) {
    return num(std::max(1.0, std::floor(dt * 1e6)) * 1e-6) +
           " s (a whole number of microseconds at or below dt)";
  }
  std::sort(picked.begin(), picked.end());
  std::string out;
  for (double c : picked)
    out += (out.empty() ? "" : " or ") + num(c) + " s (" + num(c * 1e3) + " ms)";
  return out + ", which sample the band up to " + num(fmax) + " Hz";
}

/// "[x, y, z]" in metres.
std::string position_text(const Vec3& x) {
  return "[" + num(x[0]) + ", " + num(x[1]) + ", " + num(x[2]) + "]";
}

/// How many positions met a condition, and the first of them.
struct Offenders {
  std::size_t count = 0;
  std::string first;
  void add(const std::string& what) {
    if (count++ == 0) first = what;
  }
  /// "3 of 120 receivers (the first: ...)"
  std::string text(std::size_t total, const std::string& noun) const {
    return std::to_string(count) + " of " + std::to_string(total) + " " + noun +
           " (the first: " + first + ")";
  }
};

/// The dominant (peak) frequency of a wavelet: a Ricker's peak, else its highest / 2.5 (the ratio
/// of a Ricker's highest frequency to its peak).
double dominant_frequency(const WaveletSpec& w) {
  if (w.kind == WaveletSpec::Kind::Ricker) return w.frequency;
  return wavelet_fmax(w, w.loc.where() + ".file") / 2.5;
}

/// The sources of every shot (`sources:` is one shot).
std::vector<std::vector<SourceSpec>> shot_sources(const Survey& s) {
  std::vector<std::vector<SourceSpec>> shots;
  for (const auto& shot : s.shots)
    shots.push_back(shot.sources);
  if (shots.empty()) shots.push_back(s.sources);
  return shots;
}

/// Where receiver `r` lies in shot k of `shots` (shot_sources): it moves with each shot's first
/// source, or stays put.
Vec3 receiver_in_shot(const Survey& s, const std::vector<std::vector<SourceSpec>>& shots,
                      std::size_t k, const ReceiverSpec& r) {
  Vec3 x = r.position;
  if (s.receivers_move && !shots[k].empty()) {
    const Vec3 anchor = s.sources.empty() ? Vec3{} : s.sources.front().position;
    for (int a = 0; a < 3; ++a)
      x[a] = r.position[a] - anchor[a] + shots[k].front().position[a];
  }
  return x;
}

/// Every shot's sources and every shot's receivers against the free surface and the absorbing
/// layer; the interior the layer leaves against a wavelength. Sources on or above a free surface
/// are refused (they inject nothing); everything else is a warning with the count and the first.
void check_positions(const Survey& s, const SurveyTrapInputs& p,
                     std::vector<std::string>& warnings) {
  const Grid& g = p.grid;
  const Box inner{p.layer.x_lo,        g.nx - p.layer.x_hi, p.layer.y_lo,
                  g.ny - p.layer.y_hi, p.layer.z_lo,        g.nz - p.layer.z_hi};
  const auto in_layer = [&](const Vec3& x) {
    const int ci = static_cast<int>(std::lround((x[0] - g.ox) / g.dx));
    const int cj = static_cast<int>(std::lround((x[1] - g.oy) / g.dy));
    const int ck = static_cast<int>(std::lround((x[2] - g.oz) / g.dz));
    return !inner.contains(ci, cj, ck);
  };
  const bool surface = s.boundary.free_surface;
  const double tolerance = 1e-6 * g.dz;
  const auto on_surface = [&](const Vec3& x) { return surface && x[2] <= g.oz + tolerance; };
  // The interpolation reaches this many points up: the sinc's radius, or the trilinear cell.
  const int reach = s.interpolation == Interpolation::Sinc ? kSincRadius : 1;
  const auto near_surface = [&](const Vec3& x) {
    return surface && x[2] > g.oz + tolerance && x[2] < g.oz + reach * g.dz - tolerance;
  };

  // What an interpolation footprint that reaches the surface does.
  const std::string footprint =
      s.interpolation == Interpolation::Sinc
          ? "the sinc footprint reaches the zero plane z = " + num(g.oz) +
                " m and is mirrored there with opposite sign (the surface's image, the ghost of "
                "a field record)"
          : "part of the trilinear weight falls on the zero plane z = " + num(g.oz) +
                " m, where the pressure is zero, and is lost";

  const std::vector<std::vector<SourceSpec>> shots = shot_sources(s);
  Offenders src_surface, src_layer, src_near;
  std::size_t sources = 0;
  for (std::size_t k = 0; k < shots.size(); ++k) {
    for (std::size_t n = 0; n < shots[k].size(); ++n) {
      const SourceSpec& src = shots[k][n];
      ++sources;
      const std::string what = src.loc.where() +
                               (shots.size() > 1 ? " (shot " + std::to_string(k) + ")" : "") +
                               " at " + position_text(src.position);
      if (on_surface(src.position)) src_surface.add(what);
      if (in_layer(src.position)) src_layer.add(what);
      if (near_surface(src.position)) src_near.add(what);
    }
  }
  if (src_surface.count > 0) {
    throw InputError(src_surface.first + ": a source on the free surface (z = " + num(g.oz) +
                     " m, where the pressure is held at zero) injects nothing, so every trace "
                     "would be zero; " +
                     std::to_string(src_surface.count) + " of " + std::to_string(sources) +
                     " sources lie there; allowed: z > " + num(g.oz) +
                     " m, usually a grid point (dz = " + num(g.dz) + " m) or a few metres below");
  }
  if (src_layer.count > 0) {
    warnings.push_back(src_layer.text(sources, "sources") +
                       " lie inside the absorbing layer; their energy is damped at once");
  }
  if (src_near.count > 0) {
    warnings.push_back(src_near.text(sources, "sources") + " lie within " + std::to_string(reach) +
                       " grid point(s) of the free surface: " + footprint +
                       ", so they inject less as they near it");
  }

  // Receivers of every shot: they move with each shot's first source, or stay put.
  Offenders rec_surface, rec_layer, rec_near;
  std::size_t receivers = 0;
  const std::size_t placements = s.receivers_move ? shots.size() : 1;
  for (std::size_t k = 0; k < placements; ++k) {
    for (const ReceiverSpec& r : s.receivers) {
      const Vec3 x = receiver_in_shot(s, shots, k, r);
      ++receivers;
      const std::string what = r.loc.where() +
                               (s.receivers_move ? " (shot " + std::to_string(k) + ")" : "") +
                               " at " + position_text(x);
      if (on_surface(x)) rec_surface.add(what);
      if (in_layer(x)) rec_layer.add(what);
      if (near_surface(x)) rec_near.add(what);
    }
  }
  if (rec_surface.count > 0) {
    warnings.push_back(
        rec_surface.text(receivers, "receivers") + " lie on the free surface (z = " + num(g.oz) +
        " m), where the pressure is zero: their traces are exactly zero; place receivers a grid "
        "point (dz = " +
        num(g.dz) + " m) or a few metres below");
  }
  if (rec_layer.count > 0) {
    warnings.push_back(rec_layer.text(receivers, "receivers") +
                       " lie inside the absorbing layer; they record damped waves");
  }
  if (rec_near.count > 0) {
    warnings.push_back(rec_near.text(receivers, "receivers") + " lie within " +
                       std::to_string(reach) + " grid point(s) of the free surface: " + footprint +
                       ", so they record less as they near it");
  }

  // The interior the layer leaves: at least one wavelength at the lowest velocity and the
  // dominant frequency, along each axis.
  double fdom = 0;
  for (const auto& src : shots.front()) {
    const double f = dominant_frequency(src.wavelet);
    if (f > 0 && (fdom == 0 || f < fdom)) fdom = f;
  }
  if (fdom > 0 && p.model_vmin > 0) {
    const double wavelength = p.model_vmin / fdom;
    for (int a = 0; a < 3; ++a) {
      const int points = g.extent(a) - p.layer.on(a, false) - p.layer.on(a, true);
      const double interior = (points - 1) * g.spacing(a);
      if (interior < wavelength) {
        warnings.push_back("the absorbing layer leaves " + std::to_string(points) +
                           " interior points along " + std::string(1, "xyz"[a]) + " (" +
                           num(interior) + " m), less than one wavelength (" + num(wavelength) +
                           " m at vmin " + num(p.model_vmin) + " m/s and the dominant frequency " +
                           num(fdom) + " Hz): enlarge the grid");
        break;
      }
    }
  }
}

/// The strongest grazing return of one axis (check_grazing_returns).
struct GrazingReturn {
  int axis = 0;
  int points = 0;      ///< interior points between the axis's layers
  double interior = 0; ///< the interior in metres
  bool hi = false;     ///< the face: + (true) or -
  int width = 0;       ///< the layer's points on that face
  double angle = 0;    ///< degrees from the face's normal
  double across = 0;   ///< metres of the path across the axis
  double db = 0;       ///< the layer's return there
  double limit = 0;    ///< degrees where the layer passes kGrazingReturnDb
  double needed = 0;   ///< metres across the axis that keep the angle within the limit
  double cpml_db = 0;  ///< the C-PML's return there at the same width
};

/// "x", "x and y", "x, y and z".
std::string axis_list(const std::vector<int>& axes) {
  std::string out;
  for (std::size_t n = 0; n < axes.size(); ++n) {
    if (n > 0) out += n + 1 == axes.size() ? " and " : ", ";
    out += "xyz"[axes[n]];
  }
  return out;
}

/// The one warning of every axis in `returns` (in axis order): the record's path, then per axis
/// its interior, face, angle and return (the layer and its limit angle named where they differ
/// from the previous axis'), then the advice once.
std::string grazing_warning(const SurveyTrapInputs& p, BoundaryType type,
                            const std::vector<GrazingReturn>& returns) {
  const double path = p.model_vmax * p.duration;
  const auto layer_name = [&](int width) {
    return (type == BoundaryType::Cpml ? "the C-PML layer (type: cpml, " : "Minimod's layer (") +
           std::to_string(width) + " points)";
  };
  std::string text = "within the record (" + short_num(p.duration) + " s, up to " +
                     num(std::round(path)) + " m of path at vmax " + num(p.model_vmax) +
                     " m/s) waves return from absorbing faces to the receivers where the layer "
                     "reflects more than " +
                     short_num(kGrazingReturnDb) +
                     " dB (docs/physics-checks.md, \"Absorbing layer by angle\"): ";
  int last_width = -1;
  for (std::size_t n = 0; n < returns.size(); ++n) {
    const GrazingReturn& r = returns[n];
    const std::string axis(1, "xyz"[r.axis]);
    const std::string face = axis + (r.hi ? "+" : "-");
    if (n > 0) text += "; ";
    text += "along " + axis + " (" + num(r.interior) + " m, " + std::to_string(r.points) +
            " points" + (n == 0 ? " of interior between its absorbing faces" : "") + ") from the " +
            face + " face at up to " + short_num(r.angle) + " degrees" +
            (n == 0 ? " from its normal (sources and receivers " + num(r.across) +
                          " m from it together), where "
                    : " (" + num(r.across) + " m), ");
    if (r.width != last_width) {
      text += layer_name(r.width) + " reflects about " + short_num(r.db) + " dB, more than " +
              short_num(kGrazingReturnDb) + " dB beyond " + short_num(r.limit) + " degrees";
    } else {
      text += "about " + short_num(r.db) + " dB";
    }
    last_width = r.width;
  }

  // The advice: the distance that keeps each axis within its limit (one per width), the C-PML's
  // return at each axis' angle, a wider layer.
  std::vector<std::pair<double, std::vector<int>>> distances;
  bool one_width = true;
  for (const GrazingReturn& r : returns) {
    one_width = one_width && r.width == returns.front().width;
    const double needed = std::ceil(r.needed);
    auto same = std::find_if(distances.begin(), distances.end(),
                             [&](const auto& d) { return d.first == needed; });
    if (same == distances.end()) {
      distances.push_back({needed, {r.axis}});
    } else {
      same->second.push_back(r.axis);
    }
  }
  text += "; widen the interior along " + axis_list(distances.front().second) +
          " (sources and receivers together at least " + num(distances.front().first) +
          " m from each absorbing face)";
  for (std::size_t n = 1; n < distances.size(); ++n)
    text += " and along " + axis_list(distances[n].second) + " (at least " +
            num(distances[n].first) + " m)";
  if (type != BoundaryType::Minimod) return text + ", or use a wider layer";
  std::string cpml;
  for (std::size_t n = 0; n < returns.size(); ++n) {
    const GrazingReturn& r = returns[n];
    if (n > 0) cpml += n + 1 == returns.size() ? " and " : ", ";
    cpml += short_num(r.cpml_db) + " dB";
    if (n == 0) cpml += " there";
    if (returns.size() > 1) cpml += std::string(" along ") + "xyz"[r.axis];
    if (!one_width) cpml += " at " + std::to_string(r.width) + " points";
  }
  if (one_width) cpml += " at " + std::to_string(returns.front().width) + " points";
  return text + ", use boundary.type: cpml (" + cpml + "), or a wider layer";
}

/// Along each axis with absorbing faces, the returns of those faces at grazing incidence: a wave
/// that meets a face and comes back to a receiver within the record, after a path of at most
/// L = vmax x the record's duration, of which a + b runs across the axis (source to the face's
/// inner edge, then the face to the receiver), meets the face at acos((a + b) / L) from its
/// normal. The smallest a + b over every shot's sources and receivers and the axis's faces gives
/// the largest angle; where the layer returns more than kGrazingReturnDb there
/// (layer_return_db), the axis goes into one warning for the survey (grazing_warning).
void check_grazing_returns(const Survey& s, const SurveyTrapInputs& p,
                           std::vector<std::string>& warnings) {
  const double path = p.model_vmax * p.duration;
  if (!(path > 0) || s.receivers.empty()) return;
  const Grid& g = p.grid;
  const BoundaryType type = s.boundary.type;
  const std::vector<std::vector<SourceSpec>> shots = shot_sources(s);
  std::vector<GrazingReturn> returns;
  for (int a = 0; a < 3; ++a) {
    const double h = g.spacing(a);
    const int points = g.extent(a) - p.layer.on(a, false) - p.layer.on(a, true);
    const double lo_edge = g.origin(a) + p.layer.on(a, false) * h;
    const double hi_edge = g.origin(a) + (g.extent(a) - 1 - p.layer.on(a, true)) * h;
    // The face of this axis whose return is the strongest, and what it is.
    bool found = false;
    GrazingReturn worst;
    worst.db = kGrazingReturnDb;
    for (const bool hi : {false, true}) {
      const int width = p.layer.on(a, hi);
      if (width <= 0) continue;
      const auto to_face = [&](const Vec3& x) {
        return std::max(0.0, hi ? hi_edge - x[a] : x[a] - lo_edge);
      };
      double across = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < shots.size(); ++k) {
        double source = std::numeric_limits<double>::infinity();
        double receiver = source;
        for (const SourceSpec& src : shots[k])
          source = std::min(source, to_face(src.position));
        for (const ReceiverSpec& r : s.receivers)
          receiver = std::min(receiver, to_face(receiver_in_shot(s, shots, k, r)));
        across = std::min(across, source + receiver);
      }
      if (!(across < path)) continue; // no return of this face within the record
      const double angle = std::acos(across / path) * 180 / kPi;
      const double db = layer_return_db(type, width, angle);
      if (db > worst.db) {
        found = true;
        worst.hi = hi;
        worst.db = db;
        worst.angle = angle;
        worst.across = across;
      }
    }
    if (!found) continue;
    worst.axis = a;
    worst.points = points;
    worst.interior = (points - 1) * h;
    worst.width = p.layer.on(a, worst.hi);
    worst.limit = layer_limit_angle(type, worst.width, kGrazingReturnDb);
    // Near grazing incidence the extrapolated return is a few 1e-15 dB below 0: print 0.
    worst.db = std::min(0.0, std::round(worst.db * 10) / 10);
    if (worst.db == 0) worst.db = 0; // no "-0"
    worst.needed = path * std::cos(worst.limit * kPi / 180);
    worst.cpml_db = layer_return_db(BoundaryType::Cpml, worst.width, worst.angle);
    returns.push_back(worst);
  }
  if (!returns.empty()) warnings.push_back(grazing_warning(p, type, returns));
}

/// The highest frequency the sources of the first shot carry (every shot shares the wavelet), and
/// the wavelet that carries it ("sources[0].wavelet: a Ricker of 25 Hz"); 0 when unknown.
double source_band(const Survey& s, std::string* which) {
  const std::vector<SourceSpec>& sources = s.shots.empty() ? s.sources : s.shots.front().sources;
  double band = 0;
  for (std::size_t n = 0; n < sources.size(); ++n) {
    const WaveletSpec& w = sources[n].wavelet;
    const std::string key = w.loc.where() + ".file";
    const double f = w.kind != WaveletSpec::Kind::File || w.fmax > 0 ? wavelet_fmax(w, key) : 0;
    if (f <= band) continue;
    band = f;
    const std::string name =
        w.loc.key.empty() ? "sources[" + std::to_string(n) + "].wavelet" : w.loc.key;
    *which = name + (w.kind == WaveletSpec::Kind::Ricker
                         ? ": 2.5 x the Ricker's " + num(w.frequency) + " Hz"
                         : ": its fmax");
  }
  return band;
}

/// A trace interval whose Nyquist frequency lies below the sources' band: the resampling's
/// low-pass removes what lies above it (solver/wavelet.hpp), so those frequencies are lost.
void check_trace_band(const Survey& s, const SurveyTrapInputs& p,
                      std::vector<std::string>& warnings) {
  if (!s.output.dt_out || !(p.dt > 0) || *s.output.dt_out <= p.dt * (1 + 1e-9)) return;
  const double dt_out = *s.output.dt_out;
  std::string which;
  const double band = source_band(s, &which);
  const double nyquist = 0.5 / dt_out;
  if (!(band > nyquist)) return;
  const ResampleFilter f = resample_filter(dt_out / p.dt);
  // The interval that keeps the band in the filter's pass band, rounded down to 3 digits.
  const double keep = f.pass * 0.5 / band;
  const double scale = std::pow(10.0, std::floor(std::log10(keep)) - 2);
  warnings.push_back(
      s.output.dt_out_loc.where() + ": the sources' band reaches " + num(band) + " Hz (" + which +
      "), above the traces' Nyquist frequency 1/(2 dt_out) = " + num(nyquist) + " Hz at dt_out " +
      num(dt_out) + " s: the traces are low-passed before they are resampled (unchanged up to " +
      short_num(f.pass * nyquist) + " Hz, nothing above " + num(nyquist) +
      " Hz), so the band above " + short_num(f.pass * nyquist) +
      " Hz is lost; to keep it, dt_out at most " + num(std::floor(keep / scale) * scale) + " s");
}

/// Values that look like another unit than the survey's (metres, seconds, m/s).
void check_units(const Survey& s, const SurveyTrapInputs& p, std::vector<std::string>& warnings) {
  const Grid& g = p.grid;
  if (p.model_vmax < kSlowestVelocity) {
    warnings.push_back("velocities look like km/s: the model's largest is " + num(p.model_vmax) +
                       " m/s; the survey's velocities are in m/s (" + "1500 for water, not 1.5)");
  }
  const double hmax = std::max({g.dx, g.dy, g.dz});
  if (hmax < 1 && p.fmax > 0 && p.fmax < 1000) {
    warnings.push_back("spacings look like km: the largest is " + num(hmax) +
                       " m with a source band up to " + num(p.fmax) +
                       " Hz; the survey's spacings are in metres");
  }
  if (p.model_vmin > 0) {
    const double diagonal =
        std::sqrt(g.dx * (g.nx - 1) * g.dx * (g.nx - 1) + g.dy * (g.ny - 1) * g.dy * (g.ny - 1) +
                  g.dz * (g.nz - 1) * g.dz * (g.nz - 1));
    const double crossing = diagonal / p.model_vmin;
    if (p.duration > 20 * crossing) {
      // Say what the run costs as written: a duration meant in milliseconds is a long run.
      std::string cost;
      if (p.dt > 0) {
        const double steps = std::ceil(p.duration / p.dt - 1e-9);
        const double shots = static_cast<double>(std::max<std::size_t>(1, s.shots.size()));
        const int threads = cpu_threads();
        cost = "; as written the run is " + num(shots) + " shot(s) x " + num(steps) +
               " steps, about " +
               duration_text(estimate_stepping(s, g, steps, false, threads).seconds) +
               " of time stepping on the CPU backend (" + std::to_string(threads) +
               " threads) or " + duration_text(estimate_stepping(s, g, steps, true, 1).seconds) +
               " on one H100";
      }
      const SourceLoc where{s.time.loc.file, s.time.loc.line,
                            s.time.duration ? "time.duration" : "time.steps"};
      warnings.push_back(where.where() + ": the run lasts " + num(p.duration) + " s, " +
                         num(p.duration / crossing) + " times the time a wave at vmin " +
                         num(p.model_vmin) + " m/s needs to cross the grid's diagonal (" +
                         num(crossing) +
                         " s), and the layer absorbs everything long before the end: durations "
                         "are in seconds (" +
                         num(p.duration) + " ms would be " + num(p.duration / 1000) + ")" + cost);
    }
  }
}

} // namespace

void check_survey_traps(const Survey& s, const SurveyTrapInputs& inputs,
                        std::vector<std::string>& warnings) {
  check_positions(s, inputs, warnings);
  check_grazing_returns(s, inputs, warnings);
  check_units(s, inputs, warnings);
  check_trace_band(s, inputs, warnings);
}

double layer_return_db(BoundaryType type, int width, double angle) {
  // docs/physics-checks.md, "Absorbing layer by angle": one face's return against the incident
  // amplitude, CPU reference, 2000 m/s, 10 m, a 16 Hz Ricker (tests/reflection_by_angle.cpp).
  constexpr std::array<double, 5> kAngles = {0, 30, 45, 60, 70};
  constexpr std::array<int, 4> kWidths = {10, 16, 20, 30};
  using Row = std::array<double, 5>;
  constexpr std::array<Row, 4> kMinimod = {
      Row{-30.0, -27.6, -22.0, -14.7, -10.0}, Row{-41.3, -36.8, -32.1, -22.8, -15.4},
      Row{-48.8, -42.6, -37.9, -28.4, -19.4}, Row{-58.4, -55.2, -49.3, -39.4, -29.9}};
  constexpr std::array<Row, 4> kCpml = {
      Row{-49.4, -50.0, -50.6, -51.1, -51.4}, Row{-61.8, -62.3, -62.9, -63.4, -62.6},
      Row{-67.6, -68.1, -68.7, -69.2, -64.1}, Row{-78.2, -78.7, -79.3, -79.7, -69.0}};
  const std::array<Row, 4>& rows = type == BoundaryType::Cpml ? kCpml : kMinimod;
  const double theta = std::clamp(angle, 0.0, 90.0);
  // One measured width's return at theta: linear in dB between the measured angles; beyond the
  // last, the continuous PML's R^cos(theta) from its value there (dB in proportion to cos theta,
  // 0 dB at grazing incidence).
  const auto at_angle = [&](const Row& row) {
    if (theta >= kAngles.back())
      return row.back() * std::cos(theta * kPi / 180) / std::cos(kAngles.back() * kPi / 180);
    std::size_t i = 1;
    while (theta > kAngles[i])
      ++i;
    const double t = (theta - kAngles[i - 1]) / (kAngles[i] - kAngles[i - 1]);
    return row[i - 1] + t * (row[i] - row[i - 1]);
  };
  // Across widths: linear in dB between the measured ones, extended below the narrowest along its
  // first segment (up to 0 dB), the widest row for wider layers.
  if (width >= kWidths.back()) return at_angle(rows.back());
  std::size_t j = 1;
  while (j + 1 < kWidths.size() && width > kWidths[j])
    ++j;
  const double t = static_cast<double>(width - kWidths[j - 1]) / (kWidths[j] - kWidths[j - 1]);
  const double lo = at_angle(rows[j - 1]);
  return std::min(0.0, lo + t * (at_angle(rows[j]) - lo));
}

double layer_limit_angle(BoundaryType type, int width, double db) {
  for (int tenth = 0; tenth <= 900; ++tenth)
    if (layer_return_db(type, width, tenth / 10.0) > db) return tenth / 10.0;
  return 90;
}

std::optional<double> layer_target_db(const BoundarySpec& b) {
  // The survey parser allows reflection_db only alone and with a C-PML; a survey built in code is
  // held to the same: a width or ntaper given wins, Minimod's layer has no target.
  if (b.type != BoundaryType::Cpml || b.width || b.ntaper) return std::nullopt;
  return b.reflection_db.value_or(kDefaultCpmlReturnDb);
}

double layer_worst_return_db(BoundaryType type, int width) {
  double worst = -std::numeric_limits<double>::infinity();
  for (int angle = 0; angle <= kLayerTargetAngle; ++angle)
    worst = std::max(worst, layer_return_db(type, width, angle));
  return worst;
}

int cpml_width_for_return(double target_db) {
  for (int width = 1; width <= kWidestMeasuredLayer; ++width)
    if (layer_worst_return_db(BoundaryType::Cpml, width) <= target_db) return width;
  return 0;
}

std::string layer_target_text(const BoundarySpec& b) {
  const std::optional<double> target = layer_target_db(b);
  if (!target) return "";
  return std::string("chosen for ") +
         (b.reflection_db ? "boundary.reflection_db " : "the default ") + num(*target) + " dB to " +
         std::to_string(kLayerTargetAngle) + " degrees";
}

int chosen_cpml_width(const BoundarySpec& b) {
  const double target = *layer_target_db(b);
  const int width = cpml_width_for_return(target);
  if (width > 0) return width;
  const double best = layer_worst_return_db(BoundaryType::Cpml, kWidestMeasuredLayer);
  char reach[32];
  std::snprintf(reach, sizeof reach, "%.1f", best);
  throw InputError(b.reflection_db_loc.where() + ": " + num(target) +
                   " dB is not allowed: no C-PML width meets it from 0 to " +
                   std::to_string(kLayerTargetAngle) + " degrees; the best reachable is " + reach +
                   " dB (" + std::to_string(kWidestMeasuredLayer) +
                   " points, the widest of the measured table, docs/physics-checks.md); "
                   "allowed: a target >= " +
                   reach + " dB, or boundary.width");
}

void check_layer_fits_grid(const Grid& g, const LayerWidths& layer, const SourceLoc& loc,
                           const std::string& origin) {
  for (int a = 0; a < 3; ++a) {
    if (layer.on(a, false) + layer.on(a, true) < g.extent(a)) continue;
    const std::string axis(1, "xyz"[a]);
    // The low face's width, or the high one's under a free surface (no top layer).
    const int width = std::max(layer.on(a, false), layer.on(a, true));
    throw InputError(loc.where() + ": a layer of " + std::to_string(width) + " points" + origin +
                     " on each " + axis + " face is wider than half the grid (" +
                     std::to_string(g.extent(a)) + " points along " + axis +
                     "); allowed: 2 x width < " + std::to_string(g.extent(a)));
  }
}

std::string describe_boundary(const Survey& s, const LayerWidths& layer) {
  const BoundaryType type = s.boundary.type;
  // The faces of each distinct width, in the order x-, x+, y-, y+, z-, z+.
  std::vector<std::pair<int, std::vector<std::string>>> widths;
  for (int a = 0; a < 3; ++a) {
    for (const bool hi : {false, true}) {
      const int w = layer.on(a, hi);
      if (w <= 0) continue;
      const std::string face = std::string(1, "xyz"[a]) + (hi ? "+" : "-");
      const auto same = std::find_if(widths.begin(), widths.end(),
                                     [w](const auto& entry) { return entry.first == w; });
      if (same == widths.end())
        widths.push_back({w, {face}});
      else
        same->second.push_back(face);
    }
  }
  const std::string name = boundary_type_name(type);
  const std::string surface =
      s.boundary.free_surface ? "; the top (z-) is a free surface, no layer" : "";
  if (widths.empty()) return "boundary    " + name + ", no absorbing layer" + surface + "\n";
  const std::string target = layer_target_text(s.boundary);
  std::string out;
  for (std::size_t n = 0; n < widths.size(); ++n) {
    const int w = widths[n].first;
    std::string faces;
    if (widths.size() > 1) {
      for (const std::string& f : widths[n].second)
        faces += (faces.empty() ? "" : ", ") + f;
      faces += ": ";
    }
    out += n == 0 ? "boundary    " + name + ", " : "            ";
    out += faces + std::to_string(w) + " points a face" +
           (target.empty() ? "" : " (" + target + ")") + ": expected return";
    for (const int angle : {0, 30, 45, 60, 70}) {
      char db[32];
      std::snprintf(db, sizeof db, "%.1f", layer_return_db(type, w, angle));
      out += angle == 0 ? std::string(" 0 deg ") + db + " dB"
                        : ", " + std::to_string(angle) + " " + db;
    }
    if (w > kWidestMeasuredLayer)
      out += ", as the widest measured row (" + std::to_string(kWidestMeasuredLayer) + " points)";
    else if (w < kNarrowestMeasuredLayer)
      out += ", extended below the narrowest measured row (" +
             std::to_string(kNarrowestMeasuredLayer) + " points)";
    out += " (docs/physics-checks.md)";
    if (n + 1 == widths.size()) out += surface;
    out += "\n";
  }
  return out;
}

int cpu_threads() {
  return std::max(1, omp_get_max_threads());
}

std::string duration_text(double seconds) {
  char buf[64];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof buf, "%.3g min", seconds / 60);
  } else if (seconds < 48 * 3600.0) {
    std::snprintf(buf, sizeof buf, "%.3g h", seconds / 3600);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g days", seconds / 86400);
  }
  return buf;
}

SteppingEstimate estimate_stepping(const Survey& s, const Grid& g, double steps, bool gpu,
                                   int threads) {
  // ms a step measured (docs/perf/README.md): the CPU backend on 2 cores of an AMD EPYC, the
  // default pairs on one H100; the C-PML against Minimod's layer of the seeds' 27 points in the
  // same call on the H200 (the fused acoustic update; the CPU backend's C-PML is taken to cost the
  // same ratio).
  const bool tti = s.physics == "tti";
  const bool azimuth = tti && s.anisotropy && s.anisotropy->phi;
  const bool cpml = s.boundary.type == BoundaryType::Cpml;
  double points = 0, ms = 0, cpml_ratio = 1;
  std::string what;
  if (!tti) {
    points = gpu ? 1e9 : 256.0 * 256.0 * 256.0;
    ms = gpu ? 7.309 : 13.443;
    cpml_ratio = 8.756 / 5.973;
    what = gpu ? "the acoustic default pair on one H100 at 1000^3"
               : "the acoustic CPU backend at 256^3";
  } else {
    points = gpu ? 900.0 * 900.0 * 900.0 : 192.0 * 192.0 * 192.0;
    ms = gpu ? (azimuth ? 15.367 : 12.092) : 124.3;
    cpml_ratio = azimuth ? 30.501 / 13.836 : 18.418 / 9.854;
    what = gpu ? std::string("the TTI default pair on one H100 at 900^3, ") +
                     (azimuth ? "with azimuth" : "without azimuth")
               : "the TTI CPU backend at 192^3";
  }
  double rate = points / (ms * 1e-3);
  if (!gpu) {
    // Measured on 2 threads; from 1 to 16 threads the step's rate grew as threads^0.8.
    rate *= std::pow(std::max(1, threads) / 2.0, 0.8);
    what += " on 2 threads";
    if (threads != 2)
      what += ", scaled to " + std::to_string(std::max(1, threads)) + " as threads^0.8";
  }
  if (cpml) {
    rate /= cpml_ratio;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2f", cpml_ratio);
    what += std::string(", the C-PML ") + ratio + " times Minimod's layer's cost";
  }
  const double shots = static_cast<double>(std::max<std::size_t>(1, s.shots.size()));
  SteppingEstimate e;
  e.points_per_second = rate;
  e.seconds = shots * steps * static_cast<double>(g.points()) / rate;
  e.basis = what;
  return e;
}

std::string dispersion_warning(double points, double vmin, double fmax, double h) {
  return "only " + num(points) + " grid points per shortest wavelength (vmin " + num(vmin) +
         " m/s, fmax " + num(fmax) + " Hz, h " + num(h) + " m): below " +
         num(kMinPointsPerWavelength) +
         " this 8th-order scheme is visibly dispersive; reduce the spacing or the source frequency";
}

void plan_output(const Survey& s, Plan& p) {
  p.dt_out = s.output.dt_out ? *s.output.dt_out : p.dt;
  p.trace_samples =
      checked_count(std::floor(p.duration / p.dt_out + 1e-9) + 1, s.output.dt_out_loc,
                    "trace samples (duration " + num(p.duration) + " s / dt_out + 1)");
  p.snapshot_geometry.expected_count = p.snapshot_count;
  // In double: the counts are each in range, their products may not be.
  const auto& sg = p.snapshot_geometry;
  const double receivers = static_cast<double>(s.receivers.size());
  const double shots = static_cast<double>(std::max<std::size_t>(1, s.shots.size()));
  const double traces = shots * receivers * static_cast<double>(p.trace_samples) * 4;
  // Every shot of output.snapshots.shots writes them.
  const double snapshot_shots = static_cast<double>(s.output.snapshot_shots.size());
  const double snapshots = snapshot_shots * static_cast<double>(p.snapshot_count) * sg.shape[0] *
                           sg.shape[1] * static_cast<double>(sg.shape[2]) * 4;
  // /model: the medium at most 256 points an axis, one array (vp) or five (TTI's).
  const Grid& g = p.grid;
  const StoredModel stored =
      model_geometry({g.nx, g.ny, g.nz}, {g.ox, g.oy, g.oz}, {g.dx, g.dy, g.dz});
  const double model = (s.physics == "tti" ? 5.0 : 1.0) * 4.0 * stored.shape[0] * stored.shape[1] *
                       static_cast<double>(stored.shape[2]);
  const double output = traces + snapshots + model + static_cast<double>(s.text.size()) + 64 * 1024;
  if (!(output <= kMaxOutputBytes)) {
    const bool snap = snapshots > traces;
    const SourceLoc& loc = snap ? s.output.snapshot_loc : s.output.dt_out_loc;
    throw InputError(loc.where() + ": an output of " + format_bytes(output) + " (" +
                     (snap ? num(snapshot_shots) + " shot(s) x " +
                                 std::to_string(p.snapshot_count) + " snapshots of " +
                                 std::to_string(sg.shape[0]) + " x " + std::to_string(sg.shape[1]) +
                                 " x " + std::to_string(sg.shape[2]) + " points"
                           : num(shots) + " shot(s) x " + num(receivers) + " receivers x " +
                                 std::to_string(p.trace_samples) + " samples") +
                     ") is not allowed: at most " + format_bytes(kMaxOutputBytes) + " of output");
  }
  p.output_bytes = static_cast<std::size_t>(output);
}

Plan make_plan(const Survey& s, const VelocityRange& velocity, int steps_override) {
  Plan p;
  p.grid = make_grid(s.grid);
  const Grid& g = p.grid;
  p.model_vmin = velocity.vmin;
  p.model_vmax = velocity.vmax;
  p.vmax = p.model_vmax;
  if (s.model.vmax) {
    if (*s.model.vmax < p.model_vmax) {
      throw InputError(s.model.vmax_loc.where() + ": " + num(*s.model.vmax) +
                       " m/s is below the model's largest velocity " + num(p.model_vmax) +
                       " m/s: the time step would be unstable; allowed: >= " + num(p.model_vmax));
    }
    p.vmax = *s.model.vmax;
  }

  // Highest frequency: declared, or the highest of the sources.
  if (s.boundary.fmax) {
    p.fmax = *s.boundary.fmax;
  } else {
    for (const auto& src : s.sources)
      p.fmax = std::max(p.fmax, wavelet_fmax(src.wavelet, src.wavelet.loc.where() + ".file"));
  }

  // Time step.
  p.dt_limit = stable_dt_limit(g, p.vmax);
  if (s.time.dt) {
    if (*s.time.dt > p.dt_limit) {
      throw InputError(s.time.dt_loc.where() + ": " + num(*s.time.dt) +
                       " s is above the stability limit " + num(p.dt_limit) +
                       " s (cfl = 1, vmax = " + num(p.vmax) +
                       " m/s); allowed: 0 < dt <= " + num(p.dt_limit));
    }
    p.dt = *s.time.dt;
  } else {
    p.dt = s.time.cfl * p.dt_limit;
  }
  // The solver holds dt and the medium (v dt)^2 in float32.
  const double vp2dt2_max = (p.vmax * p.dt) * (p.vmax * p.dt);
  const double vp2dt2_min = (p.model_vmin * p.dt) * (p.model_vmin * p.dt);
  if (!fits_float32(p.dt) || !fits_float32(vp2dt2_max) || !fits_float32(vp2dt2_min)) {
    throw InputError(s.time.dt_loc.where() + ": dt = " + num(p.dt) + " s with velocities " +
                     num(p.model_vmin) + " .. " + num(p.vmax) + " m/s gives (v dt)^2 from " +
                     num(vp2dt2_min) + " to " + num(vp2dt2_max) +
                     " m^2, which the solver's float32 cannot hold; allowed: dt and (v dt)^2 " +
                     float32_range_text() + ": scale the time step or the velocities");
  }
  p.cfl = p.dt / p.dt_limit;
  if (steps_override > 0) {
    p.steps = steps_override;
  } else if (s.time.steps) {
    p.steps = *s.time.steps;
  } else {
    const double steps = std::ceil(*s.time.duration / p.dt - 1e-9);
    const SourceLoc where{s.time.loc.file, s.time.loc.line, "time.duration"};
    p.steps =
        std::max(1, checked_count(steps, where, "steps (duration / dt, dt = " + num(p.dt) + " s)",
                                  kMaxSteps));
  }
  p.duration = p.steps * p.dt;

  // Absorbing layer: the survey's width, the C-PML's width from its reflection target, or ntaper
  // wavelengths.
  const std::optional<double> target = layer_target_db(s.boundary);
  const double ntaper = s.boundary.ntaper.value_or(kDefaultNtaper);
  if (s.boundary.width || target) {
    const int w = s.boundary.width ? *s.boundary.width : chosen_cpml_width(s.boundary);
    p.layer = LayerWidths{w, w, w, w, w, w};
  } else {
    if (p.fmax <= 0) {
      throw InputError(s.boundary.loc.where() + ": the layer width needs a maximum frequency; "
                                                "give boundary.fmax or boundary.width");
    }
    int w[3];
    for (int a = 0; a < 3; ++a) {
      // In double first: ntaper x vmax / fmax may be far more points than an int holds.
      const double points = std::ceil(ntaper * p.vmax / p.fmax / g.spacing(a) - 1e-9);
      w[a] = points < g.extent(a) ? layer_width_points(ntaper, p.vmax, p.fmax, g.spacing(a))
                                  : g.extent(a);
    }
    p.layer = LayerWidths{w[0], w[0], w[1], w[1], w[2], w[2]};
  }
  // A free surface replaces the top layer (physics.md section 3).
  if (s.boundary.free_surface) p.layer.z_lo = 0;
  if (s.boundary.width) {
    check_layer_fits_grid(g, p.layer, s.boundary.width_loc, "");
  } else if (target) {
    check_layer_fits_grid(g, p.layer, s.boundary.reflection_db_loc,
                          " (" + layer_target_text(s.boundary) + ")");
  } else {
    check_layer_fits_grid(g, p.layer, s.boundary.loc,
                          " (ntaper " + num(ntaper) + " x vmax/fmax = " + num(p.vmax) + "/" +
                              num(p.fmax) + ")");
  }

  // Dispersion.
  const double hmax = std::max({g.dx, g.dy, g.dz});
  if (p.fmax > 0) {
    p.points_per_wavelength = p.model_vmin / (p.fmax * hmax);
    if (p.points_per_wavelength < kMinPointsPerWavelength)
      p.warnings.push_back(dispersion_warning(p.points_per_wavelength, p.model_vmin, p.fmax, hmax));
  }
  check_survey_traps(s, {g, p.layer, p.model_vmin, p.model_vmax, p.fmax, p.duration, p.dt},
                     p.warnings);

  // Snapshots.
  p.snapshot_every = s.output.snapshot_every;
  p.snapshot_decimate = std::max(1, s.output.snapshot_decimate);
  p.snapshot_box = Box{0, g.nx, 0, g.ny, 0, g.nz};
  if (s.output.snapshot_box) {
    int l[3], h[3];
    for (int a = 0; a < 3; ++a) {
      index_range(s.output.snapshot_box->min[a], s.output.snapshot_box->max[a], g.origin(a),
                  g.spacing(a), g.extent(a), &l[a], &h[a]);
      if (h[a] < l[a]) {
        throw InputError(s.output.snapshot_loc.where() +
                         ": the snapshot box holds no grid point along " +
                         std::string(1, "xyz"[a]) + "; allowed: a box spanning a grid point");
      }
    }
    p.snapshot_box = Box{l[0], h[0] + 1, l[1], h[1] + 1, l[2], h[2] + 1};
  }
  if (p.snapshot_every > 0) {
    p.snapshot_count = p.steps / p.snapshot_every;
    SnapshotGeometry& sg = p.snapshot_geometry;
    const int d = p.snapshot_decimate;
    sg.shape = {(p.snapshot_box.nx() + d - 1) / d, (p.snapshot_box.ny() + d - 1) / d,
                (p.snapshot_box.nz() + d - 1) / d};
    sg.origin = {g.ox + p.snapshot_box.x0 * g.dx, g.oy + p.snapshot_box.y0 * g.dy,
                 g.oz + p.snapshot_box.z0 * g.dz};
    sg.spacing = {g.dx * d, g.dy * d, g.dz * d};
    sg.expected_count = p.snapshot_count;
  }

  plan_output(s, p);

  // Memory, in double: the counts above are each in range, their products may not be.
  const FieldLayout layout = make_field_layout(g.nx, g.ny, g.nz, p.layer.x_lo);
  const double field = static_cast<double>(layout.size) * sizeof(float);
  const double receivers = static_cast<double>(s.receivers.size());
  const double sources = static_cast<double>(s.sources.size());
  const double steps = static_cast<double>(p.steps);
  // u, v, vp2dt2; Minimod's layer adds phi and eta, the C-PML psi and zeta in its slabs (psi
  // twice on a GPU, whose update is fused, with the taps: cpml_device_floats).
  const bool cpml = s.boundary.type == BoundaryType::Cpml;
  const double memory = 4.0 * static_cast<double>(cpml_memory_points(g, p.layer));
  const double device_memory = 4.0 * static_cast<double>(cpml_device_floats(g, p.layer));
  const double device = field * (p.layer.any() && !cpml ? 5 : 3) + (cpml ? device_memory : 0) +
                        receivers * (steps + 1) * 4 + sources * steps * 4 +
                        (receivers + sources) * 8 * 12;
  p.device_bytes = static_cast<std::size_t>(device);
  // The model, the padded medium and damping, the source samples, and traces of every step
  // (twice: as recorded and resampled).
  p.host_bytes = 4.0 * static_cast<double>(g.points()) + field * (p.layer.any() && !cpml ? 2 : 1) +
                 (cpml ? memory : 0) + sources * steps * 4 + 2 * receivers * (steps + 1) * 4;

  // Inputs that only the run would otherwise meet: the wavelets sampled at this dt, and the
  // SEG-Y output (this build and the interval).
  check_survey_kernel(s);
  check_source_wavelets(s, p);
  if (s.output.segy) {
    const std::string key = s.output.segy_loc.where();
    if (!segy_supported()) {
      throw InputError(key + ": this minimod-gpu was built without segyio, so it cannot write "
                             "SEG-Y; allowed: remove output.segy, or build with libsegyio-dev");
    }
    const std::string where = s.output.dt_out ? s.output.dt_out_loc.where() : key;
    const double us = p.dt_out * 1e6;
    if (std::isfinite(us) && std::round(us) >= 1 && std::abs(us - std::round(us)) > 1e-3) {
      throw InputError(where + ": sample interval " + num(p.dt_out) + " s = " + num(us) +
                       " microseconds is not allowed in SEG-Y: a whole number of microseconds; " +
                       (s.output.dt_out ? "" : "(dt_out defaults to dt) ") + "set output.dt_out " +
                       "to a round interval, e.g. " + round_intervals(p.dt, p.fmax));
    }
    segy_sample_interval_us(p.dt_out, where);
  }
  return p;
}

std::string describe_plan(const Survey& s, const Plan& p) {
  std::ostringstream o;
  const Grid& g = p.grid;
  o << "survey      " << s.path << (s.name.empty() ? "" : " (" + s.name + ")") << "\n";
  o << "physics     " << s.physics << "\n";
  o << "grid        " << g.nx << " x " << g.ny << " x " << g.nz << " points (" << g.points()
    << "), spacing " << num(g.dx) << " x " << num(g.dy) << " x " << num(g.dz) << " m, origin ("
    << num(g.ox) << ", " << num(g.oy) << ", " << num(g.oz) << ") m\n";
  o << "model       " << num(p.model_vmin) << " .. " << num(p.model_vmax) << " m/s";
  if (p.vmax != p.model_vmax) o << " (vmax " << num(p.vmax) << " m/s for dt and layer)";
  o << "\n";
  o << "time        dt " << num(p.dt) << " s (stability limit " << num(p.dt_limit) << " s, cfl "
    << num(p.cfl) << "), " << p.steps << " steps, " << num(p.duration) << " s\n";
  o << "layer       x " << p.layer.x_lo << "/" << p.layer.x_hi << ", y " << p.layer.y_lo << "/"
    << p.layer.y_hi << ", z " << p.layer.z_lo << "/" << p.layer.z_hi << " points (low/high face), "
    << boundary_type_name(s.boundary.type) << "\n";
  o << describe_boundary(s, p.layer);
  o << "wavelength  fmax " << num(p.fmax) << " Hz, " << num(p.points_per_wavelength)
    << " points per shortest wavelength\n";
  const std::size_t shots = std::max<std::size_t>(1, s.shots.size());
  o << "shots       " << shots << ", " << s.sources.size() << " source(s) each"
    << (s.receivers_move ? ", receivers moving with the source" : "") << "\n";
  o << "receivers   " << s.receivers.size() << ", " << p.trace_samples << " samples at dt_out "
    << num(p.dt_out) << " s\n";
  if (p.snapshot_count > 0) {
    const auto& sg = p.snapshot_geometry;
    const std::vector<int>& of = s.output.snapshot_shots;
    o << "snapshots   " << p.snapshot_count << " (every " << p.snapshot_every << " steps), "
      << sg.shape[0] << " x " << sg.shape[1] << " x " << sg.shape[2] << " points each, of shot"
      << (of.size() == 1 ? " " : "s ") << shot_selection_text(of) << "\n";
  } else {
    o << "snapshots   none\n";
  }
  o << "memory      " << format_bytes(static_cast<double>(p.device_bytes))
    << " on the device (fields, traces, taps)\n";
  o << "output      " << s.output.file << ", about "
    << format_bytes(static_cast<double>(p.output_bytes)) << "\n";
  for (const auto& w : p.warnings)
    o << "warning: " << w << "\n";
  return o.str();
}

} // namespace minimod
