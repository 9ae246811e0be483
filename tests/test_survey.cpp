/// Survey parser and velocity builder, called directly (tests/test_malformed_surveys.cpp runs the
/// program on malformed files).

#include "core/errors.hpp"
#include "io/survey.hpp"
#include "models/velocity.hpp"
#include "solver/plan.hpp"
#include "tests/grid_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

/// A small valid survey; tests append sections or replace lines of it.
const std::string kGrid = "grid:\n"
                          "  shape: [20, 20, 20]\n"
                          "  spacing: 10\n";
const std::string kModel = "model:\n"
                           "  type: constant\n"
                           "  velocity: 2000\n";
const std::string kTime = "time:\n"
                          "  steps: 10\n";
const std::string kSources = "sources:\n"
                             "  - position: [100, 100, 50]\n"
                             "    wavelet: {type: ricker, frequency: 10}\n";

Survey parse(const std::string& text, const std::string& base_dir = ".") {
  return parse_survey(text, "t.yaml", base_dir);
}

/// Parses `text`, expects an InputError and returns its message.
std::string error_of(const std::string& text, const std::string& base_dir = ".") {
  try {
    parse(text, base_dir);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

/// Expects the error of `text` to contain every piece.
void expect_error(const std::string& text, std::initializer_list<const char*> pieces) {
  const std::string message = error_of(text);
  for (const char* piece : pieces) {
    EXPECT_NE(message.find(piece), std::string::npos)
        << "message: " << message << "\nlacks: " << piece;
  }
}

Grid small_grid(int nx, int ny, int nz, double h = 10) {
  return test_support::make_grid(nx, ny, nz, h, h, h);
}

/// A folder of its own under the system temp folder, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "minimod_survey_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    m_path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

/// Writes raw little-endian float32 values whatever the host's byte order.
void write_floats(const fs::path& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  for (float v : values) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    const char bytes[4] = {static_cast<char>(bits & 0xff), static_cast<char>((bits >> 8) & 0xff),
                           static_cast<char>((bits >> 16) & 0xff),
                           static_cast<char>((bits >> 24) & 0xff)};
    out.write(bytes, 4);
  }
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// ---- Parsing good surveys -------------------------------------------------------------------

TEST(SurveyParse, MinimalSurveyGetsTheDocumentedDefaults) {
  const std::string text = kGrid + kModel + kTime + kSources;
  const Survey s = parse(text);
  EXPECT_EQ(s.path, "t.yaml");
  EXPECT_EQ(s.text, text);
  EXPECT_EQ(s.name, "");
  EXPECT_EQ(s.physics, "acoustic");
  EXPECT_EQ(s.grid.shape, (std::array<int, 3>{20, 20, 20}));
  EXPECT_EQ(s.grid.spacing, (std::array<double, 3>{10, 10, 10}));
  EXPECT_EQ(s.grid.origin, (Vec3{0, 0, 0}));
  EXPECT_EQ(s.model.kind, ModelSpec::Kind::Constant);
  EXPECT_EQ(s.model.velocity, 2000);
  EXPECT_FALSE(s.model.vmax);
  EXPECT_FALSE(s.time.duration);
  EXPECT_EQ(s.time.steps, 10);
  EXPECT_FALSE(s.time.dt);
  EXPECT_DOUBLE_EQ(s.time.cfl, 0.8);
  EXPECT_FALSE(s.boundary.width);
  EXPECT_FALSE(s.boundary.ntaper) << "unset: kDefaultNtaper, " << kDefaultNtaper;
  EXPECT_FALSE(s.boundary.reflection_db);
  EXPECT_FALSE(s.boundary.fmax);
  ASSERT_EQ(s.sources.size(), 1u);
  EXPECT_EQ(s.sources[0].position, (Vec3{100, 100, 50}));
  EXPECT_EQ(s.sources[0].injection, Injection::Physical);
  EXPECT_EQ(s.sources[0].wavelet.kind, WaveletSpec::Kind::Ricker);
  EXPECT_EQ(s.sources[0].wavelet.frequency, 10);
  EXPECT_FALSE(s.sources[0].wavelet.delay);
  EXPECT_EQ(s.sources[0].wavelet.amplitude, 1);
  EXPECT_TRUE(s.receivers.empty());
  EXPECT_EQ(s.output.file, "out/t.h5");
  EXPECT_FALSE(s.output.dt_out);
  EXPECT_EQ(s.output.snapshot_every, 0);
  EXPECT_EQ(s.output.snapshot_decimate, 1);
  EXPECT_FALSE(s.output.snapshot_box);
  EXPECT_FALSE(s.kernel);
  // Locations name the line of each value, for the plan's errors.
  EXPECT_EQ(s.sources[0].loc.where(), "t.yaml:10: sources[0].position");
  EXPECT_EQ(s.time.dt_loc.key, "time.dt");
  EXPECT_EQ(s.model.vmax_loc.key, "model.vmax");
}

TEST(SurveyParse, EverySectionWithAllOptions) {
  const std::string text = "name: full\n"
                           "physics: acoustic\n"
                           "grid:\n"
                           "  shape: [30, 20, 25]\n"
                           "  spacing: [10, 12.5, 5]\n"
                           "  origin: [100, -50, 0]\n"
                           "model:\n"
                           "  type: constant\n"
                           "  velocity: 1800\n"
                           "  vmax: 3000\n"
                           "time:\n"
                           "  duration: 0.25\n"
                           "  dt: 0.0005\n"
                           "  cfl: 0.5\n"
                           "boundary:\n"
                           "  width: 6\n"
                           "  fmax: 30\n"
                           "sources:\n"
                           "  - position: [150, 0, 20]\n"
                           "    wavelet: {type: ricker, frequency: 12, delay: 0.2, amplitude: -2}\n"
                           "    injection: minimod\n"
                           "  - position: [200, 10, 30]\n"
                           "    wavelet: {type: minimod, fmax: 25}\n"
                           "output:\n"
                           "  file: results/full.h5\n"
                           "  dt_out: 0.002\n"
                           "  snapshots:\n"
                           "    every: 50\n"
                           "    decimate: 3\n"
                           "    box: {min: [100, -50, 0], max: [200, 50, 60]}\n"
                           "kernel: smem_3d_32x4x4\n";
  const Survey s = parse(text);
  EXPECT_EQ(s.name, "full");
  EXPECT_EQ(s.grid.shape, (std::array<int, 3>{30, 20, 25}));
  EXPECT_EQ(s.grid.spacing, (std::array<double, 3>{10, 12.5, 5}));
  EXPECT_EQ(s.grid.origin, (Vec3{100, -50, 0}));
  EXPECT_EQ(s.model.vmax, 3000);
  EXPECT_EQ(s.model.vmax_loc.where(), "t.yaml:10: model.vmax");
  EXPECT_EQ(s.time.duration, 0.25);
  EXPECT_FALSE(s.time.steps);
  EXPECT_EQ(s.time.dt, 0.0005);
  EXPECT_EQ(s.time.dt_loc.where(), "t.yaml:13: time.dt");
  EXPECT_EQ(s.time.cfl, 0.5);
  EXPECT_EQ(s.boundary.width, 6);
  EXPECT_EQ(s.boundary.width_loc.line, 16);
  EXPECT_EQ(s.boundary.fmax, 30);
  ASSERT_EQ(s.sources.size(), 2u);
  EXPECT_EQ(s.sources[0].injection, Injection::Minimod);
  EXPECT_EQ(s.sources[0].wavelet.delay, 0.2);
  EXPECT_EQ(s.sources[0].wavelet.amplitude, -2);
  EXPECT_EQ(s.sources[1].injection, Injection::Physical);
  EXPECT_EQ(s.sources[1].wavelet.kind, WaveletSpec::Kind::Minimod);
  EXPECT_EQ(s.sources[1].wavelet.fmax, 25);
  EXPECT_EQ(s.output.file, "results/full.h5");
  EXPECT_EQ(s.output.dt_out, 0.002);
  EXPECT_EQ(s.output.snapshot_every, 50);
  EXPECT_EQ(s.output.snapshot_decimate, 3);
  ASSERT_TRUE(s.output.snapshot_box);
  EXPECT_EQ(s.output.snapshot_box->min, (Vec3{100, -50, 0}));
  EXPECT_EQ(s.output.snapshot_box->max, (Vec3{200, 50, 60}));
  EXPECT_EQ(s.kernel, "smem_3d_32x4x4");
  EXPECT_EQ(s.kernel_loc.line, 31);
}

TEST(SurveyParse, LayeredModel) {
  const Survey s = parse(kGrid +
                         "model:\n"
                         "  type: layered\n"
                         "  layers:\n"
                         "    - {top: 0, velocity: 1500}\n"
                         "    - {top: 60, velocity: 2000}\n"
                         "    - top: 120\n"
                         "      velocity: 2800\n" +
                         kTime + kSources);
  EXPECT_EQ(s.model.kind, ModelSpec::Kind::Layered);
  ASSERT_EQ(s.model.layers.size(), 3u);
  EXPECT_EQ(s.model.layers[1].top, 60);
  EXPECT_EQ(s.model.layers[2].velocity, 2800);
}

TEST(SurveyParse, GradientModelDefaultsZ0ToTheGridOrigin) {
  const Survey s = parse("grid: {shape: [20, 20, 20], spacing: 10, origin: [0, 0, 500]}\n"
                         "model: {type: gradient, v0: 1500, gradient: 0.6}\n" +
                         kTime +
                         "sources:\n"
                         "  - position: [100, 100, 600]\n"
                         "    wavelet: {type: ricker, frequency: 10}\n");
  EXPECT_EQ(s.model.kind, ModelSpec::Kind::Gradient);
  EXPECT_EQ(s.model.v0, 1500);
  EXPECT_EQ(s.model.gradient, 0.6);
  EXPECT_EQ(s.model.z0, 500);
}

TEST(SurveyParse, FileModelResolvesAgainstTheSurveyFolder) {
  TempDir dir;
  write_floats(dir.path() / "vel.bin", std::vector<float>(20 * 20 * 20, 2000.0f));
  const Survey s = parse(kGrid +
                             "model:\n"
                             "  type: file\n"
                             "  file: vel.bin\n"
                             "  shape: [20, 20, 20]\n"
                             "  order: zyx\n" +
                             kTime + kSources,
                         dir.path().string());
  EXPECT_EQ(s.model.kind, ModelSpec::Kind::File);
  EXPECT_EQ(fs::path(s.model.file), dir.path() / "vel.bin");
  EXPECT_EQ(s.model.order, AxisOrder::Zyx);
  EXPECT_EQ(s.model.file_shape, (std::array<int, 3>{20, 20, 20}));
  EXPECT_EQ(s.model.file_loc.where(), "t.yaml:6: model.file");
}

TEST(SurveyParse, FileWavelet) {
  TempDir dir;
  write_text(dir.path() / "w.txt", "0\n1\n0\n");
  const Survey s = parse(kGrid + kModel + kTime +
                             "sources:\n"
                             "  - position: [100, 100, 50]\n"
                             "    wavelet: {type: file, file: w.txt, dt: 0.001, fmax: 30}\n",
                         dir.path().string());
  const WaveletSpec& w = s.sources[0].wavelet;
  EXPECT_EQ(w.kind, WaveletSpec::Kind::File);
  EXPECT_EQ(fs::path(w.file), dir.path() / "w.txt");
  EXPECT_EQ(w.file_dt, 0.001);
  EXPECT_EQ(w.fmax, 30);
}

TEST(SurveyParse, ReceiverPointsLinesAndGridsExpandInOrder) {
  const Survey s = parse(kGrid + kModel + kTime + kSources +
                         "receivers:\n"
                         "  points: [[10, 20, 30], [190, 190, 190]]\n"
                         "  lines:\n"
                         "    - {start: [0, 50, 10], end: [100, 50, 10], count: 11}\n"
                         "  grids:\n"
                         "    - origin: [10, 10, 100]\n"
                         "      step_a: [20, 0, 0]\n"
                         "      step_b: [0, 30, 5]\n"
                         "      count: [3, 2]\n");
  ASSERT_EQ(s.receivers.size(), 2u + 11u + 6u);
  EXPECT_EQ(s.receivers[0].position, (Vec3{10, 20, 30}));
  EXPECT_EQ(s.receivers[1].position, (Vec3{190, 190, 190}));
  EXPECT_EQ(s.receivers[1].loc.where(), "t.yaml:13: receivers.points[1]");
  for (int r = 0; r < 11; ++r) {
    const Vec3& p = s.receivers[2 + r].position;
    EXPECT_NEAR(p[0], 10.0 * r, 1e-12) << r;
    EXPECT_EQ(p[1], 50);
    EXPECT_EQ(p[2], 10);
  }
  EXPECT_EQ(s.receivers[12].position, (Vec3{100, 50, 10}));
  EXPECT_EQ(s.receivers[2].loc.key, "receivers.lines[0]");
  // Grid receivers: step_a varies fastest.
  const Vec3 expected[] = {{10, 10, 100}, {30, 10, 100}, {50, 10, 100},
                           {10, 40, 105}, {30, 40, 105}, {50, 40, 105}};
  for (int r = 0; r < 6; ++r)
    EXPECT_EQ(s.receivers[13 + r].position, expected[r]) << r;
  EXPECT_EQ(s.receivers[13].loc.key, "receivers.grids[0]");
}

TEST(SurveyParse, PositionsOnTheGridFacesAreInside) {
  const Survey s = parse(kGrid + kModel + kTime +
                         "sources:\n"
                         "  - position: [0, 190, 190]\n"
                         "    wavelet: {type: minimod, fmax: 25}\n");
  EXPECT_EQ(s.sources[0].position, (Vec3{0, 190, 190}));
}

TEST(SurveyParse, SpacingAsOneNumberOrThree) {
  EXPECT_EQ(parse("grid: {shape: [9, 9, 9], spacing: [1, 2, 3]}\n" + kModel + kTime +
                  "sources: [{position: [1, 1, 1], wavelet: {type: minimod, fmax: 5}}]\n")
                .grid.spacing,
            (std::array<double, 3>{1, 2, 3}));
}

TEST(SurveyParse, BoundaryNtaper) {
  const Survey s = parse(kGrid + kModel + kTime + kSources + "boundary: {ntaper: 2.5}\n");
  EXPECT_FALSE(s.boundary.width);
  EXPECT_EQ(s.boundary.ntaper, 2.5);
}

TEST(SurveyParse, BoundaryReflectionDb) {
  const Survey s =
      parse(kGrid + kModel + kTime + kSources + "boundary:\n  type: cpml\n  reflection_db: -60\n");
  EXPECT_EQ(s.boundary.reflection_db, -60.0);
  EXPECT_EQ(s.boundary.reflection_db_loc.where(), "t.yaml:14: boundary.reflection_db");
  EXPECT_FALSE(s.boundary.width);
  EXPECT_FALSE(s.boundary.ntaper);
  // A C-PML without the key leaves the target to the plan's default.
  const Survey d = parse(kGrid + kModel + kTime + kSources + "boundary: {type: cpml}\n");
  EXPECT_FALSE(d.boundary.reflection_db);
  EXPECT_EQ(d.boundary.reflection_db_loc.where(), "t.yaml:12: boundary.reflection_db");
}

TEST(SurveyParse, ShippedSurveysLoad) {
  const Survey demo = load_survey(std::string(MINIMOD_SOURCE_DIR) + "/input/demo.yaml");
  EXPECT_EQ(demo.grid.shape, (std::array<int, 3>{101, 101, 81}));
  EXPECT_EQ(demo.model.kind, ModelSpec::Kind::Layered);
  EXPECT_EQ(demo.output.file, "out/demo.h5");
  EXPECT_GT(demo.receivers.size(), 10u);
  EXPECT_GT(demo.output.snapshot_every, 0);

  const Survey seeds = load_survey(std::string(MINIMOD_SOURCE_DIR) + "/input/seeds_benchmark.yaml");
  EXPECT_EQ(seeds.grid.shape, (std::array<int, 3>{1000, 1000, 1000}));
  EXPECT_EQ(seeds.grid.spacing, (std::array<double, 3>{20, 20, 20}));
  EXPECT_EQ(seeds.model.velocity, 2000);
  EXPECT_EQ(seeds.model.vmax, 4500);
  EXPECT_EQ(seeds.boundary.fmax, 25);
  EXPECT_EQ(seeds.time.steps, 1000);
  ASSERT_EQ(seeds.sources.size(), 1u);
  EXPECT_EQ(seeds.sources[0].injection, Injection::Minimod);
  EXPECT_EQ(seeds.sources[0].wavelet.kind, WaveletSpec::Kind::Minimod);
  EXPECT_EQ(seeds.output.snapshot_every, 0);
}

TEST(SurveyParse, LoadSurveyOfAMissingFileNamesThePath) {
  try {
    load_survey("/nonexistent/folder/survey.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/folder/survey.yaml"), std::string::npos);
  }
}

TEST(SurveyParse, SourceLocWhere) {
  EXPECT_EQ((SourceLoc{"a.yaml", 12, "sources[1].position"}.where()),
            "a.yaml:12: sources[1].position");
  EXPECT_EQ((SourceLoc{"a.yaml", 0, "sources"}.where()), "a.yaml: sources");
}

// ---- Errors: file, line, key and value -------------------------------------------------------

TEST(SurveyErrors, WrongTypeNamesKeyLineValueAndAllowed) {
  expect_error("grid:\n  shape: [20, 20, 20]\n  spacing: [10, ten, 10]\n" + kModel + kTime +
                   kSources,
               {"t.yaml:3: grid.spacing[1]: ten is not allowed", "> 0"});
  expect_error("grid:\n  shape: [20, 20.5, 20]\n  spacing: 10\n" + kModel + kTime + kSources,
               {"t.yaml:2: grid.shape[1]: 20.5", "integer >= 9"});
  expect_error(kGrid + "model:\n  type: constant\n  velocity: \"fast\"\n" + kTime + kSources,
               {"t.yaml:6: model.velocity: \"fast\"", "velocity > 0"});
  expect_error(kGrid + kModel + kTime + "sources: {position: [1, 1, 1]}\n",
               {"t.yaml:9: sources: {position: [1, 1, 1]}", "a list"});
  expect_error(kGrid + kModel + "time:\n  steps: [10]\n" + kSources,
               {"t.yaml:8: time.steps: [10]", "integer >= 1"});
  expect_error(kGrid + kModel + "time:\n  steps: 1e3\n" + kSources, {"time.steps: 1e3"});
  expect_error(kGrid + kModel + "time:\n  steps: +-3\n" + kSources, {"time.steps: +-3"});
  expect_error(kGrid + kModel + "time:\n  duration: 0x10\n" + kSources, {"time.duration: 0x10"});
  expect_error("name: {a: 1}\n" + kGrid + kModel + kTime + kSources, {"t.yaml:1: name: {a: 1}"});
}

TEST(SurveyErrors, NonFiniteNumbersAreRejected) {
  expect_error(kGrid + "model:\n  type: constant\n  velocity: .inf\n" + kTime + kSources,
               {"t.yaml:6: model.velocity: .inf"});
  expect_error(kGrid + "model:\n  type: constant\n  velocity: nan\n" + kTime + kSources,
               {"t.yaml:6: model.velocity: nan"});
}

TEST(SurveyErrors, UnknownKeysListTheAllowedOnes) {
  expect_error(kGrid + kModel + kTime + kSources + "outptu: {file: a.h5}\n",
               {"t.yaml:12: outptu: unknown key", "grid, model, time"});
  expect_error(kGrid + kModel + kTime + kSources +
                   "receivers: {lines: [{start: [0, 0, 0], "
                   "end: [1, 1, 1], cnt: 2}]}\n",
               {"t.yaml:12: receivers.lines[0].cnt: unknown key", "start, end, count"});
  // Keys of another model type are unknown for this one.
  expect_error(kGrid + "model: {type: constant, velocity: 2000, v0: 10}\n" + kTime + kSources,
               {"t.yaml:4: model.v0: unknown key", "type constant", "velocity, vmax"});
}

// boundary.reflection_db: C-PML only, one of the three ways to give the width, a negative number.
TEST(SurveyErrors, ReflectionDbRefusals) {
  const std::string base = kGrid + kModel + kTime + kSources;
  expect_error(base + "boundary: {type: minimod, reflection_db: -50}\n",
               {"t.yaml:12: boundary.reflection_db: -50 is not allowed",
                "no reflection_db with boundary.type: minimod", "needs boundary.type: cpml"});
  expect_error(base + "boundary: {reflection_db: -50}\n",
               {"boundary.reflection_db: -50", "boundary.type: minimod"});
  expect_error(base + "boundary:\n  type: cpml\n  width: 8\n  reflection_db: -50\n",
               {"t.yaml:15: boundary.reflection_db: -50 is not allowed",
                "only one of boundary.reflection_db and boundary.width",
                "boundary.width is given on line 14"});
  expect_error(base + "boundary:\n  type: cpml\n  reflection_db: -50\n  ntaper: 2\n",
               {"t.yaml:14: boundary.reflection_db: -50 is not allowed",
                "only one of boundary.reflection_db and boundary.ntaper",
                "boundary.ntaper is given on line 15"});
  for (const char* value : {"10", "0", "-.inf", "fifty", "[-50]"}) {
    const std::string message =
        error_of(base + "boundary: {type: cpml, reflection_db: " + value + "}\n");
    for (const std::string& piece :
         {"boundary.reflection_db: " + std::string(value) + " is not allowed",
          std::string("a negative number of dB, e.g. -50")}) {
      EXPECT_NE(message.find(piece), std::string::npos) << message << "\nlacks: " << piece;
    }
  }
}

TEST(SurveyErrors, MissingFieldsNameTheKey) {
  expect_error(kGrid + "model:\n  type: constant\n" + kTime + kSources,
               {"t.yaml:5: model.velocity: missing"});
  expect_error(kModel + kTime + kSources, {"t.yaml: grid: missing"});
  expect_error(kGrid + kModel + kTime, {"sources: missing"});
  expect_error(kGrid + kModel + "time: {cfl: 0.5}\n" + kSources,
               {"time.duration: missing", "time.steps"});
  expect_error(kGrid + kModel + kTime + "sources: [{position: [1, 1, 1]}]\n",
               {"t.yaml:9: sources[0].wavelet: missing"});
}

TEST(SurveyErrors, ValueRanges) {
  expect_error("grid:\n  shape: [20, 20, 20]\n  spacing: [10, 0, 10]\n" + kModel + kTime + kSources,
               {"t.yaml:3: grid.spacing[1]: 0 is not allowed"});
  expect_error(kGrid + kModel + "time: {steps: 10, cfl: 1.5}\n" + kSources,
               {"t.yaml:7: time.cfl: 1.5", "0 < cfl <= 1"});
  expect_error(kGrid + kModel + "time: {steps: 0}\n" + kSources, {"time.steps: 0"});
  expect_error(kGrid + kModel + "time: {duration: -1}\n" + kSources, {"time.duration: -1"});
  expect_error(kGrid + kModel + "time: {steps: 10, dt: 0}\n" + kSources, {"time.dt: 0"});
  expect_error(kGrid + kModel + "time: {duration: 1, steps: 10}\n" + kSources,
               {"time.steps: 10", "only one of"});
  expect_error(kGrid + kModel + kTime + kSources + "boundary: {width: 10}\n",
               {"t.yaml:12: boundary.width: 10", "layer wider than half the grid", "<= 9"});
  expect_error(kGrid + kModel + kTime + kSources + "boundary: {width: 4, ntaper: 2}\n",
               {"boundary.ntaper: 2", "only one of"});
  expect_error(kGrid + kModel + kTime + kSources + "output: {snapshots: {every: 0}}\n",
               {"output.snapshots.every: 0", ">= 1"});
  expect_error(kGrid + kModel + kTime + kSources +
                   "output: {snapshots: {every: 5, box: {min: [50, 0, 0], max: [40, 10, 10]}}}\n",
               {"output.snapshots.box.max: [40, 10, 10]", "max >= min"});
  expect_error(kGrid + kModel + kTime + kSources +
                   "receivers: {lines: [{start: [0, 0, 0], end: [1, 1, 1], count: 1}]}\n",
               {"receivers.lines[0].count: 1", "[2, "});
}

TEST(SurveyErrors, PositionsOutsideTheGridNameTheAllowedRange) {
  expect_error(
      kGrid + kModel + kTime +
          "sources:\n  - position: [100, 200, 50]\n"
          "    wavelet: {type: ricker, frequency: 10}\n",
      {"t.yaml:10: sources[0].position: [100, 200, 50] is not allowed", "y must be in [0, 190]"});
  expect_error(kGrid + kModel + kTime + kSources +
                   "receivers:\n  grids:\n    - {origin: [0, 0, 0], step_a: [100, 0, 0], "
                   "step_b: [0, 0, 10], count: [3, 2]}\n",
               {"receivers.grids[0]", "receiver (2, 0) at [200, 0, 0]", "x must be in [0, 190]"});
}

TEST(SurveyErrors, ModelValues) {
  expect_error(kGrid + "model: {type: constant, velocity: -5}\n" + kTime + kSources,
               {"t.yaml:4: model.velocity: -5"});
  expect_error(kGrid +
                   "model: {type: layered, layers: [{top: 0, velocity: 1500}, "
                   "{top: -10, velocity: 2000}]}\n" +
                   kTime + kSources,
               {"model.layers[1].top: -10", "> 0"});
  expect_error(kGrid + "model: {type: gradient, v0: 1000, gradient: -10}\n" + kTime + kSources,
               {"model.gradient: -10", "z = 100"});
  expect_error(kGrid + "model: {type: file, file: no_such_file.bin}\n" + kTime + kSources,
               {"t.yaml:4: model.file: no_such_file.bin", "looked for"});
  expect_error(kGrid + "model: {type: stone}\n" + kTime + kSources,
               {"model.type: stone", "constant, layered, gradient, file"});
  expect_error("physics: tti\n" + kGrid + kModel + kTime + kSources,
               {"t.yaml:1: anisotropy: missing", "physics: tti needs"});
  expect_error("physics: elastic\n" + kGrid + kModel + kTime + kSources,
               {"t.yaml:1: physics: elastic", "acoustic, tti"});
  expect_error(kGrid + kModel + kTime + kSources +
                   "anisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0, theta: 0}\n",
               {"anisotropy", "only with physics: tti"});
}

TEST(SurveyErrors, FileModelShapeMustMatchTheGrid) {
  TempDir dir;
  write_floats(dir.path() / "vel.bin", std::vector<float>(20 * 20 * 20, 2000.0f));
  const std::string message = error_of(
      kGrid + "model: {type: file, file: vel.bin, shape: [20, 20, 10]}\n" + kTime + kSources,
      dir.path().string());
  EXPECT_NE(message.find("model.shape"), std::string::npos) << message;
  EXPECT_NE(message.find("[20, 20, 20]"), std::string::npos) << message;
}

TEST(SurveyErrors, YamlSyntaxErrorsNameTheLine) {
  expect_error("grid:\n  shape: [20, 20, 20\n  spacing: 10\n", {"t.yaml:3: YAML syntax error"});
  expect_error("grid:\n  shape: [9, 9, 9]\n spacing: 10\n", {"t.yaml:", "YAML syntax error"});
}

TEST(SurveyErrors, DuplicateKeysAndEmptySurveys) {
  expect_error("grid:\n  shape: [20, 20, 20]\n  spacing: 10\n  spacing: 20\n",
               {"t.yaml:4: grid.spacing", "first on line 3"});
  expect_error("", {"t.yaml", "empty"});
  expect_error("- a\n- b\n", {"t.yaml:1", "[a, b]", "a map"});
}

// ---- Velocity builder ----------------------------------------------------------------------

TEST(VelocityBuild, ConstantFillsEveryPoint) {
  ModelSpec spec;
  spec.kind = ModelSpec::Kind::Constant;
  spec.velocity = 1234;
  const std::vector<float> v = build_velocity(spec, small_grid(11, 7, 5));
  ASSERT_EQ(v.size(), 11u * 7u * 5u);
  for (float value : v)
    ASSERT_EQ(value, 1234.0f);
  EXPECT_EQ(model_vmin(v), 1234);
  EXPECT_EQ(model_vmax(v), 1234);
}

TEST(VelocityBuild, LayeredTakesTheLastLayerWhoseTopIsAbove) {
  ModelSpec spec;
  spec.kind = ModelSpec::Kind::Layered;
  spec.layers = {{20, 1500}, {35, 2000}, {60, 2800}};
  Grid grid = small_grid(3, 2, 10);
  const std::vector<float> v = build_velocity(spec, grid);
  // z = 0..90 step 10: above the first top (0, 10) and at it (20, 30) -> 1500; 40, 50 -> 2000;
  // 60 is exactly on the third top -> 2800.
  const float expected[] = {1500, 1500, 1500, 1500, 2000, 2000, 2800, 2800, 2800, 2800};
  for (int k = 0; k < 10; ++k) {
    for (int j = 0; j < 2; ++j) {
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(v[static_cast<std::size_t>(i + 3 * (j + 2 * k))], expected[k]) << k;
      }
    }
  }
  EXPECT_EQ(model_vmin(v), 1500);
  EXPECT_EQ(model_vmax(v), 2800);

  // Depth is measured in the grid's frame: an origin shifts which layer a row falls in.
  grid.oz = 40;
  EXPECT_EQ(build_velocity(spec, grid)[0], 2000.0f);
}

