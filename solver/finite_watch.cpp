#include "solver/finite_watch.hpp"

#include "core/errors.hpp"
#include "solver/wavelet.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace minimod {
namespace {

/// Values at least this large are float32 overflow in the making: no physical wavefield of a
/// sane source gets near it, and a few more steps reach 3.4e38.
constexpr double kHugeValue = 1e30;

/// Four significant digits.
std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

const char* kind_of(float v) {
  return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
}

/// Index of the first value of `values` that is not finite, or -1.
std::int64_t first_nonfinite(const std::vector<float>& values, std::size_t* count) {
  std::int64_t first = -1;
  std::size_t n = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!finite_bits(float_bits(values[i]))) {
      if (first < 0) first = static_cast<std::int64_t>(i);
      ++n;
    }
  }
  if (count) *count = n;
  return first;
}

} // namespace

std::string finite_watch_dt_origin(const TimeSpec& time) {
  return time.dt ? "time.dt" : "time.cfl = " + num(time.cfl);
}

double finite_watch_source_peak(const std::vector<float>& samples) {
  double peak = 0;
  for (const float v : samples)
    if (finite_bits(float_bits(v))) peak = std::max(peak, static_cast<double>(std::fabs(v)));
  return peak;
}

int finite_check_interval(int steps) {
  return std::max(kFiniteCheckMinInterval, steps / 100);
}

FiniteWatch::FiniteWatch(FiniteWatchSetup setup)
    : m_setup(std::move(setup)), m_interval(finite_check_interval(m_setup.steps)) {}

bool FiniteWatch::due(int done) const {
  return done >= m_setup.steps || done >= m_next;
}

std::string FiniteWatch::describe_point(std::int64_t d) const {
  const Grid& g = m_setup.grid;
  const auto nx = static_cast<std::int64_t>(g.nx), ny = static_cast<std::int64_t>(g.ny);
  const int idx[3] = {static_cast<int>(d % nx), static_cast<int>((d / nx) % ny),
                      static_cast<int>(d / (nx * ny))};
  double at[3];
  for (int a = 0; a < 3; ++a)
    at[a] = g.origin(a) + idx[a] * g.spacing(a);
  std::string text = "(i, j, k) = (" + std::to_string(idx[0]) + ", " + std::to_string(idx[1]) +
                     ", " + std::to_string(idx[2]) + ") = (" + num(at[0]) + ", " + num(at[1]) +
                     ", " + num(at[2]) + ") m";
  // The absorbing layer: every face whose layer holds the point.
  static const char* const kFace[3][2] = {{"left", "right"}, {"front", "back"}, {"top", "bottom"}};
  std::string faces;
  for (int a = 0; a < 3; ++a) {
    for (int hi = 0; hi < 2; ++hi) {
      const int width = m_setup.layer.on(a, hi != 0);
      const bool inside = hi ? idx[a] >= g.extent(a) - width : idx[a] < width;
      if (width > 0 && inside) faces += (faces.empty() ? "" : ", ") + std::string(kFace[a][hi]);
    }
  }
  if (faces.empty())
    text += ", outside the absorbing layer";
  else
    text += ", in the absorbing layer (" + faces +
            (faces.find(',') == std::string::npos ? " face)" : " faces)");
  // The nearest source; "near" within two stencil half-widths of the coarsest spacing.
  double nearest = std::numeric_limits<double>::infinity();
  std::size_t which = 0;
  for (std::size_t s = 0; s < m_setup.sources.size(); ++s) {
    double d2 = 0;
    for (int a = 0; a < 3; ++a)
      d2 += (at[a] - m_setup.sources[s][a]) * (at[a] - m_setup.sources[s][a]);
    if (std::sqrt(d2) < nearest) {
      nearest = std::sqrt(d2);
      which = s;
    }
  }
  if (!m_setup.sources.empty()) {
    const std::string source = std::to_string(which + 1), away = num(nearest) + " m";
    if (nearest <= 8.0 * std::max({g.dx, g.dy, g.dz}))
      text += ", near source " + source + " (" + away + " away)";
    else
      text += ", " + away + " from the nearest source (" + source + ")";
  }
  return text;
}

