/// SEG-Y on segyio's C API. segyio reads and writes headers and samples big-endian; its
/// segy_to_native / segy_from_native convert IBM and IEEE floats. Every segyio handle lives in an
/// owning object so that an exception half-way never leaks an open file.

#include "io/segy.hpp"

#include "core/errors.hpp"
#include "io/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#if defined(MINIMOD_HAVE_SEGYIO)
#include <segyio/segy.h>
#include <unistd.h>
#endif

namespace minimod {

namespace {

namespace fs = std::filesystem;

/// Largest value of the 2-byte sample count and interval fields that every reader takes as
/// positive (segyio and many others read them as signed).
constexpr int kMaxTwoByteField = 32767;

#if !defined(MINIMOD_HAVE_SEGYIO)
[[noreturn]] void reject_no_segyio(const std::string& key, const std::string& path) {
  throw InputError(key + ": " + path +
                   ": this minimod-gpu was built without SEG-Y support (segyio); install "
                   "libsegyio-dev and rebuild (cmake -DMINIMOD_SEGYIO=ON), or use another "
                   "format (npy, hdf5, raw float32 for models; HDF5 for gathers)");
}
#endif

} // namespace

bool segy_supported() {
#if defined(MINIMOD_HAVE_SEGYIO)
  return true;
#else
  return false;
#endif
}

int segy_sample_interval_us(double dt, const std::string& key) {
  const double us = dt * 1e6;
  const double whole = std::round(us);
  if (!std::isfinite(us) || whole < 1 || whole > kMaxTwoByteField) {
    throw InputError(key + ": sample interval " + format_number(dt) +
                     " s is not allowed in SEG-Y: 1 to " + std::to_string(kMaxTwoByteField) +
                     " microseconds (the binary header's 2-byte field)");
  }
  if (std::abs(us - whole) > 1e-3) {
    throw InputError(key + ": sample interval " + format_number(dt) + " s = " + format_number(us) +
                     " microseconds is not allowed in SEG-Y: a whole number of microseconds "
                     "(set output.dt_out, e.g. to " +
                     format_number(std::max(1.0, std::floor(us)) * 1e-6) + ")");
  }
  return static_cast<int>(whole);
}

std::string segy_shot_path(const std::string& path, int shot) {
  const fs::path p(path);
  fs::path name = p.stem();
  name += "-shot" + std::to_string(shot);
  name += p.extension();
  return (p.parent_path() / name).string();
}

SegyCdpBins segy_cdp_bins(const std::array<double, 3>& grid_origin,
                          const std::array<double, 3>& grid_spacing,
                          const std::array<int, 3>& grid_shape) {
  SegyCdpBins bins;
  bins.origin = {grid_origin[0], grid_origin[1]};
  bins.size = {grid_spacing[0] / 2, grid_spacing[1] / 2};
  bins.columns = 2 * std::max(grid_shape[0] - 1, 0) + 1;
  bins.rows = 2 * std::max(grid_shape[1] - 1, 0) + 1;
  if (static_cast<double>(bins.columns) * bins.rows >= std::numeric_limits<std::int32_t>::max()) {
    throw InputError("output.segy: a grid of " + std::to_string(grid_shape[0]) + " x " +
                     std::to_string(grid_shape[1]) + " points gives " +
                     std::to_string(bins.columns) + " x " + std::to_string(bins.rows) +
                     " CDP bins, beyond the 32-bit CDP number of SEG-Y; allowed: fewer than "
                     "2^31 bins");
  }
  return bins;
}

#if defined(MINIMOD_HAVE_SEGYIO)

namespace {

/// "KEY: PATH (WHAT) is not allowed: ALLOWED", the survey's error form for a file's content.
[[noreturn]] void reject_file(const std::string& key, const std::string& path,
                              const std::string& what, const std::string& allowed) {
  throw InputError(key + ": " + path + (what.empty() ? "" : " (" + what + ")") +
                   " is not allowed: " + allowed);
}

/// Owns a segyio file handle.
class SegyHandle {
public:
  SegyHandle(const std::string& path, const char* mode) : m_fp(segy_open(path.c_str(), mode)) {}
  SegyHandle(const SegyHandle&) = delete;
  SegyHandle& operator=(const SegyHandle&) = delete;
  ~SegyHandle() { close(); }