TEST(VelocityBuild, GradientIncreasesWithDepth) {
  ModelSpec spec;
  spec.kind = ModelSpec::Kind::Gradient;
  spec.v0 = 1500;
  spec.gradient = 0.5;
  spec.z0 = 20;
  const std::vector<float> v = build_velocity(spec, small_grid(2, 2, 6));
  for (int k = 0; k < 6; ++k) {
    EXPECT_FLOAT_EQ(v[static_cast<std::size_t>(4 * k)], 1500 + 0.5f * (10 * k - 20)) << k;
  }
}

TEST(VelocityBuild, GradientThatTurnsNegativeNamesTheDepth) {
  ModelSpec spec;
  spec.kind = ModelSpec::Kind::Gradient;
  spec.v0 = 100;
  spec.gradient = -2;
  spec.loc = SourceLoc{"g.yaml", 4, "model"};
  try {
    build_velocity(spec, small_grid(2, 2, 9));
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("g.yaml:4: model.gradient"), std::string::npos) << message;
    EXPECT_NE(message.find("z = 50"), std::string::npos) << message;
  }
}

TEST(VelocityBuild, FromAParsedSurveyWithAModelFile) {
  const Survey s = load_survey(std::string(MINIMOD_TEST_DATA) + "/good/file_model.yaml");
  const std::vector<float> v = build_velocity(s.model, make_grid(s.grid));
  ASSERT_EQ(v.size(), 9u * 9u * 9u);
  EXPECT_EQ(model_vmin(v), 2000);
  EXPECT_EQ(model_vmax(v), 2000);
}

