/// `minimod-gpu plot` (app/plot.hpp). Reads the output file with the HDF5 C API (not the writer's
/// code, so a quicklook also checks the layout of docs/output.md) and draws on an io/png Canvas.
#include "app/plot.hpp"

#include "io/errors.hpp"
#include "io/png.hpp"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

/// The format attribute every minimod-gpu output carries (docs/output.md).
constexpr const char* kOutputFormat = "minimod-gpu-output";

// ---- Reading the output file ------------------------------------------------------------------

/// An HDF5 identifier closed by its own close function.
class Hid {
public:
  Hid() = default;
  Hid(hid_t id, herr_t (*close)(hid_t)) : m_id(id), m_close(close) {}
  ~Hid() {
    if (m_id >= 0 && m_close != nullptr) m_close(m_id);
  }
  Hid(Hid&& other) noexcept : m_id(std::exchange(other.m_id, -1)), m_close(other.m_close) {}
  Hid& operator=(Hid&& other) noexcept {
    std::swap(m_id, other.m_id);
    std::swap(m_close, other.m_close);
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;

  hid_t get() const { return m_id; }
  bool valid() const { return m_id >= 0; }

private:
  hid_t m_id = -1;
  herr_t (*m_close)(hid_t) = nullptr;
};

/// Silences HDF5's automatic error printing for its lifetime: failures become our exceptions.
class QuietHdf5Errors {
public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &m_function, &m_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, m_function, m_data); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

private:
  H5E_auto2_t m_function = nullptr;
  void* m_data = nullptr;
};

/// A minimod-gpu output file opened read-only. A missing or malformed object is an InputError
/// naming the file and the object: the file is the input of `plot`.
class OutputReader {
public:
  explicit OutputReader(const std::string& path) : m_path(path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      throw InputError("plot: '" + path +
                       "': no such file; allowed: an HDF5 output file of "
                       "`minimod-gpu run`");
    }
    m_file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!m_file.valid()) {
      throw InputError("plot: '" + path + "': not an HDF5 file (or not readable); allowed: an " +
                       "HDF5 output file of `minimod-gpu run`");
    }
    const std::optional<std::string> format = string_attribute("/", "format");
    if (!format || *format != kOutputFormat) {
      throw InputError("plot: '" + path + "': not a minimod-gpu output file (root attribute " +
                       "format is " + (format ? "'" + *format + "'" : std::string("missing")) +
                       "; allowed: '" + kOutputFormat + "')");
    }
  }

  const std::string& path() const { return m_path; }

  /// True when every link on the way to `object` ("/a/b") exists.
  bool exists(const std::string& object) const {
    std::string prefix;
    std::size_t at = 1;
    while (at <= object.size()) {
      const std::size_t slash = std::min(object.find('/', at), object.size());
      prefix = object.substr(0, slash);
      if (H5Lexists(m_file.get(), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
      at = slash + 1;
    }
    return true;
  }

  /// A string attribute of `object`, or nothing when it is absent or not a string.
  std::optional<std::string> string_attribute(const std::string& object,
                                              const std::string& name) const {
    if (H5Aexists_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
      return std::nullopt;
    }
    const Hid attr(
        H5Aopen_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose);
    const Hid type(attr.valid() ? H5Aget_type(attr.get()) : -1, H5Tclose);
    if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
    const Hid memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
    if (H5Tis_variable_str(type.get()) > 0) {
      H5Tset_size(memory.get(), H5T_VARIABLE);
      char* text = nullptr;
      if (H5Aread(attr.get(), memory.get(), &text) < 0 || text == nullptr) return std::nullopt;
      std::string value(text);
      H5free_memory(text);
      return value;
    }
    const std::size_t size = H5Tget_size(type.get());
    H5Tset_size(memory.get(), size);
    std::string value(size, '\0');
    if (H5Aread(attr.get(), memory.get(), value.data()) < 0) return std::nullopt;
    value.resize(value.find('\0') == std::string::npos ? size : value.find('\0'));
    return value;
  }

  /// A numeric attribute of exactly `count` values, converted to T (double or int).
  template <typename T>
  std::vector<T> numbers_attribute(const std::string& object, const std::string& name,
                                   std::size_t count) const {
    const std::string what = object + " attribute '" + name + "'";
    if (H5Aexists_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
      fail(what, "missing");
    }
    const Hid attr(
        H5Aopen_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose);
    const Hid space(attr.valid() ? H5Aget_space(attr.get()) : -1, H5Sclose);
    if (!space.valid()) fail(what, "cannot open it");
    const hssize_t points = H5Sget_simple_extent_npoints(space.get());
    if (points != static_cast<hssize_t>(count)) {
      fail(what,
           std::to_string(points) + " values where " + std::to_string(count) + " are expected");
    }
    std::vector<T> values(count);
    if (H5Aread(attr.get(), native_type<T>(), values.data()) < 0) fail(what, "cannot read it");
    return values;
  }

  /// Dimensions of a dataset, slowest first.
  std::vector<hsize_t> dims(const std::string& dataset) const {
    const Hid data = open_dataset(dataset);
    const Hid space(H5Dget_space(data.get()), H5Sclose);
    const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank < 0) fail(dataset, "cannot read its dimensions");
    std::vector<hsize_t> result(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), result.data(), nullptr);
    return result;
  }

  /// The block [start, start + count) of a dataset, converted to T, in C order.
  template <typename T>
  std::vector<T> read(const std::string& dataset, const std::vector<hsize_t>& start,
                      const std::vector<hsize_t>& count) const {
    const Hid data = open_dataset(dataset);
    const Hid file_space(H5Dget_space(data.get()), H5Sclose);
    hsize_t total = 1;
    for (hsize_t n : count)
      total *= n;
    std::vector<T> values(static_cast<std::size_t>(total));
    if (total == 0) return values;
    const Hid memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                           H5Sclose);
    if (!file_space.valid() || !memory_space.valid() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                            nullptr) < 0 ||
        H5Dread(data.get(), native_type<T>(), memory_space.get(), file_space.get(), H5P_DEFAULT,
                values.data()) < 0) {
      fail(dataset, "cannot read it");
    }
    return values;
  }

  /// A whole dataset, converted to T.
  template <typename T> std::vector<T> read_all(const std::string& dataset) const {
    const std::vector<hsize_t> count = dims(dataset);
    return read<T>(dataset, std::vector<hsize_t>(count.size(), 0), count);
  }

  /// Shot numbers of the groups under /shots, ascending.
  std::vector<int> shot_numbers() const {
    std::vector<int> shots;
    if (!exists("/shots")) return shots;
    const Hid group(H5Gopen2(m_file.get(), "/shots", H5P_DEFAULT), H5Gclose);
    H5G_info_t info{};
    if (!group.valid() || H5Gget_info(group.get(), &info) < 0) fail("/shots", "cannot list it");
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      char name[64] = {};
      if (H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                             H5P_DEFAULT) < 0) {
        continue;
      }
      const std::string text(name);
      if (!text.empty() && text.size() < 10 &&
          text.find_first_not_of("0123456789") == std::string::npos) {
        shots.push_back(std::stoi(text));
      }
    }
    std::sort(shots.begin(), shots.end());
    return shots;
  }