  segy_file* get() const { return m_fp; }
  bool valid() const { return m_fp != nullptr; }
  /// Close now; returns segyio's status (SEGY_OK when nothing was open).
  int close() {
    int rc = SEGY_OK;
    if (m_fp != nullptr) rc = segy_close(m_fp);
    m_fp = nullptr;
    return rc;
  }

private:
  segy_file* m_fp = nullptr;
};

const char* segy_error_name(int rc) {
  switch (rc) {
  case SEGY_OK:
    return "ok";
  case SEGY_FOPEN_ERROR:
    return "cannot open";
  case SEGY_FSEEK_ERROR:
    return "seek failed";
  case SEGY_FREAD_ERROR:
    return "read failed (file too short?)";
  case SEGY_FWRITE_ERROR:
    return "write failed";
  case SEGY_INVALID_FIELD:
    return "invalid header field";
  case SEGY_INVALID_SORTING:
    return "invalid sorting";
  case SEGY_MISSING_LINE_INDEX:
    return "missing line index";
  case SEGY_INVALID_OFFSETS:
    return "invalid offsets";
  case SEGY_TRACE_SIZE_MISMATCH:
    return "file size is not headers plus whole traces";
  case SEGY_INVALID_ARGS:
    return "invalid arguments";
  case SEGY_MMAP_ERROR:
    return "mmap failed";
  case SEGY_MMAP_INVALID:
    return "mmap invalid";
  case SEGY_READONLY:
    return "file is read-only";
  case SEGY_NOTFOUND:
    return "not found";
  default:
    return "unknown segyio error";
  }
}

std::string segy_failure(const std::string& call, int rc) {
  return call + " failed: " + segy_error_name(rc) + " (segyio error " + std::to_string(rc) + ")";
}

std::int32_t trace_field(const char* header, int field) {
  std::int32_t value = 0;
  segy_get_field(header, field, &value);
  return value;
}

std::int32_t binary_field(const char* header, int field) {
  std::int32_t value = 0;
  segy_get_bfield(header, field, &value);
  return value;
}

const char* format_name(int format) {
  switch (format) {
  case SEGY_IBM_FLOAT_4_BYTE:
    return "IBM float";
  case SEGY_SIGNED_INTEGER_4_BYTE:
    return "4-byte integer";
  case SEGY_SIGNED_SHORT_2_BYTE:
    return "2-byte integer";
  case SEGY_FIXED_POINT_WITH_GAIN_4_BYTE:
    return "fixed point with gain";
  case SEGY_IEEE_FLOAT_4_BYTE:
    return "IEEE float";
  case SEGY_SIGNED_CHAR_1_BYTE:
    return "1-byte integer";
  default:
    return "unknown";
  }
}

/// A coordinate scaled by a SEG-Y scalar: negative divides, positive multiplies, zero is one.
double apply_scalar(std::int32_t value, std::int32_t scalar) {
  if (scalar < 0) return static_cast<double>(value) / -static_cast<double>(scalar);
  if (scalar > 0) return static_cast<double>(value) * scalar;
  return value;
}

/// Sorted distinct values, and whether they are evenly spaced.
std::vector<int> distinct_sorted(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

bool evenly_spaced(const std::vector<int>& sorted) {
  for (std::size_t n = 2; n < sorted.size(); ++n) {
    if (sorted[n] - sorted[n - 1] != sorted[1] - sorted[0]) return false;
  }
  return true;
}

std::string list_numbers(const std::vector<int>& values) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(values.size(), 8);
  for (std::size_t n = 0; n < shown; ++n)
    text += (n ? ", " : "") + std::to_string(values[n]);
  if (shown < values.size()) text += ", ... (" + std::to_string(values.size()) + " in all)";
  return text;
}

std::size_t index_of(const std::vector<int>& sorted, int value) {
  return static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), value) -
                                  sorted.begin());
}

/// The 400 bytes of a binary header as the file holds them, read without segyio (which decodes
/// only the fields of revision 1), with the byte order the file was found to have.
struct RawBinaryHeader {
  unsigned char bytes[SEGY_BINARY_HEADER_SIZE] = {};
  bool little_endian = false;

  /// The unsigned integer of `size` bytes at 1-based file byte `byte` (3201 .. 3600).
  std::uint64_t unsigned_at(int byte, int size) const {
    std::uint64_t value = 0;
    for (int n = 0; n < size; ++n) {
      const int at = byte - SEGY_TEXT_HEADER_SIZE - 1 + (little_endian ? size - 1 - n : n);
      value = (value << 8) | bytes[at];
    }
    return value;
  }
  std::int32_t int32_at(int byte) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_at(byte, 4)));
  }
  double double_at(int byte) const {
    const std::uint64_t bits = unsigned_at(byte, 8);
    double value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
};

// Binary header bytes of SEG-Y revision 2 that segyio 1.8 does not name.
constexpr int kBinExtSamples = 3269;        ///< int32: samples per trace, overrides 3221
constexpr int kBinExtInterval = 3273;       ///< IEEE double: sample interval, overrides 3217
constexpr int kBinByteOrder = 3297;         ///< int32 16909060 (0x01020304) in the file's order
constexpr int kBinExtraTraceHeaders = 3507; ///< int32: additional 240-byte trace headers
constexpr std::uint32_t kByteOrderConstant = 0x01020304;

/// Whether a 2-byte sample format code is one of the two this reader converts.
bool float_format(std::uint64_t code) {
  return code == SEGY_IBM_FLOAT_4_BYTE || code == SEGY_IEEE_FLOAT_4_BYTE;
}

/// The binary header and the file's byte order: revision 2's byte-order constant (bytes
/// 3297-3300) where the file has one, else the sample format code (bytes 3225-3226), which reads
/// as a multiple of 256 (256 for IBM, 1280 for IEEE floats) in the wrong order.
RawBinaryHeader read_raw_binary_header(const std::string& path, const std::string& key) {
  RawBinaryHeader header;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  const bool read = file != nullptr && std::fseek(file, SEGY_TEXT_HEADER_SIZE, SEEK_SET) == 0 &&
                    std::fread(header.bytes, 1, sizeof header.bytes, file) == sizeof header.bytes;
  if (file != nullptr) std::fclose(file);
  if (!read) reject_file(key, path, "the binary header cannot be read", "a complete SEG-Y file");
  const auto order = static_cast<std::uint32_t>(header.unsigned_at(kBinByteOrder, 4));
  if (order == kByteOrderConstant) return header;
  if (order == 0x04030201u) {
    header.little_endian = true;
    return header;
  }
  // No revision-2 constant (revision 1 leaves the bytes unassigned): the format code decides.
  const std::uint64_t big = header.unsigned_at(SEGY_BIN_FORMAT, 2);
  header.little_endian = true;
  const std::uint64_t little = header.unsigned_at(SEGY_BIN_FORMAT, 2);
  // Every format code is below 256, so in the wrong order it reads as a multiple of 256.
  auto plausible = [](std::uint64_t code) { return code >= 1 && code <= 255; };
  header.little_endian = !plausible(big) && plausible(little);
  return header;
}

} // namespace