class VelocityFile : public ::testing::Test {
protected:
  ModelSpec file_spec(const std::string& name, AxisOrder order) const {
    ModelSpec spec;
    spec.kind = ModelSpec::Kind::File;
    spec.file = (m_dir.path() / name).string();
    spec.order = order;
    spec.file_loc = SourceLoc{"f.yaml", 7, "model.file"};
    return spec;
  }
  /// A value that encodes its grid indices.
  static float tag(int i, int j, int k) { return 1000.0f + i + 10.0f * j + 100.0f * k; }

  TempDir m_dir;
  const Grid m_grid = small_grid(4, 3, 5);
};

TEST_F(VelocityFile, XyzIsReadAsIs) {
  std::vector<float> values;
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 4; ++i)
        values.push_back(tag(i, j, k));
  write_floats(m_dir.path() / "xyz.bin", values);
  EXPECT_EQ(build_velocity(file_spec("xyz.bin", AxisOrder::Xyz), m_grid), values);
}

TEST_F(VelocityFile, ZyxIsTransposedToXFastest) {
  std::vector<float> z_fastest;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k)
        z_fastest.push_back(tag(i, j, k));
  write_floats(m_dir.path() / "zyx.bin", z_fastest);
  const std::vector<float> v = build_velocity(file_spec("zyx.bin", AxisOrder::Zyx), m_grid);
  ASSERT_EQ(v.size(), 60u);
  for (int k = 0; k < 5; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 4; ++i)
        EXPECT_EQ(v[static_cast<std::size_t>(i + 4 * (j + 3 * k))], tag(i, j, k));
}

