/// `minimod-gpu plot` (app/plot.hpp). Reads the output file with the HDF5 C API (not the writer's
/// code, so a quicklook also checks the layout of docs/output.md) and draws on an io/png Canvas.
#include "app/plot.hpp"

#include "core/errors.hpp"
#include "io/h5_output.hpp"
#include "io/png.hpp"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
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

  /// True when `object` exists and carries the attribute `name`.
  bool has_attribute(const std::string& object, const std::string& name) const {
    return exists(object) &&
           H5Aexists_by_name(m_file.get(), object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
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

/// Up to five significant digits without an exponent where that fits (velocities: "1850").
std::string format_plain(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.5g", value);
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
  // ends keep strong amplitudes visible against the clip. Viridis: its colours at 0, 1/4, 1/2,
  // 3/4 and 1, which a linear blend between them follows closely.
  static const std::array<Rgb, 5> kSeismic = {Rgb{25, 45, 150}, Rgb{90, 150, 235}, kWhite,
                                              Rgb{235, 110, 80}, Rgb{150, 20, 25}};
  static const std::array<Rgb, 5> kViridis = {Rgb{68, 1, 84}, Rgb{59, 82, 139}, Rgb{33, 145, 140},
                                              Rgb{94, 201, 98}, Rgb{253, 231, 37}};
  const std::array<Rgb, 5>& stops = map == Colormap::Viridis ? kViridis : kSeismic;
  const double position = (v + 1.0) * 2.0; // 0..4
  const int lower = std::min(static_cast<int>(position), 3);
  return mix(stops[lower], stops[lower + 1], position - lower);
}

/// Values to colours: [lo, hi] spans the map, values beyond take its ends. Gathers and snapshots
/// use [-clip, clip], the model its range of velocities.
struct Scale {
  double lo = -1, hi = 1;
  Colormap map = Colormap::Grey;
  bool signed_labels = true; ///< the colour bar labels +hi, 0, lo (else hi, middle, lo)

  Rgb operator()(double value) const { return colour_of(2 * (value - lo) / (hi - lo) - 1, map); }
};

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

/// Paints the panel with `sample(u, v)` coloured by `scale`, and frames it.
void paint(Canvas& canvas, const Panel& panel, const std::function<double(double, double)>& sample,
           const Scale& scale) {
  for (int r = 0; r < panel.h; ++r) {
    const double v = panel.v(r);
    for (int c = 0; c < panel.w; ++c)
      canvas.set_pixel(panel.x + c, panel.y + r, scale(sample(panel.u(c), v)));
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

/// A vertical colour bar for the scale's [lo, hi], hi on top, labelled on its right.
void colour_bar(Canvas& canvas, int x, int y, int h, const Scale& scale, const std::string& title) {
  constexpr int kWidth = 16;
  for (int r = 0; r < h; ++r)
    canvas.fill_rect(x, y + r, kWidth, 1, scale(scale.hi - (scale.hi - scale.lo) * (r + 0.5) / h));
  canvas.rect(x - 1, y - 1, kWidth + 2, h + 2, kInk);
  const double middle = 0.5 * (scale.lo + scale.hi);
  const std::array<std::pair<double, int>, 3> labels = {
      std::pair<double, int>{scale.hi, y}, {middle, y + h / 2}, {scale.lo, y + h - 1}};
  for (const auto& [value, at] : labels) {
    canvas.line(x + kWidth, at, x + kWidth + kTick - 1, at, kInk);
    std::string text = scale.signed_labels ? format_general(value) : format_plain(value);
    if (scale.signed_labels) text = value == middle ? "0" : (value > 0 ? "+" : "") + text;
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
  switch (map) {
  case Colormap::Grey:
    return "grey";
  case Colormap::Seismic:
    return "seismic";
  case Colormap::Viridis:
    return "viridis";
  case Colormap::Auto:
    break;
  }
  return "auto";
}

// ---- Shot gather ------------------------------------------------------------------------------

/// Signed horizontal offset of a receiver from the source, as the SEG-Y headers carry it
/// (io/segy.hpp): negative when the receiver lies at smaller x, or at equal x and smaller y.
double signed_offset(const double* receiver, const double* source) {
  const double dx = receiver[0] - source[0], dy = receiver[1] - source[1];
  constexpr double kTiny = 1e-6;
  const bool behind = dx < -kTiny || (std::fabs(dx) <= kTiny && dy < -kTiny);
  return std::hypot(dx, dy) * (behind ? -1 : 1);
}

std::string gain_text(const Gain& gain) {
  switch (gain.kind) {
  case GainKind::Agc:
    return "AGC " + format_general(gain.window) + " s";
  case GainKind::TSquared:
    return "gain t^2";
  case GainKind::None:
    break;
  }
  return "no gain";
}

/// AGC divides by the RMS of its window, but never by less than this fraction of the gather's
/// peak: synthetic traces are exactly zero before the first arrival, and rounding noise there
/// must stay invisible rather than be raised to full scale.
constexpr double kAgcFloor = 1e-4;

/// The traces [receivers][samples] with `gain` applied; `what` names the gather in errors.
std::vector<float> apply_gain(std::vector<float> traces, int receivers, int samples, double dt,
                              const Gain& gain, const std::string& what) {
  const auto n = static_cast<std::size_t>(samples);
  if (gain.kind == GainKind::TSquared) {
    for (std::size_t r = 0; r < static_cast<std::size_t>(receivers); ++r)
      for (std::size_t k = 0; k < n; ++k) {
        const double t = static_cast<double>(k) * dt;
        traces[r * n + k] = static_cast<float>(traces[r * n + k] * t * t);
      }
  }
  if (gain.kind != GainKind::Agc) return traces;
  if (!(gain.window >= 2 * dt)) {
    throw InputError("--gain: agc:" + format_general(gain.window) + ": the window is shorter " +
                     "than two samples of " + what + " (dt_out = " + format_general(dt) +
                     " s); allowed: a window of at least " + format_general(2 * dt) + " s");
  }
  double peak = 0;
  for (float v : traces)
    if (std::isfinite(v)) peak = std::max(peak, static_cast<double>(std::fabs(v)));
  const double floor = std::max(peak * kAgcFloor, std::numeric_limits<double>::min());
  const long half = std::lround(gain.window / dt / 2);
  std::vector<double> energy(n + 1); // energy[k]: sum of squares of samples 0..k-1
  for (std::size_t r = 0; r < static_cast<std::size_t>(receivers); ++r) {
    float* trace = traces.data() + r * n;
    for (std::size_t k = 0; k < n; ++k) {
      const double v = std::isfinite(trace[k]) ? trace[k] : 0.0;
      energy[k + 1] = energy[k] + v * v;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const auto first = static_cast<std::size_t>(std::max(0L, static_cast<long>(k) - half));
      const std::size_t last = std::min(n - 1, k + static_cast<std::size_t>(half));
      const double rms =
          std::sqrt((energy[last + 1] - energy[first]) / static_cast<double>(last + 1 - first));
      trace[k] = static_cast<float>(trace[k] / std::max(rms, floor));
    }
  }
  return traces;
}

/// Wiggle traces: each shown trace's zero line at its centre, an excursion of `slot` pixels at
/// the clip level (clipped beyond), positive lobes filled.
void draw_wiggles(Canvas& canvas, const Panel& panel, const std::vector<int>& shown, double slot,
                  const std::function<double(int, double)>& sample, double clip) {
  canvas.set_clip(panel.x, panel.y, panel.w, panel.h);
  for (const int trace : shown) {
    const int centre = panel.px(trace + 0.5);
    int previous = centre;
    for (int r = 0; r < panel.h; ++r) {
      const double value = sample(trace, panel.v(r));
      const double scaled = std::isfinite(value) ? std::clamp(value / clip, -1.0, 1.0) : 0.0;
      const int x = centre + static_cast<int>(std::lround(scaled * slot));
      if (x > centre) canvas.fill_rect(centre, panel.y + r, x - centre + 1, 1, kInk);
      canvas.line(previous, panel.y + std::max(r - 1, 0), x, panel.y + r, kInk);
      previous = x;
    }
  }
  canvas.reset_clip();
  canvas.rect(panel.x - 1, panel.y - 1, panel.w + 2, panel.h + 2, kInk);
}

/// "2nd", "3rd", "11th".
std::string ordinal(int n) {
  const int tens = n % 100, units = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : units == 1               ? "st"
                       : units == 2               ? "nd"
                       : units == 3               ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

/// Ticks on the traces (every `every`-th) whose signed offset is nearest a multiple of a round
/// step, within half the usual offset spacing of it, at least `min_pixels` apart, each labelled
/// with that trace's offset.
std::vector<Tick> offset_ticks(const std::vector<double>& offsets, int every, const Panel& panel,
                               int min_pixels) {
  std::vector<int> traces;
  for (int r = 0; r < static_cast<int>(offsets.size()); r += every)
    traces.push_back(r);
  std::vector<double> gaps;
  for (std::size_t i = 1; i < traces.size(); ++i) {
    const double gap = std::fabs(offsets[traces[i]] - offsets[traces[i - 1]]);
    if (gap > 1e-9) gaps.push_back(gap);
  }
  double spacing = 1.0;
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2),
                     gaps.end());
    spacing = gaps[gaps.size() / 2];
  }
  const auto [lo, hi] = std::minmax_element(offsets.begin(), offsets.end());
  const double round_step =
      std::max(nice_step((*hi - *lo) * min_pixels / std::max(panel.w, 1)), nice_step(spacing));
  const int decimals = std::min(decimals_of(round_step), 2);
  std::vector<Tick> ticks;
  int last_x = std::numeric_limits<int>::min() / 2;
  std::vector<std::pair<int, int>> chosen; // (pixel, trace)
  for (const double target : ticks_in(*lo, *hi, round_step)) {
    int best = traces.front();
    for (const int r : traces)
      if (std::fabs(offsets[r] - target) < std::fabs(offsets[best] - target)) best = r;
    if (std::fabs(offsets[best] - target) <= 0.5 * spacing + 1e-9)
      chosen.emplace_back(panel.px(best + 0.5), best);
  }
  std::sort(chosen.begin(), chosen.end());
  for (const auto& [x, r] : chosen) {
    if (x - last_x < min_pixels) continue;
    ticks.push_back({r + 0.5, format_fixed(offsets[r], decimals)});
    last_x = x;
  }
  return ticks;
}

/// Rejects --gain and --wiggle for what is not a shot gather.
void reject_gather_options(const PlotOptions& options, const std::string& what) {
  if (options.gain.kind != GainKind::None) {
    throw InputError("--gain: " + gain_text(options.gain) + " applies to shot gathers, not to " +
                     what + "; allowed: --gain with a shot gather (--shot K, or no flag)");
  }
  if (options.wiggle) {
    throw InputError("--wiggle: applies to shot gathers, not to " + what +
                     "; allowed: --wiggle with a shot gather (--shot K, or no flag)");
  }
}

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
  const double dt_out = file.numbers_attribute<double>(group, "dt_out", 1)[0];
  if (!(dt_out > 0) || !std::isfinite(dt_out)) {
    throw InputError("plot: '" + file.path() + "': " + group + " attribute 'dt_out' is " +
                     format_general(dt_out) + "; allowed: a time step > 0 s");
  }
  const std::vector<float> traces =
      apply_gain(file.read_all<float>(group + "/traces"), receivers, samples, dt_out, options.gain,
                 "shot " + std::to_string(shot));
  const std::vector<double> receiver_xyz = file.read_all<double>(group + "/receiver_positions");
  const std::vector<double> source_xyz = file.read_all<double>(group + "/source_positions");
  const bool have_offsets =
      receiver_xyz.size() == static_cast<std::size_t>(receivers) * 3 && source_xyz.size() >= 3;
  std::vector<double> offsets;
  if (have_offsets) {
    for (int r = 0; r < receivers; ++r)
      offsets.push_back(signed_offset(receiver_xyz.data() + 3 * r, source_xyz.data()));
  }

  const Colormap map = resolve(options.colormap, Colormap::Grey);
  const double clip_found = abs_percentile(traces, options.clip_percentile);
  const double clip = clip_found > 0 ? clip_found : 1.0;

  // Image size. Variable density: whole pixels per trace up to a comfortable width, then one
  // column per trace (nearest trace) up to 1200. Wiggles: at least 4 pixels per shown trace, so
  // past 300 traces only every 2nd, 3rd, ... is drawn. Time gets about two pixels per sample
  // within 400..720.
  int image_w = 0, wiggle_step = 1;
  if (options.wiggle) {
    image_w = std::clamp(receivers * 8, 480, 1200);
    wiggle_step = (receivers + image_w / 4 - 1) / (image_w / 4);
  } else {
    const int per_trace = std::clamp(480 / receivers, 1, 24);
    image_w = receivers <= 480 ? receivers * per_trace : std::min(receivers, 1200);
  }
  const int image_h = std::clamp(2 * samples, 400, 720);
  const double duration = samples > 1 ? (samples - 1) * dt_out : dt_out;

  const std::string file_name = fs::path(file.path()).filename().string();
  const std::string title = file_name + "  shot " + std::to_string(shot);
  std::string subtitle = std::to_string(receivers) + " receivers x " + std::to_string(samples) +
                         " samples, dt_out = " + format_general(dt_out) + " s";
  if (have_offsets) {
    const auto [lo, hi] = std::minmax_element(offsets.begin(), offsets.end());
    subtitle += ", offsets " + format_fixed(*lo, 0) + " to " + format_fixed(*hi, 0) + " m";
  }
  std::string display = gain_text(options.gain) + ", ";
  if (options.wiggle) {
    display += "wiggles";
    if (wiggle_step > 1) display += " of every " + ordinal(wiggle_step) + " trace";
  } else {
    display += colormap_name(map);
  }
  display += ", clip " + clip_text(clip, options.clip_percentile, "amplitude");
  if (clip_found == 0) display += ", all zero";

  const int margin_left = 80, margin_top = 110, margin_bottom = 50;
  const int width =
      std::max({margin_left + image_w + kColourBarSpace, Canvas::text_width(title, 2) + 20,
                Canvas::text_width(subtitle) + 20, Canvas::text_width(display) + 20});
  Canvas canvas(width, margin_top + image_h + margin_bottom, kWhite);
  canvas.text(10, 10, title, kInk, 2);
  canvas.text(10, 32, subtitle, kInk);
  canvas.text(10, 32 + Canvas::kLineHeight + 3, display, kInk);

  Panel panel;
  panel.x = margin_left;
  panel.y = margin_top;
  panel.w = image_w;
  panel.h = image_h;
  panel.left = 0;
  panel.right = receivers; // trace r spans [r, r + 1)
  panel.top = 0;
  panel.bottom = duration;
  auto sample = [&](int trace, double t) {
    const double position = std::clamp(t / dt_out, 0.0, samples - 1.0);
    const int k = std::min(static_cast<int>(position), samples - 1);
    const int next = std::min(k + 1, samples - 1);
    const float* row = traces.data() + static_cast<std::size_t>(trace) * samples;
    return row[k] + (row[next] - row[k]) * (position - k);
  };
  if (options.wiggle) {
    std::vector<int> shown;
    for (int r = 0; r < receivers; r += wiggle_step)
      shown.push_back(r);
    const double slot = static_cast<double>(image_w) * wiggle_step / receivers;
    draw_wiggles(canvas, panel, shown, slot, sample, clip);
  } else {
    paint(
        canvas, panel,
        [&](double u, double t) {
          return sample(std::clamp(static_cast<int>(u), 0, receivers - 1), t);
        },
        Scale{-clip, clip, map, true});
    colour_bar(canvas, panel.x + panel.w + 20, panel.y + 20, std::min(image_h - 40, 300),
               Scale{-clip, clip, map, true}, "amplitude");
  }

  // Signed offsets from the (first) source below, at round offsets; receiver numbers above. Both
  // only on traces that the wiggle display draws.
  int step = static_cast<int>(
      std::max(1.0, nice_step(static_cast<double>(receivers) * 45 / std::max(image_w, 1))));
  step = (step + wiggle_step - 1) / wiggle_step * wiggle_step;
  std::vector<Tick> numbers;
  for (int r = 0; r < receivers; r += step)
    numbers.push_back({r + 0.5, std::to_string(r)});
  if (have_offsets) {
    bottom_axis(canvas, panel, offset_ticks(offsets, wiggle_step, panel, 45),
                "offset (m) from the source, negative at smaller x (or equal x, smaller y)");
    top_axis(canvas, panel, numbers, "receiver");
  } else {
    bottom_axis(canvas, panel, numbers, "receiver");
  }
  left_axis(canvas, panel, value_ticks(0, duration, image_h, 45), "time (s)");

  PlotResult result;
  result.path = default_output(options, "_shot" + std::to_string(shot));
  write_png(result.path, canvas);
  result.width = canvas.width();
  result.height = canvas.height();
  result.summary =
      "shot " + std::to_string(shot) + " of " + file_name + ": " + subtitle + "; " + display;
  return result;
}

// ---- Slices of a volume: snapshots and the model ----------------------------------------------

/// A 2-D slice of a volume: values [rows][columns] on a regular grid of points, sampled
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

/// A volume [nz, ny, nx] in a dataset (of one more leading dimension when `index` is set) and
/// where its points lie.
struct Volume {
  std::string dataset;
  std::optional<hsize_t> index; ///< leading index into a 4-D dataset (snapshot number)
  int nx = 0, ny = 0, nz = 0;
  std::array<double, 3> origin{}, spacing{}; ///< metres, x y z
};

/// One panel: the plane of a volume normal to axis `normal` (0, 1, 2: x, y, z), at `at` metres
/// along it; its columns run along axis `across`, its rows along axis `down`.
struct PlaneSlice {
  Slice slice;
  int normal = 2, across = 0, down = 1;
  double at = 0;
};

/// The panels drawn side by side: the x-z slice through the (first) source's y and the x-y slice
/// at its depth (the middle of an axis without a source on it), or the one --slice asks for.
struct Slices {
  std::vector<PlaneSlice> planes;
  std::vector<double> sources; ///< x, y, z of every source of the shot (the file's first)
};

constexpr const char* kAxisNames = "xyz";

/// The points of `volume` along each axis, x y z.
std::array<int, 3> volume_points(const Volume& volume) {
  return {volume.nx, volume.ny, volume.nz};
}

/// The plane of `volume` normal to axis `normal` through its point `index` along that axis.
PlaneSlice read_plane(const OutputReader& file, const Volume& volume, int normal, int index) {
  const std::array<int, 3> n = volume_points(volume);
  PlaneSlice p;
  p.normal = normal;
  p.across = normal == 0 ? 1 : 0;
  p.down = normal == 2 ? 1 : 2;
  // The dataset is [z, y, x]: axis a is its dimension 2 - a.
  std::vector<hsize_t> start(3, 0), count(3);
  for (int a = 0; a < 3; ++a)
    count[static_cast<std::size_t>(2 - a)] = a == normal ? 1 : static_cast<hsize_t>(n[a]);
  start[static_cast<std::size_t>(2 - normal)] = static_cast<hsize_t>(index);
  if (volume.index) {
    start.insert(start.begin(), *volume.index);
    count.insert(count.begin(), 1);
  }
  // `down` is the slower of the two axes left: the values are [down][across].
  p.slice.values = file.read<float>(volume.dataset, start, count);
  p.slice.columns = n[p.across];
  p.slice.rows = n[p.down];
  p.slice.column_origin = volume.origin[p.across];
  p.slice.column_spacing = volume.spacing[p.across];
  p.slice.row_origin = volume.origin[p.down];
  p.slice.row_spacing = volume.spacing[p.down];
  p.at = volume.origin[normal] + index * volume.spacing[normal];
  return p;
}

/// The slices to draw of `volume` (`what` names it in errors: "/snapshots"), through the sources
/// of `shot` (a snapshot's shot), or of the file's first shot.
Slices read_slices(const OutputReader& file, const Volume& volume,
                   const std::optional<SliceChoice>& choice, const std::string& what,
                   std::optional<int> shot = std::nullopt) {
  Slices s;
  const std::vector<int> shots = file.shot_numbers();
  if (!shot && !shots.empty()) shot = shots.front();
  if (shot && file.exists(shot_group(*shot) + "/source_positions")) {
    s.sources = file.read_all<double>(shot_group(*shot) + "/source_positions");
  }
  const bool have_source = s.sources.size() >= 3;
  const std::array<int, 3> n = volume_points(volume);
  auto through_source = [&](int axis) {
    return nearest_or_middle(have_source ? s.sources[static_cast<std::size_t>(axis)] : 0, n[axis],
                             volume.origin[axis], volume.spacing[axis], have_source);
  };
  if (!choice) {
    s.planes.push_back(read_plane(file, volume, 1, through_source(1)));
    s.planes.push_back(read_plane(file, volume, 2, through_source(2)));
    return s;
  }
  const int axis = choice->axis;
  const int index = choice->index.value_or(through_source(axis));
  if (index < 0 || index >= n[axis]) {
    const auto [lo, hi] = extent(n[axis], volume.origin[axis], volume.spacing[axis]);
    throw InputError("--slice: " + std::string(1, kAxisNames[axis]) + "=" + std::to_string(index) +
                     ": " + what + " in '" + file.path() + "' has " + std::to_string(n[axis]) +
                     " point" + (n[axis] == 1 ? "" : "s") + " along " + kAxisNames[axis] + " (" +
                     format_general(lo) + " to " + format_general(hi) +
                     " m); allowed: " + kAxisNames[axis] + "=0.." + std::to_string(n[axis] - 1));
  }
  s.planes.push_back(read_plane(file, volume, axis, index));
  return s;
}

/// Every value of the slices, panel after panel.
std::vector<float> slice_values(const Slices& slices) {
  std::vector<float> all;
  for (const PlaneSlice& p : slices.planes)
    all.insert(all.end(), p.slice.values.begin(), p.slice.values.end());
  return all;
}

/// Draws the slices side by side with the layer outline, source marks, axes and a colour bar.
/// Depth (z) runs downwards; y runs upwards in a map view (x-y).
Canvas draw_slices(const OutputReader& file, const Volume& volume, const Slices& slices,
                   const Scale& scale, const std::string& title, const std::string& subtitle,
                   const std::string& quantity) {
  const std::vector<int> grid_shape = file.numbers_attribute<int>("/", "grid_shape", 3);
  const std::vector<double> grid_spacing = file.numbers_attribute<double>("/", "grid_spacing", 3);
  const std::vector<double> grid_origin = file.numbers_attribute<double>("/", "grid_origin", 3);
  const std::vector<int> layer = file.numbers_attribute<int>("/", "layer_widths", 6);

  const std::array<int, 3> n = volume_points(volume);
  std::array<std::pair<double, double>, 3> ext;
  for (int a = 0; a < 3; ++a)
    ext[a] = extent(n[a], volume.origin[a], volume.spacing[a]);
  const auto length = [&](int a) { return ext[a].second - ext[a].first; };
  // One scale (pixels per metre) for every panel and axis, so shapes are true.
  const double width_px = slices.planes.size() == 1 ? 840.0 : 420.0;
  double ppm = std::numeric_limits<double>::infinity();
  for (const PlaneSlice& p : slices.planes)
    ppm = std::min({ppm, width_px / length(p.across), 480.0 / length(p.down)});

  const bool have_source = slices.sources.size() >= 3;
  const std::string legend =
      "dashed: inner edge of the absorbing layer" + std::string(have_source ? ";  +: source" : "");

  const int margin_left = 80, gap = 90, margin_top = 100, margin_bottom = 45;
  std::vector<Panel> panels;
  int x = margin_left, tallest = 1;
  for (const PlaneSlice& p : slices.planes) {
    Panel panel;
    panel.x = x;
    panel.y = margin_top;
    panel.w = std::max(1, static_cast<int>(std::lround(length(p.across) * ppm)));
    panel.h = std::max(1, static_cast<int>(std::lround(length(p.down) * ppm)));
    panel.left = ext[p.across].first;
    panel.right = ext[p.across].second;
    panel.top = p.down == 2 ? ext[2].first : ext[p.down].second;
    panel.bottom = p.down == 2 ? ext[2].second : ext[p.down].first;
    panels.push_back(panel);
    tallest = std::max(tallest, panel.h);
    x += panel.w + gap;
  }
  const int plots_w = x - gap + kColourBarSpace;
  const int width =
      std::max({plots_w, Canvas::text_width(title, 2) + 20, Canvas::text_width(subtitle) + 20});
  const int height = margin_top + tallest + margin_bottom;
  Canvas canvas(width, height, kWhite);
  canvas.text(10, 10, title, kInk, 2);
  canvas.text(10, 36, subtitle, kInk);
  canvas.text(10, 36 + Canvas::kLineHeight + 4, legend, kInk);

  // Inner edge of the absorbing layer: the first and last interior grid points on each axis.
  std::array<double, 3> inner_lo{}, inner_hi{};
  for (int a = 0; a < 3; ++a) {
    inner_lo[a] = grid_origin[a] + layer[2 * a] * grid_spacing[a];
    inner_hi[a] = grid_origin[a] + (grid_shape[a] - 1 - layer[2 * a + 1]) * grid_spacing[a];
  }
  const Rgb outline{40, 40, 40};
  const auto axis_label = [](int a) {
    return a == 2 ? std::string("z (m), depth") : std::string(1, kAxisNames[a]) + " (m)";
  };
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const Panel& panel = panels[k];
    const PlaneSlice& p = slices.planes[k];
    paint(
        canvas, panel, [&](double u, double v) { return p.slice.at(u, v); }, scale);
    canvas.set_clip(panel.x, panel.y, panel.w, panel.h);
    const int x0 = panel.px(inner_lo[p.across]), x1 = panel.px(inner_hi[p.across]);
    const int ya = panel.py(inner_lo[p.down]), yb = panel.py(inner_hi[p.down]);
    canvas.rect(x0, std::min(ya, yb), x1 - x0 + 1, std::abs(yb - ya) + 1, outline,
                LineStyle::Dashed);
    for (std::size_t s = 0; s + 2 < slices.sources.size(); s += 3)
      mark(canvas, panel.px(slices.sources[s + p.across]), panel.py(slices.sources[s + p.down]));
    canvas.reset_clip();
    text_centred(canvas, panel.x + panel.w / 2, panel.y - 16,
                 std::string(1, kAxisNames[p.across]) + "-" + kAxisNames[p.down] + " slice at " +
                     kAxisNames[p.normal] + " = " + format_general(p.at) + " m",
                 kInk);
    bottom_axis(canvas, panel, value_ticks(ext[p.across].first, ext[p.across].second, panel.w, 55),
                axis_label(p.across));
    left_axis(canvas, panel, value_ticks(ext[p.down].first, ext[p.down].second, panel.h, 45),
              axis_label(p.down));
  }
  const Panel& last = panels.back();
  colour_bar(canvas, last.x + last.w + 20, last.y + 20, std::min(tallest - 40, 300), scale,
             quantity);
  return canvas;
}

/// "shot 0 (steps 20-60, 3 snapshots), shot 5 (...)": the snapshots a file holds, by shot.
std::string snapshots_text(const std::vector<int>& shot_of, const std::vector<int>& steps) {
  std::vector<int> shots = shot_of;
  std::sort(shots.begin(), shots.end());
  shots.erase(std::unique(shots.begin(), shots.end()), shots.end());
  std::string text;
  for (const int shot : shots) {
    int count = 0, first = std::numeric_limits<int>::max(), last = -1;
    for (std::size_t r = 0; r < shot_of.size(); ++r) {
      if (shot_of[r] != shot) continue;
      ++count;
      if (r < steps.size()) {
        first = std::min(first, steps[r]);
        last = std::max(last, steps[r]);
      }
    }
    text += (text.empty() ? "" : ", ") + ("shot " + std::to_string(shot)) + " (" +
            std::to_string(count) + " snapshot" + (count == 1 ? "" : "s") +
            (last >= 0 ? ", steps " + std::to_string(first) +
                             (last != first ? "-" + std::to_string(last) : "")
                       : "") +
            ")";
  }
  return text;
}

PlotResult plot_snapshot(const OutputReader& file, int asked, const PlotOptions& options) {
  reject_gather_options(options, "snapshots");
  const std::string index_text = std::to_string(asked);
  const std::vector<int> shots = file.shot_numbers();
  if (!file.exists("/snapshots/wavefield")) {
    throw InputError("--snapshot: " + index_text + ": '" + file.path() +
                     "' has no snapshots (its survey has no output.snapshots, or the run "
                     "modelled none of the shots that output.snapshots.shots names); allowed: "
                     "--shot K for a shot gather" +
                     (shots.empty() ? "" : " (shots " + shot_selection_text(shots) + ")"));
  }
  const std::vector<hsize_t> dims = file.dims("/snapshots/wavefield");
  if (dims.size() != 4) {
    throw InputError("plot: '" + file.path() + "': /snapshots/wavefield is not 4-D");
  }
  const int count = static_cast<int>(dims[0]);
  const std::vector<int> steps = file.read_all<int>("/snapshots/step");
  const std::vector<double> times = file.read_all<double>("/snapshots/time");
  // The shot of each snapshot: /snapshots/shot, or shot 0 for every one in a file without it.
  std::vector<int> shot_of(static_cast<std::size_t>(count), 0);
  if (file.exists("/snapshots/shot")) {
    shot_of = file.read_all<int>("/snapshots/shot");
    if (shot_of.size() != static_cast<std::size_t>(count)) {
      throw InputError("plot: '" + file.path() + "': /snapshots/shot has " +
                       std::to_string(shot_of.size()) + " values for " + std::to_string(count) +
                       " snapshots (docs/output.md)");
    }
  }
  const std::string there = count > 0 ? snapshots_text(shot_of, steps) : "no snapshot";
  const int shot = options.shot
                       ? *options.shot
                       : (count > 0 ? *std::min_element(shot_of.begin(), shot_of.end()) : 0);
  std::vector<hsize_t> rows; // the snapshots of `shot`, in the order they were written
  for (std::size_t r = 0; r < shot_of.size(); ++r)
    if (shot_of[r] == shot) rows.push_back(r);
  if (count > 0 && rows.empty()) {
    std::vector<int> with = shot_of;
    std::sort(with.begin(), with.end());
    with.erase(std::unique(with.begin(), with.end()), with.end());
    throw InputError("--shot: " + std::to_string(shot) + ": '" + file.path() +
                     "' has no snapshots of shot " + std::to_string(shot) + "; it has " + there +
                     "; allowed: --shot " + shot_selection_text(with) + " with --snapshot");
  }
  Volume volume;
  volume.dataset = "/snapshots/wavefield";
  volume.nz = static_cast<int>(dims[1]);
  volume.ny = static_cast<int>(dims[2]);
  volume.nx = static_cast<int>(dims[3]);
  const int n = static_cast<int>(rows.size());
  const int index = asked < 0 ? n + asked : asked;
  if (n == 0 || index < 0 || index >= n || volume.nx == 0 || volume.ny == 0 || volume.nz == 0) {
    throw InputError("--snapshot: " + index_text + ": '" + file.path() + "' has " +
                     (n > 0 ? std::to_string(n) + " snapshot" + (n == 1 ? "" : "s") + " of shot " +
                                  std::to_string(shot) + " (it has " + there + ")"
                            : std::string("no snapshot")) +
                     "; allowed: " +
                     (n > 0 ? "0.." + std::to_string(n - 1) + " (or -" + std::to_string(n) +
                                  "..-1, counted from the end)"
                            : "none"));
  }
  const hsize_t row = rows[static_cast<std::size_t>(index)];
  volume.index = row;
  const std::vector<double> origin = file.numbers_attribute<double>("/snapshots", "origin", 3);
  const std::vector<double> spacing = file.numbers_attribute<double>("/snapshots", "spacing", 3);
  std::copy(origin.begin(), origin.end(), volume.origin.begin());
  std::copy(spacing.begin(), spacing.end(), volume.spacing.begin());

  const Slices slices = read_slices(file, volume, options.slice, "/snapshots", shot);
  const double clip_found = abs_percentile(slice_values(slices), options.clip_percentile);
  const double clip = clip_found > 0 ? clip_found : 1.0;
  const Colormap map = resolve(options.colormap, Colormap::Seismic);

  const std::string file_name = fs::path(file.path()).filename().string();
  const double time = row < times.size() ? times[row] : 0.0;
  const int step = row < steps.size() ? steps[row] : 0;
  const bool several =
      std::any_of(shot_of.begin(), shot_of.end(), [&](int s) { return s != shot; });
  const std::string title = file_name + "  shot " + std::to_string(shot) + ", snapshot " +
                            std::to_string(index) + " of " + std::to_string(n) + ", step " +
                            std::to_string(step) + ", t = " + format_fixed(time, 4) + " s";
  std::string subtitle = std::to_string(volume.nx) + " x " + std::to_string(volume.ny) + " x " +
                         std::to_string(volume.nz) + " points, spacing " +
                         format_general(spacing[0]) + " x " + format_general(spacing[1]) + " x " +
                         format_general(spacing[2]) + " m; " + colormap_name(map) + ", clip " +
                         clip_text(clip, options.clip_percentile, "pressure");
  if (clip_found == 0) subtitle += ", all zero";

  const Canvas canvas =
      draw_slices(file, volume, slices, Scale{-clip, clip, map, true}, title, subtitle, "pressure");
  PlotResult result;
  result.path = default_output(options, (several ? "_shot" + std::to_string(shot) : "") + "_snap" +
                                            std::to_string(index));
  write_png(result.path, canvas);
  result.width = canvas.width();
  result.height = canvas.height();
  result.summary = "snapshot " + std::to_string(index) + " of " + std::to_string(n) + " of shot " +
                   std::to_string(shot) + " (step " + std::to_string(step) + ") of " + file_name +
                   ": " + subtitle + "; the file has " + there;
  return result;
}

/// The velocity model stored with the run: /model/vp [nz, ny, nx] float32, with `origin` and
/// `spacing` attributes (x, y, z in metres) when it is not on the grid's points.
constexpr const char* kModelDataset = "/model/vp";

PlotResult plot_model(const OutputReader& file, const PlotOptions& options) {
  reject_gather_options(options, "the model");
  if (!file.exists(kModelDataset)) {
    throw InputError("--model: '" + file.path() + "' has no " +
                     (file.exists("/model") ? std::string(kModelDataset) : std::string("/model")) +
                     " (written by a version that did not store it); allowed: --shot K or "
                     "--snapshot N for this file, or a file written with the model");
  }
  const std::vector<hsize_t> dims = file.dims(kModelDataset);
  if (dims.size() != 3 || dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {
    throw InputError("plot: '" + file.path() + "': " + kModelDataset +
                     " is not a non-empty 3-D [nz, ny, nx] dataset (docs/output.md)");
  }
  Volume volume;
  volume.dataset = kModelDataset;
  volume.nz = static_cast<int>(dims[0]);
  volume.ny = static_cast<int>(dims[1]);
  volume.nx = static_cast<int>(dims[2]);
  // The model's own geometry, or the grid's when the dataset does not carry one.
  const bool own_geometry =
      file.has_attribute(kModelDataset, "origin") && file.has_attribute(kModelDataset, "spacing");
  const std::string where = own_geometry ? kModelDataset : "/";
  const std::vector<double> origin =
      file.numbers_attribute<double>(where, own_geometry ? "origin" : "grid_origin", 3);
  const std::vector<double> spacing =
      file.numbers_attribute<double>(where, own_geometry ? "spacing" : "grid_spacing", 3);
  for (int a = 0; a < 3; ++a) {
    if (!(spacing[a] > 0) || !std::isfinite(spacing[a]) || !std::isfinite(origin[a])) {
      throw InputError("plot: '" + file.path() + "': " + where + " spacing " +
                       format_general(spacing[a]) + " m along " + "xyz"[a] +
                       "; allowed: finite origin and spacing > 0 (docs/output.md)");
    }
  }
  std::copy(origin.begin(), origin.end(), volume.origin.begin());
  std::copy(spacing.begin(), spacing.end(), volume.spacing.begin());

  const Slices slices = read_slices(file, volume, options.slice, kModelDataset);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (float v : slice_values(slices))
    if (std::isfinite(v)) {
      lo = std::min(lo, static_cast<double>(v));
      hi = std::max(hi, static_cast<double>(v));
    }
  if (!(lo <= hi)) lo = 0, hi = 1;
  const bool constant = hi - lo <= 1e-6 * std::max(std::fabs(hi), 1.0);
  const double range_lo = constant ? lo - 1 : lo, range_hi = constant ? hi + 1 : hi;
  const Colormap map = resolve(options.colormap, Colormap::Viridis);

  const std::string file_name = fs::path(file.path()).filename().string();
  const std::string title = file_name + "  model vp";
  std::string subtitle = std::to_string(volume.nx) + " x " + std::to_string(volume.ny) + " x " +
                         std::to_string(volume.nz) + " points, spacing " +
                         format_general(spacing[0]) + " x " + format_general(spacing[1]) + " x " +
                         format_general(spacing[2]) + " m" + (own_geometry ? "" : " (the grid's)") +
                         "; " + colormap_name(map) + ", vp " + format_plain(lo) + " to " +
                         format_plain(hi) + " m/s in these slices";

  const Canvas canvas = draw_slices(file, volume, slices, Scale{range_lo, range_hi, map, false},
                                    title, subtitle, "vp (m/s)");
  PlotResult result;
  result.path = default_output(options, "_model");
  write_png(result.path, canvas);
  result.width = canvas.width();
  result.height = canvas.height();
  result.summary = "model of " + file_name + ": " + subtitle;
  return result;
}

} // namespace

SliceChoice parse_slice(const std::string& text, const std::string& option) {
  const std::string allowed = "; allowed: x, y or z (the plane normal to that axis, through the "
                              "source), or AXIS=INDEX with INDEX a point of the volume along the "
                              "axis, from 0 (e.g. z=10)";
  SliceChoice choice;
  const std::size_t axis = text.empty() ? std::string::npos : std::string("xyz").find(text[0]);
  if (axis == std::string::npos || (text.size() > 1 && text[1] != '=')) {
    throw InputError(option + ": '" + text + "': not an axis" + allowed);
  }
  choice.axis = static_cast<int>(axis);
  if (text.size() == 1) return choice;
  const std::string digits = text.substr(2);
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    throw InputError(option + ": '" + text + "': '" + digits + "' is not a point index" + allowed);
  }
  choice.index = std::stoi(digits);
  return choice;
}