private:
  template <typename T> static hid_t native_type() {
    if constexpr (std::is_same_v<T, double>) {
      return H5T_NATIVE_DOUBLE;
    } else if constexpr (std::is_same_v<T, float>) {
      return H5T_NATIVE_FLOAT;
    } else {
      static_assert(std::is_same_v<T, int>, "double, float or int");
      return H5T_NATIVE_INT;
    }
  }

  Hid open_dataset(const std::string& dataset) const {
    if (!exists(dataset)) fail(dataset, "missing");
    Hid data(H5Dopen2(m_file.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
    if (!data.valid()) fail(dataset, "cannot open it as a dataset");
    return data;
  }

  [[noreturn]] void fail(const std::string& object, const std::string& what) const {
    throw InputError("plot: '" + m_path + "': " + object + ": " + what +
                     " (docs/output.md lists what a minimod-gpu output file holds)");
  }

  std::string m_path;
  Hid m_file;
};

/// "/shots/0007" for shot 7 (four digits at least, as the writer names them).
std::string shot_group(int shot) {
  char name[32];
  std::snprintf(name, sizeof name, "/shots/%04d", shot);
  return name;
}

/// "0..3" for contiguous numbers, else the list (shortened past 12).
std::string describe_numbers(const std::vector<int>& numbers) {
  if (numbers.empty()) return "none";
  if (numbers.back() - numbers.front() + 1 == static_cast<int>(numbers.size())) {
    if (numbers.size() == 1) return std::to_string(numbers.front());
    return std::to_string(numbers.front()) + ".." + std::to_string(numbers.back());
  }
  std::string out;
  for (std::size_t i = 0; i < numbers.size() && i < 12; ++i)
    out += (i == 0 ? "" : ", ") + std::to_string(numbers[i]);
  return numbers.size() > 12 ? out + ", ..." : out;
}

// ---- Numbers and colours ----------------------------------------------------------------------

std::string format_fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string format_general(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

/// The |value| below which `percentile` percent of the finite values lie (nearest rank); 0 when
/// there are none.
double abs_percentile(const std::vector<float>& values, double percentile) {
  std::vector<float> magnitudes;
  magnitudes.reserve(values.size());
  for (float v : values)
    if (std::isfinite(v)) magnitudes.push_back(std::fabs(v));
  if (magnitudes.empty()) return 0.0;
  const double rank = std::ceil(percentile / 100.0 * static_cast<double>(magnitudes.size())) - 1;
  const auto at =
      static_cast<std::size_t>(std::clamp(rank, 0.0, static_cast<double>(magnitudes.size() - 1)));
  std::nth_element(magnitudes.begin(), magnitudes.begin() + static_cast<std::ptrdiff_t>(at),
                   magnitudes.end());
  return magnitudes[at];
}

/// "0.00123 (percentile 99 of |amplitude|)".
std::string clip_text(double clip, double percentile, const std::string& quantity) {
  return format_general(clip) + " (percentile " + format_general(percentile) + " of |" + quantity +
         "|)";
}

Rgb mix(Rgb a, Rgb b, double t) {
  auto channel = [t](std::uint8_t x, std::uint8_t y) {
    return static_cast<std::uint8_t>(std::lround(x + (y - x) * t));
  };
  return {channel(a.r, b.r), channel(a.g, b.g), channel(a.b, b.b)};
}

const Rgb kWhite{255, 255, 255};
const Rgb kInk{20, 20, 20};        ///< text and frames
const Rgb kNotFinite{230, 200, 0}; ///< NaN and infinity in the data
const Rgb kMarker{0, 150, 60};     ///< source positions

/// Colour of a value already divided by the clip level (so -1..1 spans the map; beyond clips).
Rgb colour_of(double scaled, Colormap map) {
  if (!std::isfinite(scaled)) return kNotFinite;
  const double v = std::clamp(scaled, -1.0, 1.0);
  if (map == Colormap::Grey) {
    const auto level = static_cast<std::uint8_t>(std::lround(127.5 * (1.0 - v)));
    return {level, level, level};
  }
  // Seismic: dark blue, light blue, white, light red, dark red at -1, -0.5, 0, 0.5, 1. The dark
  // ends keep strong amplitudes visible against the clip.
  static const std::array<Rgb, 5> kStops = {Rgb{25, 45, 150}, Rgb{90, 150, 235}, kWhite,
                                            Rgb{235, 110, 80}, Rgb{150, 20, 25}};
  const double position = (v + 1.0) * 2.0; // 0..4
  const int lower = std::min(static_cast<int>(position), 3);
  return mix(kStops[lower], kStops[lower + 1], position - lower);
}

/// A step of 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double mantissa : {1.0, 2.0, 5.0, 10.0})
    if (mantissa * power >= raw * (1 - 1e-9)) return mantissa * power;
  return 10.0 * power;
}

/// Decimals that print every multiple of `step` exactly (step from nice_step).
int decimals_of(double step) {
  return std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
}

/// Multiples of `step` in [lo, hi].
std::vector<double> ticks_in(double lo, double hi, double step) {
  std::vector<double> ticks;
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; first + i * step <= hi + step * 1e-9 && i < 1000; ++i) {
    const double value = first + i * step;
    ticks.push_back(std::fabs(value) < step * 1e-9 ? 0.0 : value);
  }
  return ticks;
}