TEST_F(VelocityFile, WrongSizeNamesExpectedAndActualBytes) {
  write_floats(m_dir.path() / "short.bin", std::vector<float>(59, 2000.0f));
  try {
    build_velocity(file_spec("short.bin", AxisOrder::Xyz), m_grid);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("f.yaml:7: model.file"), std::string::npos) << message;
    EXPECT_NE(message.find("236 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("240 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("short.bin"), std::string::npos) << message;
  }
}

TEST_F(VelocityFile, MissingFileNamesModelFile) {
  try {
    build_velocity(file_spec("absent.bin", AxisOrder::Xyz), m_grid);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("f.yaml:7: model.file"), std::string::npos) << message;
    EXPECT_NE(message.find("absent.bin"), std::string::npos) << message;
  }
}

TEST_F(VelocityFile, BadValuesNameTheFirstPointInFileOrder) {
  struct BadValue {
    float value;
    const char* shown;
  };
  const BadValue bad_values[] = {{std::numeric_limits<float>::quiet_NaN(), "nan"},
                                 {std::numeric_limits<float>::infinity(), "inf"},
                                 {0.0f, "0"},
                                 {-1500.0f, "-1500"}};
  for (const BadValue& bad : bad_values) {
    for (const AxisOrder order : {AxisOrder::Xyz, AxisOrder::Zyx}) {
      std::vector<float> values(60, 2000.0f);
      // Point (i, j, k) = (1, 2, 3) in the file's own order, and a later one.
      const std::size_t at = order == AxisOrder::Xyz ? 1 + 4 * (2 + 3 * 3) : 3 + 5 * (2 + 3 * 1);
      values[at] = bad.value;
      values[59] = bad.value;
      write_floats(m_dir.path() / "bad.bin", values);
      try {
        build_velocity(file_spec("bad.bin", order), m_grid);
        ADD_FAILURE() << "no error for " << bad.shown;
      } catch (const InputError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("f.yaml:7: model.file: " + std::string(bad.shown) +
                               " at (i, j, k) = (1, 2, 3)"),
                  std::string::npos)
            << message;
      }
    }
  }
}

