/// Survey parsing: docs/survey.md is the schema this file implements. Every value is read through
/// a checker that knows its dotted key and line, so each error names file, line, key, the value as
/// written and what is allowed.

#include "io/survey.hpp"

#include "core/errors.hpp"
#include "core/grid.hpp"
#include "io/limits.hpp"
#include "io/memory_file.hpp"
#include "io/text.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace minimod {

std::string SourceLoc::where() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  if (!key.empty()) out += ": " + key;
  return out;
}

namespace {

/// The model format a file name's extension names: npy, hdf5, segy, else raw.
std::string format_from_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".npy") return "npy";
  if (ext == ".h5" || ext == ".hdf5") return "hdf5";
  if (ext == ".sgy" || ext == ".segy") return "segy";
  return "raw";
}

namespace fs = std::filesystem;

/// Upper bound on receivers from one survey: guards the expansion of lines and grids against typos
/// such as `count: 1e9` long before memory runs out.
constexpr long long kMaxReceivers = 10'000'000;

/// Smallest grid extent the stencil accepts: the zero ghost layer of kHalo on each side plus one.
constexpr int kMinShape = 2 * kHalo + 1;

constexpr double kPi = 3.14159265358979323846;

/// Shortest decimal text that reads back as the same double.

std::string format_vec3(const Vec3& v) {
  return "[" + format_number(v[0]) + ", " + format_number(v[1]) + ", " + format_number(v[2]) + "]";
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

/// 1-based line of a node, 0 when it has none (an empty document).
int line_of(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

/// The value as the user wrote it, on one line and shortened for messages.
std::string written(const YAML::Node& node) {
  std::string text;
  switch (node.Type()) {
  case YAML::NodeType::Undefined:
    return "(missing)";
  case YAML::NodeType::Null:
    return "(empty)";
  case YAML::NodeType::Scalar:
    // yaml-cpp tags quoted scalars "!": show the quotes so `"10"` reads as the string it is.
    text = node.Tag() == "!" ? "\"" + node.Scalar() + "\"" : node.Scalar();
    break;
  default: {
    YAML::Emitter emitter;
    emitter.SetSeqFormat(YAML::Flow);
    emitter.SetMapFormat(YAML::Flow);
    emitter << node;
    text = emitter.c_str();
  }
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  constexpr std::size_t kMaxShown = 60;
  if (text.size() > kMaxShown) text = text.substr(0, kMaxShown - 3) + "...";
  return text;
}

/// Strict number syntax: the whole scalar must be a decimal number (no hex, no trailing text).
bool parse_double(const std::string& text, double& value) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last || *first == '+' || (first != text.data() && *first == '-')) return false;
  const auto [end, ec] = std::from_chars(first, last, value, std::chars_format::general);
  return ec == std::errc() && end == last && std::isfinite(value);
}

bool parse_integer(const std::string& text, long long& value) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last || *first == '+' || (first != text.data() && *first == '-')) return false;
  const auto [end, ec] = std::from_chars(first, last, value);
  return ec == std::errc() && end == last;
}

bool is_any(double) {
  return true;
}
bool is_positive(double value) {
  return value > 0;
}
bool is_non_negative(double value) {
  return value >= 0;
}
bool is_cfl(double value) {
  return value > 0 && value <= 1;
}
/// Values the solver stores or computes in float32.
bool is_float32(double value) {
  return fits_float32(value);
}
bool is_positive_float32(double value) {
  return value > 0 && fits_float32(value);
}
bool is_spacing(double value) {
  return value >= kMinSpacing && value <= kMaxSpacing;
}

const std::string kSpacingAllowed =
    "a number > 0 (metres) from " + format_number(kMinSpacing) + " to " +
    format_number(kMaxSpacing) +
    " (the solver's float32 stencil weights c/h^2 and medium (v dt)^2 ~ h^2 need it)";
const std::string kVelocityAllowed = "a velocity > 0 (m/s) that float32 holds (<= 3.40282e+38)";
const std::string kFrequencyAllowed = "a frequency > 0 (Hz) that float32 holds (<= 3.40282e+38)";

/// Range rule for one number: the test and the words that describe it in errors.
struct NumberRule {
  bool (*accepts)(double);
  std::string allowed;
};

class MapFields;

/// Reads one survey file's YAML tree into a Survey, checking as it goes.
class SurveyParser {
public:
  SurveyParser(std::string file, std::string base_dir)
      : m_file(std::move(file)), m_base_dir(std::move(base_dir)) {}

  Survey parse(const std::string& document);

  SourceLoc loc(const YAML::Node& node, const std::string& key) const {
    return SourceLoc{m_file, line_of(node), key};
  }
  SourceLoc loc_at(int line, const std::string& key) const { return SourceLoc{m_file, line, key}; }

  /// "FILE:LINE: KEY: VALUE is not allowed: ALLOWED"
  [[noreturn]] void reject_at(int line, const std::string& key, const std::string& value,
                              const std::string& allowed) const {
    throw InputError(loc_at(line, key).where() + ": " + value + " is not allowed: " + allowed);
  }
  [[noreturn]] void reject(const YAML::Node& node, const std::string& key,
                           const std::string& allowed) const {
    reject_at(line_of(node), key, written(node), allowed);
  }
  /// "FILE:LINE: KEY: missing: WHAT"
  [[noreturn]] void missing(int line, const std::string& key, const std::string& what) const {
    throw InputError(loc_at(line, key).where() + ": missing: " + what);
  }

  double number(const YAML::Node& node, const std::string& key, const NumberRule& rule) const;
  int integer(const YAML::Node& node, const std::string& key, long long min, long long max,
              const std::string& allowed) const;
  std::string text(const YAML::Node& node, const std::string& key,
                   const std::string& allowed) const;
  std::size_t choice(const YAML::Node& node, const std::string& key,
                     const std::vector<std::string>& options) const;
  Vec3 vec3(const YAML::Node& node, const std::string& key, const std::string& allowed) const;
  void sequence(const YAML::Node& node, const std::string& key, const std::string& allowed) const;

  /// A file name resolved against the survey's folder.
  std::string resolve(const std::string& name) const;
  /// The file that `node` names, resolved against the survey's folder; rejects `key` unless it
  /// is an existing regular file ("an existing <what> (looked for <path>)").
  std::string existing_file(const YAML::Node& node, const std::string& key,
                            const std::string& what) const;

private:
  void parse_grid(const YAML::Node& node, GridSpec& grid) const;
  void parse_model(const YAML::Node& node, ModelSpec& model) const;
  void parse_time(const YAML::Node& node, TimeSpec& time) const;
  void parse_boundary(const YAML::Node& node, BoundarySpec& boundary) const;
  void parse_sources(const YAML::Node& node, std::vector<SourceSpec>& sources) const;
  void parse_wavelet(const YAML::Node& node, const std::string& key, WaveletSpec& wavelet) const;
  void parse_receivers(const YAML::Node& node, std::vector<ReceiverSpec>& receivers,
                       bool& moving) const;
  /// Positions from a CSV file (`key`: "receivers.csv", "shots.positions.csv"): rows of x, y, z
  /// in metres, an optional header line; each checked, naming the file, line and column.
  void parse_position_csv(const YAML::Node& node, const std::string& key,
                          std::vector<ReceiverSpec>& positions) const;
  void parse_positions(const MapFields& fields, const std::string& prefix,
                       std::vector<ReceiverSpec>& positions) const;
  void parse_shots(const YAML::Node& node, std::vector<ShotSpec>& shots) const;
  AnisotropySpec parse_anisotropy(const YAML::Node& node) const;
  PropertySpec parse_property(const YAML::Node& node, const std::string& key,
                              const NumberRule& rule) const;
  /// Sets the angle's range and unit in `p` and checks its values where the survey holds them.
  void check_angle(PropertySpec& p, double abs_max, bool degrees,
                   const std::string& allowed_degrees, const std::string& allowed_radians) const;
  void parse_output(const YAML::Node& node, OutputSpec& output, int shots) const;
  /// output.snapshots.shots against a survey of `shots` shots.
  std::vector<int> parse_snapshot_shots(const YAML::Node& node, int shots) const;
  void parse_decomposition(const MapFields& top, Survey& survey) const;
  void read_precision(const MapFields& top, Survey& survey) const;

  /// A position must lie in the grid's extent [origin, origin + (n-1)*h] on every axis. Points
  /// within rounding of a face are moved onto it.
  Vec3 inside_grid(const Vec3& position, int line, const std::string& key,
                   const std::string& value) const;

  std::string m_file;
  std::string m_base_dir;
  GridSpec m_grid;                ///< parsed first; positions and widths are checked against it
  mutable bool m_offsets = false; ///< positions being parsed are offsets (moving receivers)
};