// ---- Drawing ----------------------------------------------------------------------------------

/// A rectangle of the canvas showing data: values along its edges, for mapping both ways.
struct Panel {
  int x = 0, y = 0, w = 1, h = 1; ///< pixels
  double left = 0, right = 1;     ///< horizontal value at the left and right edges
  double top = 0, bottom = 1;     ///< vertical value at the top and bottom edges

  int px(double value) const {
    return x + static_cast<int>(std::floor((value - left) / (right - left) * w));
  }
  int py(double value) const {
    return y + static_cast<int>(std::floor((value - top) / (bottom - top) * h));
  }
  /// Value at the centre of pixel column c / row r of the panel.
  double u(int c) const { return left + (c + 0.5) / w * (right - left); }
  double v(int r) const { return top + (r + 0.5) / h * (bottom - top); }
};

/// Paints the panel with `sample(u, v)`, scaled by 1 / clip and coloured by `map`, and frames it.
void paint(Canvas& canvas, const Panel& panel, const std::function<double(double, double)>& sample,
           double clip, Colormap map) {
  for (int r = 0; r < panel.h; ++r) {
    const double v = panel.v(r);
    for (int c = 0; c < panel.w; ++c)
      canvas.set_pixel(panel.x + c, panel.y + r, colour_of(sample(panel.u(c), v) / clip, map));
  }
  canvas.rect(panel.x - 1, panel.y - 1, panel.w + 2, panel.h + 2, kInk);
}

/// Text centred on x.
void text_centred(Canvas& canvas, int x, int y, const std::string& text, Rgb colour,
                  int scale = 1) {
  canvas.text(x - Canvas::text_width(text, scale) / 2, y, text, colour, scale);
}

