/// `minimod-gpu plot` and its PNG writer. PNGs are decoded here with zlib alone (chunks, CRCs,
/// inflate, the five row filters), so the test shares no code with the encoder; the plots are
/// drawn from files the real program writes.

#include "app/plot.hpp"
#include "io/errors.hpp"
#include "io/png.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

// ---- A PNG reader for the checks ---------------------------------------------------------------

/// An 8-bit RGB PNG as decoded here, with what the checks look at.
struct DecodedPng {
  int width = 0, height = 0;
  std::vector<std::string> chunk_types;   ///< in file order
  std::vector<std::uint8_t> filter_types; ///< one per row
  std::vector<std::uint8_t> rgb;          ///< unfiltered pixels, rows top first

  Rgb pixel(int x, int y) const {
    const std::size_t at = (static_cast<std::size_t>(y) * width + x) * 3;
    return {rgb[at], rgb[at + 1], rgb[at + 2]};
  }
};

std::uint32_t big_endian(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) |
         (std::uint32_t{bytes[at + 2]} << 8) | std::uint32_t{bytes[at + 3]};
}

int paeth_predictor(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/// Decodes `bytes`, failing the current test (and returning what it has) on anything a PNG
/// reader would reject: bad signature, bad CRC, IHDR other than 8-bit RGB, bad filter type.
DecodedPng decode_png(const std::vector<std::uint8_t>& bytes) {
  DecodedPng png;
  const std::vector<std::uint8_t> signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_GE(bytes.size(), 8u);
  if (bytes.size() < 8 || !std::equal(signature.begin(), signature.end(), bytes.begin())) {
    ADD_FAILURE() << "no PNG signature";
    return png;
  }
  std::vector<std::uint8_t> deflated;
  std::size_t at = 8;
  while (at + 12 <= bytes.size()) {
    const std::uint32_t length = big_endian(bytes, at);
    if (at + 12 + length > bytes.size()) {
      ADD_FAILURE() << "chunk runs past the end of the file";
      return png;
    }
    const std::string type(bytes.begin() + at + 4, bytes.begin() + at + 8);
    png.chunk_types.push_back(type);
    const std::uint8_t* data = bytes.data() + at + 8;
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), bytes.data() + at + 4, length + 4);
    EXPECT_EQ(big_endian(bytes, at + 8 + length), static_cast<std::uint32_t>(crc))
        << "CRC of chunk " << type;
    if (type == "IHDR") {
      EXPECT_EQ(length, 13u);
      png.width = static_cast<int>(big_endian(bytes, at + 8));
      png.height = static_cast<int>(big_endian(bytes, at + 12));
      EXPECT_EQ(data[8], 8) << "bit depth";
      EXPECT_EQ(data[9], 2) << "colour type RGB";
      EXPECT_EQ(data[10], 0) << "compression";
      EXPECT_EQ(data[11], 0) << "filter method";
      EXPECT_EQ(data[12], 0) << "interlace";
    } else if (type == "IDAT") {
      deflated.insert(deflated.end(), data, data + length);
    }
    at += 12 + length;
  }
  EXPECT_EQ(at, bytes.size()) << "bytes after the last chunk";

  const std::size_t stride = static_cast<std::size_t>(png.width) * 3;
  std::vector<std::uint8_t> raw((stride + 1) * static_cast<std::size_t>(png.height));
  uLongf raw_size = static_cast<uLongf>(raw.size());
  const int status =
      uncompress(raw.data(), &raw_size, deflated.data(), static_cast<uLong>(deflated.size()));
  if (status != Z_OK || raw_size != raw.size()) {
    ADD_FAILURE() << "inflate: status " << status << ", " << raw_size << " of " << raw.size()
                  << " bytes";
    return png;
  }
  png.rgb.assign(stride * static_cast<std::size_t>(png.height), 0);
  for (int row = 0; row < png.height; ++row) {
    const std::uint8_t* line = raw.data() + row * (stride + 1);
    const std::uint8_t type = line[0];
    png.filter_types.push_back(type);
    if (type > 4) {
      ADD_FAILURE() << "row " << row << " has filter type " << int{type};
      return png;
    }
    std::uint8_t* out = png.rgb.data() + row * stride;
    const std::uint8_t* above = row > 0 ? out - stride : nullptr;
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= 3 ? out[i - 3] : 0;
      const int b = above != nullptr ? above[i] : 0;
      const int c = i >= 3 && above != nullptr ? above[i - 3] : 0;
      const int predictor = type == 0   ? 0
                            : type == 1 ? a
                            : type == 2 ? b
                            : type == 3 ? (a + b) / 2
                                        : paeth_predictor(a, b, c);
      out[i] = static_cast<std::uint8_t>((line[1 + i] + predictor) & 0xff);
    }
  }
  return png;
}

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
}