void FiniteWatch::check(int done, const FiniteScan& scan, const std::string& field) {
  if (scan.finite()) {
    m_clean[field] = Clean{done, scan};
    // Scans after steps 1, 2, 4, ... up to the interval, then every interval; every step once a
    // value nears the float32 limit, so that the step and the point where it overflows are
    // caught before the NaN spreads (4 points a step).
    const int gap = scan.max_abs >= kHugeValue ? 1 : std::min(m_interval, std::max(1, done));
    m_next = std::max(m_next, static_cast<std::int64_t>(done) + gap);
    return;
  }
  const FiniteWatchSetup& s = m_setup;
  std::string msg = "the wavefield " + field + " is not finite (NaN or Inf) after step " +
                    std::to_string(done) + " of " + std::to_string(s.steps) +
                    " (t = " + num(done * s.dt) + " s): " + std::to_string(scan.nonfinite) +
                    " of " + std::to_string(scan.points) + " grid points; the first at " +
                    describe_point(scan.first);
  // Where it grew: the largest value of the last clean scan (the blow-up's seed, usually), else
  // of this scan's finite points.
  double largest = scan.max_abs;
  const auto clean = m_clean.find(field);
  if (clean != m_clean.end()) {
    const FiniteScan& c = clean->second.scan;
    largest = std::max(largest, static_cast<double>(c.max_abs));
    msg += "\n  the scan after step " + std::to_string(clean->second.step) +
           " was finite, its largest |" + field + "| " + num(c.max_abs) +
           (c.max_at >= 0 ? " at " + describe_point(c.max_at) : std::string());
  } else if (scan.max_at >= 0) {
    msg += "\n  the largest finite |" + field + "| is " + num(scan.max_abs) + " at " +
           describe_point(scan.max_at);
  }
  // The likely causes, the most telling first.
  std::vector<std::string> causes;
  if (largest >= kHugeValue || s.source_peak >= kHugeValue) {
    causes.push_back("values near the float32 limit (|" + field + "| reached " + num(largest) +
                     ", float32 ends at 3.4e38): a wavelet amplitude too large (largest source "
                     "sample " +
                     num(s.source_peak) + ")");
  }
  const std::string step_cause = "the time step: dt = " + num(s.dt) + " s is " + num(s.cfl) +
                                 " of the stability limit (set by " + s.dt_origin +
                                 "; a smaller time.cfl or time.dt is safer)";
  const std::string model_cause = "a velocity model with extreme values or sharp contrasts "
                                  "(vmax " +
                                  num(s.vmax) + " m/s)";
  if (s.cfl > 0.9) causes.push_back(step_cause);
  if (s.tti) {
    causes.push_back("strong anisotropy, or epsilon barely above delta (acoustic TTI is "
                     "unstable where epsilon < delta), in the absorbing layer especially");
  }
  causes.push_back(model_cause);
  if (s.cfl <= 0.9) causes.push_back(step_cause);
  msg += "\n  likely causes: ";
  for (std::size_t c = 0; c < causes.size(); ++c)
    msg += (c ? "; " : "") + causes[c];
  throw RuntimeFailure(msg);
}

void require_finite_traces(const std::vector<float>& traces, std::size_t receivers, double dt,
                           const std::string& what) {
  std::size_t count = 0;
  const std::int64_t first = first_nonfinite(traces, &count);
  if (first < 0) return;
  const std::size_t samples = receivers > 0 ? traces.size() / receivers : traces.size();
  const std::size_t r = samples > 0 ? static_cast<std::size_t>(first) / samples : 0;
  const std::size_t n = samples > 0 ? static_cast<std::size_t>(first) % samples : 0;
  throw RuntimeFailure(what + ": " + std::to_string(count) + " of " +
                       std::to_string(traces.size()) + " samples are not finite; the first, " +
                       kind_of(traces[static_cast<std::size_t>(first)]) + ", is receiver " +
                       std::to_string(r) + " (from 0), sample " + std::to_string(n) +
                       " (t = " + num(static_cast<double>(n) * dt) +
                       " s): the wavefield overflowed float32 or became NaN at the receivers");
}

std::vector<float> resample_finite_traces(const std::vector<float>& raw, std::size_t receivers,
                                          double dt, double dt_out, int samples,
                                          const std::string& what) {
  require_finite_traces(raw, receivers, dt, what);
  std::vector<float> out = resample_traces(raw, receivers, dt, dt_out, samples);
  require_finite_traces(out, receivers, dt_out, what + " resampled to dt_out");
  return out;
}

void require_finite_snapshot(const std::vector<float>& snapshot, int step, double time,
                             const Box& box, int decimate, const SnapshotGeometry& geometry) {
  std::size_t count = 0;
  const std::int64_t first = first_nonfinite(snapshot, &count);
  if (first < 0) return;
  const auto sx = static_cast<std::int64_t>(geometry.shape[0]);
  const auto sy = static_cast<std::int64_t>(geometry.shape[1]);
  const std::int64_t i = box.x0 + decimate * (first % sx);
  const std::int64_t j = box.y0 + decimate * ((first / sx) % sy);
  const std::int64_t k = box.z0 + decimate * (first / (sx * sy));
  throw RuntimeFailure("the snapshot of step " + std::to_string(step) + " (t = " + num(time) +
                       " s) is not finite at " + std::to_string(count) + " of " +
                       std::to_string(snapshot.size()) + " points; the first, " +
                       kind_of(snapshot[static_cast<std::size_t>(first)]) +
                       ", at grid point (i, j, k) = (" + std::to_string(i) + ", " +
                       std::to_string(j) + ", " + std::to_string(k) + ")");
}

} // namespace minimod