constexpr int kTick = 5; ///< tick length in pixels

/// One labelled tick: where (in the panel's values) and what it says.
struct Tick {
  double value;
  std::string label;
};

/// Ticks and labels under the panel, and the axis title below them.
void bottom_axis(Canvas& canvas, const Panel& panel, const std::vector<Tick>& ticks,
                 const std::string& title) {
  const int base = panel.y + panel.h;
  for (const Tick& t : ticks) {
    const int x = std::min(panel.px(t.value), panel.x + panel.w - 1);
    canvas.line(x, base, x, base + kTick, kInk);
    text_centred(canvas, x, base + kTick + 3, t.label, kInk);
  }
  text_centred(canvas, panel.x + panel.w / 2, base + kTick + 3 + Canvas::kLineHeight + 4, title,
               kInk);
}

/// Ticks and labels above the panel, and the axis title above them.
void top_axis(Canvas& canvas, const Panel& panel, const std::vector<Tick>& ticks,
              const std::string& title) {
  const int base = panel.y - 1;
  for (const Tick& t : ticks) {
    const int x = std::min(panel.px(t.value), panel.x + panel.w - 1);
    canvas.line(x, base, x, base - kTick, kInk);
    text_centred(canvas, x, base - kTick - 3 - Canvas::kCapHeight, t.label, kInk);
  }
  text_centred(canvas, panel.x + panel.w / 2,
               base - kTick - 3 - Canvas::kCapHeight - 6 - Canvas::kLineHeight, title, kInk);
}

/// Ticks and labels left of the panel, and the axis title written upwards left of them.
void left_axis(Canvas& canvas, const Panel& panel, const std::vector<Tick>& ticks,
               const std::string& title) {
  const int base = panel.x - 1;
  int widest = 0;
  for (const Tick& t : ticks) {
    const int y = std::min(panel.py(t.value), panel.y + panel.h - 1);
    canvas.line(base, y, base - kTick, y, kInk);
    const int width = Canvas::text_width(t.label);
    widest = std::max(widest, width);
    canvas.text(base - kTick - 3 - width, y - Canvas::kCapHeight / 2, t.label, kInk);
  }
  const int x = base - kTick - 3 - widest - 6 - Canvas::kCapHeight;
  canvas.text(x, panel.y + panel.h / 2 + Canvas::text_width(title) / 2, title, kInk, 1,
              TextDirection::Up);
}

/// Ticks at multiples of a nice step over [lo, hi], at least `min_pixels` apart on an axis of
/// `pixels`.
std::vector<Tick> value_ticks(double lo, double hi, int pixels, int min_pixels) {
  const double step = nice_step(std::fabs(hi - lo) * min_pixels / std::max(pixels, 1));
  std::vector<Tick> ticks;
  for (double value : ticks_in(std::min(lo, hi), std::max(lo, hi), step))
    ticks.push_back({value, format_fixed(value, decimals_of(step))});
  return ticks;
}

/// A vertical colour bar for [-clip, clip], positive on top, labelled on its right.
void colour_bar(Canvas& canvas, int x, int y, int h, double clip, Colormap map,
                const std::string& title) {
  constexpr int kWidth = 16;
  for (int r = 0; r < h; ++r) {
    const double scaled = 1.0 - 2.0 * (r + 0.5) / h;
    canvas.fill_rect(x, y + r, kWidth, 1, colour_of(scaled, map));
  }
  canvas.rect(x - 1, y - 1, kWidth + 2, h + 2, kInk);
  const std::array<std::pair<double, int>, 3> labels = {
      std::pair<double, int>{clip, y}, {0.0, y + h / 2}, {-clip, y + h - 1}};
  for (const auto& [value, at] : labels) {
    canvas.line(x + kWidth, at, x + kWidth + kTick - 1, at, kInk);
    const std::string text = value == 0.0 ? "0" : (value > 0 ? "+" : "") + format_general(value);
    canvas.text(x + kWidth + kTick + 3, at - Canvas::kCapHeight / 2, text, kInk);
  }
  canvas.text(x - 1, y - 8 - Canvas::kLineHeight, title, kInk);
}

/// Width of the colour bar with its labels, for layout.
constexpr int kColourBarSpace = 100;

/// A small cross marking a point (source), in a colour none of the maps uses.
void mark(Canvas& canvas, int x, int y) {
  for (int d = -5; d <= 5; ++d) {
    canvas.fill_rect(x + d - 1, y - 1, 3, 3, kWhite);
    canvas.fill_rect(x - 1, y + d - 1, 3, 3, kWhite);
  }
  for (int d = -4; d <= 4; ++d) {
    canvas.set_pixel(x + d, y, kMarker);
    canvas.set_pixel(x, y + d, kMarker);
  }
}