SegyCube read_segy_cube(const std::string& path, const std::string& key,
                        const SegyReadOptions& options) {
  for (const int byte : {options.inline_byte, options.crossline_byte}) {
    if (byte < 1 || byte > SEGY_TRACE_HEADER_SIZE - 3) {
      throw InputError(key + ": trace header byte " + std::to_string(byte) +
                       " for inline or crossline numbers is not allowed: the first byte of a "
                       "4-byte field, 1 to 237 (189 and 193 in SEG-Y rev1)");
    }
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    reject_file(key, path, "not found", "an existing SEG-Y file");
  }
  const std::uintmax_t file_size = fs::file_size(path, ec);
  const std::string size_text = std::to_string(file_size) + " bytes";
  const auto header_bytes =
      static_cast<std::uintmax_t>(SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE);
  if (ec || file_size < header_bytes) {
    reject_file(key, path,
                ec ? "size unknown"
                   : size_text + "; the textual and binary headers alone take " +
                         std::to_string(header_bytes),
                "a complete SEG-Y file");
  }

  const RawBinaryHeader raw = read_raw_binary_header(path, key);
  SegyHandle file(path, "rb");
  if (!file.valid()) reject_file(key, path, "cannot be opened", "a readable SEG-Y file");
  segy_file* fp = file.get();

  SegyCube cube;
  cube.little_endian = raw.little_endian;
  cube.format = static_cast<int>(raw.unsigned_at(SEGY_BIN_FORMAT, 2));
  if (!float_format(static_cast<std::uint64_t>(cube.format))) {
    reject_file(key, path,
                "sample format code " + std::to_string(cube.format) + " (" +
                    format_name(cube.format) + ") in binary header bytes 3225-3226, read " +
                    (raw.little_endian ? "little" : "big") + "-endian",
                "format 1 (IBM float) or 5 (IEEE float), big- or little-endian");
  }
  // segyio hands every header and sample over in big-endian order once told the file's order.
  const int file_order = raw.little_endian ? SEGY_LSB : 0;
  int rc = segy_set_format(fp, cube.format | file_order);
  if (rc != SEGY_OK) {
    reject_file(key, path, segy_failure("segy_set_format", rc), "a readable SEG-Y file");
  }
  char binheader[SEGY_BINARY_HEADER_SIZE];
  rc = segy_binheader(fp, binheader);
  if (rc != SEGY_OK) {
    reject_file(key, path, segy_failure("reading the binary header", rc), "a complete SEG-Y file");
  }
  cube.revision = static_cast<int>(raw.bytes[SEGY_BIN_SEGY_REVISION - SEGY_TEXT_HEADER_SIZE - 1]);
  const bool revision2 = cube.revision >= 2;
  if (revision2) {
    const std::int32_t extra = raw.int32_at(kBinExtraTraceHeaders);
    if (extra != 0) {
      reject_file(key, path,
                  std::to_string(extra) +
                      " additional 240-byte trace headers per trace (binary header bytes "
                      "3507-3510, SEG-Y revision 2)",
                  "traces with the standard 240-byte header alone");
    }
  }
  const std::int32_t extended_texts = binary_field(binheader, SEGY_BIN_EXT_HEADERS);
  if (extended_texts < 0) {
    reject_file(key, path,
                std::to_string(extended_texts) +
                    " extended textual headers (binary header bytes 3505-3506; -1 means a "
                    "variable number ended by an ((EndText)) stanza)",
                "a known number, 0 or more, of extended textual headers");
  }

  const long trace0 = segy_trace0(binheader);
  const auto first_trace = static_cast<std::uintmax_t>(trace0);
  if (trace0 < static_cast<long>(header_bytes) || first_trace >= file_size) {
    reject_file(key, path,
                size_text + "; the binary header's " +
                    std::to_string(binary_field(binheader, SEGY_BIN_EXT_HEADERS)) +
                    " extended textual headers put the first trace at byte " +
                    std::to_string(trace0),
                "a complete SEG-Y file with at least one trace");
  }

  // Samples per trace: revision 2's 4-byte count (bytes 3269-3272) when it is given, else the
  // 2-byte count of the binary header (3221, read unsigned: up to 65535), else the first trace's
  // (byte 115).
  int samples = static_cast<int>(raw.unsigned_at(SEGY_BIN_SAMPLES, 2));
  std::string samples_from = "binary header bytes 3221-3222";
  if (revision2) {
    const std::int32_t extended = raw.int32_at(kBinExtSamples);
    if (extended < 0) {
      reject_file(key, path,
                  "extended sample count " + std::to_string(extended) +
                      " in binary header bytes 3269-3272 (SEG-Y revision 2)",
                  "a positive count, or 0 for the 2-byte count of bytes 3221-3222");
    }
    if (extended > 0) {
      samples = extended;
      samples_from = "binary header bytes 3269-3272 (revision 2)";
    }
  }
  char header[SEGY_TRACE_HEADER_SIZE];
  if (file_size >= first_trace + SEGY_TRACE_HEADER_SIZE) {
    rc = segy_traceheader(fp, 0, header, trace0, 0);
    if (rc != SEGY_OK) {
      reject_file(key, path, segy_failure("reading the first trace header", rc),
                  "a complete SEG-Y file");
    }
    if (samples <= 0) {
      samples =
          static_cast<int>(static_cast<std::uint16_t>(trace_field(header, SEGY_TR_SAMPLE_COUNT)));
      samples_from = "trace header bytes 115-116";
    }
  }
  if (samples <= 0) {
    reject_file(key, path,
                std::string("no sample count in binary header bytes 3221-3222") +
                    (revision2 ? " nor 3269-3272 (revision 2)" : "") +
                    " nor trace header bytes 115-116",
                "a SEG-Y file with at least one sample per trace");
  }
  const std::uintmax_t samples_bytes = static_cast<std::uintmax_t>(samples) * 4;
  if (samples_bytes + SEGY_TRACE_HEADER_SIZE > file_size - first_trace) {
    reject_file(key, path,
                size_text + " cannot hold one trace of the " + std::to_string(samples) +
                    " samples that " + samples_from + " give (" +
                    std::to_string(samples_bytes + SEGY_TRACE_HEADER_SIZE) +
                    " bytes with its header, from byte " + std::to_string(trace0) + ")",
                "a complete SEG-Y file whose headers give its true sample count");
  }
  const int trace_bytes = segy_trsize(cube.format, samples);
  const auto trace_stride = static_cast<std::uintmax_t>(trace_bytes) + SEGY_TRACE_HEADER_SIZE;
  const std::string headers_text =
      trace0 == static_cast<long>(header_bytes)
          ? "3600 header bytes"
          : "3600 header bytes and " + std::to_string((trace0 - 3600) / 3200) +
                " extended textual headers of 3200 (binary header byte 3505)";
  if ((file_size - first_trace) % trace_stride != 0) {
    reject_file(key, path,
                "truncated or damaged: " + size_text + " is not the " + headers_text +
                    " plus whole traces of 240 + " + std::to_string(trace_bytes) + " bytes (" +
                    std::to_string(samples) + " samples of format " + std::to_string(cube.format) +
                    ", from " + samples_from + "); " +
                    std::to_string((file_size - first_trace) % trace_stride) +
                    " bytes are left over",
                "a complete SEG-Y file");
  }
  int traces = 0;
  rc = segy_traces(fp, &traces, trace0, trace_bytes);
  if (rc != SEGY_OK || traces <= 0) {
    reject_file(key, path, segy_failure("counting the traces", rc), "a complete SEG-Y file");
  }
  // Every trace's inline and crossline number.
  std::vector<int> trace_inline(static_cast<std::size_t>(traces));
  std::vector<int> trace_crossline(static_cast<std::size_t>(traces));
  rc = segy_field_forall(fp, options.inline_byte, 0, traces, 1, trace_inline.data(), trace0,
                         trace_bytes);
  if (rc == SEGY_OK) {
    rc = segy_field_forall(fp, options.crossline_byte, 0, traces, 1, trace_crossline.data(), trace0,
                           trace_bytes);
  }
  if (rc != SEGY_OK) {
    reject_file(key, path,
                segy_failure("reading inline (byte " + std::to_string(options.inline_byte) +
                                 ") and crossline (byte " + std::to_string(options.crossline_byte) +
                                 ") numbers",
                             rc),
                "a post-stack cube with inline and crossline numbers in its trace headers");
  }

  const std::vector<int> inlines = distinct_sorted(trace_inline);
  const std::vector<int> crosslines = distinct_sorted(trace_crossline);
  const std::string numbering = "inline byte " + std::to_string(options.inline_byte) +
                                ", crossline byte " + std::to_string(options.crossline_byte);
  std::vector<std::pair<int, int>> pairs(static_cast<std::size_t>(traces));
  for (std::size_t t = 0; t < pairs.size(); ++t)
    pairs[t] = {trace_inline[t], trace_crossline[t]};
  std::sort(pairs.begin(), pairs.end());
  const auto repeated = std::adjacent_find(pairs.begin(), pairs.end());
  if (repeated != pairs.end()) {
    reject_file(key, path,
                std::to_string(traces) + " traces but (inline, crossline) = (" +
                    std::to_string(repeated->first) + ", " + std::to_string(repeated->second) +
                    ") appears more than once (" + numbering +
                    "): pre-stack data, e.g. shot or offset gathers",
                "a post-stack cube with one trace per (inline, crossline) pair");
  }

  int sorting = SEGY_UNKNOWN_SORTING;
  rc = segy_sorting(fp, options.inline_byte, options.crossline_byte, SEGY_TR_OFFSET, &sorting,
                    trace0, trace_bytes);
  if (rc != SEGY_OK || (sorting != SEGY_INLINE_SORTING && sorting != SEGY_CROSSLINE_SORTING)) {
    reject_file(key, path,
                rc != SEGY_OK
                    ? segy_failure("sorting detection", rc)
                    : "segyio finds it neither inline nor crossline sorted (" + numbering + ")",
                "a post-stack cube sorted by inline or by crossline");
  }
  cube.inline_sorted = sorting == SEGY_INLINE_SORTING;
  int offsets = 1;
  rc = segy_offsets(fp, options.inline_byte, options.crossline_byte, traces, &offsets, trace0,
                    trace_bytes);
  if (rc != SEGY_OK || offsets != 1) {
    reject_file(key, path,
                rc != SEGY_OK ? segy_failure("counting offsets", rc)
                              : std::to_string(offsets) + " offsets per bin: pre-stack data",
                "a post-stack cube (one offset)");
  }
  if (inlines.size() * crosslines.size() != static_cast<std::size_t>(traces)) {
    reject_file(key, path,
                std::to_string(inlines.size()) + " inlines x " + std::to_string(crosslines.size()) +
                    " crosslines = " + std::to_string(inlines.size() * crosslines.size()) +
                    " bins but " + std::to_string(traces) + " traces (" + numbering + ")",
                "a full cube: one trace for every (inline, crossline) pair");
  }
  if (!evenly_spaced(inlines) || !evenly_spaced(crosslines)) {
    const bool bad_inlines = !evenly_spaced(inlines);
    reject_file(key, path,
                std::string(bad_inlines ? "inline" : "crossline") + " numbers " +
                    list_numbers(bad_inlines ? inlines : crosslines) +
                    " are not evenly spaced: a line is missing",
                "a cube with evenly numbered lines");
  }

  const int nx = static_cast<int>(crosslines.size());
  const int ny = static_cast<int>(inlines.size());
  const int nz = samples;
  cube.shape = {nx, ny, nz};
  cube.inlines = inlines;
  cube.crosslines = crosslines;
  cube.trace_index.assign(static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny), -1);
  for (int t = 0; t < traces; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    const std::size_t i = index_of(crosslines, trace_crossline[ut]);
    const std::size_t j = index_of(inlines, trace_inline[ut]);
    cube.trace_index[i + static_cast<std::size_t>(nx) * j] = t;
  }

  // Samples, one inline at a time, so the scatter into x-fastest order writes whole rows.
  const auto unx = static_cast<std::size_t>(nx), uny = static_cast<std::size_t>(ny),
             unz = static_cast<std::size_t>(nz);
  cube.values.resize(unx * uny * unz);
  std::vector<float> block(unx * unz);
  for (std::size_t j = 0; j < uny; ++j) {
    for (std::size_t i = 0; i < unx; ++i) {
      const int t = cube.trace_index[i + unx * j];
      float* trace = block.data() + i * unz;
      rc = segy_readtrace(fp, t, trace, trace0, trace_bytes);
      if (rc == SEGY_OK) rc = segy_to_native(cube.format, nz, trace);
      if (rc != SEGY_OK) {
        reject_file(key, path, segy_failure("reading trace " + std::to_string(t), rc),
                    "a complete SEG-Y file");
      }
    }
    for (std::size_t k = 0; k < unz; ++k) {
      float* row = cube.values.data() + unx * (j + uny * k);
      for (std::size_t i = 0; i < unx; ++i)
        row[i] = block[i * unz + k];
    }
  }

  // Sample interval: revision 2's IEEE double (bytes 3273-3280) when it is given, else the
  // 2-byte fields of the binary header (3217) and the first trace (117), as segyio reads them.
  const double extended_interval = revision2 ? raw.double_at(kBinExtInterval) : 0.0;
  if (revision2 && !(std::isfinite(extended_interval) && extended_interval >= 0)) {
    reject_file(key, path,
                "extended sample interval " + format_number(extended_interval) +
                    " in binary header bytes 3273-3280 (SEG-Y revision 2)",
                "a positive finite interval, or 0 for the 2-byte interval of bytes 3217-3218");
  }
  float interval = 0;
  if (extended_interval > 0) {
    cube.sample_interval = static_cast<int>(std::lround(extended_interval));
    cube.spacing[2] = extended_interval / 1000.0;
  } else if (segy_sample_interval(fp, 0.0f, &interval) == SEGY_OK && interval > 0) {
    cube.sample_interval = static_cast<int>(std::lround(interval));
    cube.spacing[2] = interval / 1000.0;
  }
  cube.measurement_system = binary_field(binheader, SEGY_BIN_MEASUREMENT_SYSTEM);

  // Geometry from the first trace and its neighbours along x and y.
  auto read_header = [&](int t, char* buf) {
    rc = segy_traceheader(fp, t, buf, trace0, trace_bytes);
    if (rc != SEGY_OK) {
      reject_file(key, path, segy_failure("reading trace header " + std::to_string(t), rc),
                  "a complete SEG-Y file");
    }
  };
  auto cdp = [&](int t) {
    char buf[SEGY_TRACE_HEADER_SIZE];
    read_header(t, buf);
    const std::int32_t scalar = trace_field(buf, SEGY_TR_SOURCE_GROUP_SCALAR);
    return std::array<double, 2>{apply_scalar(trace_field(buf, SEGY_TR_CDP_X), scalar),
                                 apply_scalar(trace_field(buf, SEGY_TR_CDP_Y), scalar)};
  };
  char first[SEGY_TRACE_HEADER_SIZE];
  read_header(cube.trace_index[0], first);
  cube.delay = trace_field(first, SEGY_TR_DELAY_REC_TIME);
  const std::int32_t scalar = trace_field(first, SEGY_TR_SOURCE_GROUP_SCALAR);
  cube.coordinate_scalar = scalar == 0 ? 1 : scalar;
  const std::array<double, 2> origin = cdp(cube.trace_index[0]);
  if (origin[0] != 0 || origin[1] != 0) cube.first_cdp = origin;
  auto distance_to = [&](int t) {
    const std::array<double, 2> other = cdp(t);
    return std::hypot(other[0] - origin[0], other[1] - origin[1]);
  };
  if (nx > 1) {
    const double d = distance_to(cube.trace_index[1]);
    if (d > 0) cube.spacing[0] = d;
  }
  if (ny > 1) {
    const double d = distance_to(cube.trace_index[unx]);
    if (d > 0) cube.spacing[1] = d;
  }
  return cube;
}