// ---- Shots, receiver geometry, interpolation, free surface ------------------------------------

TEST(SurveyShots, SourcesMakeOneShot) {
  const Survey s = parse(kGrid + kModel + kTime + kSources);
  ASSERT_EQ(s.shots.size(), 1u);
  EXPECT_EQ(s.shots[0].sources.size(), 1u);
  EXPECT_EQ(s.interpolation, Interpolation::Sinc);
  EXPECT_FALSE(s.boundary.free_surface);
  EXPECT_FALSE(s.receivers_move);
}

TEST(SurveyShots, ShotLineGivesOneShotPerPosition) {
  const Survey s = parse(kGrid + kModel + kTime +
                         "shots:\n"
                         "  wavelet: {type: ricker, frequency: 12}\n"
                         "  injection: minimod\n"
                         "  positions:\n"
                         "    lines: [{start: [20, 100, 30], end: [170, 100, 30], count: 6}]\n"
                         "    points: [[95, 95, 95]]\n");
  ASSERT_EQ(s.shots.size(), 7u);
  EXPECT_DOUBLE_EQ(s.shots[0].sources[0].position[0], 95); // points come first
  EXPECT_DOUBLE_EQ(s.shots[1].sources[0].position[0], 20);
  EXPECT_DOUBLE_EQ(s.shots[6].sources[0].position[0], 170);
  EXPECT_EQ(s.shots[3].sources[0].injection, Injection::Minimod);
  EXPECT_DOUBLE_EQ(s.shots[3].sources[0].wavelet.frequency, 12);
  EXPECT_EQ(survey_for_shot(s, 6).sources[0].position, (Vec3{170, 100, 30}));
}

