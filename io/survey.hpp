#pragma once
/// The survey: what a user asks for in SURVEY.yaml (docs/survey.md), parsed and checked field by
/// field. Cross-field checks that need the model and the stability limit happen in solver/plan.

#include "core/grid.hpp"
#include "core/precision.hpp"

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minimod {

/// A point in metres.
using Vec3 = std::array<double, 3>;

/// Where a value came from in the survey file, for error messages.
struct SourceLoc {
  std::string file; ///< survey path as given
  int line = 0;     ///< 1-based line, 0 when unknown
  std::string key;  ///< dotted key path, e.g. "sources[1].position"
  /// "survey.yaml:12: sources[1].position"
  std::string where() const;
};

/// grid: shape (points, layers included), spacing (m), origin (m).
struct GridSpec {
  std::array<int, 3> shape{};
  std::array<double, 3> spacing{};
  Vec3 origin{0, 0, 0};
  SourceLoc loc;
};

/// Axis order of a raw model file: which axis varies fastest.
enum class AxisOrder { Xyz, Zyx }; ///< Xyz: x fastest (C order [z][y][x]); Zyx: z fastest

/// An anisotropy parameter of a TTI survey (epsilon, delta, theta, phi): constant, layered by
/// depth, a linear gradient, or a file with the grid's shape.
struct PropertySpec {
  enum class Kind { Constant, Layered, Gradient, File } kind = Kind::Constant;
  double value = 0;                              ///< Constant
  std::vector<std::pair<double, double>> layers; ///< Layered: (top depth m, value)
  double value0 = 0, gradient = 0, z0 = 0;       ///< Gradient: value0 + gradient (z - z0)
  std::string file, format = "raw", dataset; ///< File: as model.file (grid's shape, no resampling)
  int order_zyx = 0;                         ///< File: 1 when z varies fastest
  /// Angles: the largest |value| allowed, in the survey's unit, and that unit ("degrees" or
  /// "radians"); checked by the parser and, for files, by build_property.
  std::optional<double> abs_max;
  std::string unit;
  SourceLoc loc;
};

/// anisotropy: the TTI parameters (docs/physics.md section 5); angles converted to radians.
struct AnisotropySpec {
  PropertySpec epsilon, delta, theta;
  std::optional<PropertySpec> phi; ///< absent: azimuth 0 and no array
  bool degrees = true;             ///< the unit the survey wrote the angles in
  SourceLoc loc;
};

/// One layer of a layered model: velocity from depth `top` down to the next layer's top.
struct Layer {
  double top = 0;
  double velocity = 0;
};

/// model: how the velocity is built.
struct ModelSpec {
  enum class Kind { Constant, Layered, Gradient, File } kind = Kind::Constant;
  double velocity = 0;             ///< Constant
  std::vector<Layer> layers;       ///< Layered, tops strictly increasing
  double v0 = 0;                   ///< Gradient: v(z) = v0 + gradient * (z - z0)
  double gradient = 0;             ///< Gradient, 1/s
  double z0 = 0;                   ///< Gradient reference depth (m)
  std::string file;                ///< File: path resolved against the survey's folder
  std::string format = "raw";      ///< File: raw, hdf5, segy or npy
  std::string dataset;             ///< File (hdf5): dataset path; empty: the file's only dataset
  std::array<int, 3> file_shape{}; ///< File: nx, ny, nz of the data
  bool file_shape_given = false;   ///< model.shape was written
  std::optional<std::array<double, 3>> spacing; ///< File: model spacing (m) when not the grid's
  std::optional<Vec3> origin;                   ///< File: model origin (m) when not the grid's
  int segy_inline_byte = 189;                   ///< File (segy): inline number's header byte
  int segy_crossline_byte = 193;                ///< File (segy): crossline number's header byte
  AxisOrder order = AxisOrder::Xyz;
  bool order_given = false;   ///< File: model.order was written
  bool extend_edge = false;   ///< File: grid points beyond the model take its nearest edge value
  std::optional<double> vmax; ///< velocity used for dt and layer width (>= the model's largest)
  SourceLoc loc;
  SourceLoc file_loc;    ///< location of model.file, for file errors
  SourceLoc spacing_loc; ///< location of model.spacing (or of the model section)
  SourceLoc vmax_loc;
};

/// time: either duration or steps; optional dt (else from cfl).
struct TimeSpec {
  std::optional<double> duration; ///< seconds
  std::optional<int> steps;
  std::optional<double> dt; ///< seconds; must not exceed the cfl = 1 limit
  double cfl = 0.8;
  SourceLoc loc, dt_loc, cfl_loc;
};

/// How off-grid sources and receivers meet the grid (docs/physics.md section 4).
enum class Interpolation { Trilinear, Sinc };

/// The layer's formulation when a survey names none (docs/physics.md, "C-PML").
inline constexpr BoundaryType kDefaultBoundaryType = BoundaryType::Minimod;

/// The layer's width in wavelengths of vmax/fmax when a survey gives neither boundary.width nor
/// boundary.ntaper (a C-PML without them is chosen from a reflection target instead).
inline constexpr double kDefaultNtaper = 3;

/// boundary: layer width in points, ntaper wavelengths of vmax/fmax, or (C-PML only) the width
/// whose measured return meets reflection_db.
struct BoundarySpec {
  /// The layer's formulation; its C-PML parameters (unset: the defaults of docs/physics.md).
  BoundaryType type = kDefaultBoundaryType;
  std::optional<double> reflection, power, alpha, kappa;
  std::optional<int> width;     ///< points on every face
  std::optional<double> ntaper; ///< wavelengths; unset: kDefaultNtaper (Minimod's layer)
  /// C-PML only: the one-face return (dB, < 0) the layer must meet from 0 to 60 degrees; unset:
  /// the plan's default target when neither width nor ntaper is given (solver/plan.hpp).
  std::optional<double> reflection_db;
  std::optional<double> fmax; ///< Hz; default: highest source fmax
  bool free_surface = false; ///< pressure-free top face (no layer there), docs/physics.md section 3
  SourceLoc loc, width_loc, reflection_db_loc, type_loc;
};

/// A source wavelet.
struct WaveletSpec {
  enum class Kind { Ricker, Minimod, File } kind = Kind::Ricker;
  double frequency = 0;        ///< Ricker peak frequency (Hz)
  std::optional<double> delay; ///< Ricker t0 (s), default 1.5 / frequency
  double fmax = 0;             ///< Minimod: fmax (Hz); File: optional declared fmax
  std::string file;            ///< File: samples, resolved against the survey's folder
  double file_dt = 0;          ///< File: sample interval (s)
  double amplitude = 1;        ///< scale factor
  SourceLoc loc;
};

/// How a source enters the wavefield (docs/physics.md section 4).
enum class Injection { Physical, Minimod };

/// One source.
struct SourceSpec {
  Vec3 position{};
  WaveletSpec wavelet;
  Injection injection = Injection::Physical;
  SourceLoc loc; ///< of the position
};

/// One shot: the sources fired together.
struct ShotSpec {
  std::vector<SourceSpec> sources;
  SourceLoc loc;
};

/// One receiver position with where it was declared.
struct ReceiverSpec {
  Vec3 position{};
  SourceLoc loc;
};

/// Sub-volume of snapshots in metres (inclusive bounds).
struct SnapshotBox {
  Vec3 min{}, max{};
};

/// output: file, trace interval and snapshots.
struct OutputSpec {
  std::string file = "out/survey.h5"; ///< resolved against the current directory
  std::optional<double> dt_out;       ///< trace sample interval; default dt
  int snapshot_every = 0;             ///< 0: no snapshots
  int snapshot_decimate = 1;          ///< keep every k-th point along each axis
  std::optional<SnapshotBox> snapshot_box;
  /// The shots whose snapshots are written (output.snapshots.shots), sorted, each once.
  std::vector<int> snapshot_shots{0};
  std::optional<std::string> segy; ///< also write the gathers as SEG-Y here
  bool segy_per_shot = false;      ///< one SEG-Y file per shot (name-shotK.sgy) instead of one
  SourceLoc loc, dt_out_loc, snapshot_loc, segy_loc, snapshot_shots_loc;
};

/// The whole survey.
struct Survey {
  std::string path; ///< as given on the command line
  std::string text; ///< the file's text (stored in the output)
  std::string name; ///< optional label
  std::string physics = "acoustic";
  SourceLoc physics_loc; ///< of `physics`, where the survey gives it
  GridSpec grid;
  ModelSpec model;
  TimeSpec time;
  BoundarySpec boundary;
  std::vector<ShotSpec> shots;         ///< `sources` (one shot) or `shots` (one shot per position)
  std::vector<SourceSpec> sources;     ///< the sources of the current shot (see survey_for_shot)
  std::vector<ReceiverSpec> receivers; ///< expanded from points, lines, grids and csv
  bool receivers_move = false;         ///< receivers are offsets from each shot's first source
  Interpolation interpolation = Interpolation::Sinc;
  std::optional<AnisotropySpec> anisotropy; ///< physics: tti
  OutputSpec output;
  /// `precision`: how the run stores its fields and medium (core/precision.hpp); --precision
  /// overrides it.
  Precision precision = Precision::Float32;
  SourceLoc precision_loc;
  std::optional<std::string> kernel; ///< kernel spec (same grammar as --kernel)
  SourceLoc kernel_loc;
  /// `decomposition`: subdomains along x, y and z of a shot's grid (one MPI rank each); {0, 0, 0}
  /// is `auto` (chosen from the grid and ranks_per_shot); absent: the grid is not split.
  std::optional<std::array<int, 3>> decomposition;
  SourceLoc decomposition_loc;
  /// `ranks_per_shot`: MPI ranks that model one shot together; 0 when not given.
  int ranks_per_shot = 0;
  SourceLoc ranks_per_shot_loc;
};

/// The survey as seen by shot `shot`: its sources, and its receivers (offsets added when they move
/// with the source; throws InputError naming the shot and receiver when one leaves the grid).
Survey survey_for_shot(const Survey& survey, int shot);
/// The check of survey_for_shot without the copy: every receiver of shot `shot` inside the grid.
void check_shot_receivers(const Survey& survey, int shot);

/// Refuses (InputError naming where the precision came from, precision_loc, and the other key
/// with its place) a float16 survey with what the 16-bit storage does not have yet (docs/survey.md,
/// `precision`): physics tti, boundary.type cpml, a decomposition or ranks_per_shot of more than
/// one subdomain. A split that `decomposition: auto` or --decompose chooses is refused where it is
/// chosen (run_split). load_survey calls it; so does a --precision that replaces the survey's.
void check_precision_support(const Survey& survey);

/// Parse and check a survey file. Throws InputError naming file, line, key, value and what is
/// allowed, for syntax errors, unknown keys, wrong types, missing fields and out-of-range values.
Survey load_survey(const std::string& path);
/// Parse survey text; relative file names resolve against base_dir.
Survey parse_survey(const std::string& text, const std::string& path, const std::string& base_dir);

} // namespace minimod