/// The entries of one YAML map of the survey, in file order, checked for duplicate and unknown
/// keys and looked up by name afterwards.
class MapFields {
public:
  MapFields(const SurveyParser& parser, const YAML::Node& node, std::string key,
            const std::vector<std::string>& allowed)
      : m_parser(parser), m_node(node), m_key(std::move(key)) {
    if (!node.IsMap()) parser.reject(node, m_key, "a map with keys " + join(allowed));
    for (const auto& entry : node) {
      const YAML::Node name_node = entry.first;
      if (!name_node.IsScalar()) parser.reject(name_node, m_key, "keys that are plain names");
      const std::string name = name_node.Scalar();
      // A hash of the names seen: a map of tens of thousands of keys is checked in linear time.
      const auto [seen, added] = m_index.emplace(name, m_entries.size());
      if (!added) {
        parser.reject_at(line_of(name_node), key_of(name), "a second '" + name + "'",
                         "each key once (first on line " +
                             std::to_string(line_of(m_entries[seen->second].first)) + ")");
      }
      m_entries.emplace_back(name_node, entry.second);
    }
    allow(allowed, "");
  }

  /// Checks the keys against `allowed`; `context` says why the set is what it is.
  void allow(const std::vector<std::string>& allowed, const std::string& context) const {
    for (const auto& [name_node, value] : m_entries) {
      if (std::find(allowed.begin(), allowed.end(), name_node.Scalar()) == allowed.end()) {
        m_parser.reject_at(line_of(name_node), key_of(name_node.Scalar()), "unknown key",
                           "keys of " + (m_key.empty() ? std::string("the survey") : m_key) +
                               context + " are " + join(allowed));
      }
    }
  }

  std::optional<YAML::Node> find(const std::string& name) const {
    const auto it = m_index.find(name);
    if (it == m_index.end()) return std::nullopt;
    return m_entries[it->second].second;
  }

  YAML::Node require(const std::string& name, const std::string& what) const {
    if (auto value = find(name)) return *value;
    // The top-level map has no useful line: its first key is not where anything is missing.
    m_parser.missing(m_key.empty() ? 0 : line_of(m_node), key_of(name), what);
  }

  /// Dotted key of an entry: "grid.spacing".
  std::string key_of(const std::string& name) const {
    return m_key.empty() ? name : m_key + "." + name;
  }
  int line() const { return line_of(m_node); }

private:
  const SurveyParser& m_parser;
  YAML::Node m_node;
  std::string m_key;
  std::vector<std::pair<YAML::Node, YAML::Node>> m_entries;
  std::unordered_map<std::string, std::size_t> m_index; ///< name -> entry
};

double SurveyParser::number(const YAML::Node& node, const std::string& key,
                            const NumberRule& rule) const {
  double value = 0;
  if (!node.IsScalar() || !parse_double(node.Scalar(), value) || !rule.accepts(value)) {
    reject(node, key, rule.allowed);
  }
  return value;
}

int SurveyParser::integer(const YAML::Node& node, const std::string& key, long long min,
                          long long max, const std::string& allowed) const {
  long long value = 0;
  if (!node.IsScalar() || !parse_integer(node.Scalar(), value) || value < min || value > max) {
    reject(node, key, allowed);
  }
  return static_cast<int>(value);
}

std::string SurveyParser::text(const YAML::Node& node, const std::string& key,
                               const std::string& allowed) const {
  if (!node.IsScalar() || node.Scalar().empty()) reject(node, key, allowed);
  return node.Scalar();
}

std::size_t SurveyParser::choice(const YAML::Node& node, const std::string& key,
                                 const std::vector<std::string>& options) const {
  if (node.IsScalar()) {
    const auto it = std::find(options.begin(), options.end(), node.Scalar());
    if (it != options.end()) return static_cast<std::size_t>(it - options.begin());
  }
  reject(node, key, "one of " + join(options));
}

Vec3 SurveyParser::vec3(const YAML::Node& node, const std::string& key,
                        const std::string& allowed) const {
  if (!node.IsSequence() || node.size() != 3) reject(node, key, allowed);
  Vec3 v{};
  for (std::size_t a = 0; a < 3; ++a) {
    v[a] = number(node[a], key + "[" + std::to_string(a) + "]", {is_any, "a finite number"});
  }
  return v;
}

void SurveyParser::sequence(const YAML::Node& node, const std::string& key,
                            const std::string& allowed) const {
  if (!node.IsSequence()) reject(node, key, allowed);
}

std::string SurveyParser::resolve(const std::string& name) const {
  const fs::path path(name);
  if (path.is_absolute() || m_base_dir.empty()) return path.lexically_normal().string();
  return (fs::path(m_base_dir) / path).lexically_normal().string();
}

std::string SurveyParser::existing_file(const YAML::Node& node, const std::string& key,
                                        const std::string& what) const {
  const std::string name = text(node, key, "a file name");
  if (find_memory_file(name)) return name; // an array handed over in memory (io/memory_file.hpp)
  const std::string path = resolve(name);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    reject(node, key, "an existing " + what + " (looked for " + path + ")");
  return path;
}

Vec3 SurveyParser::inside_grid(const Vec3& position, int line, const std::string& key,
                               const std::string& value) const {
  static const char* const kAxis[] = {"x", "y", "z"};
  static const char* const kCount[] = {"nx", "ny", "nz"};
  static const char* const kStep[] = {"dx", "dy", "dz"};
  if (m_offsets) return position;
  Vec3 inside = position;
  for (int a = 0; a < 3; ++a) {
    const double lo = m_grid.origin[a];
    const double hi = lo + (m_grid.shape[a] - 1) * m_grid.spacing[a];
    const double tolerance = 1e-6 * m_grid.spacing[a];
    if (position[a] < lo - tolerance || position[a] > hi + tolerance) {
      reject_at(line, key, value,
                std::string(kAxis[a]) + " = " + format_number(position[a]) +
                    " lies outside the grid; " + kAxis[a] + " must be in [" + format_number(lo) +
                    ", " + format_number(hi) + "] m (origin to origin + (" + kCount[a] + "-1)*" +
                    kStep[a] + ")");
    }
    inside[a] = std::clamp(position[a], lo, hi);
  }
  return inside;
}

const std::vector<std::string> kTopKeys = {
    "name",       "physics",       "grid",           "model",    "time",   "boundary",
    "sources",    "shots",         "receivers",      "output",   "kernel", "interpolation",
    "anisotropy", "decomposition", "ranks_per_shot", "precision"};

namespace {

/// Throws InputError at the first byte sequence that is not UTF-8, naming its line and offset:
/// the survey text is stored in the output as a UTF-8 string attribute.
void check_utf8(const std::string& text, const std::string& file) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  int line = 1;
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = bytes[i];
    std::size_t length = 0;
    std::uint32_t code = 0, lowest = 0;
    if (c < 0x80) {
      if (c == '\n' || (c == '\r' && (i + 1 == n || bytes[i + 1] != '\n'))) ++line;
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, code = c & 0x1F, lowest = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, code = c & 0x0F, lowest = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, code = c & 0x07, lowest = 0x10000;
    }
    bool valid = length > 0 && i + length <= n;
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (bytes[i + k] & 0xC0) == 0x80;
      code = (code << 6) | (bytes[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points beyond U+10FFFF are not UTF-8 either.
    valid = valid && code >= lowest && code <= 0x10FFFF && (code < 0xD800 || code > 0xDFFF);
    if (!valid) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      throw InputError(file + ":" + std::to_string(line) + ": byte " + hex + " at byte offset " +
                       std::to_string(i) +
                       " is not allowed: UTF-8 text (the survey is stored in the output as a "
                       "UTF-8 string; save the file as UTF-8)");
    }
    i += length;
  }
}

/// Line breaks as yaml-cpp reads them: CR LF and a lone CR (old Mac files) become LF, so that
/// every line keeps its number.
std::string normalise_line_endings(const std::string& text) {
  if (text.find('\r') == std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      out += text[i];
    } else if (i + 1 == text.size() || text[i + 1] != '\n') {
      out += '\n';
    }
  }
  return out;
}

} // namespace