TEST(SurveyShots, SourcesAndShotsTogetherAreAnError) {
  expect_error(kGrid + kModel + kTime + kSources +
                   "shots:\n  wavelet: {type: ricker, frequency: 12}\n"
                   "  positions: {points: [[50, 50, 50]]}\n",
               {"t.yaml:", "shots", "not both"});
}

TEST(SurveyShots, ShotOutsideTheGridNamesThePosition) {
  expect_error(kGrid + kModel + kTime +
                   "shots:\n  wavelet: {type: ricker, frequency: 12}\n"
                   "  positions: {points: [[50, 50, 50], [500, 50, 50]]}\n",
               {"shots.positions.points[1]", "500", "outside the grid"});
}

TEST(SurveyReceivers, MovingReceiversFollowEachShot) {
  const Survey s = parse(kGrid + kModel + kTime +
                         "shots:\n  wavelet: {type: ricker, frequency: 12}\n"
                         "  positions: {points: [[50, 50, 20], [120, 50, 20]]}\n"
                         "receivers:\n  moving: true\n  points: [[-30, 0, 10], [40, 20, 0]]\n");
  ASSERT_TRUE(s.receivers_move);
  const Survey shot1 = survey_for_shot(s, 1);
  EXPECT_EQ(shot1.receivers[0].position, (Vec3{90, 50, 30}));
  EXPECT_EQ(shot1.receivers[1].position, (Vec3{160, 70, 20}));
  // 120 + 80 = 200 m lies beyond the grid's last point at 190 m.
  const Survey far = parse(kGrid + kModel + kTime +
                           "shots:\n  wavelet: {type: ricker, frequency: 12}\n"
                           "  positions: {points: [[50, 50, 20], [120, 50, 20]]}\n"
                           "receivers:\n  moving: true\n  points: [[80, 0, 0]]\n");
  EXPECT_NO_THROW(survey_for_shot(far, 0));
  try {
    survey_for_shot(far, 1);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("shot 1"), std::string::npos) << m;
    EXPECT_NE(m.find("receivers.points[0]"), std::string::npos) << m;
  }
}

