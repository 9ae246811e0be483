#pragma once
/// The plan of a run: everything derived from the survey and the model before time stepping
/// (stable dt, layer widths, trace and snapshot sampling, memory), with the checks that need it.

#include "core/grid.hpp"
#include "io/h5_output.hpp"
#include "io/limits.hpp"
#include "io/survey.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// The grid a survey's `grid:` section describes.
Grid make_grid(const GridSpec& spec);

/// Gershgorin bound of the 8th-order Laplacian: sqrt(sum_axis (|c0| + 2 sum|c_m|) / h^2).
double laplacian_bound(const Grid& grid);
/// Largest stable dt at cfl = 1 for velocity vmax: 2 / (vmax * laplacian_bound).
double stable_dt_limit(const Grid& grid, double vmax);
/// Layer width in points for spacing h: ntaper * (vmax / fmax) / h, rounded up.
int layer_width_points(double ntaper, double vmax, double fmax, double h);

/// Everything derived before stepping.
struct Plan {
  Grid grid;
  LayerWidths layer;
  double model_vmin = 0, model_vmax = 0; ///< of the velocity model
  double vmax = 0;                       ///< used for dt and the layer (model.vmax or model_vmax)
  double fmax = 0;                       ///< boundary.fmax or the highest source fmax
  double dt = 0;
  double dt_limit = 0; ///< cfl = 1 bound
  double cfl = 0;      ///< effective: dt / dt_limit
  int steps = 0;
  double duration = 0;              ///< steps * dt
  double points_per_wavelength = 0; ///< vmin / (fmax * largest spacing)
  double dt_out = 0;
  int trace_samples = 0; ///< samples per output trace, t = k * dt_out
  int snapshot_every = 0;
  int snapshot_count = 0;
  Box snapshot_box; ///< grid indices kept (before decimation)
  int snapshot_decimate = 1;
  SnapshotGeometry snapshot_geometry;
  std::size_t device_bytes = 0; ///< fields, taps and traces on the device
  std::size_t output_bytes = 0; ///< traces and snapshots in the output file
  /// Host memory of a run on a GPU: the model, the host problem (padded medium and damping, source
  /// samples) and the traces back; a run on the CPU backend also holds the fields (device_bytes).
  double host_bytes = 0;
  std::vector<std::string> warnings;
};

/// Smallest and largest velocity of the model: all the plan needs of it.
struct VelocityRange {
  double vmin = 0, vmax = 0;
};

/// Make the plan. `velocity` is the dense model (x fastest). `steps_override` > 0 replaces the
/// survey's time span. Throws InputError for a dt above the stability limit, layers wider than
/// half the grid, counts beyond their limits (steps, trace samples, output size), values the
/// solver's float32 cannot hold, wavelets that do not sample to finite values, a SEG-Y output
/// this build or the interval cannot write, and other checks that need the model.
Plan make_plan(const Survey& survey, const std::vector<float>& velocity, int steps_override = 0);
/// The same plan from the model's velocity range alone (`validate` without building the model).
Plan make_plan(const Survey& survey, const VelocityRange& velocity, int steps_override = 0);

/// Fewer grid points than this per shortest wavelength are visibly dispersive (docs/physics.md).
inline constexpr double kMinPointsPerWavelength = 4.0;
/// The warning for `points` grid points per wavelength (vmin / (fmax h)).
std::string dispersion_warning(double points, double vmin, double fmax, double h);

/// The trace sampling and the output file's size of `plan`, whose steps, dt and snapshots are set:
/// dt_out, trace_samples and output_bytes (traces, snapshots, the stored /model and the survey's
/// text). Throws InputError for more trace samples than an int holds and an output above
/// kMaxOutputBytes.
void plan_output(const Survey& survey, Plan& plan);

/// What the survey checks of check_survey_traps look at, as both equations' plans hold it.
struct SurveyTrapInputs {
  Grid grid;
  LayerWidths layer;
  double model_vmin = 0, model_vmax = 0; ///< of the (P) velocity model, m/s
  double fmax = 0;                       ///< the highest source frequency, Hz (0: unknown)
  double duration = 0;                   ///< steps * dt, seconds
  double dt = 0;                         ///< the time step, seconds (0: unknown)
};

/// The survey checks shared by the acoustic and the TTI plan (`validate` and `run` alike): every
/// shot's sources and receivers against the absorbing layer (and a free surface, when there is
/// one), the interior the layer leaves against a wavelength, and velocities, spacings and
/// durations that look like another unit (with the run's cost), and a trace interval whose Nyquist
/// frequency lies below the sources' band. Appends warnings (the count and the first offender);
/// throws InputError for a source on a free surface, which injects nothing.
void check_survey_traps(const Survey& survey, const SurveyTrapInputs& inputs,
                        std::vector<std::string>& warnings);