Survey SurveyParser::parse(const std::string& document) {
  check_utf8(document, m_file);
  YAML::Node root;
  try {
    root = YAML::Load(normalise_line_endings(document));
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    throw InputError(loc_at(line, "").where() + ": YAML syntax error: " + e.msg);
  }
  if (root.IsNull()) {
    throw InputError(m_file + ": the survey is empty: expected a map with keys " + join(kTopKeys));
  }

  Survey survey;
  survey.path = m_file;
  survey.text = document;
  const MapFields top(*this, root, "", kTopKeys);

  if (auto node = top.find("name")) survey.name = text(*node, "name", "a string");
  int physics_line = 0;
  if (auto node = top.find("physics")) {
    survey.physics = choice(*node, "physics", {"acoustic", "tti"}) == 0 ? "acoustic" : "tti";
    survey.physics_loc = loc(*node, "physics");
    physics_line = line_of(*node);
  }

  parse_grid(top.require("grid", "the grid: shape [nx, ny, nz], spacing (m), optional origin"),
             survey.grid);
  m_grid = survey.grid;
  parse_model(top.require("model", "the velocity model: type constant, layered, gradient or file"),
              survey.model);
  parse_time(top.require("time", "the time span: duration (s) or steps"), survey.time);
  survey.boundary.loc = loc_at(0, "boundary");
  survey.boundary.width_loc = loc_at(0, "boundary.width");
  survey.boundary.reflection_db_loc = loc_at(0, "boundary.reflection_db");
  if (auto node = top.find("boundary")) parse_boundary(*node, survey.boundary);
  const auto sources = top.find("sources");
  const auto shots = top.find("shots");
  if (sources && shots) {
    reject(*shots, "shots", "either sources (one shot) or shots (one shot per position), not both");
  }
  if (shots) {
    parse_shots(*shots, survey.shots);
  } else {
    parse_sources(top.require("sources", "a list of at least one source (or shots)"),
                  survey.sources);
    survey.shots.push_back(ShotSpec{survey.sources, loc(*sources, "sources")});
  }
  survey.sources = survey.shots.front().sources;
  if (auto node = top.find("receivers")) {
    parse_receivers(*node, survey.receivers, survey.receivers_move);
  }
  if (auto node = top.find("anisotropy")) {
    if (survey.physics != "tti") {
      reject(*node, "anisotropy", "only with physics: tti (the acoustic equation is isotropic)");
    }
    survey.anisotropy = parse_anisotropy(*node);
  } else if (survey.physics == "tti") {
    missing(physics_line, "anisotropy",
            "physics: tti needs anisotropy: {angle_unit, epsilon, delta, theta, optional phi}");
  }
  if (auto node = top.find("interpolation")) {
    survey.interpolation = choice(*node, "interpolation", {"trilinear", "sinc"}) == 0
                               ? Interpolation::Trilinear
                               : Interpolation::Sinc;
  }

  survey.output.file = "out/" + fs::path(m_file).stem().string() + ".h5";
  survey.output.loc = loc_at(0, "output");
  survey.output.dt_out_loc = loc_at(0, "output.dt_out");
  survey.output.snapshot_loc = loc_at(0, "output.snapshots");
  if (auto node = top.find("output"))
    parse_output(*node, survey.output, static_cast<int>(survey.shots.size()));

  survey.kernel_loc = loc_at(0, "kernel");
  if (auto node = top.find("kernel")) {
    survey.kernel = text(*node, "kernel", "a kernel name such as gmem_3d");
    survey.kernel_loc = loc(*node, "kernel");
  }
  parse_decomposition(top, survey);
  read_precision(top, survey);
  check_precision_support(survey);
  return survey;
}

void SurveyParser::read_precision(const MapFields& top, Survey& survey) const {
  survey.precision_loc = loc_at(0, "precision");
  const auto node = top.find("precision");
  if (!node) return;
  survey.precision_loc = loc(*node, "precision");
  const std::optional<Precision> p =
      node->IsScalar() ? parse_precision(node->Scalar()) : std::nullopt;
  if (!p) {
    reject(*node, "precision",
           std::string("one of ") + precision_choices() +
               " (how the run stores its wavefields and medium: float16 in 16 bits, "
               "docs/survey.md)");
  }
  survey.precision = *p;
}

void SurveyParser::parse_decomposition(const MapFields& top, Survey& survey) const {
  const std::string split_allowed =
      "auto, or [px, py, pz]: subdomains along x, y and z, each an integer >= 1";
  survey.decomposition_loc = loc_at(0, "decomposition");
  survey.ranks_per_shot_loc = loc_at(0, "ranks_per_shot");
  if (auto node = top.find("decomposition")) {
    survey.decomposition_loc = loc(*node, "decomposition");
    if (node->IsScalar() && node->Scalar() == "auto") {
      survey.decomposition = std::array<int, 3>{0, 0, 0};
    } else if (node->IsSequence() && node->size() == 3) {
      std::array<int, 3> split{};
      for (std::size_t a = 0; a < 3; ++a) {
        split[a] = integer((*node)[a], "decomposition[" + std::to_string(a) + "]", 1, 1 << 20,
                           "an integer >= 1 (subdomains along that axis)");
      }
      survey.decomposition = split;
    } else {
      reject(*node, "decomposition", split_allowed);
    }
  }
  if (auto node = top.find("ranks_per_shot")) {
    survey.ranks_per_shot_loc = loc(*node, "ranks_per_shot");
    survey.ranks_per_shot = integer(*node, "ranks_per_shot", 1, 1 << 20,
                                    "an integer >= 1 (MPI ranks that model one shot)");
    const auto& d = survey.decomposition;
    if (d && (*d)[0] > 0 && (*d)[0] * (*d)[1] * (*d)[2] != survey.ranks_per_shot) {
      reject(*node, "ranks_per_shot",
             std::to_string((*d)[0] * (*d)[1] * (*d)[2]) + ", the subdomains of decomposition [" +
                 std::to_string((*d)[0]) + ", " + std::to_string((*d)[1]) + ", " +
                 std::to_string((*d)[2]) + "] (one rank each), or leave it out");
    }
  }
}

void SurveyParser::parse_grid(const YAML::Node& node, GridSpec& grid) const {
  const MapFields fields(*this, node, "grid", {"shape", "spacing", "origin"});
  grid.loc = loc(node, "grid");

  const std::string shape_allowed = "an integer >= " + std::to_string(kMinShape) +
                                    " and <= " + std::to_string(kMaxAxisPoints) +
                                    " (grid points including the absorbing layers)";
  const YAML::Node shape = fields.require("shape", "[nx, ny, nz]: " + shape_allowed + " each");
  if (!shape.IsSequence() || shape.size() != 3) {
    reject(shape, "grid.shape", "a list [nx, ny, nz], each " + shape_allowed);
  }
  for (std::size_t a = 0; a < 3; ++a) {
    grid.shape[a] = integer(shape[a], "grid.shape[" + std::to_string(a) + "]", kMinShape,
                            kMaxAxisPoints, shape_allowed);
  }
  // In double: 2^30 x 2^30 x 9 is beyond 64-bit integers.
  const double points = static_cast<double>(grid.shape[0]) * grid.shape[1] * grid.shape[2];
  if (points > static_cast<double>(kMaxGridPoints)) {
    reject(shape, "grid.shape",
           "at most " + std::to_string(kMaxGridPoints) + " grid points in all (2^40; this is " +
               format_number(points) + ")");
  }

  const NumberRule spacing_rule{is_spacing, kSpacingAllowed};
  const YAML::Node spacing =
      fields.require("spacing", "[dx, dy, dz] in metres (> 0), or one number for all three");
  if (spacing.IsScalar()) {
    const double h = number(spacing, "grid.spacing", spacing_rule);
    grid.spacing = {h, h, h};
  } else {
    if (!spacing.IsSequence() || spacing.size() != 3) {
      reject(spacing, "grid.spacing", "a number > 0 (metres) or a list [dx, dy, dz] of them");
    }
    for (std::size_t a = 0; a < 3; ++a) {
      grid.spacing[a] = number(spacing[a], "grid.spacing[" + std::to_string(a) + "]", spacing_rule);
    }
  }

  grid.origin = {0, 0, 0};
  if (auto origin = fields.find("origin")) {
    grid.origin = vec3(*origin, "grid.origin", "a list [x0, y0, z0] in metres");
  }
}

