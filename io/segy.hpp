#pragma once
/// SEG-Y in and out, on Equinor's segyio C library: post-stack cubes read as velocity models, shot
/// gathers written as SEG-Y rev1 files. segyio is optional at build time (CMake option
/// MINIMOD_SEGYIO); a build without it keeps these declarations and every function that needs the
/// library throws InputError saying so, naming the file and the survey field.
///
/// Axes of a cube: x runs along an inline, over its traces (the crossline axis: x index i is the
/// i-th smallest crossline number); y runs over the inlines (y index j is the j-th smallest inline
/// number); z runs down the samples of a trace (time or depth). The inline and crossline numbers
/// come from the trace headers (bytes 189 and 193 unless told otherwise).

#include "io/h5_output.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// True when this build links segyio and can read and write SEG-Y.
bool segy_supported();

/// Where the inline and crossline numbers sit in the trace headers (1-based byte positions).
struct SegyReadOptions {
  int inline_byte = 189;    ///< SEG-Y rev1 "in-line number"
  int crossline_byte = 193; ///< SEG-Y rev1 "cross-line number"
};

/// A post-stack SEG-Y cube with the geometry its headers give.
struct SegyCube {
  std::array<int, 3> shape{};   ///< nx (crosslines), ny (inlines), nz (samples per trace)
  std::vector<float> values;    ///< x fastest: index i + nx * (j + ny * k)
  std::vector<int> crosslines;  ///< the crossline number of each x index, ascending
  std::vector<int> inlines;     ///< the inline number of each y index, ascending
  std::vector<int> trace_index; ///< 0-based file trace of column (i, j), at i + nx * j
  int format = 0;               ///< sample format code: 1 IBM float, 5 IEEE float
  bool little_endian = false;   ///< the file's byte order (headers and samples)
  int revision = 0;             ///< SEG-Y revision's major number (binary header byte 3501)
  bool inline_sorted = true;    ///< segyio's sorting detection: inline (true) or crossline sorted
  int sample_interval = 0;      ///< header value: microseconds for time data, 0 when not given
  int delay = 0;                ///< delay recording time of the first trace (byte 109, ms)
  int measurement_system = 0;   ///< binary header 3255: 1 metres, 2 feet, 0 not given
  int coordinate_scalar = 1;    ///< byte 71 of the first trace, as written (0 read as 1)
  /// Spacing along x, y, z in the file's units, where the headers give it: x and y from the CDP
  /// coordinates (bytes 181/185, coordinate scalar applied) of neighbouring traces, z as the sample
  /// interval / 1000 (milliseconds for time data; metres for depth data written, as is common, in
  /// millimetres). Absent when the headers do not say (zero coordinates, a single line, no
  /// interval): the survey then has to give the spacing.
  std::array<std::optional<double>, 3> spacing;
  /// CDP X and Y of trace (0, 0), coordinate scalar applied; absent when both are zero.
  std::optional<std::array<double, 2>> first_cdp;
};

/// Read a post-stack cube. Inline or crossline sorting is detected by segyio; every trace is
/// placed by its own inline and crossline numbers, which must form a full, evenly numbered grid
/// with one trace per (inline, crossline) pair. Samples in IBM (format 1) or IEEE (format 5) float
/// are converted to native floats. Big- and little-endian files are read: the byte order comes
/// from revision 2's byte-order constant (bytes 3297-3300) where present, else from the sample
/// format code. Revision 2's extended sample count (bytes 3269-3272) and interval (3273-3280)
/// override the 2-byte fields when given (more than 32767 samples). `key` ("survey.yaml:6:
/// model.file") starts every error message. Throws InputError for a missing, truncated or damaged
/// file, headers that give a size the file does not have, an unsupported sample format, revision
/// 2's additional trace headers, pre-stack data (several traces per bin, e.g. shot gathers) and for
/// a build without segyio.
SegyCube read_segy_cube(const std::string& path, const std::string& key,
                        const SegyReadOptions& options = {});

/// How write_segy_gather treats the file.
enum class SegyWriteMode {
  Create, ///< write a new file (replacing one that exists) holding this gather
  Append, ///< add this gather's traces to a file that an earlier Create call wrote
};