/// A fresh folder for one test, removed afterwards.
class TempDir {
public:
  explicit TempDir(const std::string& tag) {
    std::string pattern = (fs::temp_directory_path() / ("minimod_" + tag + "_XXXXXX")).string();
    if (mkdtemp(pattern.data()) != nullptr) m_path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!m_path.empty()) fs::remove_all(m_path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

/// A canvas with a different colour in every pixel, and runs that make every filter worthwhile.
Canvas test_pattern() {
  Canvas canvas(13, 9, Rgb{255, 255, 255});
  for (int y = 0; y < canvas.height(); ++y)
    for (int x = 0; x < canvas.width(); ++x)
      canvas.set_pixel(x, y,
                       Rgb{static_cast<std::uint8_t>(x * 19), static_cast<std::uint8_t>(y * 27),
                           static_cast<std::uint8_t>((x * y * 7 + 200) & 0xff)});
  canvas.fill_rect(2, 3, 5, 2, Rgb{10, 20, 30});
  return canvas;
}

// ---- PNG writer -------------------------------------------------------------------------------

TEST(PngWriter, UnfilteredRoundTripsPixelsAndCrcs) {
  const Canvas canvas = test_pattern();
  const DecodedPng png = decode_png(encode_png(canvas, PngFilter::None));
  EXPECT_EQ(png.chunk_types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
  EXPECT_EQ(png.width, 13);
  EXPECT_EQ(png.height, 9);
  EXPECT_EQ(png.filter_types, std::vector<std::uint8_t>(9, 0));
  EXPECT_EQ(png.rgb, canvas.rgb());
  EXPECT_EQ(png.pixel(4, 3), (Rgb{10, 20, 30}));
  EXPECT_EQ(png.pixel(12, 8), (Rgb{12 * 19, 8 * 27, (12 * 8 * 7 + 200) & 0xff}));
}

TEST(PngWriter, TheCheckerCatchesABadCrc) {
  std::vector<std::uint8_t> bytes = encode_png(test_pattern());
  bytes.back() ^= 0x01; // the last byte of the file: IEND's CRC
  EXPECT_NONFATAL_FAILURE(decode_png(bytes), "CRC of chunk IEND");
}

TEST(PngWriter, AdaptiveFiltersRoundTripPixels) {
  Canvas canvas(40, 30, Rgb{255, 255, 255});
  for (int y = 0; y < 30; ++y) // a ramp (Sub wins), stripes (Up wins) and noise
    for (int x = 0; x < 40; ++x)
      canvas.set_pixel(x, y,
                       Rgb{static_cast<std::uint8_t>(x * 6), static_cast<std::uint8_t>(y % 2 * 200),
                           static_cast<std::uint8_t>((x * 73 + y * 151) % 256)});
  canvas.text(2, 2, "Ab9", Rgb{0, 0, 0});
  const DecodedPng png = decode_png(encode_png(canvas));
  EXPECT_EQ(png.rgb, canvas.rgb());
  const std::set<std::uint8_t> used(png.filter_types.begin(), png.filter_types.end());
  EXPECT_GE(used.size(), 2u) << "the adaptive encoder always chose the same filter";
}

TEST(PngWriter, WritesAtomicallyAndReportsFailures) {
  const TempDir dir("png");
  ASSERT_FALSE(dir.path().empty());
  const Canvas canvas = test_pattern();
  const fs::path path = dir.path() / "sub" / "image.png";
  write_png(path.string(), canvas);
  EXPECT_EQ(read_bytes(path), encode_png(canvas));
  EXPECT_EQ(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator()), 1)
      << "a temporary file was left behind";

  std::ofstream(dir.path() / "a_file") << "not a folder";
  EXPECT_THROW(write_png((dir.path() / "a_file" / "x.png").string(), canvas), OutputError);
}

TEST(PngCanvas, DrawsClippedShapesAndText) {
  const Rgb white{255, 255, 255}, red{255, 0, 0}, blue{0, 0, 255};
  Canvas canvas(30, 20, white);
  canvas.fill_rect(-5, -5, 8, 7, red); // clipped to [0, 3) x [0, 2)
  EXPECT_EQ(canvas.pixel(2, 1), red);
  EXPECT_EQ(canvas.pixel(3, 1), white);
  EXPECT_EQ(canvas.pixel(2, 2), white);

  canvas.line(0, 19, 29, 19, blue, LineStyle::Dashed);
  int on = 0;
  for (int x = 0; x < 30; ++x)
    on += canvas.pixel(x, 19) == blue;
  EXPECT_EQ(on, 18) << "dashes are 6 on, 4 off";
  canvas.line(5, 5, 10, 8, blue);
  EXPECT_EQ(canvas.pixel(5, 5), blue);
  EXPECT_EQ(canvas.pixel(10, 8), blue);

  canvas.set_clip(20, 0, 10, 10);
  canvas.fill_rect(0, 0, 30, 20, red);
  EXPECT_EQ(canvas.pixel(19, 5), white);
  EXPECT_EQ(canvas.pixel(20, 5), red);
  EXPECT_EQ(canvas.pixel(20, 10), white);
  canvas.reset_clip();

  Canvas text(40, 12, white);
  text.text(1, 1, "1", red); // '1': a vertical stem in column 2, a foot in row 6
  EXPECT_EQ(text.pixel(3, 1), red);
  EXPECT_EQ(text.pixel(3, 5), red);
  EXPECT_EQ(text.pixel(1, 5), white);
  EXPECT_EQ(Canvas::text_width("1", 1), 5);
  EXPECT_EQ(Canvas::text_width("abc", 2), (3 * 6 - 1) * 2);
}

TEST(PngCanvas, FontCoversTheLabelCharacters) {
  for (const char* set : {"0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz",
                          ".-:,()/=%+ _|;"}) {
    for (const char* c = set; *c != '\0'; ++c)
      EXPECT_TRUE(font_has_glyph(*c)) << "no glyph for '" << *c << "'";
  }
  EXPECT_FALSE(font_has_glyph('\x7f'));
  // Every glyph but the space draws something, and different letters differ.
  std::set<std::vector<std::uint8_t>> seen;
  for (char c = '!'; c <= '~'; ++c) {
    if (!font_has_glyph(c)) continue;
    Canvas cell(6, 10, Rgb{255, 255, 255});
    cell.text(0, 0, std::string(1, c), Rgb{0, 0, 0});
    EXPECT_NE(cell.rgb(), Canvas(6, 10, Rgb{255, 255, 255}).rgb()) << "'" << c << "' is blank";
    EXPECT_TRUE(seen.insert(cell.rgb()).second) << "'" << c << "' looks like another glyph";
  }
}

// ---- plot on files the program wrote ----------------------------------------------------------

/// Exit status of a shell command, or -1 when it did not exit normally.
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A small non-cubic survey (so x, y and z cannot be swapped unnoticed), three snapshots.
constexpr const char* kSurvey = R"(name: plot_test
grid: {shape: [24, 20, 18], spacing: 10}
model: {type: constant, velocity: 2000}
time: {steps: 60}
boundary: {width: 4}
sources:
  - position: [110, 100, 80]
    wavelet: {type: ricker, frequency: 20}
receivers:
  lines:
    - {start: [50, 100, 60], end: [180, 100, 60], count: 14}
)";

/// Runs the program once for the suite: with.h5 (snapshots) and without.h5 (none).
class PlotCommand : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    s_dir = new TempDir("plot");
    ASSERT_FALSE(s_dir->path().empty());
    ASSERT_TRUE(fs::exists(MINIMOD_BINARY)) << "the program is not built: " << MINIMOD_BINARY;
    for (const bool snapshots : {true, false}) {
      const fs::path survey = s_dir->path() / (snapshots ? "with.yaml" : "without.yaml");
      std::ofstream(survey) << kSurvey << (snapshots ? "output: {snapshots: {every: 20}}\n" : "");
      const fs::path output = s_dir->path() / (snapshots ? "with.h5" : "without.h5");
      ASSERT_EQ(run(quoted(MINIMOD_BINARY) + " run " + quoted(survey.string()) + " -o " +
                    quoted(output.string()) + " --backend cpu --quiet > /dev/null 2>&1"),
                0);
    }
  }
  static void TearDownTestSuite() {
    delete s_dir;
    s_dir = nullptr;
  }

  static std::string file(const std::string& name) { return (s_dir->path() / name).string(); }

  /// The PNG plot_file reported, decoded, after checking it matches the report.
  static DecodedPng load(const PlotResult& result) {
    const DecodedPng png = decode_png(read_bytes(result.path));
    EXPECT_EQ(png.width, result.width);
    EXPECT_EQ(png.height, result.height);
    return png;
  }

  /// Pixels matching `predicate`.
  template <typename Predicate> static int count(const DecodedPng& png, Predicate predicate) {
    int n = 0;
    for (int y = 0; y < png.height; ++y)
      for (int x = 0; x < png.width; ++x)
        n += predicate(png.pixel(x, y)) ? 1 : 0;
    return n;
  }

  /// The message of the InputError `options` raises, "" when it raises none.
  static std::string input_error(const PlotOptions& options) {
    try {
      plot_file(options);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  static TempDir* s_dir;
};

TempDir* PlotCommand::s_dir = nullptr;

TEST_F(PlotCommand, ShotGatherIsGreyWithDataAndDefaultName) {
  PlotOptions options;
  options.input = file("with.h5");
  options.shot = 0;
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, file("with_shot0.png"));
  const DecodedPng png = load(result);
  // 14 traces at 24 pixels, about two pixels per sample, plus axes and colour bar.
  EXPECT_GE(png.width, 14 * 24 + 100);
  EXPECT_GE(png.height, 400);
  EXPECT_LT(png.width, 2000);
  EXPECT_LT(png.height, 1200);
  const int grey = count(png, [](Rgb c) { return c.r == c.g && c.g == c.b; });
  EXPECT_EQ(grey, png.width * png.height) << "the grey map draws only greys";
  EXPECT_GT(count(png, [](Rgb c) { return c.r == 128; }), png.width * png.height / 10)
      << "zero amplitude is mid-grey and most of the gather is quiet";
  EXPECT_GT(count(png, [](Rgb c) { return c.r < 10; }), 100) << "no clipped positive amplitude";
  EXPECT_GT(count(png, [](Rgb c) { return c.r > 150 && c.r < 250; }), 100)
      << "no negative amplitude";
  EXPECT_NE(result.summary.find("14 receivers x 61 samples"), std::string::npos) << result.summary;
}