void SurveyParser::parse_model(const YAML::Node& node, ModelSpec& model) const {
  const MapFields fields(*this, node, "model",
                         {"type", "velocity", "layers", "v0", "gradient", "z0", "file", "format",
                          "dataset", "shape", "order", "spacing", "origin", "segy", "vmax",
                          "extend"});
  model.loc = loc(node, "model");
  const NumberRule velocity_rule{is_positive_float32, kVelocityAllowed};

  const YAML::Node type_node = fields.require("type", "one of constant, layered, gradient, file");
  const std::size_t type =
      choice(type_node, "model.type", {"constant", "layered", "gradient", "file"});
  model.kind = static_cast<ModelSpec::Kind>(type);

  switch (model.kind) {
  case ModelSpec::Kind::Constant:
    fields.allow({"type", "velocity", "vmax"}, " (type constant)");
    model.velocity = number(fields.require("velocity", "the velocity in m/s (> 0)"),
                            "model.velocity", velocity_rule);
    break;

  case ModelSpec::Kind::Layered: {
    fields.allow({"type", "layers", "vmax"}, " (type layered)");
    const YAML::Node layers =
        fields.require("layers", "a list of {top: metres, velocity: m/s}, tops increasing");
    sequence(layers, "model.layers", "a list of {top: metres, velocity: m/s}");
    if (layers.size() == 0) reject(layers, "model.layers", "at least one layer");
    for (std::size_t n = 0; n < layers.size(); ++n) {
      const std::string key = "model.layers[" + std::to_string(n) + "]";
      const MapFields layer_fields(*this, layers[n], key, {"top", "velocity"});
      Layer layer;
      const YAML::Node top = layer_fields.require("top", "the depth of the layer's top (m)");
      layer.top = number(top, key + ".top", {is_any, "a depth in metres"});
      layer.velocity = number(layer_fields.require("velocity", "the velocity in m/s (> 0)"),
                              key + ".velocity", velocity_rule);
      if (!model.layers.empty() && layer.top <= model.layers.back().top) {
        reject(top, key + ".top",
               "a top > " + format_number(model.layers.back().top) +
                   " m, the previous layer's top (tops strictly increasing)");
      }
      model.layers.push_back(layer);
    }
    break;
  }

  case ModelSpec::Kind::Gradient: {
    fields.allow({"type", "v0", "gradient", "z0", "vmax"}, " (type gradient)");
    model.v0 =
        number(fields.require("v0", "the velocity at z0 in m/s (> 0)"), "model.v0", velocity_rule);
    const YAML::Node gradient = fields.require("gradient", "the velocity gradient dv/dz in 1/s");
    model.gradient = number(gradient, "model.gradient", {is_any, "a number (1/s)"});
    model.z0 = m_grid.origin[2];
    if (auto z0 = fields.find("z0")) {
      model.z0 = number(*z0, "model.z0", {is_any, "a depth in metres"});
    }
    // Checked here too (build_velocity checks again) so that `validate` fails before any work.
    for (int k = 0; k < m_grid.shape[2]; ++k) {
      const double z = m_grid.origin[2] + k * m_grid.spacing[2];
      const double v = model.v0 + model.gradient * (z - model.z0);
      if (!(static_cast<float>(v) > 0)) {
        reject(gradient, "model.gradient",
               "a gradient that keeps v0 + gradient*(z - z0) > 0 in the grid; it gives " +
                   format_number(v) + " m/s at z = " + format_number(z) + " m");
      }
    }
    break;
  }

  case ModelSpec::Kind::File: {
    fields.allow({"type", "file", "format", "dataset", "shape", "order", "spacing", "origin",
                  "segy", "vmax", "extend"},
                 " (type file)");
    const YAML::Node file = fields.require(
        "file", "the model file (raw float32, HDF5, SEG-Y or .npy), relative to the survey");
    model.file = existing_file(file, "model.file", "model file");
    model.file_loc = loc(file, "model.file");
    if (auto format = fields.find("format")) {
      static const std::vector<std::string> kFormats = {"raw", "hdf5", "segy", "npy"};
      model.format = kFormats[choice(*format, "model.format", kFormats)];
    } else {
      // No format: the file name's extension says (.npy, .h5/.hdf5, .sgy/.segy, else raw); the
      // reader then checks that the content is of that format.
      model.format = format_from_extension(model.file);
    }
    if (auto extend = fields.find("extend")) {
      model.extend_edge = choice(*extend, "model.extend", {"none", "edge"}) == 1;
    }
    const bool raw = model.format == "raw";
    if (auto dataset = fields.find("dataset")) {
      if (model.format != "hdf5") reject(*dataset, "model.dataset", "only with format: hdf5");
      model.dataset = text(*dataset, "model.dataset", "an HDF5 dataset path such as /vp");
    }
    if (auto segy = fields.find("segy")) {
      if (model.format != "segy") reject(*segy, "model.segy", "only with format: segy");
      const MapFields segy_fields(*this, *segy, "model.segy", {"inline_byte", "crossline_byte"});
      if (auto b = segy_fields.find("inline_byte")) {
        model.segy_inline_byte =
            integer(*b, "model.segy.inline_byte", 1, 233, "a byte in [1, 233]");
      }
      if (auto b = segy_fields.find("crossline_byte")) {
        model.segy_crossline_byte =
            integer(*b, "model.segy.crossline_byte", 1, 233, "a byte in [1, 233]");
      }
    }

    model.file_shape = m_grid.shape;
    if (auto shape = fields.find("shape")) {
      const std::string allowed = "[nx, ny, nz]: the number of model points along x, y, z";
      if (!shape->IsSequence() || shape->size() != 3) reject(*shape, "model.shape", allowed);
      for (std::size_t a = 0; a < 3; ++a) {
        model.file_shape[a] =
            integer((*shape)[a], "model.shape[" + std::to_string(a) + "]", 1, kMaxAxisPoints,
                    "an integer from 1 to " + std::to_string(kMaxAxisPoints));
      }
      if (static_cast<double>(model.file_shape[0]) * model.file_shape[1] * model.file_shape[2] >
          static_cast<double>(kMaxGridPoints)) {
        reject(*shape, "model.shape",
               "at most " + std::to_string(kMaxGridPoints) + " model points in all (2^40)");
      }
      model.file_shape_given = true;
    }
    model.spacing_loc = loc_at(line_of(node), "model.spacing");
    if (auto spacing = fields.find("spacing")) {
      const NumberRule positive{is_spacing, kSpacingAllowed};
      std::array<double, 3> h{};
      if (spacing->IsScalar()) {
        h.fill(number(*spacing, "model.spacing", positive));
      } else {
        if (!spacing->IsSequence() || spacing->size() != 3) {
          reject(*spacing, "model.spacing", "[dx, dy, dz] in metres or one number");
        }
        for (std::size_t a = 0; a < 3; ++a) {
          h[a] = number((*spacing)[a], "model.spacing[" + std::to_string(a) + "]", positive);
        }
      }
      model.spacing = h;
      model.spacing_loc = loc(*spacing, "model.spacing");
    }
    if (auto origin = fields.find("origin")) {
      model.origin = vec3(*origin, "model.origin", "a list [x, y, z] in metres");
    }
    if (raw && !model.file_shape_given && model.spacing) {
      reject_at(line_of(node), "model.shape", "missing",
                "the shape [nx, ny, nz] of a raw model whose spacing is not the grid's");
    }
    if (raw && model.file_shape != m_grid.shape && !model.spacing) {
      reject(*fields.find("shape"), "model.shape",
             "grid.shape [" + std::to_string(m_grid.shape[0]) + ", " +
                 std::to_string(m_grid.shape[1]) + ", " + std::to_string(m_grid.shape[2]) +
                 "], or another shape together with model.spacing (the model is then resampled "
                 "onto the grid)");
    }

    model.order = AxisOrder::Xyz;
    if (auto order = fields.find("order")) {
      if (model.format == "segy")
        reject(*order, "model.order", "no order for SEG-Y (from headers)");
      model.order_given = true;
      model.order =
          choice(*order, "model.order", {"xyz", "zyx"}) == 0 ? AxisOrder::Xyz : AxisOrder::Zyx;
    }

    // The size of a raw file is cheap to check here; build_velocity reads and checks the values.
    if (raw) {
      const std::uintmax_t expected = static_cast<std::uintmax_t>(model.file_shape[0]) *
                                      static_cast<std::uintmax_t>(model.file_shape[1]) *
                                      static_cast<std::uintmax_t>(model.file_shape[2]) * 4;
      std::error_code ec;
      const std::uintmax_t actual = fs::file_size(model.file, ec);
      if (!ec && actual != expected) {
        reject_at(line_of(file), "model.file",
                  model.file + " (" + std::to_string(actual) + " bytes)",
                  "exactly " + std::to_string(expected) +
                      " bytes = " + std::to_string(model.file_shape[0]) + " x " +
                      std::to_string(model.file_shape[1]) + " x " +
                      std::to_string(model.file_shape[2]) + " float32 values");
      }
    }
    break;
  }
  }

  model.vmax_loc = loc_at(line_of(node), "model.vmax");
  if (auto vmax = fields.find("vmax")) {
    model.vmax = number(*vmax, "model.vmax", velocity_rule);
    model.vmax_loc = loc(*vmax, "model.vmax");
  }
  if (model.file_loc.key.empty()) model.file_loc = loc_at(line_of(node), "model.file");
}