Colormap parse_colormap(const std::string& text, const std::string& option) {
  if (text == "grey" || text == "gray") return Colormap::Grey;
  if (text == "seismic") return Colormap::Seismic;
  if (text == "viridis") return Colormap::Viridis;
  if (text == "auto" || text.empty()) return Colormap::Auto;
  throw InputError(option + ": " + text +
                   ": unknown colour map; allowed: grey, seismic, viridis, auto");
}

Gain parse_gain(const std::string& text, const std::string& option) {
  Gain gain;
  if (text == "none" || text.empty()) return gain;
  if (text == "t2") {
    gain.kind = GainKind::TSquared;
    return gain;
  }
  const std::string allowed = "; allowed: none, t2, agc or agc:WINDOW_S (window in seconds > 0, "
                              "default " +
                              format_general(gain.window) + ")";
  if (text.rfind("agc", 0) != 0)
    throw InputError(option + ": " + text + ": unknown gain" + allowed);
  gain.kind = GainKind::Agc;
  if (text == "agc") return gain;
  if (text[3] != ':') throw InputError(option + ": " + text + ": unknown gain" + allowed);
  const std::string number = text.substr(4);
  char* end = nullptr;
  const double window = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(window) ||
      !(window > 0)) {
    throw InputError(option + ": " + text + ": the AGC window '" + number +
                     "' is not a number of seconds > 0" + allowed);
  }
  gain.window = window;
  return gain;
}

