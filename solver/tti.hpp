#pragma once
/// Acoustic TTI (docs/physics.md section 5, docs/tti.md): the model and its checks, the stable time
/// step of the 73-point operator on (p, q), and the TtiProblem a backend steps (the CPU backend's
/// TTI kernel `cpu` is the reference of the GPU kernels). The per-point math is kernels/tti_K.hpp.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "io/survey.hpp"
#include "kernels/tti_K.hpp"
#include "kernels/tti_problem.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// A TTI medium: dense arrays of grid.points() values, x fastest.
struct TtiModel {
  std::vector<float> vp;      ///< P velocity along the symmetry axis (m/s), > 0
  std::vector<float> epsilon; ///< Thomsen epsilon, >= delta
  std::vector<float> delta;   ///< Thomsen delta, > -1/2
  std::vector<float> theta; ///< tilt of the symmetry axis from vertical (radians), |theta| <= pi/2
  /// Azimuth of the tilt from +x towards +y (radians), |phi| <= pi; empty: 0 everywhere (no array).
  std::vector<float> phi;
  /// What placing a model file on the grid did (resampling); empty when its points are the grid's.
  std::string notice;
};

/// Slack on the angle limits for angles rounded to float (float(pi/2) > pi/2).
inline constexpr double kTtiAngleSlack = 1e-6;

/// Bound on delta and epsilon - delta: the medium stores twice each as a 16-bit float (largest
/// 65504; docs/tti.md, "Medium layout and the TTI floor"). Real rocks stay below 1.
inline constexpr double kTtiAnisotropyMax = 30000.0;

/// Check a model against its grid; throws InputError, prefixed by `where` (the survey's
/// `file:line: key`), naming the first offending point (i, j, k) in memory order, its position and
/// values: array sizes, vp > 0, finite values, delta > -1/2, epsilon >= delta (the system is
/// unstable otherwise), delta and epsilon - delta below kTtiAnisotropyMax, |theta| <= pi/2 and
/// |phi| <= pi (radians, with kTtiAngleSlack).
void validate_tti_model(const Grid& grid, const TtiModel& model,
                        const std::string& where = "tti model");

/// Whether a run of the model stores and computes the azimuth terms: some point has a tilt and a
/// non-zero azimuth (n_y != 0). build_tti_problem allocates axis_y exactly then.
bool tti_model_has_azimuth(const TtiModel& model);

/// Whether some point of the absorbing layer (`layer` widths on `grid`) is elliptic as the medium
/// stores it (2 (epsilon - delta) rounds to a binary16 zero): there the layer drives phi_p, and a
/// run needs the phi_p array (tti_needs_phi says the same of a built problem).
bool tti_layer_has_elliptic_point(const Grid& grid, const LayerWidths& layer,
                                  const TtiModel& model);

/// Unit symmetry axis (sin t cos p, sin t sin p, cos t) of tilt t and azimuth p.
std::array<double, 3> tti_symmetry_axis(double theta, double phi);

/// Gershgorin bound (1/m^2) of the 73-point (p, q) operator at one point of a locally homogeneous
/// medium, to be multiplied by vp^2: the larger column sum of |coefficients|, over the p rows and
/// the q rows, of the p column and of the q column (docs/tti.md, "Stable time step"). Equals
/// laplacian_bound(grid)^2 when epsilon = delta = 0, whatever the axis.
double tti_gershgorin_bound(const Grid& grid, double epsilon, double delta, double theta,
                            double phi);

/// Largest stable dt (cfl = 1) of a model: 2 / sqrt(B) with B the larger of
/// vmax^2 (1 + 2 max(epsilon_max, 0)) laplacian_bound^2 (the fastest P wave on the 25-point bound)
/// and the largest vp^2 tti_gershgorin_bound over the grid. `vmax` > 0 replaces the model's
/// largest vp (and scales the Gershgorin term by (vmax / model vmax)^2). Needs a valid model.
double tti_dt_limit(const Grid& grid, const TtiModel& model, double vmax = 0);