void SurveyParser::parse_time(const YAML::Node& node, TimeSpec& time) const {
  const MapFields fields(*this, node, "time", {"duration", "steps", "dt", "cfl"});
  time.loc = loc(node, "time");
  time.dt_loc = loc_at(line_of(node), "time.dt");
  time.cfl_loc = loc_at(line_of(node), "time.cfl");

  const auto duration = fields.find("duration");
  const auto steps = fields.find("steps");
  if (duration) {
    time.duration = number(*duration, "time.duration", {is_positive, "a duration > 0 (seconds)"});
  }
  if (steps) {
    if (duration) {
      reject(*steps, "time.steps",
             "only one of time.duration and time.steps (time.duration is given on line " +
                 std::to_string(line_of(*duration)) + ")");
    }
    time.steps = integer(*steps, "time.steps", 1, kMaxSteps,
                         "an integer >= 1 and <= " + std::to_string(kMaxSteps) +
                             " (2^31 - 2: the traces hold steps + 1 samples)");
  }
  if (!duration && !steps) {
    missing(line_of(node), "time.duration",
            "exactly one of time.duration (seconds) or time.steps is required");
  }
  if (auto dt = fields.find("dt")) {
    time.dt = number(
        *dt, "time.dt",
        {is_positive_float32, "a time step > 0 (seconds) that float32 holds (>= 1.17549e-38)"});
    time.dt_loc = loc(*dt, "time.dt");
  }
  if (auto cfl = fields.find("cfl")) {
    time.cfl = number(*cfl, "time.cfl", {is_cfl, "a number with 0 < cfl <= 1"});
    time.cfl_loc = loc(*cfl, "time.cfl");
  }
}

void SurveyParser::parse_boundary(const YAML::Node& node, BoundarySpec& boundary) const {
  const MapFields fields(*this, node, "boundary",
                         {"type", "width", "ntaper", "reflection_db", "fmax", "free_surface",
                          "reflection", "power", "alpha", "kappa"});
  if (auto type = fields.find("type")) {
    boundary.type_loc = loc(*type, "boundary.type");
    boundary.type = choice(*type, "boundary.type", {"minimod", "cpml"}) == 0 ? BoundaryType::Minimod
                                                                             : BoundaryType::Cpml;
  }
  // The C-PML profile (docs/physics.md, "C-PML"), only with boundary.type: cpml.
  const auto cpml_number = [&](const char* name, const NumberRule& rule) -> std::optional<double> {
    const auto value = fields.find(name);
    if (!value) return std::nullopt;
    const std::string key = std::string("boundary.") + name;
    if (boundary.type != BoundaryType::Cpml) {
      reject(*value, key,
             std::string("no ") + name +
                 " with boundary.type: " + boundary_type_name(boundary.type) +
                 " (the C-PML profile's keys need boundary.type: cpml)");
    }
    return number(*value, key, rule);
  };
  boundary.reflection = cpml_number(
      "reflection", {[](double v) { return v > 0 && v < 1; }, "a number in (0, 1), e.g. 1e-4"});
  boundary.power = cpml_number(
      "power", {[](double v) { return v >= 0 && v <= 8; }, "a number from 0 to 8, e.g. 2"});
  boundary.alpha = cpml_number(
      "alpha", {[](double v) { return v >= 0 && fits_float32(v); }, "a number >= 0 (1/s)"});
  boundary.kappa =
      cpml_number("kappa", {[](double v) { return v >= 1 && v <= 100; }, "a number from 1 to 100"});
  if (auto flag = fields.find("free_surface")) {
    boundary.free_surface = choice(*flag, "boundary.free_surface", {"false", "true"}) == 1;
  }
  boundary.loc = loc(node, "boundary");
  boundary.width_loc = loc_at(line_of(node), "boundary.width");
  boundary.reflection_db_loc = loc_at(line_of(node), "boundary.reflection_db");

  const auto width = fields.find("width");
  if (width) {
    const int narrowest = std::min({m_grid.shape[0], m_grid.shape[1], m_grid.shape[2]});
    const int widest = (narrowest - 1) / 2;
    const int value = integer(*width, "boundary.width", 0, std::numeric_limits<int>::max(),
                              "an integer >= 0 (points on every face)");
    if (2LL * value >= narrowest) {
      reject(*width, "boundary.width",
             "layer wider than half the grid: 2*width must be < " + std::to_string(narrowest) +
                 " (the smallest grid.shape value), so width <= " + std::to_string(widest) +
                 " points");
    }
    boundary.width = value;
    boundary.width_loc = loc(*width, "boundary.width");
  }
  if (auto ntaper = fields.find("ntaper")) {
    if (width) {
      reject(*ntaper, "boundary.ntaper",
             "only one of boundary.width and boundary.ntaper (boundary.width is given on line " +
                 std::to_string(line_of(*width)) + ")");
    }
    boundary.ntaper =
        number(*ntaper, "boundary.ntaper", {is_positive, "a number of wavelengths > 0"});
  }
  // The C-PML's width from its measured return (solver/plan.hpp, cpml_width_for_return): a
  // third way to give the width, so it excludes the other two.
  if (auto target = fields.find("reflection_db")) {
    if (boundary.type != BoundaryType::Cpml) {
      reject(*target, "boundary.reflection_db",
             std::string("no reflection_db with boundary.type: ") +
                 boundary_type_name(boundary.type) +
                 " (the width from a reflection target needs boundary.type: cpml; give "
                 "boundary.width or boundary.ntaper)");
    }
    for (const char* other : {"width", "ntaper"}) {
      if (auto given = fields.find(other)) {
        reject(*target, "boundary.reflection_db",
               std::string("only one of boundary.reflection_db and boundary.") + other +
                   " (boundary." + other + " is given on line " + std::to_string(line_of(*given)) +
                   ")");
      }
    }
    boundary.reflection_db =
        number(*target, "boundary.reflection_db",
               {[](double v) { return std::isfinite(v) && v < 0; },
                "a negative number of dB, e.g. -50 (the one-face return from 0 to 60 degrees)"});
    boundary.reflection_db_loc = loc(*target, "boundary.reflection_db");
  }
  if (auto fmax = fields.find("fmax")) {
    boundary.fmax = number(*fmax, "boundary.fmax", {is_positive_float32, kFrequencyAllowed});
  }
}

void SurveyParser::parse_sources(const YAML::Node& node, std::vector<SourceSpec>& sources) const {
  sequence(node, "sources", "a list of sources, each {position, wavelet, injection}");
  if (node.size() == 0) reject(node, "sources", "a list of at least one source");
  for (std::size_t n = 0; n < node.size(); ++n) {
    const std::string key = "sources[" + std::to_string(n) + "]";
    const MapFields fields(*this, node[n], key, {"position", "wavelet", "injection"});
    SourceSpec source;
    const YAML::Node position = fields.require("position", "[x, y, z] in metres");
    source.position = inside_grid(vec3(position, key + ".position", "a list [x, y, z] in metres"),
                                  line_of(position), key + ".position", written(position));
    source.loc = loc(position, key + ".position");
    parse_wavelet(fields.require("wavelet", "a map with type ricker, minimod or file"),
                  key + ".wavelet", source.wavelet);
    if (auto injection = fields.find("injection")) {
      source.injection = choice(*injection, key + ".injection", {"physical", "minimod"}) == 0
                             ? Injection::Physical
                             : Injection::Minimod;
    }
    sources.push_back(std::move(source));
  }
}

void SurveyParser::parse_shots(const YAML::Node& node, std::vector<ShotSpec>& shots) const {
  const MapFields fields(*this, node, "shots", {"positions", "wavelet", "injection"});
  SourceSpec source;
  parse_wavelet(fields.require("wavelet", "a map with type ricker, minimod or file"),
                "shots.wavelet", source.wavelet);
  if (auto injection = fields.find("injection")) {
    source.injection = choice(*injection, "shots.injection", {"physical", "minimod"}) == 0
                           ? Injection::Physical
                           : Injection::Minimod;
  }
  const YAML::Node positions_node =
      fields.require("positions", "source positions: points, lines and/or grids");
  const MapFields positions(*this, positions_node, "shots.positions",
                            {"points", "lines", "grids", "csv"});
  std::vector<ReceiverSpec> where;
  parse_positions(positions, "shots.positions", where);
  if (auto csv = positions.find("csv")) parse_position_csv(*csv, "shots.positions.csv", where);
  if (where.empty()) reject(positions_node, "shots.positions", "at least one source position");
  for (const auto& w : where) {
    SourceSpec s = source;
    s.position = w.position;
    s.loc = w.loc;
    shots.push_back(ShotSpec{{s}, w.loc});
  }
}