std::string default_output(const PlotOptions& options, const std::string& suffix) {
  if (!options.output.empty()) return options.output;
  fs::path path(options.input);
  if (path.extension() == ".h5" || path.extension() == ".hdf5") path.replace_extension();
  return path.string() + suffix + ".png";
}

Colormap resolve(Colormap map, Colormap fallback) {
  return map == Colormap::Auto ? fallback : map;
}

const char* colormap_name(Colormap map) {
  return map == Colormap::Grey ? "grey" : (map == Colormap::Seismic ? "seismic" : "auto");
}

// ---- Shot gather ------------------------------------------------------------------------------

PlotResult plot_shot(const OutputReader& file, int shot, const PlotOptions& options) {
  const std::string group = shot_group(shot);
  if (shot < 0 || !file.exists(group)) {
    const std::vector<int> shots = file.shot_numbers();
    throw InputError("--shot: " + std::to_string(shot) + ": '" + file.path() + "' has no shot " +
                     std::to_string(shot) + "; allowed: " + describe_numbers(shots));
  }
  const std::vector<hsize_t> dims = file.dims(group + "/traces");
  if (dims.size() != 2)
    throw InputError("plot: '" + file.path() + "': " + group + "/traces is not 2-D");
  const int receivers = static_cast<int>(dims[0]), samples = static_cast<int>(dims[1]);
  if (receivers == 0 || samples == 0) {
    throw InputError("--shot: " + std::to_string(shot) + ": shot " + std::to_string(shot) +
                     " of '" + file.path() + "' has no traces (" + std::to_string(receivers) +
                     " receivers x " + std::to_string(samples) +
                     " samples); allowed: a shot with receivers");
  }
  const std::vector<float> traces = file.read_all<float>(group + "/traces");
  const double dt_out = file.numbers_attribute<double>(group, "dt_out", 1)[0];
  if (!(dt_out > 0) || !std::isfinite(dt_out)) {
    throw InputError("plot: '" + file.path() + "': " + group + " attribute 'dt_out' is " +
                     format_general(dt_out) + "; allowed: a time step > 0 s");
  }
  const std::vector<double> receiver_xyz = file.read_all<double>(group + "/receiver_positions");
  const std::vector<double> source_xyz = file.read_all<double>(group + "/source_positions");
  const bool have_offsets =
      receiver_xyz.size() == static_cast<std::size_t>(receivers) * 3 && source_xyz.size() >= 3;

  const Colormap map = resolve(options.colormap, Colormap::Grey);
  const double clip_found = abs_percentile(traces, options.clip_percentile);
  const double clip = clip_found > 0 ? clip_found : 1.0;

  // Image size: whole pixels per trace up to a comfortable width, then one column per trace
  // (nearest trace) up to 1200; time gets about two pixels per sample within 400..720.
  const int per_trace = std::clamp(480 / receivers, 1, 24);
  const int image_w = receivers <= 480 ? receivers * per_trace : std::min(receivers, 1200);
  const int image_h = std::clamp(2 * samples, 400, 720);
  const double duration = samples > 1 ? (samples - 1) * dt_out : dt_out;

  const std::string file_name = fs::path(file.path()).filename().string();
  const std::string title = file_name + "  shot " + std::to_string(shot);
  std::string subtitle = std::to_string(receivers) + " receivers x " + std::to_string(samples) +
                         " samples, dt_out = " + format_general(dt_out) + " s, " +
                         colormap_name(map) + ", clip " +
                         clip_text(clip, options.clip_percentile, "amplitude");
  if (clip_found == 0) subtitle += ", all zero";

  const int margin_left = 80, margin_top = 110, margin_bottom = 50;
  const int width =
      std::max({margin_left + image_w + kColourBarSpace, Canvas::text_width(title, 2) + 20,
                Canvas::text_width(subtitle) + 20});
  Canvas canvas(width, margin_top + image_h + margin_bottom, kWhite);
  canvas.text(10, 10, title, kInk, 2);
  canvas.text(10, 36, subtitle, kInk);

  Panel panel;
  panel.x = margin_left;
  panel.y = margin_top;
  panel.w = image_w;
  panel.h = image_h;
  panel.left = 0;
  panel.right = receivers; // trace r spans [r, r + 1)
  panel.top = 0;
  panel.bottom = duration;
  paint(
      canvas, panel,
      [&](double u, double t) {
        const int trace = std::clamp(static_cast<int>(u), 0, receivers - 1);
        const double position = std::clamp(t / dt_out, 0.0, samples - 1.0);
        const int k = std::min(static_cast<int>(position), samples - 1);
        const int next = std::min(k + 1, samples - 1);
        const float* row = traces.data() + static_cast<std::size_t>(trace) * samples;
        return row[k] + (row[next] - row[k]) * (position - k);
      },
      clip, map);

  // Receiver numbers below, their offsets from the (first) source above, at the same traces.
  const int step = static_cast<int>(
      std::max(1.0, nice_step(static_cast<double>(receivers) * 45 / std::max(image_w, 1))));
  std::vector<Tick> numbers, offsets;
  for (int r = 0; r < receivers; r += step) {
    numbers.push_back({r + 0.5, std::to_string(r)});
    if (have_offsets) {
      const double offset =
          std::hypot(receiver_xyz[3 * r] - source_xyz[0], receiver_xyz[3 * r + 1] - source_xyz[1]);
      offsets.push_back({r + 0.5, format_fixed(offset, 0)});
    }
  }
  bottom_axis(canvas, panel, numbers, "receiver");
  if (have_offsets) top_axis(canvas, panel, offsets, "offset (m), horizontal from the source");
  left_axis(canvas, panel, value_ticks(0, duration, image_h, 45), "time (s)");
  colour_bar(canvas, panel.x + panel.w + 20, panel.y + 20, std::min(image_h - 40, 300), clip, map,
             "amplitude");

  PlotResult result;
  result.path = default_output(options, "_shot" + std::to_string(shot));
  write_png(result.path, canvas);
  result.width = canvas.width();
  result.height = canvas.height();
  result.summary = "shot " + std::to_string(shot) + " of " + file_name + ": " + subtitle;
  return result;
}

