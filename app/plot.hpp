#pragma once
/// `minimod-gpu plot`: PNG quicklooks of an output file (docs/output.md): a shot gather (variable
/// density or wiggles, with an optional gain), or two slices of a wavefield snapshot or of the
/// velocity model. Reads the file with the HDF5 C API only.

#include <optional>
#include <string>

namespace minimod {

/// Colour map of a quicklook.
enum class Colormap {
  Auto,    ///< grey for shot gathers, seismic for snapshots
  Grey,    ///< white (negative) through grey to black (positive), as a variable-density display
  Seismic, ///< blue (negative) through white to red (positive)
  Viridis, ///< dark blue through green to yellow (matplotlib's viridis), for the velocity model
};

/// "grey" (or "gray"), "seismic", "viridis" or "auto"; anything else is an InputError naming
/// `option`.
Colormap parse_colormap(const std::string& text, const std::string& option);

/// A time-variant gain applied to a shot gather before it is drawn.
enum class GainKind {
  None,     ///< the traces as recorded
  Agc,      ///< automatic gain control: each sample divided by the RMS of a window centred on it
  TSquared, ///< each sample multiplied by t^2 (spherical spreading and absorption, roughly)
};

/// The --gain option.
struct Gain {
  GainKind kind = GainKind::None;
  double window = 0.25; ///< AGC window length in seconds
};

/// "none", "t2", "agc" or "agc:WINDOW_S" (seconds > 0); anything else is an InputError naming
/// `option`.
Gain parse_gain(const std::string& text, const std::string& option);

/// --slice: one plane of a volume, normal to an axis, at one of its points.
struct SliceChoice {
  int axis = 2;             ///< 0, 1, 2: the plane normal to x (y-z), y (x-z) or z (x-y)
  std::optional<int> index; ///< the point along the axis; none: through the source, or the middle
};

/// "x", "y" or "z", optionally "=INDEX" (an integer >= 0); anything else is an InputError naming
/// `option`.
SliceChoice parse_slice(const std::string& text, const std::string& option);

/// What `minimod-gpu plot` draws and where it writes it.
struct PlotOptions {
  std::string input;           ///< HDF5 output file of a run
  std::optional<int> shot;     ///< --shot: shot number (/shots/NNNN); with --snapshot, the shot
                               ///< whose snapshots (default: the first that has them)
  std::optional<int> snapshot; ///< --snapshot: index among a shot's snapshots, negative from the
                               ///< end (with none of shot, snapshot and model: the file's first
                               ///< shot, or its last snapshot when it has no shots)
  std::optional<SliceChoice> slice; ///< --slice: one plane instead of the x-z and x-y slices
  bool model = false;               ///< --model: slices of /model/vp
  /// -o: PNG path; empty: <input without .h5>_shotK.png, _snapN.png (_shotK_snapN.png in a file
  /// with the snapshots of several shots) or _model.png
  std::string output;
  Colormap colormap = Colormap::Auto; ///< --colormap
  double clip_percentile = 99.0;      ///< --clip: symmetric clip at this percentile of |value|
  Gain gain;                          ///< --gain (shot gathers only)
  bool wiggle = false; ///< --wiggle: wiggle traces, positive lobes filled (shot gathers only)
};

/// What plot_file drew.
struct PlotResult {
  std::string path;    ///< the PNG written
  int width = 0;       ///< image width in pixels
  int height = 0;      ///< image height in pixels
  std::string summary; ///< one line: what was drawn and the clip value
};

/// Draws the quicklook `options` asks for and writes it as a PNG.
/// Throws InputError when the input is not a minimod-gpu output file or lacks the shot, snapshot
/// or model asked for, or when options that do not go together are given (the message names the
/// option and what is allowed), OutputError when the PNG cannot be written.
PlotResult plot_file(const PlotOptions& options);

/// The `plot` subcommand: plot_file, then one line on stdout naming the PNG. Returns kExitOk;
/// failures are thrown as by plot_file, for main's one catch.
int plot_command(const PlotOptions& options);

} // namespace minimod