namespace {

/// A length in metres as whole centimetres for a header with scalar -100.
std::int32_t centimetres(double metres, const char* what, const std::string& key) {
  const double scaled = std::round(metres * -kSegyCoordinateScalar);
  if (!std::isfinite(scaled) || scaled > std::numeric_limits<std::int32_t>::max() ||
      scaled < std::numeric_limits<std::int32_t>::min()) {
    throw InputError(key + ": " + what + " " + format_number(metres) +
                     " m is not allowed in SEG-Y: within +-21474836.47 m (32-bit whole "
                     "centimetres)");
  }
  return static_cast<std::int32_t>(scaled);
}

/// The bin of a midpoint: crossline index i, inline index j and CDP number 1 + i + columns * j.
struct CdpBin {
  int i = 0, j = 0;
  std::int32_t cdp = 0;
};

CdpBin cdp_bin(double x, double y, const SegyCdpBins& bins, const std::string& key) {
  const double fi = std::round((x - bins.origin[0]) / bins.size[0]);
  const double fj = std::round((y - bins.origin[1]) / bins.size[1]);
  if (!(fi >= 0 && fi < bins.columns && fj >= 0 && fj < bins.rows)) {
    throw InputError(
        key + ": source-receiver midpoint x " + format_number(x) + " m, y " + format_number(y) +
        " m is not allowed in SEG-Y: outside the CDP bins (" + std::to_string(bins.columns) +
        " x " + std::to_string(bins.rows) + " bins of " + format_number(bins.size[0]) + " x " +
        format_number(bins.size[1]) + " m centred from x " + format_number(bins.origin[0]) +
        " m, y " + format_number(bins.origin[1]) + " m)");
  }
  CdpBin bin;
  bin.i = static_cast<int>(fi);
  bin.j = static_cast<int>(fj);
  bin.cdp = static_cast<std::int32_t>(1 + bin.i + static_cast<std::int64_t>(bins.columns) * bin.j);
  return bin;
}

/// The bins of `options`, or the default ones.
SegyCdpBins bins_of(const SegyWriteOptions& options) {
  return options.cdp_bins.value_or(SegyCdpBins{});
}

/// One 80-column card of the textual header: "C 1 text", cut at 80 columns.
std::string text_card(int line, const std::string& text) {
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "C%2d ", line);
  std::string card = prefix + text;
  for (char& c : card) {
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) c = '?';
  }
  card.resize(80, ' ');
  return card;
}