// ---- Snapshot ---------------------------------------------------------------------------------

/// A 2-D slice of a snapshot: values [rows][columns] on a regular grid of points, sampled
/// bilinearly in metres.
struct Slice {
  std::vector<float> values;
  int columns = 0, rows = 0;
  double column_origin = 0, column_spacing = 1; ///< metres
  double row_origin = 0, row_spacing = 1;       ///< metres

  double at(double u, double v) const {
    const double fc = std::clamp((u - column_origin) / column_spacing, 0.0, columns - 1.0);
    const double fr = std::clamp((v - row_origin) / row_spacing, 0.0, rows - 1.0);
    const int c0 = static_cast<int>(fc), r0 = static_cast<int>(fr);
    const int c1 = std::min(c0 + 1, columns - 1), r1 = std::min(r0 + 1, rows - 1);
    const double wc = fc - c0, wr = fr - r0;
    auto value = [&](int r, int c) {
      return static_cast<double>(values[static_cast<std::size_t>(r) * columns + c]);
    };
    return (1 - wr) * ((1 - wc) * value(r0, c0) + wc * value(r0, c1)) +
           wr * ((1 - wc) * value(r1, c0) + wc * value(r1, c1));
  }
};

/// The metres an axis of `n` points from `origin` at `spacing` covers: the points themselves, or
/// one spacing around a single point.
std::pair<double, double> extent(int n, double origin, double spacing) {
  if (n > 1) return {origin, origin + (n - 1) * spacing};
  return {origin - spacing / 2, origin + spacing / 2};
}

/// Index of the point nearest `coordinate`, or the middle one when it lies outside the axis.
int nearest_or_middle(double coordinate, int n, double origin, double spacing, bool have) {
  const double f = (coordinate - origin) / spacing;
  if (!have || f < -0.5 || f > n - 0.5) return n / 2;
  return std::clamp(static_cast<int>(std::lround(f)), 0, n - 1);
}