/// The level above which the plan warns of an absorbing face's return at grazing incidence: -20
/// dB, a tenth of the incident amplitude (docs/survey.md, the plan's warnings).
constexpr double kGrazingReturnDb = -20;

/// One absorbing face's return, in dB of the incident amplitude, for a layer of `type` and `width`
/// points at `angle` degrees from the face's normal: the measured table of docs/physics-checks.md
/// ("Absorbing layer by angle": widths 10, 16, 20, 30; 0 to 70 degrees), linear in dB between
/// measured angles and widths, beyond 70 degrees the 70-degree value scaled as the continuous
/// PML's R^cos(angle) (0 dB at 90), below 10 points the 10-16 slope extended (at most 0 dB), above
/// 30 points the 30-point row.
double layer_return_db(BoundaryType type, int width, double angle);

/// The smallest angle (degrees, to 0.1) at which layer_return_db exceeds `db`; 90 when none does.
double layer_limit_angle(BoundaryType type, int width, double db);

/// The largest angle from a face's normal, in degrees, that a reflection target
/// (boundary.reflection_db) holds for: up to 60 the C-PML's return hardly depends on the angle
/// (docs/physics-checks.md), beyond it the return from the outer face takes over.
inline constexpr int kLayerTargetAngle = 60;

/// The one-face return, in dB, that a C-PML whose survey gives none of boundary.width,
/// boundary.ntaper and boundary.reflection_db is chosen to meet from 0 to kLayerTargetAngle
/// degrees. -49 dB picks the measured table's 10-point layer: its largest return to 60 degrees
/// is -49.4 dB (at normal incidence), while 9 points, the 10-16 slope extended, return -47.3 dB;
/// about -50 dB to 60 degrees. A round -50 dB would take 11 points.
inline constexpr double kDefaultCpmlReturnDb = -49;

/// The target the plan chooses the layer's width from: boundary.reflection_db, or
/// kDefaultCpmlReturnDb for a C-PML given neither width nor ntaper; none otherwise.
std::optional<double> layer_target_db(const BoundarySpec& boundary);

/// The largest layer_return_db(type, width, angle) over 0 to kLayerTargetAngle degrees in
/// 1-degree steps: what a reflection target is held against.
double layer_worst_return_db(BoundaryType type, int width);

/// The widest layer the measured table distinguishes: wider ones return as its widest row.
inline constexpr int kWidestMeasuredLayer = 30;
/// The narrowest measured layer: narrower ones extend the slope between its two narrowest rows.
inline constexpr int kNarrowestMeasuredLayer = 10;

/// The smallest C-PML width whose layer_worst_return_db is at or below `target_db`; 0 when no
/// width up to kWidestMeasuredLayer meets it.
int cpml_width_for_return(double target_db);

/// The C-PML width for `boundary`'s target (layer_target_db, which must be set). Throws
/// InputError, at boundary.reflection_db, for a target no width of the table meets, naming the
/// value and the best return reachable.
int chosen_cpml_width(const BoundarySpec& boundary);

/// "chosen for boundary.reflection_db -55 dB to 60 degrees" or "chosen for the default -49 dB
/// to 60 degrees": how the plan came to a width chosen from a target.
std::string layer_target_text(const BoundarySpec& boundary);

/// Throws InputError at `loc` when the layer on an axis is wider than half the grid (2 x width
/// >= the grid's points along it); `origin` (" (ntaper 3 x ...)") says where the width came from.
void check_layer_fits_grid(const Grid& grid, const LayerWidths& layer, const SourceLoc& loc,
                           const std::string& origin);

/// What `validate` prints of the boundary: its type and width a face (one line for each distinct
/// width, naming the faces when they differ; a free-surface top has no layer), why the width when
/// a target chose it, and the expected one-face return by angle from the measured table
/// (layer_return_db at 0, 30, 45, 60 and 70 degrees).
std::string describe_boundary(const Survey& survey, const LayerWidths& layer);

/// The stepping time of a survey, estimated from the rates measured in docs/perf/README.md.
struct SteppingEstimate {
  double seconds = 0;           ///< of time stepping, every shot
  double points_per_second = 0; ///< the rate used
  std::string basis;            ///< what the rate is, in words
};

/// The time `steps` steps of every shot on `grid` take on the CPU backend (`gpu` false, with
/// `threads` OpenMP threads) or on one H100, for the survey's equation (TTI with or without
/// azimuth) and boundary (the C-PML costs more than Minimod's layer).
SteppingEstimate estimate_stepping(const Survey& survey, const Grid& grid, double steps, bool gpu,
                                   int threads);

/// OpenMP threads the CPU backend runs on (1 without OpenMP).
int cpu_threads();

/// "3.1 s", "12 min", "2.5 h", "3 days".
std::string duration_text(double seconds);

/// Human-readable plan, as `minimod-gpu validate` prints it.
std::string describe_plan(const Survey& survey, const Plan& plan);

} // namespace minimod