std::string fixed(double value, int decimals = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string position_text(const Vec3& p) {
  return "x " + fixed(p[0]) + "  y " + fixed(p[1]) + "  z " + fixed(p[2]) + " m";
}

/// The 3200 characters of the textual header (ASCII here; segyio writes them as EBCDIC).
std::string textual_header(const ShotGather& gather, const SegyWriteOptions& options,
                           int interval_us) {
  std::vector<std::string> lines;
  lines.push_back("Synthetic acoustic shot gathers written by " +
                  (options.program.empty() ? std::string("minimod-gpu") : options.program));
  lines.push_back("Survey: " +
                  (options.survey_name.empty() ? std::string("(no name)") : options.survey_name));
  lines.push_back("Survey file: " +
                  (options.survey_path.empty() ? std::string("(none)") : options.survey_path));
  lines.push_back("First gather: shot " + std::to_string(gather.shot) + " = field record " +
                  std::to_string(gather.shot + 1) + ", " +
                  std::to_string(gather.source_positions.size()) + " source(s) fired together:");
  const std::size_t shown = std::min<std::size_t>(gather.source_positions.size(), 6);
  for (std::size_t s = 0; s < shown; ++s)
    lines.push_back("  source " + std::to_string(s) + " at " +
                    position_text(gather.source_positions[s]));
  if (shown < gather.source_positions.size()) {
    lines.push_back("  ... and " + std::to_string(gather.source_positions.size() - shown) +
                    " more; trace headers carry source 0");
  }
  lines.push_back(std::to_string(gather.receiver_positions.size()) +
                  " traces (one per receiver), " + std::to_string(gather.samples) + " samples of " +
                  std::to_string(interval_us) + " us, first sample at t = 0");
  lines.push_back("Samples: format 5, 4-byte IEEE float, big-endian. Units: metres, seconds");
  lines.push_back("Coordinates: x, y horizontal, z depth below the survey's z = 0, positive");
  lines.push_back("down. Coordinate scalar (byte 71) and elevation scalar (byte 69) -100:");
  lines.push_back("header values are centimetres.");
  const SegyCdpBins bins = bins_of(options);
  lines.push_back("Source X/Y bytes 73/77, group X/Y 81/85, CDP X/Y 181/185 = midpoint.");
  lines.push_back("Source depth (byte 49) = +z of the source; receiver group elevation");
  lines.push_back("(byte 41) = -z of the receiver (negative below z = 0).");
  lines.push_back("Offset (byte 37): horizontal source-receiver distance in whole metres,");
  lines.push_back("negative when the receiver has smaller x (or equal x and smaller y).");
  lines.push_back("Field record (byte 9), energy source point (17) and shotpoint (197) =");
  lines.push_back("shot + 1 (shots count from 0); trace in record (byte 13) = receiver + 1;");
  lines.push_back("trace sequence (bytes 1, 5) counts the traces of the file from 1.");
  lines.push_back("CDP (byte 21) = 1 + i + " + std::to_string(bins.columns) +
                  " j of the midpoint's bin (i, j):");
  lines.push_back("bin (i, j) centred at x " + fixed(bins.origin[0]) + " + i * " +
                  fixed(bins.size[0]) + ", y " + fixed(bins.origin[1]) + " + j * " +
                  fixed(bins.size[1]) + " m.");
  lines.push_back("Crossline (byte 193) = i + 1, inline (byte 189) = j + 1.");
  lines.push_back("More gathers may follow in this file, each with its own field record.");

  std::string text;
  const int last_free_line = 38;
  for (int n = 0; n < last_free_line; ++n) {
    text += text_card(n + 1, n < static_cast<int>(lines.size()) ? lines[static_cast<std::size_t>(n)]
                                                                : std::string());
  }
  text += text_card(39, "SEG Y REV1");
  text += text_card(40, "END TEXTUAL HEADER");
  return text;
}

/// Write the gather's traces from file trace `first` on.
void write_traces(segy_file* fp, const ShotGather& gather, int first, int interval_us,
                  const std::string& path, const SegyWriteOptions& options) {
  const int samples = gather.samples;
  const int trace_bytes = segy_trsize(SEGY_IEEE_FLOAT_4_BYTE, samples);
  const long trace0 = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE;
  const Vec3 source =
      gather.source_positions.empty() ? Vec3{0, 0, 0} : gather.source_positions.front();
  const std::int32_t source_x = centimetres(source[0], "source x", options.key);
  const std::int32_t source_y = centimetres(source[1], "source y", options.key);
  const std::int32_t source_depth = centimetres(source[2], "source z", options.key);
  const SegyCdpBins bins = bins_of(options);

  std::vector<float> buffer(static_cast<std::size_t>(samples));
  for (std::size_t r = 0; r < gather.receiver_positions.size(); ++r) {
    const Vec3& receiver = gather.receiver_positions[r];
    const int trace = first + static_cast<int>(r);
    const double dx = receiver[0] - source[0];
    const double dy = receiver[1] - source[1];
    const double tiny = 1e-6;
    const bool behind = dx < -tiny || (std::abs(dx) <= tiny && dy < -tiny);
    const double offset = std::hypot(dx, dy) * (behind ? -1 : 1);

    const double mid_x = 0.5 * (source[0] + receiver[0]), mid_y = 0.5 * (source[1] + receiver[1]);
    const CdpBin bin = cdp_bin(mid_x, mid_y, bins, options.key);

    char header[SEGY_TRACE_HEADER_SIZE] = {};
    segy_set_field(header, SEGY_TR_SEQ_LINE, trace + 1);
    segy_set_field(header, SEGY_TR_SEQ_FILE, trace + 1);
    // SEG-Y counts records from 1; the HDF5 groups and every message count shots from 0.
    segy_set_field(header, SEGY_TR_FIELD_RECORD, gather.shot + 1);
    segy_set_field(header, SEGY_TR_NUMBER_ORIG_FIELD, static_cast<int>(r) + 1);
    segy_set_field(header, SEGY_TR_ENERGY_SOURCE_POINT, gather.shot + 1);
    segy_set_field(header, SEGY_TR_ENSEMBLE, bin.cdp);
    segy_set_field(header, SEGY_TR_TRACE_ID, 1);
    segy_set_field(header, SEGY_TR_SUMMED_TRACES, 1);
    segy_set_field(header, SEGY_TR_STACKED_TRACES, 1);
    segy_set_field(header, SEGY_TR_DATA_USE, 1);
    segy_set_field(header, SEGY_TR_OFFSET, static_cast<std::int32_t>(std::lround(offset)));
    segy_set_field(header, SEGY_TR_RECV_GROUP_ELEV,
                   centimetres(-receiver[2], "receiver z", options.key));
    segy_set_field(header, SEGY_TR_SOURCE_DEPTH, source_depth);
    segy_set_field(header, SEGY_TR_ELEV_SCALAR, kSegyCoordinateScalar);
    segy_set_field(header, SEGY_TR_SOURCE_GROUP_SCALAR, kSegyCoordinateScalar);
    segy_set_field(header, SEGY_TR_SOURCE_X, source_x);
    segy_set_field(header, SEGY_TR_SOURCE_Y, source_y);
    segy_set_field(header, SEGY_TR_GROUP_X, centimetres(receiver[0], "receiver x", options.key));
    segy_set_field(header, SEGY_TR_GROUP_Y, centimetres(receiver[1], "receiver y", options.key));
    segy_set_field(header, SEGY_TR_COORD_UNITS, 1);
    segy_set_field(header, SEGY_TR_SAMPLE_COUNT, samples);
    segy_set_field(header, SEGY_TR_SAMPLE_INTER, interval_us);
    segy_set_field(header, SEGY_TR_CDP_X, centimetres(mid_x, "midpoint x", options.key));
    segy_set_field(header, SEGY_TR_CDP_Y, centimetres(mid_y, "midpoint y", options.key));
    segy_set_field(header, SEGY_TR_INLINE, bin.j + 1);
    segy_set_field(header, SEGY_TR_CROSSLINE, bin.i + 1);
    segy_set_field(header, SEGY_TR_SHOT_POINT, gather.shot + 1);
    segy_set_field(header, SEGY_TR_SHOT_POINT_SCALAR, 1);

    const float* samples_in = gather.traces.data() + r * static_cast<std::size_t>(samples);
    std::copy(samples_in, samples_in + samples, buffer.begin());
    int rc = segy_from_native(SEGY_IEEE_FLOAT_4_BYTE, samples, buffer.data());
    if (rc == SEGY_OK) rc = segy_write_traceheader(fp, trace, header, trace0, trace_bytes);
    if (rc == SEGY_OK) rc = segy_writetrace(fp, trace, buffer.data(), trace0, trace_bytes);
    if (rc != SEGY_OK) {
      throw OutputError(path + ": " + segy_failure("writing trace " + std::to_string(trace), rc));
    }
  }
}

} // namespace