AnisotropySpec SurveyParser::parse_anisotropy(const YAML::Node& node) const {
  const MapFields fields(*this, node, "anisotropy",
                         {"angle_unit", "epsilon", "delta", "theta", "phi"});
  AnisotropySpec a;
  a.loc = loc(node, "anisotropy");
  a.degrees = choice(fields.require("angle_unit", "degrees or radians (the unit of theta and phi)"),
                     "anisotropy.angle_unit", {"degrees", "radians"}) == 0;
  const NumberRule any{is_float32, float32_range_text()};
  a.epsilon = parse_property(fields.require("epsilon", "Thomsen's epsilon: a number or a map"),
                             "anisotropy.epsilon", any);
  a.delta = parse_property(fields.require("delta", "Thomsen's delta: a number or a map"),
                           "anisotropy.delta", any);
  a.theta = parse_property(fields.require("theta", "the tilt from vertical: a number or a map"),
                           "anisotropy.theta", any);
  check_angle(a.theta, a.degrees ? 90.0 : kPi / 2, a.degrees, "-90 <= theta <= 90 degrees",
              "-pi/2 <= theta <= pi/2 radians");
  if (auto phi = fields.find("phi")) {
    a.phi = parse_property(*phi, "anisotropy.phi", any);
    check_angle(*a.phi, a.degrees ? 180.0 : kPi, a.degrees, "-180 <= phi <= 180 degrees",
                "-pi <= phi <= pi radians");
  }
  return a;
}

void SurveyParser::check_angle(PropertySpec& p, double abs_max, bool degrees,
                               const std::string& allowed_degrees,
                               const std::string& allowed_radians) const {
  // The same slack as the solver's check (1e-6 rad), in the survey's unit.
  p.abs_max = abs_max + (degrees ? 1e-6 * 180.0 / kPi : 1e-6);
  p.unit = degrees ? "degrees" : "radians";
  const std::string allowed =
      (degrees ? allowed_degrees : allowed_radians) + " (anisotropy.angle_unit: " + p.unit + ")";
  const auto check = [&](double value, const std::string& key, int line, const std::string& what) {
    if (!(std::abs(value) <= *p.abs_max)) reject_at(line, key, what, allowed);
  };
  switch (p.kind) {
  case PropertySpec::Kind::Constant:
    check(p.value, p.loc.key, p.loc.line, format_number(p.value) + " " + p.unit);
    break;
  case PropertySpec::Kind::Layered:
    for (std::size_t n = 0; n < p.layers.size(); ++n) {
      check(p.layers[n].second, p.loc.key + ".layers[" + std::to_string(n) + "].value", p.loc.line,
            format_number(p.layers[n].second) + " " + p.unit);
    }
    break;
  case PropertySpec::Kind::Gradient:
    // Linear in depth: its extremes are at the grid's top and bottom.
    for (const double z :
         {m_grid.origin[2], m_grid.origin[2] + (m_grid.shape[2] - 1) * m_grid.spacing[2]}) {
      const double value = p.value0 + p.gradient * (z - p.z0);
      check(value, p.loc.key + ".gradient", p.loc.line,
            format_number(p.gradient) + " (it gives " + format_number(value) + " " + p.unit +
                " at z = " + format_number(z) + " m)");
    }
    break;
  case PropertySpec::Kind::File:
    break; // build_property checks the file's values
  }
}

PropertySpec SurveyParser::parse_property(const YAML::Node& node, const std::string& key,
                                          const NumberRule& rule) const {
  PropertySpec p;
  p.loc = loc(node, key);
  if (node.IsScalar()) { // the common case: one value everywhere
    p.value = number(node, key, rule);
    return p;
  }
  const MapFields fields(*this, node, key,
                         {"type", "value", "layers", "value0", "gradient", "z0", "file", "format",
                          "dataset", "order"});
  const std::size_t type = choice(fields.require("type", "constant, layered, gradient or file"),
                                  key + ".type", {"constant", "layered", "gradient", "file"});
  p.kind = static_cast<PropertySpec::Kind>(type);
  switch (p.kind) {
  case PropertySpec::Kind::Constant:
    fields.allow({"type", "value"}, " (type constant)");
    p.value = number(fields.require("value", "the value"), key + ".value", rule);
    break;
  case PropertySpec::Kind::Layered: {
    fields.allow({"type", "layers"}, " (type layered)");
    const YAML::Node layers = fields.require("layers", "a list of {top, value}");
    sequence(layers, key + ".layers", "a list of {top: depth (m), value}");
    if (layers.size() == 0) reject(layers, key + ".layers", "at least one layer");
    for (std::size_t n = 0; n < layers.size(); ++n) {
      const std::string lk = key + ".layers[" + std::to_string(n) + "]";
      const MapFields lf(*this, layers[n], lk, {"top", "value"});
      const double top = number(lf.require("top", "depth (m)"), lk + ".top", {is_any, "a depth"});
      if (!p.layers.empty() && top <= p.layers.back().first) {
        reject(layers[n], lk + ".top", "tops strictly increasing");
      }
      p.layers.emplace_back(top, number(lf.require("value", "the value"), lk + ".value", rule));
    }
    break;
  }
  case PropertySpec::Kind::Gradient:
    fields.allow({"type", "value0", "gradient", "z0"}, " (type gradient)");
    p.value0 = number(fields.require("value0", "the value at z0"), key + ".value0", rule);
    p.gradient =
        number(fields.require("gradient", "per metre"), key + ".gradient", {is_any, "a number"});
    p.z0 = m_grid.origin[2];
    if (auto z0 = fields.find("z0")) p.z0 = number(*z0, key + ".z0", {is_any, "a depth (m)"});
    break;
  case PropertySpec::Kind::File: {
    fields.allow({"type", "file", "format", "dataset", "order"}, " (type file)");
    const YAML::Node file = fields.require("file", "the file, relative to the survey");
    p.file = existing_file(file, key + ".file", "file");
    if (auto format = fields.find("format")) {
      static const std::vector<std::string> kFormats = {"raw", "hdf5", "segy", "npy"};
      p.format = kFormats[choice(*format, key + ".format", kFormats)];
    } else {
      p.format = format_from_extension(p.file); // as model.file: .npy, .h5/.hdf5, .sgy/.segy
    }
    if (auto dataset = fields.find("dataset"))
      p.dataset = text(*dataset, key + ".dataset", "a path");
    if (auto order = fields.find("order"))
      p.order_zyx = choice(*order, key + ".order", {"xyz", "zyx"});
    break;
  }
  }
  return p;
}

void SurveyParser::parse_wavelet(const YAML::Node& node, const std::string& key,
                                 WaveletSpec& wavelet) const {
  const MapFields fields(*this, node, key,
                         {"type", "frequency", "delay", "amplitude", "fmax", "file", "dt"});
  wavelet.loc = loc(node, key);
  const std::size_t type = choice(fields.require("type", "one of ricker, minimod, file"),
                                  key + ".type", {"ricker", "minimod", "file"});
  wavelet.kind = static_cast<WaveletSpec::Kind>(type);
  const NumberRule frequency_rule{is_positive_float32, kFrequencyAllowed};

  switch (wavelet.kind) {
  case WaveletSpec::Kind::Ricker:
    fields.allow({"type", "frequency", "delay", "amplitude"}, " (type ricker)");
    wavelet.frequency = number(fields.require("frequency", "the peak frequency in Hz (> 0)"),
                               key + ".frequency", frequency_rule);
    if (auto delay = fields.find("delay")) {
      wavelet.delay = number(*delay, key + ".delay", {is_non_negative, "a delay >= 0 (seconds)"});
    }
    break;
  case WaveletSpec::Kind::Minimod:
    fields.allow({"type", "fmax", "amplitude"}, " (type minimod)");
    wavelet.fmax = number(fields.require("fmax", "the maximum frequency in Hz (> 0)"),
                          key + ".fmax", frequency_rule);
    break;
  case WaveletSpec::Kind::File: {
    fields.allow({"type", "file", "dt", "fmax", "amplitude"}, " (type file)");
    const YAML::Node file = fields.require("file", "the file of samples, relative to the survey");
    wavelet.file = existing_file(file, key + ".file", "file of samples");
    wavelet.file_dt =
        number(fields.require("dt", "the sample interval of the file in seconds"), key + ".dt",
               {is_positive_float32, "a sample interval > 0 (seconds) that float32 holds"});
    if (auto fmax = fields.find("fmax")) {
      wavelet.fmax = number(*fmax, key + ".fmax", frequency_rule);
    }
    break;
  }
  }
  if (auto amplitude = fields.find("amplitude")) {
    wavelet.amplitude = number(*amplitude, key + ".amplitude", {is_float32, float32_range_text()});
  }
}

