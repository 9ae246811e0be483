#pragma once
/// `minimod-gpu plot`: PNG quicklooks of an output file (docs/output.md): a shot gather, or two
/// slices of a wavefield snapshot. Reads the file with the HDF5 C API only.

#include <optional>
#include <string>

namespace minimod {

/// Colour map of a quicklook.
enum class Colormap {
  Auto,    ///< grey for shot gathers, seismic for snapshots
  Grey,    ///< white (negative) through grey to black (positive), as a variable-density display
  Seismic, ///< blue (negative) through white to red (positive)
};

/// "grey" (or "gray"), "seismic" or "auto"; anything else is an InputError naming `option`.
Colormap parse_colormap(const std::string& text, const std::string& option);

/// What `minimod-gpu plot` draws and where it writes it.
struct PlotOptions {
  std::string input;           ///< HDF5 output file of a run
  std::optional<int> shot;     ///< --shot: shot number (/shots/NNNN); unset means 0
  std::optional<int> snapshot; ///< --snapshot: index into /snapshots; unset: the last one when
                               ///< the file has snapshots and no shot was asked for
  std::string output;          ///< -o: PNG path; empty: <input without .h5>_shotK.png or _snapN.png
  Colormap colormap = Colormap::Auto; ///< --colormap
  double clip_percentile = 99.0;      ///< --clip: symmetric clip at this percentile of |value|
};

/// What plot_file drew.
struct PlotResult {
  std::string path;    ///< the PNG written
  int width = 0;       ///< image width in pixels
  int height = 0;      ///< image height in pixels
  std::string summary; ///< one line: what was drawn and the clip value
};

/// Draws the quicklook `options` asks for and writes it as a PNG.
/// Throws InputError when the input is not a minimod-gpu output file or lacks the shot or snapshot
/// asked for (the message names the option and what is allowed), OutputError when the PNG cannot
/// be written.
PlotResult plot_file(const PlotOptions& options);

/// The `plot` subcommand: plot_file, then one line on stdout naming the PNG. Returns kExitOk;
/// failures are thrown as by plot_file, for main's one catch.
int plot_command(const PlotOptions& options);

} // namespace minimod