void write_segy_gather(const std::string& path, const ShotGather& gather,
                       const SegyWriteOptions& options) {
  const int interval_us = segy_sample_interval_us(gather.dt_out, options.key);
  if (gather.samples < 1 || gather.samples > kMaxTwoByteField) {
    throw InputError(options.key + ": " + std::to_string(gather.samples) +
                     " samples per trace is not allowed in SEG-Y: 1 to " +
                     std::to_string(kMaxTwoByteField) + " (the binary header's 2-byte field)");
  }
  const std::size_t receivers = gather.receiver_positions.size();
  if (gather.traces.size() != receivers * static_cast<std::size_t>(gather.samples)) {
    throw std::logic_error("write_segy_gather: " + std::to_string(gather.traces.size()) +
                           " samples for " + std::to_string(receivers) + " receivers x " +
                           std::to_string(gather.samples) + " samples");
  }
  // Every position must fit the headers before a file is touched: an append that failed half-way
  // would leave part of a gather behind.
  for (const Vec3& source : gather.source_positions) {
    centimetres(source[0], "source x", options.key);
    centimetres(source[1], "source y", options.key);
    centimetres(source[2], "source z", options.key);
  }
  const Vec3 first_source =
      gather.source_positions.empty() ? Vec3{0, 0, 0} : gather.source_positions.front();
  for (const Vec3& receiver : gather.receiver_positions) {
    centimetres(receiver[0], "receiver x", options.key);
    centimetres(receiver[1], "receiver y", options.key);
    centimetres(-receiver[2], "receiver z", options.key);
    cdp_bin(0.5 * (first_source[0] + receiver[0]), 0.5 * (first_source[1] + receiver[1]),
            bins_of(options), options.key);
    const double offset = std::hypot(receiver[0] - first_source[0], receiver[1] - first_source[1]);
    if (offset > std::numeric_limits<std::int32_t>::max()) {
      throw InputError(options.key + ": offset " + format_number(offset) +
                       " m is not allowed in SEG-Y: a 32-bit number of metres");
    }
  }
  const int trace_bytes = segy_trsize(SEGY_IEEE_FLOAT_4_BYTE, gather.samples);
  const long trace0 = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE;

  if (options.mode == SegyWriteMode::Append) {
    SegyHandle file(path, "r+b");
    if (!file.valid()) {
      throw OutputError(path + ": cannot open to append a gather (write the first gather with "
                               "SegyWriteMode::Create)");
    }
    char binheader[SEGY_BINARY_HEADER_SIZE];
    int rc = segy_binheader(file.get(), binheader);
    if (rc != SEGY_OK)
      throw OutputError(path + ": " + segy_failure("reading the binary header", rc));
    const int format = segy_format(binheader);
    const int samples = segy_samples(binheader);
    const int interval = binary_field(binheader, SEGY_BIN_INTERVAL);
    if (format != SEGY_IEEE_FLOAT_4_BYTE || samples != gather.samples || interval != interval_us ||
        segy_trace0(binheader) != trace0) {
      throw OutputError(path + ": cannot append shot " + std::to_string(gather.shot) + " (" +
                        std::to_string(gather.samples) + " samples of " +
                        std::to_string(interval_us) + " us, format 5) to a file of " +
                        std::to_string(samples) + " samples of " + std::to_string(interval) +
                        " us, format " + std::to_string(format));
    }
    int traces = 0;
    rc = segy_traces(file.get(), &traces, trace0, trace_bytes);
    if (rc != SEGY_OK) throw OutputError(path + ": " + segy_failure("counting the traces", rc));
    rc = segy_set_format(file.get(), SEGY_IEEE_FLOAT_4_BYTE);
    if (rc != SEGY_OK) throw OutputError(path + ": " + segy_failure("segy_set_format", rc));
    write_traces(file.get(), gather, traces, interval_us, path, options);
    rc = file.close();
    if (rc != SEGY_OK) throw OutputError(path + ": " + segy_failure("closing", rc));
    return;
  }

  std::error_code ec;
  const fs::path final_path(path);
  if (final_path.has_parent_path()) fs::create_directories(final_path.parent_path(), ec);
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  struct RemoveOnFailure {
    std::string file;
    bool armed = true;
    ~RemoveOnFailure() {
      std::error_code ignored;
      if (armed) fs::remove(file, ignored);
    }
  } cleanup{temp};

  SegyHandle file(temp, "w+b");
  if (!file.valid()) throw OutputError(path + ": cannot create " + temp);
  const std::string text = textual_header(gather, options, interval_us);
  int rc = segy_write_textheader(file.get(), 0, text.c_str());
  if (rc != SEGY_OK)
    throw OutputError(path + ": " + segy_failure("writing the textual header", rc));

  char binheader[SEGY_BINARY_HEADER_SIZE] = {};
  const std::pair<int, int> fields[] = {
      {SEGY_BIN_JOB_ID, 1},
      {SEGY_BIN_LINE_NUMBER, 1},
      {SEGY_BIN_REEL_NUMBER, 1},
      {SEGY_BIN_TRACES, static_cast<int>(std::min<std::size_t>(receivers, kMaxTwoByteField))},
      {SEGY_BIN_INTERVAL, interval_us},
      {SEGY_BIN_INTERVAL_ORIG, interval_us},
      {SEGY_BIN_SAMPLES, gather.samples},
      {SEGY_BIN_SAMPLES_ORIG, gather.samples},
      {SEGY_BIN_FORMAT, SEGY_IEEE_FLOAT_4_BYTE},
      {SEGY_BIN_ENSEMBLE_FOLD, 1},
      {SEGY_BIN_SORTING_CODE, 1}, // as recorded: one shot after another
      {SEGY_BIN_MEASUREMENT_SYSTEM, 1},
      {SEGY_BIN_SEGY_REVISION, 0x0100}, // rev 1.0: major byte 1, minor byte 0
      {SEGY_BIN_TRACE_FLAG, 1},         // every trace has the same length
      {SEGY_BIN_EXT_HEADERS, 0},
  };
  for (const auto& [field, value] : fields) {
    rc = segy_set_bfield(binheader, field, value);
    if (rc != SEGY_OK) {
      throw std::logic_error("segy_set_bfield " + std::to_string(field) + ": " +
                             segy_error_name(rc));
    }
  }
  rc = segy_write_binheader(file.get(), binheader);
  if (rc == SEGY_OK) rc = segy_set_format(file.get(), SEGY_IEEE_FLOAT_4_BYTE);
  if (rc != SEGY_OK) throw OutputError(path + ": " + segy_failure("writing the binary header", rc));
  write_traces(file.get(), gather, 0, interval_us, path, options);
  rc = file.close();
  if (rc != SEGY_OK) throw OutputError(path + ": " + segy_failure("closing " + temp, rc));

  fs::rename(temp, final_path, ec);
  if (ec) throw OutputError(path + ": cannot rename " + temp + ": " + ec.message());
  cleanup.armed = false;
}

#else // no segyio

SegyCube read_segy_cube(const std::string& path, const std::string& key,
                        const SegyReadOptions& /*options*/) {
  reject_no_segyio(key, path);
}

void write_segy_gather(const std::string& path, const ShotGather& /*gather*/,
                       const SegyWriteOptions& options) {
  reject_no_segyio(options.key, path);
}

#endif

} // namespace minimod