PlotResult plot_snapshot(const OutputReader& file, std::optional<int> asked,
                         const PlotOptions& options) {
  const std::string index_text = asked ? std::to_string(*asked) : std::string("last");
  if (!file.exists("/snapshots/wavefield")) {
    throw InputError("--snapshot: " + index_text + ": '" + file.path() +
                     "' has no snapshots (the survey had no output.snapshots); allowed: "
                     "--shot K for a shot gather");
  }
  const std::vector<hsize_t> dims = file.dims("/snapshots/wavefield");
  if (dims.size() != 4) {
    throw InputError("plot: '" + file.path() + "': /snapshots/wavefield is not 4-D");
  }
  const int count = static_cast<int>(dims[0]);
  const int nz = static_cast<int>(dims[1]), ny = static_cast<int>(dims[2]),
            nx = static_cast<int>(dims[3]);
  const int index = asked ? *asked : count - 1;
  if (count == 0 || index < 0 || index >= count || nx == 0 || ny == 0 || nz == 0) {
    throw InputError("--snapshot: " + index_text + ": '" + file.path() + "' has " +
                     std::to_string(count) + " snapshot" + (count == 1 ? "" : "s") +
                     "; allowed: " + (count > 0 ? "0.." + std::to_string(count - 1) : "none"));
  }
  const std::vector<double> origin = file.numbers_attribute<double>("/snapshots", "origin", 3);
  const std::vector<double> spacing = file.numbers_attribute<double>("/snapshots", "spacing", 3);
  const std::vector<int> steps = file.read_all<int>("/snapshots/step");
  const std::vector<double> times = file.read_all<double>("/snapshots/time");
  const std::vector<int> grid_shape = file.numbers_attribute<int>("/", "grid_shape", 3);
  const std::vector<double> grid_spacing = file.numbers_attribute<double>("/", "grid_spacing", 3);
  const std::vector<double> grid_origin = file.numbers_attribute<double>("/", "grid_origin", 3);
  const std::vector<int> layer = file.numbers_attribute<int>("/", "layer_widths", 6);

  // Sources of the first shot, for the slice positions and the markers.
  std::vector<double> sources;
  const std::vector<int> shots = file.shot_numbers();
  if (!shots.empty() && file.exists(shot_group(shots.front()) + "/source_positions")) {
    sources = file.read_all<double>(shot_group(shots.front()) + "/source_positions");
  }
  const bool have_source = sources.size() >= 3;
  const int j =
      nearest_or_middle(have_source ? sources[1] : 0, ny, origin[1], spacing[1], have_source);
  const int k =
      nearest_or_middle(have_source ? sources[2] : 0, nz, origin[2], spacing[2], have_source);
  const double y_slice = origin[1] + j * spacing[1], z_slice = origin[2] + k * spacing[2];

  const auto snap = static_cast<hsize_t>(index);
  Slice xz, xy;
  xz.values = file.read<float>("/snapshots/wavefield", {snap, 0, static_cast<hsize_t>(j), 0},
                               {1, dims[1], 1, dims[3]});
  xz.columns = nx;
  xz.rows = nz;
  xz.column_origin = origin[0];
  xz.column_spacing = spacing[0];
  xz.row_origin = origin[2];
  xz.row_spacing = spacing[2];
  xy.values = file.read<float>("/snapshots/wavefield", {snap, static_cast<hsize_t>(k), 0, 0},
                               {1, 1, dims[2], dims[3]});
  xy.columns = nx;
  xy.rows = ny;
  xy.column_origin = origin[0];
  xy.column_spacing = spacing[0];
  xy.row_origin = origin[1];
  xy.row_spacing = spacing[1];

  std::vector<float> both = xz.values;
  both.insert(both.end(), xy.values.begin(), xy.values.end());
  const double clip_found = abs_percentile(both, options.clip_percentile);
  const double clip = clip_found > 0 ? clip_found : 1.0;
  const Colormap map = resolve(options.colormap, Colormap::Seismic);

  const auto [x_lo, x_hi] = extent(nx, origin[0], spacing[0]);
  const auto [y_lo, y_hi] = extent(ny, origin[1], spacing[1]);
  const auto [z_lo, z_hi] = extent(nz, origin[2], spacing[2]);
  // One scale (pixels per metre) for both panels and both axes, so shapes are true.
  const double scale = std::min(420.0 / (x_hi - x_lo), 480.0 / std::max(z_hi - z_lo, y_hi - y_lo));
  const int panel_w = std::max(1, static_cast<int>(std::lround((x_hi - x_lo) * scale)));
  const int xz_h = std::max(1, static_cast<int>(std::lround((z_hi - z_lo) * scale)));
  const int xy_h = std::max(1, static_cast<int>(std::lround((y_hi - y_lo) * scale)));

  const std::string file_name = fs::path(file.path()).filename().string();
  const double time = static_cast<std::size_t>(index) < times.size() ? times[index] : 0.0;
  const int step = static_cast<std::size_t>(index) < steps.size() ? steps[index] : 0;
  const std::string title = file_name + "  snapshot " + std::to_string(index) + " of " +
                            std::to_string(count) + ", step " + std::to_string(step) +
                            ", t = " + format_fixed(time, 4) + " s";
  std::string subtitle = std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                         std::to_string(nz) + " points, spacing " + format_general(spacing[0]) +
                         " x " + format_general(spacing[1]) + " x " + format_general(spacing[2]) +
                         " m; " + colormap_name(map) + ", clip " +
                         clip_text(clip, options.clip_percentile, "pressure");
  if (clip_found == 0) subtitle += ", all zero";
  const std::string legend =
      "dashed: inner edge of the absorbing layer" + std::string(have_source ? ";  +: source" : "");

  const int margin_left = 80, gap = 90, margin_top = 100, margin_bottom = 45;
  const int plots_w = margin_left + panel_w + gap + panel_w + kColourBarSpace;
  const int width =
      std::max({plots_w, Canvas::text_width(title, 2) + 20, Canvas::text_width(subtitle) + 20});
  const int height = margin_top + std::max(xz_h, xy_h) + margin_bottom;
  Canvas canvas(width, height, kWhite);
  canvas.text(10, 10, title, kInk, 2);
  canvas.text(10, 36, subtitle, kInk);
  canvas.text(10, 36 + Canvas::kLineHeight + 4, legend, kInk);

  Panel left; // x-z: depth downwards
  left.x = margin_left;
  left.y = margin_top;
  left.w = panel_w;
  left.h = xz_h;
  left.left = x_lo;
  left.right = x_hi;
  left.top = z_lo;
  left.bottom = z_hi;
  Panel right = left; // x-y: map view, y upwards
  right.x = margin_left + panel_w + gap;
  right.h = xy_h;
  right.top = y_hi;
  right.bottom = y_lo;

  paint(
      canvas, left, [&](double u, double v) { return xz.at(u, v); }, clip, map);
  paint(
      canvas, right, [&](double u, double v) { return xy.at(u, v); }, clip, map);

  // Inner edge of the absorbing layer: the first and last interior grid points on each axis.
  std::array<double, 3> inner_lo{}, inner_hi{};
  for (int a = 0; a < 3; ++a) {
    inner_lo[a] = grid_origin[a] + layer[2 * a] * grid_spacing[a];
    inner_hi[a] = grid_origin[a] + (grid_shape[a] - 1 - layer[2 * a + 1]) * grid_spacing[a];
  }
  const Rgb outline{40, 40, 40};
  for (const auto& [panel, vertical] : {std::pair<const Panel*, int>{&left, 2}, {&right, 1}}) {
    canvas.set_clip(panel->x, panel->y, panel->w, panel->h);
    const int x0 = panel->px(inner_lo[0]), x1 = panel->px(inner_hi[0]);
    const int ya = panel->py(inner_lo[vertical]), yb = panel->py(inner_hi[vertical]);
    canvas.rect(x0, std::min(ya, yb), x1 - x0 + 1, std::abs(yb - ya) + 1, outline,
                LineStyle::Dashed);
    for (std::size_t s = 0; s + 2 < sources.size(); s += 3)
      mark(canvas, panel->px(sources[s]), panel->py(sources[s + vertical]));
    canvas.reset_clip();
  }

  text_centred(canvas, left.x + left.w / 2, left.y - 16,
               "x-z slice at y = " + format_general(y_slice) + " m", kInk);
  text_centred(canvas, right.x + right.w / 2, right.y - 16,
               "x-y slice at z = " + format_general(z_slice) + " m", kInk);
  const std::vector<Tick> x_ticks = value_ticks(x_lo, x_hi, panel_w, 55);
  bottom_axis(canvas, left, x_ticks, "x (m)");
  bottom_axis(canvas, right, x_ticks, "x (m)");
  left_axis(canvas, left, value_ticks(z_lo, z_hi, xz_h, 45), "z (m), depth");
  left_axis(canvas, right, value_ticks(y_lo, y_hi, xy_h, 45), "y (m)");
  colour_bar(canvas, right.x + right.w + 20, right.y + 20, std::min(std::max(xz_h, xy_h) - 40, 300),
             clip, map, "pressure");

  PlotResult result;
  result.path = default_output(options, "_snap" + std::to_string(index));
  write_png(result.path, canvas);
  result.width = canvas.width();
  result.height = canvas.height();
  result.summary = "snapshot " + std::to_string(index) + " of " + file_name + ": " + subtitle;
  return result;
}

} // namespace