/// Choices of a TTI run that the survey supplies.
struct TtiPlanOptions {
  int steps = 0;                  ///< time steps; 0: from duration
  std::optional<double> duration; ///< seconds, when steps is 0: steps = ceil(duration / dt)
  double cfl = 0.8;               ///< fraction of the stable dt, used when dt is not given
  std::optional<double> dt;       ///< seconds; InputError above the cfl = 1 limit
  std::optional<double> vmax;     ///< >= the model's largest vp; default: that largest vp
  std::optional<int> layer_width; ///< points on every face; default from ntaper and fmax
  double ntaper = 3;              ///< layer width in wavelengths of the fastest P wave at fmax
  double fmax = 0;                ///< Hz; needed when layer_width is not given
  bool free_surface = false;      ///< pressure-free top face: no layer there (docs/tti.md)
  std::string duration_key = "tti plan: duration"; ///< names the duration in errors
};

/// Everything derived before stepping a TTI run.
struct TtiPlan {
  Grid grid;
  LayerWidths layer;
  double vmax = 0;         ///< largest vp (or options.vmax)
  double epsilon_max = 0;  ///< largest epsilon
  double speed_max = 0;    ///< fastest P wave, vmax sqrt(1 + 2 max(epsilon_max, 0)): eta, width
  double dt_limit_iso = 0; ///< stable_dt_limit(grid, vmax): the isotropic bound, for comparison
  double dt_limit = 0;     ///< tti_dt_limit: the TTI bound at cfl = 1
  double dt = 0;
  double cfl = 0; ///< effective: dt / dt_limit
  int steps = 0;
  /// Pressure-free top face: p and q zero at k = 0 and mirrored into the ghost planes after each
  /// step, as the acoustic u (docs/physics.md section 3, docs/tti.md); no top layer.
  bool free_surface = false;
  double fmax = 0; ///< the highest source frequency, Hz (0: unknown)
  /// The slowest P wave's wavelength at fmax in grid points of the largest spacing: the slowest
  /// over every point and direction, vp sqrt(1 + 2 min(0, epsilon, delta)), a lower bound.
  double points_per_wavelength = 0;
  /// What `validate` and `run` print before any work: the model's resampling notice and the
  /// survey checks (check_survey_traps), as for the acoustic plan.
  std::vector<std::string> warnings;
};

/// Check the model and make the plan. Layer widths as for the isotropic plan
/// (layer_width_points) with speed_max as the velocity. Throws InputError for a bad model, a dt
/// above the limit, a vmax below the model's, or layers wider than half the grid.
TtiPlan make_tti_plan(const Grid& grid, const TtiModel& model, const TtiPlanOptions& options);

/// A TTI point source: samples s(t_n) for n = 0..steps-1, injected into p only (docs/tti.md).
struct TtiSource {
  Vec3 position{};
  std::vector<float> samples;
  Injection injection = Injection::Physical; ///< physical: p += vp2dt2 s / (dx dy dz)
};

/// The device-ready arrays of a TTI run (medium, eta, taps, samples) in the padded layout.
/// Validates the model (InputError); positions outside the grid and sources with fewer than
/// plan.steps samples: InputError.
TtiProblem build_tti_problem(const TtiPlan& plan, const TtiModel& model,
                             const std::vector<TtiSource>& sources,
                             const std::vector<Vec3>& receivers,
                             Interpolation interpolation = Interpolation::Sinc);

/// Make the layer of `p` (built by build_tti_problem from `plan`) a C-PML with `params`
/// (kernels/tti_cpml.hpp): its profile for the fastest P wave (plan.speed_max, as Minimod's eta),
/// and no eta. No layer: nothing changes. Throws std::invalid_argument for bad parameters.
void use_tti_cpml(TtiProblem& p, const TtiPlan& plan, const CpmlParams& params);

/// Replace the taps and source samples of `p` with those of another shot (same grid and medium).
/// Positions outside the grid and sources with fewer than p.steps samples: InputError.
void set_tti_shot(TtiProblem& p, const std::vector<TtiSource>& sources,
                  const std::vector<Vec3>& receivers, Interpolation interpolation);

} // namespace minimod