TEST_F(PlotCommand, SnapshotIsTheDefaultWithSeismicColoursAndMarks) {
  PlotOptions options;
  options.input = file("with.h5");
  options.output = file("snapshots/last.png");
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, options.output);
  EXPECT_NE(result.summary.find("snapshot 2 of"), std::string::npos) << result.summary;
  const DecodedPng png = load(result);
  EXPECT_GT(png.width, png.height) << "two panels side by side";
  EXPECT_GT(count(png, [](Rgb c) { return c.r > c.b + 60; }), 500) << "no positive pressure";
  EXPECT_GT(count(png, [](Rgb c) { return c.b > c.r + 60; }), 500) << "no negative pressure";
  EXPECT_GT(count(png, [](Rgb c) { return c == Rgb{0, 150, 60}; }), 20) << "no source mark";
  EXPECT_GT(count(png, [](Rgb c) { return c == Rgb{40, 40, 40}; }), 200) << "no layer outline";
}

TEST_F(PlotCommand, SnapshotByIndexWithGreyMapAndDefaultName) {
  PlotOptions options;
  options.input = file("with.h5");
  options.snapshot = 0;
  options.colormap = Colormap::Grey;
  options.clip_percentile = 100;
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, file("with_snap0.png"));
  const DecodedPng png = load(result);
  const Rgb marker{0, 150, 60};
  const int not_grey = count(png, [](Rgb c) { return c.r != c.g || c.g != c.b; });
  EXPECT_EQ(not_grey, count(png, [&](Rgb c) { return c == marker; }))
      << "only the source mark has colour";
  std::set<int> levels;
  count(png, [&](Rgb c) { return levels.insert(c.r).second; });
  EXPECT_GT(levels.size(), 50u) << "the wavefield is shaded";
}