/// Coordinate scalar written to every trace (bytes 69 and 71): -100, so coordinates, depths and
/// elevations are whole centimetres.
inline constexpr int kSegyCoordinateScalar = -100;

/// The CDP bins of a file: bin (i, j) is centred at x = origin[0] + i * size[0], y = origin[1] +
/// j * size[1], i in [0, columns), j in [0, rows). A trace's source-receiver midpoint falls in the
/// bin whose centre is nearest; the trace headers carry its ensemble (CDP) number 1 + i +
/// columns * j (bytes 21-24), crossline number i + 1 (bytes 193-196) and inline number j + 1
/// (bytes 189-192). Every gather of one file must use the same bins.
struct SegyCdpBins {
  std::array<double, 2> origin{0, 0}; ///< metres: centre of bin (0, 0)
  std::array<double, 2> size{1, 1};   ///< metres between bin centres along x and y
  int columns = 100000;               ///< bins along x
  int rows = 21474;                   ///< bins along y (columns * rows within 32 bits)
};

/// The bins of a grid: half its spacing, from its origin over its whole x-y extent, so that the
/// midpoint of any two grid points is the centre of its own bin.
SegyCdpBins segy_cdp_bins(const std::array<double, 3>& grid_origin,
                          const std::array<double, 3>& grid_spacing,
                          const std::array<int, 3>& grid_shape);

/// What write_segy_gather needs besides the gather.
struct SegyWriteOptions {
  SegyWriteMode mode = SegyWriteMode::Create;
  std::string program;             ///< program and version for the textual header
  std::string survey_name;         ///< survey label for the textual header
  std::string survey_path;         ///< survey file for the textual header
  std::string key = "output.segy"; ///< survey field named in errors about this output
  /// CDP bins (segy_cdp_bins of the survey's grid). Without them: bins of 1 m from x = 0, y = 0,
  /// 100000 to a row (SegyCdpBins' defaults), so that the CDP number reads as 1 + x + 100000 y in
  /// whole metres.
  std::optional<SegyCdpBins> cdp_bins;
};

/// The SEG-Y sample interval of `dt` seconds in whole microseconds. Throws InputError (naming
/// `key`) when dt is not a whole number of microseconds within a thousandth of one, or is outside
/// 1 .. 32767 us (the binary header's 2-byte field): SEG-Y cannot store it.
int segy_sample_interval_us(double dt, const std::string& key);

/// The file of one shot when every shot gets its own file: "out/demo.sgy" and shot 3 give
/// "out/demo-shot3.sgy".
std::string segy_shot_path(const std::string& path, int shot);

/// Write one shot gather as SEG-Y rev1: an EBCDIC textual header describing program, survey, shot
/// and header conventions; a binary header (sample interval in microseconds, samples per trace,
/// format 5, metres, revision 1, fixed-length traces); one trace per receiver, big-endian IEEE
/// floats. Every header field written, with its bytes, is listed in docs/output.md ("SEG-Y"). In
/// short: trace sequence numbers in line and file (1-based, continuing over appended gathers);
/// field record, energy source point and shotpoint number = the shot number + 1 (SEG-Y counts
/// from 1; gather.shot and /shots/NNNN of the HDF5 file count from 0); trace number in the record =
/// receiver + 1; CDP ensemble, inline and crossline numbers of the midpoint's bin
/// (SegyWriteOptions::cdp_bins); trace identification 1; offset (signed horizontal distance from
/// the first source to the receiver in whole metres, negative when the receiver lies at smaller x,
/// or at equal x and smaller y); receiver group elevation = -z and source depth = +z (z is depth
/// below the survey's z = 0, so elevations are negative below it); source, group and CDP (midpoint)
/// X/Y; coordinate and elevation scalar kSegyCoordinateScalar; coordinate units 1 (length); sample
/// count and interval. With several sources fired together, the headers carry the first; the
/// textual header lists them all. A Create call writes under a temporary name and renames it; an
/// Append call checks that the file has the same sample count, interval and format. Throws
/// InputError for what SEG-Y cannot hold (sample interval, > 32767 samples, coordinates beyond
/// 32-bit centimetres, a midpoint outside the CDP bins) or a build without segyio, OutputError when
/// writing fails; nothing is written then.
void write_segy_gather(const std::string& path, const ShotGather& gather,
                       const SegyWriteOptions& options);

} // namespace minimod