Colormap parse_colormap(const std::string& text, const std::string& option) {
  if (text == "grey" || text == "gray") return Colormap::Grey;
  if (text == "seismic") return Colormap::Seismic;
  if (text == "auto" || text.empty()) return Colormap::Auto;
  throw InputError(option + ": " + text + ": unknown colour map; allowed: grey, seismic, auto");
}

PlotResult plot_file(const PlotOptions& options) {
  if (!(options.clip_percentile > 0 && options.clip_percentile <= 100)) {
    throw InputError("--clip: " + format_general(options.clip_percentile) +
                     ": allowed: a percentile in (0, 100]");
  }
  if (options.shot && options.snapshot) {
    throw InputError("--shot and --snapshot: both given; allowed: one of them");
  }
  const QuietHdf5Errors quiet;
  const OutputReader file(options.input);
  if (options.snapshot) return plot_snapshot(file, options.snapshot, options);
  if (!options.shot && file.exists("/snapshots/wavefield")) {
    return plot_snapshot(file, std::nullopt, options);
  }
  return plot_shot(file, options.shot.value_or(0), options);
}

int plot_command(const PlotOptions& options) {
  const PlotResult result = plot_file(options);
  std::cout << "wrote " << result.path << " (" << result.width << "x" << result.height
            << "): " << result.summary << "\n";
  return kExitOk;
}

} // namespace minimod