TEST_F(PlotCommand, FileWithoutSnapshotsPlotsShotZero) {
  PlotOptions options;
  options.input = file("without.h5");
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, file("without_shot0.png"));
  load(result);
}

TEST_F(PlotCommand, BadIndexesAndOptionsAreInputErrors) {
  PlotOptions options;
  options.input = file("with.h5");
  options.shot = 3;
  std::string message = input_error(options);
  EXPECT_NE(message.find("--shot: 3"), std::string::npos) << message;
  EXPECT_NE(message.find("allowed: 0"), std::string::npos) << message;

  options.shot = std::nullopt;
  options.snapshot = 3;
  message = input_error(options);
  EXPECT_NE(message.find("--snapshot: 3"), std::string::npos) << message;
  EXPECT_NE(message.find("allowed: 0..2"), std::string::npos) << message;

  options.input = file("without.h5");
  options.snapshot = 0;
  message = input_error(options);
  EXPECT_NE(message.find("--snapshot"), std::string::npos) << message;
  EXPECT_NE(message.find("no snapshots"), std::string::npos) << message;

  options.snapshot = std::nullopt;
  options.clip_percentile = 0;
  EXPECT_NE(input_error(options).find("--clip"), std::string::npos);
  options.clip_percentile = 99;
  options.shot = 0;
  options.snapshot = 0;
  EXPECT_NE(input_error(options).find("--shot and --snapshot"), std::string::npos);

  EXPECT_THROW(parse_colormap("jet", "--colormap"), InputError);
  EXPECT_EQ(parse_colormap("gray", "--colormap"), Colormap::Grey);
  EXPECT_EQ(parse_colormap("seismic", "--colormap"), Colormap::Seismic);
  EXPECT_FALSE(fs::exists(file("without_snap0.png")));
}