TEST(SurveyReceivers, CsvFileWithHeader) {
  const TempDir dir;
  write_text(dir.path() / "rcv.csv", "x,y,z\n10, 20, 30\n 15.5,25,35 \n\n190,190,0\n");
  const Survey s = parse(kGrid + kModel + kTime + kSources + "receivers:\n  csv: rcv.csv\n",
                         dir.path().string());
  ASSERT_EQ(s.receivers.size(), 3u);
  EXPECT_EQ(s.receivers[1].position, (Vec3{15.5, 25, 35}));
  write_text(dir.path() / "bad.csv", "x,y,z\n10, 20\n");
  const std::string m = error_of(kGrid + kModel + kTime + kSources + "receivers:\n  csv: bad.csv\n",
                                 dir.path().string());
  EXPECT_NE(m.find("receivers.csv"), std::string::npos) << m;
  EXPECT_NE(m.find("line 2"), std::string::npos) << m;
  write_text(dir.path() / "out.csv", "x,y,z\n10, 20, 900\n");
  const std::string o = error_of(kGrid + kModel + kTime + kSources + "receivers:\n  csv: out.csv\n",
                                 dir.path().string());
  EXPECT_NE(o.find("outside the grid"), std::string::npos) << o;
}

/// A CSV of numbers alone keeps its first receiver: the first row is a header only when its
/// first field is not a number.
TEST(SurveyReceivers, CsvFileWithoutHeaderKeepsFirstReceiver) {
  const TempDir dir;
  write_text(dir.path() / "rcv.csv", "\n10, 20, 30\n15.5 25 35\n");
  const Survey s = parse(kGrid + kModel + kTime + kSources + "receivers:\n  csv: rcv.csv\n",
                         dir.path().string());
  ASSERT_EQ(s.receivers.size(), 2u);
  EXPECT_EQ(s.receivers[0].position, (Vec3{10, 20, 30}));
  EXPECT_EQ(s.receivers[1].position, (Vec3{15.5, 25, 35}));
  // A header of names is skipped; a second non-numeric row is an error naming its line.
  write_text(dir.path() / "two.csv", "x,y,z\nrx,ry,rz\n10, 20, 30\n");
  const std::string m = error_of(kGrid + kModel + kTime + kSources + "receivers:\n  csv: two.csv\n",
                                 dir.path().string());
  EXPECT_NE(m.find("line 2: 'rx ry rz'"), std::string::npos) << m;
  EXPECT_NE(m.find("after an optional header line"), std::string::npos) << m;
}