PlotResult plot_file(const PlotOptions& options) {
  if (!(options.clip_percentile > 0 && options.clip_percentile <= 100)) {
    throw InputError("--clip: " + format_general(options.clip_percentile) +
                     ": allowed: a percentile in (0, 100]");
  }
  if (options.slice && !options.snapshot && !options.model) {
    throw InputError("--slice: applies to snapshots and the model; allowed: --slice with "
                     "--snapshot N or --model");
  }
  if (options.model && (options.shot || options.snapshot)) {
    throw InputError(std::string("--model and ") + (options.shot ? "--shot" : "--snapshot") +
                     ": both given; allowed: one of them");
  }
  const QuietHdf5Errors quiet;
  const OutputReader file(options.input);
  if (options.model) return plot_model(file, options);
  if (options.snapshot) return plot_snapshot(file, *options.snapshot, options);
  if (options.shot) return plot_shot(file, *options.shot, options);
  const std::vector<int> shots = file.shot_numbers();
  if (!shots.empty()) return plot_shot(file, shots.front(), options);
  if (file.exists("/snapshots/wavefield")) return plot_snapshot(file, -1, options);
  throw InputError("plot: '" + file.path() +
                   "' has no shots and no snapshots; allowed: an output file with /shots/NNNN "
                   "groups or /snapshots, or --model");
}

int plot_command(const PlotOptions& options) {
  const PlotResult result = plot_file(options);
  std::cout << "wrote " << result.path << " (" << result.width << "x" << result.height
            << "): " << result.summary << "\n";
  return kExitOk;
}

} // namespace minimod