TEST_F(PlotCommand, OtherFilesAreInputErrors) {
  PlotOptions options;
  options.input = file("missing.h5");
  EXPECT_NE(input_error(options).find("no such file"), std::string::npos);

  options.input = file("text.h5");
  std::ofstream(options.input) << "not HDF5\n";
  EXPECT_NE(input_error(options).find("not an HDF5 file"), std::string::npos);

  // An HDF5 file from someone else: no format attribute, then the wrong one.
  options.input = file("foreign.h5");
  hid_t h5 = H5Fcreate(options.input.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(h5, 0);
  H5Fclose(h5);
  std::string message = input_error(options);
  EXPECT_NE(message.find("not a minimod-gpu output"), std::string::npos) << message;

  h5 = H5Fopen(options.input.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(h5, "format", type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* value = "other-format";
  H5Awrite(attr, type, &value);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(h5);
  message = input_error(options);
  EXPECT_NE(message.find("'other-format'"), std::string::npos) << message;
  EXPECT_NE(message.find("minimod-gpu-output"), std::string::npos) << message;
}

TEST_F(PlotCommand, UnwritableOutputIsAnOutputError) {
  std::ofstream(file("blocker")) << "a file where a folder should be";
  PlotOptions options;
  options.input = file("with.h5");
  options.shot = 0;
  options.output = file("blocker/shot.png");
  EXPECT_THROW(plot_file(options), OutputError);
}

} // namespace
} // namespace minimod