TEST(SurveyTti, AnisotropyOfEveryKind) {
  const Survey s = parse("physics: tti\n" + kGrid + kModel + kTime + kSources +
                         "anisotropy:\n"
                         "  angle_unit: radians\n"
                         "  epsilon: 0.2\n"
                         "  delta: {type: layered, layers: [{top: 0, value: 0.05}, "
                         "{top: 100, value: 0.1}]}\n"
                         "  theta: {type: gradient, value0: 0.1, gradient: 0.001}\n"
                         "  phi: {type: constant, value: 0.3}\n");
  ASSERT_TRUE(s.anisotropy);
  EXPECT_FALSE(s.anisotropy->degrees);
  EXPECT_EQ(s.anisotropy->delta.kind, PropertySpec::Kind::Layered);
  const Grid g = make_grid(s.grid);
  const std::vector<float> delta = build_property(s.anisotropy->delta, g);
  EXPECT_FLOAT_EQ(delta[0], 0.05f);                                 // z = 0
  EXPECT_FLOAT_EQ(delta[static_cast<std::size_t>(15) * 400], 0.1f); // z = 150 m
  const std::vector<float> theta = build_property(s.anisotropy->theta, g, 2.0);
  EXPECT_NEAR(theta[static_cast<std::size_t>(10) * 400], 2.0 * (0.1 + 0.001 * 100), 1e-6);
  expect_error("physics: tti\n" + kGrid + kModel + kTime + kSources +
                   "anisotropy: {epsilon: 0.2, delta: 0.1, theta: 30}\n",
               {"anisotropy.angle_unit", "missing"});
  const Survey fs =
      parse("physics: tti\n" + kGrid + kModel + kTime + kSources +
            "boundary: {free_surface: true}\n"
            "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, theta: 30}\n");
  EXPECT_TRUE(fs.boundary.free_surface);
  const Survey cpml =
      parse("physics: tti\n" + kGrid + kModel + kTime + kSources +
            "boundary: {type: cpml}\n"
            "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, theta: 30}\n");
  EXPECT_EQ(cpml.boundary.type, BoundaryType::Cpml);
}

TEST(SurveyOptions, InterpolationAndFreeSurface) {
  const Survey s = parse(kGrid + kModel + kTime + kSources +
                         "interpolation: trilinear\nboundary: {free_surface: true, width: 5}\n");
  EXPECT_EQ(s.interpolation, Interpolation::Trilinear);
  EXPECT_TRUE(s.boundary.free_surface);
  expect_error(kGrid + kModel + kTime + kSources + "interpolation: cubic\n",
               {"interpolation", "cubic", "trilinear", "sinc"});
  expect_error(kGrid + kModel + kTime + kSources + "boundary: {free_surface: maybe}\n",
               {"boundary.free_surface", "maybe"});
}

TEST(SurveyModelFiles, CoarseRawModelIsResampledOntoTheGrid) {
  const TempDir dir;
  // v = 1500 + 10 z on a 4 x 4 x 4 model at 60 m: linear, so trilinear resampling is exact.
  std::vector<float> v;
  for (int k = 0; k < 4; ++k)
    for (int n = 0; n < 16; ++n)
      v.push_back(1500.0f + 10.0f * 60.0f * k);
  write_floats(dir.path() / "coarse.bin", v);
  // The model ends at 180 m, the grid at 190 m: refused unless the survey asks for the edge fill.
  const Survey partial = parse(kGrid +
                                   "model: {type: file, file: coarse.bin, shape: [4, 4, 4], "
                                   "spacing: 60}\n" +
                                   kTime + kSources,
                               dir.path().string());
  try {
    build_velocity(partial.model, make_grid(partial.grid));
    ADD_FAILURE() << "no InputError for a model that covers part of the grid";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("t.yaml:4: model.file"), std::string::npos) << m;
    EXPECT_NE(m.find("covers x [0, 180], y [0, 180], z [0, 180] m, the grid x [0, 190], "
                     "y [0, 190], z [0, 190] m: 1141 of 8000 grid points lie outside"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("model.extend: edge"), std::string::npos) << m;
  }
  const std::string bad_extend =
      error_of(kGrid +
                   "model: {type: file, file: coarse.bin, shape: [4, 4, 4], spacing: 60, extend: "
                   "nearest}\n" +
                   kTime + kSources,
               dir.path().string());
  EXPECT_NE(bad_extend.find("model.extend"), std::string::npos) << bad_extend;
  EXPECT_NE(bad_extend.find("nearest"), std::string::npos) << bad_extend;
  const Survey s = parse(kGrid +
                             "model: {type: file, file: coarse.bin, shape: [4, 4, 4], "
                             "spacing: 60, extend: edge}\n" +
                             kTime + kSources,
                         dir.path().string());
  EXPECT_TRUE(s.model.extend_edge);
  std::string notice;
  const std::vector<float> grid_v = build_velocity(s.model, make_grid(s.grid), &notice);
  ASSERT_EQ(grid_v.size(), 20u * 20u * 20u);
  EXPECT_FALSE(notice.empty());
  for (int k = 0; k < 20; ++k) {
    const double z = std::min(10.0 * k, 180.0); // beyond the model's last plane: its edge value
    EXPECT_NEAR(grid_v[static_cast<std::size_t>(k) * 400 + 7], 1500 + 10 * z, 1e-3) << k;
  }
  const std::string m =
      error_of(kGrid + "model: {type: file, file: coarse.bin, format: npy, dataset: /vp}\n" +
                   kTime + kSources,
               dir.path().string());
  EXPECT_NE(m.find("model.dataset"), std::string::npos) << m;
  EXPECT_NE(m.find("hdf5"), std::string::npos) << m;
}

} // namespace
} // namespace minimod
