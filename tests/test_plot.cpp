/// `minimod-gpu plot` and its PNG writer. PNGs are decoded here with zlib alone (chunks, CRCs,
/// inflate, the five row filters), so the test shares no code with the encoder; the plots are
/// drawn from files the real program writes.

#include "app/plot.hpp"
#include "core/errors.hpp"
#include "io/png.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
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

/// The pixels of one glyph cell drawn black on white.
std::vector<std::uint8_t> glyph_cell(char c) {
  Canvas cell(Canvas::kGlyphAdvance, Canvas::kLineHeight, Rgb{255, 255, 255});
  cell.text(0, 0, std::string(1, c), Rgb{0, 0, 0});
  return cell.rgb();
}

TEST(PngCanvas, EveryPrintableCharacterHasItsOwnGlyph) {
  EXPECT_FALSE(font_has_glyph('\x7f'));
  EXPECT_FALSE(font_has_glyph('\t'));
  const std::vector<std::uint8_t> blank = Canvas(6, 10, Rgb{255, 255, 255}).rgb();
  EXPECT_TRUE(font_has_glyph(' '));
  EXPECT_EQ(glyph_cell(' '), blank);
  // Every other printable ASCII character draws something, and no two look the same.
  std::set<std::vector<std::uint8_t>> seen;
  for (char c = '!'; c <= '~'; ++c) {
    EXPECT_TRUE(font_has_glyph(c)) << "no glyph for '" << c << "'";
    EXPECT_NE(glyph_cell(c), blank) << "'" << c << "' is blank";
    EXPECT_TRUE(seen.insert(glyph_cell(c)).second) << "'" << c << "' looks like another glyph";
  }
  EXPECT_EQ(seen.size(), 94u);
}

