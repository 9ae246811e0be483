#pragma once
/// The NaN/Inf watch of the time loops (acoustic and TTI): the wavefield is scanned every few
/// steps and after the last one (Backend::scan_field), and traces and
/// snapshots are checked before they are written, so that a run never ends with exit 0 and a
/// non-finite sample in its output. A failure is a RuntimeFailure (exit 3) that names the step,
/// the time, where the field blew up and the likely causes.

#include "core/grid.hpp"
#include "io/h5_output.hpp"
#include "io/survey.hpp"
#include "kernels/finite_scan.hpp"
#include "solver/tti.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace minimod {

/// Least number of steps between two scans of the wavefield. A scan reads one field once (4 bytes
/// a point); a step moves at least 16 bytes a point (acoustic) or 36 (TTI, whose scans read p and
/// q), so scans this far apart cost at most 0.25 % of the stepping.
inline constexpr int kFiniteCheckMinInterval = 100;

/// Steps between two scans of a run of `steps` steps once it is under way: kFiniteCheckMinInterval,
/// or steps / 100 on long runs (about a hundred scans a run at most). The first scans come after
/// steps 1, 2, 4, 8, ... (FiniteWatch), where a blow-up by a source is most likely.
int finite_check_interval(int steps);

/// What the watch needs to name a point and the likely causes of a blow-up.
struct FiniteWatchSetup {
  Grid grid;
  LayerWidths layer;
  std::vector<Vec3> sources; ///< positions in metres
  double dt = 0;
  int steps = 0;
  double cfl = 0;         ///< dt over the stability limit
  std::string dt_origin;  ///< what set dt: "time.dt" or "time.cfl = 0.8"
  double vmax = 0;        ///< the velocity dt was computed with (m/s)
  double source_peak = 0; ///< the largest |source sample|
  bool tti = false;
};

/// What set dt, for FiniteWatchSetup::dt_origin: "time.dt" or "time.cfl = 0.8".
std::string finite_watch_dt_origin(const TimeSpec& time);
/// The largest finite |sample| of the source samples, for FiniteWatchSetup::source_peak.
double finite_watch_source_peak(const std::vector<float>& samples);

/// The setup of one shot's watch, for either equation: `shot` is survey_for_shot's survey, `plan`
/// its Plan or TtiPlan (the same names for grid, layer, dt, steps, cfl and vmax), and
/// `source_samples` the shot's problem's.
template <class AnyPlan>
FiniteWatchSetup make_watch_setup(const Survey& shot, const AnyPlan& plan,
                                  const std::vector<float>& source_samples, bool tti) {
  FiniteWatchSetup w;
  w.grid = plan.grid;
  w.layer = plan.layer;
  for (const auto& src : shot.sources)
    w.sources.push_back(src.position);
  w.dt = plan.dt;
  w.steps = plan.steps;
  w.cfl = plan.cfl;
  w.dt_origin = finite_watch_dt_origin(shot.time);
  w.vmax = plan.vmax;
  w.source_peak = finite_watch_source_peak(source_samples);
  w.tti = tti;
  return w;
}

/// The wavefield watch of one shot's time loop: call due() where the loop may scan (it
/// synchronises with the device), and check() with the scan.
class FiniteWatch {
public:
  explicit FiniteWatch(FiniteWatchSetup setup);

  /// Whether a scan is due after `done` steps: after steps 1, 2, 4, ... up to the interval, then
  /// every interval, every step once the field holds values near the float32 limit (1e30), and
  /// after the last step.
  bool due(int done) const;

  /// Take the scan of `field` ("u", "p", "q") made after `done` steps. Throws RuntimeFailure
  /// when it found a NaN or an Inf: the step and time, how many points, the first of them (grid
  /// indices, metres, in the absorbing layer or near a source), the largest finite |value| of
  /// the last clean scan of the field and where it was, and the likely causes.
  void check(int done, const FiniteScan& scan, const std::string& field);

  /// "(i, j, k) = (10, 12, 3) = (100, 120, 30) m, in the absorbing layer (top face), near source 1
  /// (25 m away)" for the dense index d.
  std::string describe_point(std::int64_t d) const;

private:
  struct Clean {
    int step = 0;
    FiniteScan scan;
  };
  FiniteWatchSetup m_setup;
  int m_interval = 0;
  std::int64_t m_next = 1;              ///< steps done when the next scan is due
  std::map<std::string, Clean> m_clean; ///< each field's last scan without NaN or Inf
};

/// Throws RuntimeFailure when a sample of `traces` ([receivers][samples], samples dt apart) is
/// not finite, naming `what` (e.g. "shot 3's traces"), the receiver, the sample and its time.
void require_finite_traces(const std::vector<float>& traces, std::size_t receivers, double dt,
                           const std::string& what);

/// resample_traces (solver/wavelet.hpp) with both its input and its output checked by
/// require_finite_traces: the traces a run writes.
std::vector<float> resample_finite_traces(const std::vector<float>& raw, std::size_t receivers,
                                          double dt, double dt_out, int samples,
                                          const std::string& what);

/// Throws RuntimeFailure when a value of a snapshot (extract_snapshot of `box`, every
/// `decimate`-th point, `shape` points) is not finite, naming the step, the time and the grid
/// point.
void require_finite_snapshot(const std::vector<float>& snapshot, int step, double time,
                             const Box& box, int decimate, const SnapshotGeometry& geometry);

} // namespace minimod