void SurveyParser::parse_receivers(const YAML::Node& node, std::vector<ReceiverSpec>& receivers,
                                   bool& moving) const {
  const MapFields fields(*this, node, "receivers", {"points", "lines", "grids", "csv", "moving"});
  if (auto flag = fields.find("moving")) {
    moving = choice(*flag, "receivers.moving", {"false", "true"}) == 1;
  }
  // Moving receivers are offsets from each shot's source: checked per shot, not here.
  m_offsets = moving;
  parse_positions(fields, "receivers", receivers);
  if (auto csv = fields.find("csv")) parse_position_csv(*csv, "receivers.csv", receivers);
  m_offsets = false;
}

void SurveyParser::parse_position_csv(const YAML::Node& node, const std::string& key,
                                      std::vector<ReceiverSpec>& positions) const {
  const std::string path = resolve(text(node, key, "a CSV file name"));
  std::error_code ec;
  if (fs::is_directory(path, ec)) reject(node, key, "a CSV file (" + path + " is a folder)");
  std::ifstream in(path);
  if (!in) reject(node, key, "a readable CSV file (looked for " + path + ")");
  const std::string rows_allowed =
      "rows of three finite numbers x, y, z (m), separated by commas or spaces, after an optional "
      "header line";
  static const char* const kColumns[3] = {"x", "y", "z"};
  std::string row;
  int line_no = 0;
  bool first = true;
  while (std::getline(in, row)) {
    ++line_no;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    if (row.find_first_not_of(" \t") == std::string::npos) continue;
    std::string spaced = row;
    std::replace(spaced.begin(), spaced.end(), ',', ' ');
    std::istringstream split(spaced);
    std::vector<std::string> cells;
    for (std::string cell; split >> cell;)
      cells.push_back(cell);
    // The first row is a header when its first field is not a number ("x,y,z"); a file of
    // numbers alone starts with its first position.
    std::vector<double> values;
    std::size_t bad_column = cells.size();
    for (std::size_t c = 0; c < cells.size(); ++c) {
      char* end = nullptr;
      const double v = std::strtod(cells[c].c_str(), &end);
      if (end == cells[c].c_str() || *end != '\0' || !std::isfinite(v)) {
        bad_column = c;
        break;
      }
      values.push_back(v);
    }
    if (first) {
      first = false;
      if (bad_column == 0) continue;
    }
    const std::string where = path + " line " + std::to_string(line_no);
    if (bad_column < cells.size() && bad_column < 3) {
      reject_at(line_of(node), key,
                where + ": '" + spaced + "' (column " + std::to_string(bad_column + 1) + ", " +
                    kColumns[bad_column] + ": '" + cells[bad_column] + "' is no finite number)",
                rows_allowed);
    }
    if (cells.size() != 3) {
      reject_at(line_of(node), key,
                where + ": '" + spaced + "' (" + std::to_string(cells.size()) + " field" +
                    (cells.size() == 1 ? "" : "s") + ")",
                rows_allowed);
    }
    if (static_cast<long long>(positions.size()) >= kMaxReceivers) {
      reject_at(line_of(node), key, where,
                "at most " + std::to_string(kMaxReceivers) + " positions in all");
    }
    const Vec3 p{values[0], values[1], values[2]};
    const Vec3 position = inside_grid(p, line_of(node), key, where + " " + format_vec3(p));
    positions.push_back(ReceiverSpec{position, loc_at(line_of(node), key + " (" + where + ")")});
  }
  if (in.bad()) reject(node, key, "a readable CSV file (reading " + path + " failed)");
}

void SurveyParser::parse_positions(const MapFields& fields, const std::string& prefix,
                                   std::vector<ReceiverSpec>& receivers) const {
  const std::string too_many = "at most " + std::to_string(kMaxReceivers) + " receivers in all";
  const auto add = [&](const Vec3& position, int line, const std::string& key) {
    if (static_cast<long long>(receivers.size()) >= kMaxReceivers) {
      reject_at(line, key, "one more receiver", too_many);
    }
    receivers.push_back(ReceiverSpec{position, loc_at(line, key)});
  };

  if (auto points = fields.find("points")) {
    sequence(*points, prefix + ".points", "a list of [x, y, z] positions in metres");
    for (std::size_t n = 0; n < points->size(); ++n) {
      const YAML::Node point = (*points)[n];
      const std::string key = prefix + ".points[" + std::to_string(n) + "]";
      const Vec3 position = inside_grid(vec3(point, key, "a list [x, y, z] in metres"),
                                        line_of(point), key, written(point));
      add(position, line_of(point), key);
    }
  }

  if (auto lines = fields.find("lines")) {
    sequence(*lines, prefix + ".lines", "a list of {start: [x, y, z], end: [x, y, z], count}");
    for (std::size_t n = 0; n < lines->size(); ++n) {
      const std::string key = prefix + ".lines[" + std::to_string(n) + "]";
      const MapFields line_fields(*this, (*lines)[n], key, {"start", "end", "count"});
      const YAML::Node start_node = line_fields.require("start", "[x, y, z] in metres");
      const YAML::Node end_node = line_fields.require("end", "[x, y, z] in metres");
      // The grid is a box, so a segment with both ends inside lies inside.
      const Vec3 start = inside_grid(vec3(start_node, key + ".start", "a list [x, y, z] in metres"),
                                     line_of(start_node), key + ".start", written(start_node));
      const Vec3 end = inside_grid(vec3(end_node, key + ".end", "a list [x, y, z] in metres"),
                                   line_of(end_node), key + ".end", written(end_node));
      const int count = integer(line_fields.require("count", "the number of receivers (>= 2)"),
                                key + ".count", 2, kMaxReceivers,
                                "an integer in [2, " + std::to_string(kMaxReceivers) +
                                    "] (receivers, both ends included)");
      const int line = line_fields.line();
      for (int r = 0; r < count; ++r) {
        const double t = static_cast<double>(r) / (count - 1);
        Vec3 position{};
        for (int a = 0; a < 3; ++a)
          position[a] = start[a] + t * (end[a] - start[a]);
        if (r == count - 1) position = end; // exact end point, whatever the rounding
        add(position, line, key);
      }
    }
  }

  if (auto grids = fields.find("grids")) {
    sequence(*grids, prefix + ".grids",
             "a list of {origin: [x, y, z], step_a: [..], step_b: [..], count: [na, nb]}");
    for (std::size_t n = 0; n < grids->size(); ++n) {
      const std::string key = prefix + ".grids[" + std::to_string(n) + "]";
      const MapFields grid_fields(*this, (*grids)[n], key, {"origin", "step_a", "step_b", "count"});
      const std::string vector_allowed = "a list [x, y, z] in metres";
      const Vec3 origin = vec3(grid_fields.require("origin", "[x, y, z] in metres"),
                               key + ".origin", vector_allowed);
      const Vec3 step_a =
          vec3(grid_fields.require("step_a", "[x, y, z] in metres: the step between receivers "
                                             "along the first axis of the receiver grid"),
               key + ".step_a", vector_allowed);
      const Vec3 step_b =
          vec3(grid_fields.require("step_b", "[x, y, z] in metres: the step along the second "
                                             "axis of the receiver grid"),
               key + ".step_b", vector_allowed);
      const YAML::Node count_node = grid_fields.require("count", "[na, nb], integers >= 1");
      const std::string count_allowed = "a list [na, nb] of integers >= 1";
      if (!count_node.IsSequence() || count_node.size() != 2) {
        reject(count_node, key + ".count", count_allowed);
      }
      const int na = integer(count_node[0], key + ".count[0]", 1, kMaxReceivers, "an integer >= 1");
      const int nb = integer(count_node[1], key + ".count[1]", 1, kMaxReceivers, "an integer >= 1");
      if (static_cast<long long>(na) * nb > kMaxReceivers)
        reject(count_node, key + ".count", too_many);
      const int line = grid_fields.line();
      for (int b = 0; b < nb; ++b) {
        for (int a = 0; a < na; ++a) {
          Vec3 position{};
          for (int axis = 0; axis < 3; ++axis) {
            position[axis] = origin[axis] + a * step_a[axis] + b * step_b[axis];
          }
          const std::string where = "receiver (" + std::to_string(a) + ", " + std::to_string(b) +
                                    ") at " + format_vec3(position);
          add(inside_grid(position, line, key, where), line, key);
        }
      }
    }
  }
}