TEST(PngCanvas, BarEllOneAndCapitalEyeAreFarApart) {
  // Look-alikes must differ in several pixels, not one, to be told apart at a glance: the four
  // of a vertical stroke in 4 or more, with '!' and 'i' in 3 or more.
  const std::string similar = "|l1I!i";
  for (std::size_t a = 0; a < similar.size(); ++a) {
    for (std::size_t b = a + 1; b < similar.size(); ++b) {
      const std::vector<std::uint8_t> x = glyph_cell(similar[a]), y = glyph_cell(similar[b]);
      int differ = 0;
      for (std::size_t i = 0; i < x.size(); i += 3)
        differ += x[i] != y[i] ? 1 : 0;
      EXPECT_GE(differ, b < 4 ? 4 : 3) << "'" << similar[a] << "' and '" << similar[b] << "'";
    }
  }
  // '|' is the full height of the cell, descender included; 'l' stops at the baseline.
  Canvas bar(6, 10, Rgb{255, 255, 255}), ell(6, 10, Rgb{255, 255, 255});
  bar.text(0, 0, "|", Rgb{0, 0, 0});
  ell.text(0, 0, "l", Rgb{0, 0, 0});
  EXPECT_EQ(bar.pixel(2, 0), (Rgb{0, 0, 0}));
  EXPECT_EQ(bar.pixel(2, 8), (Rgb{0, 0, 0}));
  EXPECT_EQ(ell.pixel(2, 8), (Rgb{255, 255, 255}));
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

TEST_F(PlotCommand, LastSnapshotByNegativeIndexWithSeismicColoursAndMarks) {
  PlotOptions options;
  options.input = file("with.h5");
  options.snapshot = -1;
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

TEST_F(PlotCommand, TheFirstShotIsTheDefaultEvenWithSnapshots) {
  PlotOptions options;
  options.input = file("with.h5");
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, file("with_shot0.png"));
  EXPECT_EQ(result.summary.rfind("shot 0 of with.h5: 14 receivers", 0), 0u) << result.summary;
  const DecodedPng png = load(result);
  EXPECT_EQ(count(png, [](Rgb c) { return c.r == c.g && c.g == c.b; }), png.width * png.height)
      << "a gather in grey, not a snapshot in colour";
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
  EXPECT_NE(message.find("allowed: 0..2 (or -3..-1"), std::string::npos) << message;
  options.snapshot = -4;
  message = input_error(options);
  EXPECT_NE(message.find("--snapshot: -4"), std::string::npos) << message;

  options.input = file("without.h5");
  options.snapshot = 0;
  message = input_error(options);
  EXPECT_NE(message.find("--snapshot"), std::string::npos) << message;
  EXPECT_NE(message.find("no snapshots"), std::string::npos) << message;

  options.snapshot = std::nullopt;
  options.clip_percentile = 0;
  EXPECT_NE(input_error(options).find("--clip"), std::string::npos);
  options.clip_percentile = 99;
  // --shot with --snapshot picks the shot whose snapshots: one without any names those there.
  options.input = file("with.h5");
  options.shot = 3;
  options.snapshot = 0;
  message = input_error(options);
  EXPECT_NE(message.find("--shot: 3: '" + file("with.h5") +
                         "' has no snapshots of shot 3; it has "
                         "shot 0 (3 snapshots, steps 20-60); allowed: --shot 0 with --snapshot"),
            std::string::npos)
      << message;
  options.shot = std::nullopt;
  options.slice = parse_slice("z=18", "--slice");
  message = input_error(options);
  EXPECT_NE(message.find("--slice: z=18: /snapshots in '" + file("with.h5") +
                         "' has 18 points along z (0 to 170 m); allowed: z=0..17"),
            std::string::npos)
      << message;
  options.snapshot = std::nullopt;
  options.slice = parse_slice("x", "--slice");
  EXPECT_NE(input_error(options).find("--slice: applies to snapshots and the model"),
            std::string::npos);
  options.slice = std::nullopt;

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

// ---- Gathers and models written here, with known content -------------------------------------

/// Writes a string attribute.
void put_string(hid_t where, const char* name, const char* value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(where, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, &value);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

/// Writes a numeric attribute of `values.size()` values.
template <typename T>
void put_numbers(hid_t where, const char* name, hid_t type, const std::vector<T>& values) {
  const hsize_t n = values.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t attr = H5Acreate2(where, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, values.data());
  H5Aclose(attr);
  H5Sclose(space);
}

/// Writes a dataset of `dims`.
template <typename T>
void put_dataset(hid_t where, const char* name, hid_t type, const std::vector<hsize_t>& dims,
                 const std::vector<T>& values) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t data = H5Dcreate2(where, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(data, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(data);
  H5Sclose(space);
}

/// An output file holding one gather, shot 0: `receivers` along x every 10 m centred on the
/// source at x = 0 (offsets -10 * (receivers / 2) ...), `samples` samples of 2 ms, and in every
/// trace the Gaussian pulses (time in s, amplitude) given, 10 ms wide.
void write_gather(const std::string& path, int receivers, int samples,
                  const std::vector<std::pair<double, double>>& pulses) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0) << path;
  put_string(f, "format", "minimod-gpu-output");
  const hid_t shots = H5Gcreate2(f, "shots", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t g = H5Gcreate2(shots, "0000", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const double dt = 0.002;
  put_numbers(g, "dt_out", H5T_NATIVE_DOUBLE, std::vector<double>{dt});
  std::vector<float> traces(static_cast<std::size_t>(receivers) * samples, 0.0f);
  std::vector<double> positions;
  for (int r = 0; r < receivers; ++r) {
    positions.insert(positions.end(), {10.0 * (r - receivers / 2), 0.0, 5.0});
    for (int k = 0; k < samples; ++k)
      for (const auto& [t0, amplitude] : pulses) {
        const double u = (k * dt - t0) / 0.01;
        traces[static_cast<std::size_t>(r) * samples + k] +=
            static_cast<float>(amplitude * std::exp(-u * u));
      }
  }
  const auto n = static_cast<hsize_t>(receivers), ns = static_cast<hsize_t>(samples);
  put_dataset(g, "traces", H5T_NATIVE_FLOAT, {n, ns}, traces);
  put_dataset(g, "receiver_positions", H5T_NATIVE_DOUBLE, {n, 3}, positions);
  put_dataset(g, "source_positions", H5T_NATIVE_DOUBLE, {1, 3}, std::vector<double>{0, 0, 5});
  H5Gclose(g);
  H5Gclose(shots);
  H5Fclose(f);
}

/// Where the gather panel sits (app/plot.cpp's layout): left edge x = 80, top y = 110; the frame
/// is drawn one pixel outside. Checked against the image, so a layout change fails loudly here.
constexpr int kPanelX = 80, kPanelY = 110;
const Rgb kInk{20, 20, 20};

/// Row of the gather panel at time t of a panel `height` pixels showing `duration` seconds.
int panel_row(double t, double duration, int height) {
  return kPanelY + static_cast<int>(std::floor(t / duration * height));
}

/// Start columns of the runs of `colour` in row y, right of the panel's left frame.
std::vector<int> runs(const DecodedPng& png, int y, Rgb colour) {
  std::vector<int> starts;
  for (int x = kPanelX; x < png.width; ++x)
    if (png.pixel(x, y) == colour && (x == kPanelX || png.pixel(x - 1, y) != colour))
      starts.push_back(x);
  return starts;
}

/// True when `text` drawn in `colour` at scale 1 appears somewhere in the image.
bool shows_text(const DecodedPng& png, const std::string& text, Rgb colour) {
  const int w = Canvas::text_width(text), h = Canvas::kLineHeight;
  Canvas stamp(w, h, Rgb{255, 255, 255});
  stamp.text(0, 0, text, colour);
  for (int y = 0; y + h <= png.height; ++y)
    for (int x = 0; x + w <= png.width; ++x) {
      bool same = true;
      for (int v = 0; v < h && same; ++v)
        for (int u = 0; u < w && same; ++u)
          same = (stamp.pixel(u, v) == colour) == (png.pixel(x + u, y + v) == colour);
      if (same) return true;
    }
  return false;
}

TEST_F(PlotCommand, OffsetsAreSignedOnTheHorizontalAxis) {
  const std::string path = file("split.h5");
  write_gather(path, 41, 201, {{0.1, 1.0}});
  PlotOptions options;
  options.input = path;
  const PlotResult result = plot_file(options);
  EXPECT_NE(result.summary.find("offsets -200 to 200 m"), std::string::npos) << result.summary;
  const DecodedPng png = load(result);
  for (const char* label : {"-200", "-100", "0", "100", "200"})
    EXPECT_TRUE(shows_text(png, label, kInk)) << "no tick label " << label;
  EXPECT_FALSE(shows_text(png, "-300", kInk));
  EXPECT_TRUE(shows_text(png, "offset (m) from the source, negative at smaller x", kInk));
}

TEST_F(PlotCommand, GainsEvenOutEarlyAndLateEvents) {
  // Equal pulses at 0.1 s and 0.3 s: t^2 makes the late one 9 times stronger, AGC makes both
  // full scale. Grey level 127.5 * (1 - value / clip) at the pulse peaks of the middle trace.
  const std::string path = file("gain.h5");
  write_gather(path, 20, 201, {{0.1, 1.0}, {0.3, 1.0}});
  auto levels = [&](const std::string& gain) {
    PlotOptions options;
    options.input = path;
    options.gain = parse_gain(gain, "--gain");
    options.output = file("gain_" + gain.substr(0, 3) + ".png");
    const PlotResult result = plot_file(options);
    const DecodedPng png = load(result);
    const int x = kPanelX + png.width / 4; // inside the panel
    const double duration = 0.4;
    const int height = 402; // 2 pixels per sample
    return std::pair<int, int>{png.pixel(x, panel_row(0.1, duration, height)).r,
                               png.pixel(x, panel_row(0.3, duration, height)).r};
  };
  const auto [none_early, none_late] = levels("none");
  EXPECT_LT(none_early, 20);
  EXPECT_LT(none_late, 20);
  const auto [t2_early, t2_late] = levels("t2");
  EXPECT_LT(t2_late, 20);
  EXPECT_NEAR(t2_early, 127.5 * (1 - 1.0 / 9), 6) << "the early pulse at a ninth of the late";
  const auto [agc_early, agc_late] = levels("agc:0.1");
  EXPECT_LT(agc_early, 20);
  EXPECT_LT(agc_late, 20);

  PlotOptions options;
  options.input = path;
  options.gain = parse_gain("agc:0.003", "--gain");
  std::string message = input_error(options);
  EXPECT_NE(message.find("--gain: agc:0.003"), std::string::npos) << message;
  EXPECT_NE(message.find("at least 0.004 s"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(file("gain_shot0.png")));
  for (const char* bad : {"agc:0", "agc:-1", "agc:x", "agc:", "agc0.1", "t3", "AGC"}) {
    try {
      parse_gain(bad, "--gain");
      ADD_FAILURE() << bad << " was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--gain: ") + bad), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("allowed: none, t2, agc"), std::string::npos);
    }
  }
  EXPECT_EQ(parse_gain("agc", "--gain").window, 0.25);
  EXPECT_EQ(parse_gain("agc:0.5", "--gain").kind, GainKind::Agc);
  EXPECT_EQ(parse_gain("none", "--gain").kind, GainKind::None);
}

TEST_F(PlotCommand, WigglesFillPositiveLobes) {
  // 40 traces of one positive pulse at 0.2 s: every trace is a straight zero line before it and
  // bulges right, filled, at it.
  const std::string path = file("wiggle.h5");
  write_gather(path, 40, 201, {{0.2, 1.0}});
  PlotOptions options;
  options.input = path;
  options.wiggle = true;
  const PlotResult result = plot_file(options);
  EXPECT_NE(result.summary.find("wiggles, clip"), std::string::npos) << result.summary;
  const DecodedPng png = load(result);
  ASSERT_EQ(png.pixel(kPanelX - 1, kPanelY - 1), kInk) << "frame corner moved";
  ASSERT_NE(png.pixel(kPanelX - 1, kPanelY - 2), kInk) << "frame corner moved";
  const int image_w = 480; // 40 traces * 8 pixels, at least 480
  const std::vector<int> quiet = runs(png, panel_row(0.05, 0.4, 402), kInk);
  ASSERT_EQ(quiet.size(), 41u) << "40 zero lines and the right-hand frame";
  const int slot = image_w / 40;
  const int peak = panel_row(0.2, 0.4, 402);
  for (int t = 0; t < 40; ++t) {
    const int centre = quiet[t];
    EXPECT_NEAR(centre, kPanelX + (2 * t + 1) * image_w / 80, 1) << "trace " << t;
    for (int x = centre; x < std::min(centre + slot * 3 / 4, kPanelX + image_w); ++x)
      EXPECT_EQ(png.pixel(x, peak), kInk) << "trace " << t << " is not filled at x " << x;
    // Left of the zero line is either white or the previous trace's lobe, which reaches
    // exactly this trace's zero line at the clip level.
    if (t == 0) {
      EXPECT_NE(png.pixel(centre - 1, peak), kInk) << "trace 0 swings left";
    }
  }
  // Only ink and white inside the panel.
  for (int y = kPanelY; y < kPanelY + 402; ++y)
    for (int x = kPanelX; x < kPanelX + image_w; ++x) {
      const Rgb c = png.pixel(x, y);
      ASSERT_TRUE(c == kInk || c == (Rgb{255, 255, 255})) << x << "," << y;
    }

  // 900 traces: the 1200-pixel panel shows every 3rd (300 traces, 4 pixels apart).
  write_gather(path, 900, 201, {{0.2, 1.0}});
  const PlotResult many = plot_file(options);
  EXPECT_NE(many.summary.find("wiggles of every 3rd trace"), std::string::npos) << many.summary;
  const DecodedPng dense = load(many);
  EXPECT_EQ(runs(dense, panel_row(0.05, 0.4, 402), kInk).size(), 301u);
}

/// Copies with.h5 and replaces its /model by /model/vp [18, 20, 24] = 1500 + 50 * k m/s at depth
/// index k, with the grid's origin and spacing as attributes when `geometry`.
std::string with_model(const std::string& source, const std::string& name, bool geometry) {
  fs::copy_file(source, name, fs::copy_options::overwrite_existing);
  const hid_t f = H5Fopen(name.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  if (H5Lexists(f, "model", H5P_DEFAULT) > 0) H5Ldelete(f, "model", H5P_DEFAULT);
  const hid_t g = H5Gcreate2(f, "model", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<float> vp(18 * 20 * 24);
  for (std::size_t i = 0; i < vp.size(); ++i)
    vp[i] = 1500.0f + 50.0f * static_cast<float>(i / (20 * 24));
  put_dataset(g, "vp", H5T_NATIVE_FLOAT, {18, 20, 24}, vp);
  if (geometry) {
    const hid_t d = H5Dopen2(g, "vp", H5P_DEFAULT);
    put_numbers(d, "origin", H5T_NATIVE_DOUBLE, std::vector<double>{0, 0, 0});
    put_numbers(d, "spacing", H5T_NATIVE_DOUBLE, std::vector<double>{10, 10, 10});
    H5Dclose(d);
  }
  H5Gclose(g);
  H5Fclose(f);
  return name;
}

/// Copies with.h5 without its /model, as a version that did not store the model wrote it.
std::string without_model(const std::string& source, const std::string& name) {
  fs::copy_file(source, name, fs::copy_options::overwrite_existing);
  const hid_t f = H5Fopen(name.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  EXPECT_GE(H5Ldelete(f, "model", H5P_DEFAULT), 0);
  H5Fclose(f);
  return name;
}

TEST_F(PlotCommand, ModelSlicesInViridisWithDepthDown) {
  PlotOptions options;
  options.input = with_model(file("with.h5"), file("model.h5"), true);
  options.model = true;
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, file("model_model.png"));
  EXPECT_NE(result.summary.find("24 x 20 x 18 points"), std::string::npos) << result.summary;
  EXPECT_NE(result.summary.find("vp 1500 to 2350 m/s"), std::string::npos) << result.summary;
  EXPECT_EQ(result.summary.find("(the grid's)"), std::string::npos) << result.summary;
  const DecodedPng png = load(result);
  // The x-z panel (left, from x = 80, y = 100): slowest (viridis' dark purple) at the top,
  // fastest (its yellow) at the bottom.
  int bottom_y = 102;
  while (bottom_y + 1 < png.height && png.pixel(150, bottom_y + 1) != kInk)
    ++bottom_y;
  const Rgb top = png.pixel(150, 102), bottom = png.pixel(150, bottom_y - 1);
  EXPECT_LT(top.g, 20) << "top " << int{top.r} << "," << int{top.g} << "," << int{top.b};
  EXPECT_GT(bottom.g, 200) << "bottom " << int{bottom.r} << "," << int{bottom.g};
  EXPECT_GT(count(png, [](Rgb c) { return c == Rgb{0, 150, 60}; }), 20) << "no source mark";

  // Without origin and spacing the grid's are taken, and said so.
  options.input = with_model(file("with.h5"), file("bare_model.h5"), false);
  EXPECT_NE(plot_file(options).summary.find("(the grid's)"), std::string::npos);

  // A file without a model says why.
  options.input = without_model(file("with.h5"), file("nomodel.h5"));
  const std::string message = input_error(options);
  EXPECT_NE(message.find("--model: '" + file("nomodel.h5") +
                         "' has no /model (written by a "
                         "version that did not store it)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(file("nomodel_model.png")));

  // Gather options do not apply to the model or snapshots; --model excludes --shot.
  options.input = file("model.h5");
  options.gain = parse_gain("t2", "--gain");
  EXPECT_NE(input_error(options).find("--gain: gain t^2 applies to shot gathers"),
            std::string::npos);
  options.gain = Gain{};
  options.wiggle = true;
  EXPECT_NE(input_error(options).find("--wiggle: applies to shot gathers"), std::string::npos);
  options.model = false;
  options.snapshot = 0;
  EXPECT_NE(input_error(options).find("--wiggle: applies to shot gathers, not to snapshots"),
            std::string::npos);
  options.wiggle = false;
  options.model = true;
  EXPECT_NE(input_error(options).find("--model and --snapshot: both given"), std::string::npos);
}

TEST_F(PlotCommand, CommandLineOptions) {
  const std::string binary = quoted(MINIMOD_BINARY) + " plot " + quoted(file("with.h5"));
  const std::string log = quoted(file("cli.log"));
  EXPECT_EQ(run(binary + " --wiggle --gain agc:0.05 -o " + quoted(file("cli.png")) + " > " + log +
                " 2>&1"),
            0);
  std::string text((std::istreambuf_iterator<char>(std::ifstream(file("cli.log")).rdbuf())),
                   std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("AGC 0.05 s, wiggles"), std::string::npos) << text;
  EXPECT_TRUE(fs::exists(file("cli.png")));

  EXPECT_EQ(run(binary + " --gain loud -o " + quoted(file("cli2.png")) + " > " + log + " 2>&1"), 2);
  text.assign((std::istreambuf_iterator<char>(std::ifstream(file("cli.log")).rdbuf())),
              std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("error: --gain: loud: unknown gain"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(file("cli2.png")));

  EXPECT_EQ(run(binary + " --model --shot 0 > " + log + " 2>&1"), 2);
  const std::string bare = quoted(MINIMOD_BINARY) + " plot " +
                           quoted(without_model(file("with.h5"), file("cli_nomodel.h5")));
  EXPECT_EQ(run(bare + " --model > " + log + " 2>&1"), 2);
  text.assign((std::istreambuf_iterator<char>(std::ifstream(file("cli.log")).rdbuf())),
              std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("has no /model"), std::string::npos) << text;
}

// --slice draws one plane instead of two, through the source unless an index is given.
TEST_F(PlotCommand, OneSliceOfASnapshotOrTheModel) {
  PlotOptions options;
  options.input = file("with.h5");
  options.snapshot = 1;
  options.slice = parse_slice("x", "--slice");
  options.output = file("slice_x.png");
  const DecodedPng x = load(plot_file(options));
  options.slice = parse_slice("z", "--slice");
  options.output = file("slice_z.png");
  const DecodedPng z = load(plot_file(options));
  EXPECT_GT(count(x, [](Rgb c) { return c == Rgb{0, 150, 60}; }), 10) << "no source mark";
  EXPECT_GT(count(z, [](Rgb c) { return c == Rgb{0, 150, 60}; }), 10) << "no source mark";

  // An index moves the plane: the slice through the source holds the wave, one at the grid's
  // edge (inside the absorbing layer) amplitudes far smaller.
  const auto clip_of = [](const PlotResult& r) {
    const std::size_t at = r.summary.find(", clip ");
    return at == std::string::npos ? -1.0 : std::strtod(r.summary.c_str() + at + 7, nullptr);
  };
  options.slice = parse_slice("x", "--slice");
  options.output = file("slice_x.png");
  const double through_source = clip_of(plot_file(options));
  options.slice = parse_slice("x=0", "--slice");
  options.output = file("slice_x0.png");
  const PlotResult edge = plot_file(options);
  EXPECT_NE(edge.summary.find("snapshot 1 of 3 of shot 0"), std::string::npos) << edge.summary;
  EXPECT_GT(clip_of(edge), 0.0) << edge.summary;
  EXPECT_GT(through_source, 10 * clip_of(edge)) << edge.summary;
  load(edge);

  options.snapshot = std::nullopt;
  options.model = true;
  options.slice = parse_slice("y=3", "--slice");
  options.output = file("model_y3.png");
  EXPECT_NE(plot_file(options).summary.find("model of with.h5"), std::string::npos);

  for (const char* bad : {"", "w", "xy", "x=", "x=-1", "z=1.5", "y=12345678901"}) {
    try {
      parse_slice(bad, "--slice");
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--slice: '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("allowed: x, y or z"), std::string::npos) << e.what();
    }
  }
}

// A file written before /snapshots/shot existed holds shot 0's snapshots: plot reads them so.
TEST_F(PlotCommand, SnapshotsWithoutTheirShotsAreShotZeros) {
  const std::string old = file("old_layout.h5");
  fs::copy_file(file("with.h5"), old, fs::copy_options::overwrite_existing);
  const hid_t f = H5Fopen(old.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  ASSERT_GT(H5Lexists(f, "/snapshots/shot", H5P_DEFAULT), 0);
  H5Ldelete(f, "/snapshots/shot", H5P_DEFAULT);
  H5Fclose(f);
  PlotOptions options;
  options.input = old;
  options.snapshot = -1;
  EXPECT_NE(plot_file(options).summary.find("snapshot 2 of 3 of shot 0 (step 60)"),
            std::string::npos);
  options.shot = 1;
  EXPECT_NE(input_error(options).find("has no snapshots of shot 1; it has shot 0 (3 snapshots"),
            std::string::npos);
}

// A run whose output.snapshots.shots names shots 0 and 2, modelling shots 1 and 2: the file has
// shot 2's snapshots, which plot draws by default and names; shot 0's, not modelled, are absent.
TEST_F(PlotCommand, SnapshotsOfAChosenShot) {
  const fs::path survey = s_dir->path() / "three.yaml";
  std::string text = kSurvey;
  text = text.substr(0, text.find("sources:"));
  std::ofstream(survey) << text << R"(shots:
  wavelet: {type: ricker, frequency: 20}
  positions: {points: [[110, 100, 80], [120, 100, 80], [130, 90, 80]]}
receivers:
  lines:
    - {start: [50, 100, 60], end: [180, 100, 60], count: 14}
output: {snapshots: {every: 20, shots: [0, 2]}}
)";
  const std::string out = file("three.h5");
  ASSERT_EQ(run(quoted(MINIMOD_BINARY) + " run " + quoted(survey.string()) + " -o " + quoted(out) +
                " --backend cpu --shots 1-2 --quiet > /dev/null 2>&1"),
            0);
  PlotOptions options;
  options.input = out;
  options.snapshot = -1;
  const PlotResult result = plot_file(options);
  EXPECT_EQ(result.path, file("three_snap2.png"));
  EXPECT_NE(result.summary.find("snapshot 2 of 3 of shot 2 (step 60)"), std::string::npos)
      << result.summary;
  EXPECT_NE(result.summary.find("the file has shot 2 (3 snapshots, steps 20-60)"),
            std::string::npos)
      << result.summary;
  options.shot = 0;
  const std::string message = input_error(options);
  EXPECT_NE(message.find("has no snapshots of shot 0; it has shot 2 (3 snapshots, steps 20-60); "
                         "allowed: --shot 2 with --snapshot"),
            std::string::npos)
      << message;
}

} // namespace
} // namespace minimod
