/// The medium a run used, stored in its output as /model (docs/output.md): equal to the model the
/// run built, decimated by the documented rule when large, with units and geometry, shown by the
/// XDMF sidecar, read by `plot --model`, and carried over by `merge`.
#include "io/h5_output.hpp"
#include "io/survey.hpp"
#include "models/velocity.hpp"
#include "solver/plan.hpp"
#include "solver/tti_run.hpp"
#include "solver/wavelet.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = MINIMOD_BINARY;

class ModelDir : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            (std::string("minimod_model_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string at(const std::string& name) const { return (m_dir / name).string(); }
  int run(const std::string& args) const {
    const int status =
        std::system((kBinary + " " + args + " > " + at("run.log") + " 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string text(const std::string& name) const {
    std::ifstream in(at(name));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path m_dir;
};

/// A string attribute of dataset `path` in `file` (variable-length UTF-8, as the writer stores).
std::string dataset_string_attribute(const std::string& file, const char* path, const char* name) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  const hid_t a = H5Aopen(d, name, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a);
  char* value = nullptr;
  std::string out = "<unreadable>";
  if (a >= 0 && H5Aread(a, type, &value) >= 0 && value != nullptr) out = value;
  H5free_memory(value);
  H5Tclose(type);
  H5Aclose(a);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

TEST(StoredModel, DecimationKeepsAtMost256PointsAlongEachAxis) {
  const StoredModel m = model_geometry({600, 256, 257}, {-100, 0, 5}, {10, 20, 4});
  EXPECT_EQ(m.decimation, (std::array<int, 3>{3, 1, 2}));
  EXPECT_EQ(m.shape, (std::array<int, 3>{200, 256, 129}));
  EXPECT_EQ(m.spacing, (std::array<double, 3>{30, 20, 8}));
  EXPECT_EQ(m.origin, (std::array<double, 3>{-100, 0, 5}));
  const StoredModel small = model_geometry({31, 21, 25}, {0, 0, 0}, {10, 10, 10});
  EXPECT_EQ(small.decimation, (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(small.shape, (std::array<int, 3>{31, 21, 25}));
}

TEST(StoredModel, DecimatedValuesAreThoseOfTheKeptGridPoints) {
  StoredModel m = model_geometry({520, 3, 300}, {0, 0, 0}, {1, 1, 1});
  ASSERT_EQ(m.decimation, (std::array<int, 3>{3, 1, 2}));
  std::vector<float> grid(520 * 3 * 300);
  for (int k = 0; k < 300; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 520; ++i)
        grid[(static_cast<std::size_t>(k) * 3 + j) * 520 + i] =
            static_cast<float>(i + 1000 * j + 10000 * k);
  add_model_property(m, "vp", "m/s", grid);
  ASSERT_EQ(m.shape, (std::array<int, 3>{174, 3, 150}));
  const auto& v = m.properties.at(0).values;
  ASSERT_EQ(v.size(), 174u * 3u * 150u);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[1], 3.0f);                            // x index 1 -> grid point 3
  EXPECT_EQ(v[173], 519.0f);                        // the last kept x: 173 * 3
  EXPECT_EQ(v[174], 1000.0f);                       // y index 1
  EXPECT_EQ(v[174 * 3], 20000.0f);                  // z index 1 -> grid point 2
  EXPECT_EQ(v.back(), 519.0f + 2000 + 10000 * 298); // the last kept point of each axis
  EXPECT_THROW(add_model_property(m, "delta", "1", std::vector<float>(7)), std::logic_error);
}

TEST_F(ModelDir, LayeredModelIsStoredAsBuiltWithUnitsAndSidecar) {
  std::ofstream(at("s.yaml"))
      << "grid: {shape: [31, 21, 25], spacing: [10, 12, 8], origin: [-100, 50, 0]}\n"
         "model: {type: layered, layers: [{top: 0, velocity: 1600}, {top: 90, velocity: 2400},"
         " {top: 150, velocity: 3100}]}\n"
         "time: {steps: 5}\n"
         "boundary: {width: 6}\n"
         "sources: [{position: [50, 170, 60], wavelet: {type: ricker, frequency: 20}}]\n"
         "receivers: {points: [[60, 170, 40]]}\n";
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu -q"), 0)
      << text("run.log");
  const Survey survey = load_survey(at("s.yaml"));
  const Grid grid = make_grid(survey.grid);
  const std::vector<float> built = build_velocity(survey.model, grid);

  const StoredModel stored = read_model(at("a.h5"));
  ASSERT_EQ(stored.properties.size(), 1u);
  EXPECT_EQ(stored.properties[0].name, "vp");
  EXPECT_EQ(stored.properties[0].units, "m/s");
  EXPECT_EQ(stored.properties[0].values, built); // bit for bit, nothing decimated
  EXPECT_EQ(stored.shape, (std::array<int, 3>{31, 21, 25}));
  EXPECT_EQ(stored.decimation, (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(stored.origin, (std::array<double, 3>{-100, 50, 0}));
  EXPECT_EQ(stored.spacing, (std::array<double, 3>{10, 12, 8}));
  // The three layers are there: the first and last depth plane differ as the survey says.
  EXPECT_EQ(stored.properties[0].values.front(), 1600.0f);
  EXPECT_EQ(stored.properties[0].values.back(), 3100.0f);
  EXPECT_EQ(dataset_string_attribute(at("a.h5"), "/model/vp", "origin_units"), "m");

  const std::string xmf = text("a.xmf");
  EXPECT_NE(xmf.find("<Grid Name=\"model (z is depth, positive down)\""), std::string::npos) << xmf;
  EXPECT_NE(xmf.find("Dimensions=\"25 21 31\">a.h5:/model/vp</DataItem>"), std::string::npos)
      << xmf;
  EXPECT_NE(xmf.find(">0 50 -100</DataItem>"), std::string::npos) << xmf; // origin z y x
  EXPECT_NE(xmf.find(">8 12 10</DataItem>"), std::string::npos) << xmf;   // spacing z y x

  // The source wavelet, as the solver sampled it: the survey's Ricker at the solver's dt.
  const Plan plan = make_plan(survey, built, 0);
  const ShotGather gather = read_shot_gather(at("a.h5"), 0);
  ASSERT_EQ(gather.wavelet_samples, 5);
  EXPECT_EQ(gather.wavelet_dt, plan.dt);
  EXPECT_EQ(gather.wavelet,
            sample_wavelet(survey.shots.at(0).sources.at(0).wavelet, plan.dt, 5, "wavelet"));
  EXPECT_EQ(dataset_string_attribute(at("a.h5"), "/shots/0000/wavelet", "units"),
            "source amplitude (the survey's wavelet)");
  EXPECT_EQ(dataset_string_attribute(at("a.h5"), "/shots/0000/wavelet", "dt_units"), "s");

  // plot --model reads what was written.
  ASSERT_EQ(run("plot " + at("a.h5") + " --model -o " + at("m.png")), 0) << text("run.log");
  EXPECT_NE(text("run.log").find("1600 to 3100 m/s"), std::string::npos) << text("run.log");
  EXPECT_TRUE(fs::exists(at("m.png")));
}

TEST_F(ModelDir, LargeGridIsDecimatedByTheRule) {
  // 300 points in depth: every second one is kept (ceil(300 / 256) = 2), the others axes whole.
  std::ofstream(at("s.yaml"))
      << "grid: {shape: [10, 9, 300], spacing: 5}\n"
         "model: {type: gradient, v0: 1500, gradient: 1}\n"
         "time: {steps: 2}\n"
         "boundary: {width: 3}\n"
         "sources: [{position: [25, 20, 700], wavelet: {type: ricker, frequency: 20}}]\n"
         "receivers: {points: [[25, 20, 720]]}\n";
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu -q"), 0)
      << text("run.log");
  const Survey survey = load_survey(at("s.yaml"));
  const std::vector<float> built = build_velocity(survey.model, make_grid(survey.grid));
  const StoredModel stored = read_model(at("a.h5"));
  ASSERT_EQ(stored.properties.size(), 1u);
  EXPECT_EQ(stored.decimation, (std::array<int, 3>{1, 1, 2}));
  EXPECT_EQ(stored.shape, (std::array<int, 3>{10, 9, 150}));
  EXPECT_EQ(stored.spacing, (std::array<double, 3>{5, 5, 10}));
  const auto& v = stored.properties[0].values;
  ASSERT_EQ(v.size(), 10u * 9u * 150u);
  for (int k = 0; k < 150; ++k)
    for (int j = 0; j < 9; ++j)
      for (int i = 0; i < 10; ++i)
        ASSERT_EQ(v[(static_cast<std::size_t>(k) * 9 + j) * 10 + i],
                  built[(static_cast<std::size_t>(2 * k) * 9 + j) * 10 + i])
            << i << " " << j << " " << k;
  EXPECT_EQ(v.back(), 1500.0f + 298 * 5); // depth of the last kept plane, 1490 m
}

TEST_F(ModelDir, TtiMediumIsStoredWithItsUnits) {
  std::ofstream(at("t.yaml")) << "physics: tti\n"
                                 "grid: {shape: [25, 21, 23], spacing: 10}\n"
                                 "model: {type: constant, velocity: 2000}\n"
                                 "anisotropy: {angle_unit: degrees, epsilon: 0.15, delta: 0.05, "
                                 "theta: 30}\n"
                                 "time: {steps: 4}\n"
                                 "boundary: {width: 6}\n"
                                 "sources: [{position: [120, 100, 110], wavelet: {type: ricker, "
                                 "frequency: 15}}]\n"
                                 "receivers: {points: [[130, 100, 90]]}\n";
  ASSERT_EQ(run("run " + at("t.yaml") + " -o " + at("t.h5") + " --backend cpu -q"), 0)
      << text("run.log");
  const Survey survey = load_survey(at("t.yaml"));
  const Grid grid = make_grid(survey.grid);
  const TtiModel built = build_tti_model(survey, grid);
  const StoredModel stored = read_model(at("t.h5"));
  ASSERT_EQ(stored.properties.size(), 5u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"vp", "m/s"}, {"epsilon", "1"}, {"delta", "1"}, {"theta", "rad"}, {"phi", "rad"}};
  for (std::size_t n = 0; n < expected.size(); ++n) {
    EXPECT_EQ(stored.properties[n].name, expected[n].first);
    EXPECT_EQ(stored.properties[n].units, expected[n].second) << expected[n].first;
  }
  EXPECT_EQ(stored.properties[0].values, built.vp);
  EXPECT_EQ(stored.properties[1].values, built.epsilon);
  EXPECT_EQ(stored.properties[2].values, built.delta);
  EXPECT_EQ(stored.properties[3].values, built.theta);
  EXPECT_NEAR(stored.properties[3].values.at(0), 30.0 * 3.14159265358979 / 180.0, 1e-6);
  EXPECT_EQ(stored.properties[4].values, std::vector<float>(grid.points(), 0.0f));
  EXPECT_NE(text("t.xmf").find("t.h5:/model/theta"), std::string::npos) << text("t.xmf");
  const ShotGather gather = read_shot_gather(at("t.h5"), 0);
  EXPECT_EQ(gather.wavelet_samples, 4);
  EXPECT_EQ(gather.wavelet.size(), 4u);
  EXPECT_GT(gather.wavelet_dt, 0.0);
}

TEST_F(ModelDir, MergeCarriesTheModel) {
  std::ofstream(at("s.yaml"))
      << "grid: {shape: [31, 21, 25], spacing: 10}\n"
         "model: {type: layered, layers: [{top: 0, velocity: 1600}, {top: 90, velocity: 2400}]}\n"
         "time: {steps: 5}\n"
         "boundary: {width: 6}\n"
         "shots:\n"
         "  wavelet: {type: ricker, frequency: 20}\n"
         "  positions: {lines: [{start: [100, 100, 60], end: [200, 100, 60], count: 2}]}\n"
         "receivers: {points: [[150, 100, 40]]}\n";
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("a.h5") + " --backend cpu -q --shots 0"), 0);
  ASSERT_EQ(run("run " + at("s.yaml") + " -o " + at("b.h5") + " --backend cpu -q --shots 1"), 0);
  ASSERT_EQ(run("merge " + at("m.h5") + " " + at("a.h5") + " " + at("b.h5")), 0) << text("run.log");
  const StoredModel a = read_model(at("a.h5")), m = read_model(at("m.h5"));
  ASSERT_EQ(m.properties.size(), 1u);
  EXPECT_EQ(m.properties[0].values, a.properties.at(0).values);
  EXPECT_EQ(m.origin, a.origin);
  EXPECT_EQ(m.spacing, a.spacing);
  EXPECT_EQ(m.decimation, a.decimation);
  EXPECT_NE(text("m.xmf").find("m.h5:/model/vp"), std::string::npos);
}

} // namespace
} // namespace minimod