std::vector<int> SurveyParser::parse_snapshot_shots(const YAML::Node& node, int shots) const {
  const std::string key = "output.snapshots.shots";
  const std::string allowed = "a list of shot numbers 0-" + std::to_string(shots - 1) +
                              " (0-based, as in /shots/NNNN), e.g. [0, 5], or all";
  std::vector<int> chosen;
  if (node.IsScalar() && node.Scalar() == "all") {
    for (int s = 0; s < shots; ++s)
      chosen.push_back(s);
    return chosen;
  }
  if (!node.IsSequence()) reject(node, key, allowed);
  if (node.size() == 0)
    reject(node, key, allowed + " (a survey with no snapshots has no output.snapshots)");
  for (std::size_t n = 0; n < node.size(); ++n) {
    const std::string item = key + "[" + std::to_string(n) + "]";
    const int shot = integer(node[n], item, 0, shots - 1, allowed);
    if (std::find(chosen.begin(), chosen.end(), shot) != chosen.end())
      reject(node[n], item, "each shot once: shot " + std::to_string(shot) + " is listed before");
    chosen.push_back(shot);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void SurveyParser::parse_output(const YAML::Node& node, OutputSpec& output, int shots) const {
  const MapFields fields(*this, node, "output",
                         {"file", "dt_out", "snapshots", "segy", "segy_layout"});
  if (auto segy = fields.find("segy")) {
    output.segy = text(*segy, "output.segy", "a SEG-Y file name (relative to the current folder)");
    output.segy_loc = loc(*segy, "output.segy");
  }
  if (auto layout = fields.find("segy_layout")) {
    if (!output.segy) reject(*layout, "output.segy_layout", "only together with output.segy");
    output.segy_per_shot = choice(*layout, "output.segy_layout", {"one_file", "per_shot"}) == 1;
  }
  output.loc = loc(node, "output");
  output.dt_out_loc = loc_at(line_of(node), "output.dt_out");
  output.snapshot_loc = loc_at(line_of(node), "output.snapshots");

  if (auto file = fields.find("file")) {
    output.file = text(*file, "output.file", "a file name (relative to the current directory)");
  }
  if (auto dt_out = fields.find("dt_out")) {
    output.dt_out =
        number(*dt_out, "output.dt_out",
               {is_positive_float32, "a trace sample interval > 0 (seconds) that float32 holds"});
    output.dt_out_loc = loc(*dt_out, "output.dt_out");
  }
  if (auto snapshots = fields.find("snapshots")) {
    const MapFields snap(*this, *snapshots, "output.snapshots",
                         {"every", "decimate", "box", "shots"});
    output.snapshot_loc = loc(*snapshots, "output.snapshots");
    output.snapshot_every =
        integer(snap.require("every", "the number of steps between snapshots (>= 1)"),
                "output.snapshots.every", 1, std::numeric_limits<int>::max(),
                "an integer >= 1 (steps between snapshots)");
    if (auto decimate = snap.find("decimate")) {
      output.snapshot_decimate =
          integer(*decimate, "output.snapshots.decimate", 1, std::numeric_limits<int>::max(),
                  "an integer >= 1 (keep every k-th point on each axis)");
    }
    if (auto box = snap.find("box")) {
      const MapFields box_fields(*this, *box, "output.snapshots.box", {"min", "max"});
      const YAML::Node min_node = box_fields.require("min", "[x, y, z] in metres");
      const YAML::Node max_node = box_fields.require("max", "[x, y, z] in metres");
      const std::string vector_allowed = "a list [x, y, z] in metres";
      SnapshotBox corners;
      corners.min = inside_grid(vec3(min_node, "output.snapshots.box.min", vector_allowed),
                                line_of(min_node), "output.snapshots.box.min", written(min_node));
      corners.max = inside_grid(vec3(max_node, "output.snapshots.box.max", vector_allowed),
                                line_of(max_node), "output.snapshots.box.max", written(max_node));
      for (int a = 0; a < 3; ++a) {
        if (corners.max[a] < corners.min[a]) {
          reject(max_node, "output.snapshots.box.max",
                 "max >= min on every axis; min is " + format_vec3(corners.min));
        }
      }
      output.snapshot_box = corners;
    }
    output.snapshot_shots_loc = loc(*snapshots, "output.snapshots.shots");
    if (auto chosen = snap.find("shots")) {
      output.snapshot_shots = parse_snapshot_shots(*chosen, shots);
      output.snapshot_shots_loc = loc(*chosen, "output.snapshots.shots");
    }
  }
}

} // namespace

namespace {

/// Receivers of shot `shot` placed at the shot's first source, each checked inside the grid;
/// `place(index, position)` receives them.
template <class Place> void place_receivers(const Survey& survey, int shot, Place&& place) {
  if (shot < 0 || shot >= static_cast<int>(survey.shots.size())) {
    throw std::out_of_range("shot " + std::to_string(shot) + " of " +
                            std::to_string(survey.shots.size()));
  }
  if (!survey.receivers_move) return;
  const Vec3& anchor = survey.shots[shot].sources.front().position;
  for (std::size_t n = 0; n < survey.receivers.size(); ++n) {
    const ReceiverSpec& r = survey.receivers[n];
    Vec3 placed{};
    for (int a = 0; a < 3; ++a) {
      const double x = anchor[a] + r.position[a];
      const double lo = survey.grid.origin[a];
      const double hi = lo + (survey.grid.shape[a] - 1) * survey.grid.spacing[a];
      if (x < lo - 1e-6 * survey.grid.spacing[a] || x > hi + 1e-6 * survey.grid.spacing[a]) {
        throw InputError(r.loc.where() + ": the receiver offset " + format_vec3(r.position) +
                         " from the source of shot " + std::to_string(shot) + " at " +
                         format_vec3(anchor) + " lies outside the grid (" + "xyz"[a] +
                         " must be in [" + format_number(lo) + ", " + format_number(hi) +
                         "] m); allowed: offsets that keep every receiver of every shot inside");
      }
      placed[a] = std::clamp(x, lo, hi);
    }
    place(n, placed);
  }
}

} // namespace

void check_shot_receivers(const Survey& survey, int shot) {
  place_receivers(survey, shot, [](std::size_t, const Vec3&) {});
}

Survey survey_for_shot(const Survey& survey, int shot) {
  place_receivers(survey, shot, [](std::size_t, const Vec3&) {}); // check before copying
  Survey s = survey;
  s.sources = survey.shots[shot].sources;
  place_receivers(survey, shot,
                  [&s](std::size_t n, const Vec3& p) { s.receivers[n].position = p; });
  return s;
}

void check_precision_support(const Survey& survey) {
  if (survey.precision != Precision::Float16) return;
  const auto refuse = [&](const std::string& key, const std::string& value, const SourceLoc& at,
                          const std::string& why) {
    const std::string place = at.line > 0 ? " (" + at.where() + ")" : std::string();
    throw InputError(survey.precision_loc.where() + ": float16 is not allowed with " + key + ": " +
                     value + place + ": " + why + "; allowed: precision float32 with " + key +
                     ": " + value);
  };
  const std::string one_grid =
      "16-bit storage runs a shot on one whole grid (no halo exchange of 16-bit fields)";
  if (survey.physics == "tti")
    refuse("physics", "tti", survey.physics_loc,
           "16-bit storage is implemented for the acoustic equation only");
  if (survey.boundary.type == BoundaryType::Cpml)
    refuse("boundary.type", "cpml", survey.boundary.type_loc,
           "16-bit storage has Minimod's layer only (the C-PML's memory variables are float32); "
           "use boundary.type: minimod");
  const auto& d = survey.decomposition;
  if (d && (*d)[0] * (*d)[1] * (*d)[2] > 1)
    refuse("decomposition",
           "[" + std::to_string((*d)[0]) + ", " + std::to_string((*d)[1]) + ", " +
               std::to_string((*d)[2]) + "]",
           survey.decomposition_loc, one_grid);
  if (survey.ranks_per_shot > 1)
    refuse("ranks_per_shot", std::to_string(survey.ranks_per_shot), survey.ranks_per_shot_loc,
           one_grid);
}

Survey parse_survey(const std::string& text, const std::string& path, const std::string& base_dir) {
  SurveyParser parser(path, base_dir);
  try {
    return parser.parse(text);
  } catch (const YAML::Exception& e) {
    // Only reached through a bug in the checks above; still a bad-input error with the file.
    throw InputError(path + ": " + e.what());
  }
}

Survey load_survey(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    throw InputError(path + ": cannot read the survey: it is a directory");
  }
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device (/dev/zero), a FIFO or a socket may never end: refuse before reading.
    throw InputError(path + ": cannot read the survey: it is not a regular file (a device, pipe "
                            "or socket); allowed: a survey YAML file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the survey: no such file or not readable");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxSurveyBytes) {
    throw InputError(path + ": the survey is " + std::to_string(size) +
                     " bytes; allowed: at most " + std::to_string(kMaxSurveyBytes) +
                     " bytes (64 MiB) of YAML text (list many receivers in receivers.csv)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read the survey: read error");
  const std::string base_dir = fs::path(path).parent_path().string();
  return parse_survey(text.str(), path, base_dir.empty() ? "." : base_dir);
}

} // namespace minimod
