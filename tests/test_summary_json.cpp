/// `minimod-gpu run --summary FILE.json` through the real program: the fields, their order and
/// values, and what becomes of a value JSON cannot hold as it is.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

/// A folder of its own under the system temp folder, removed at the end.
class SummaryDir : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() / (std::string("minimod_summary_") + info->name() + "_" +
                                         std::to_string(static_cast<long>(::getpid())));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    std::ofstream(at("s.yaml")) << "grid: {shape: [24, 22, 20], spacing: 10}\n"
                                   "model: {type: constant, velocity: 2000}\n"
                                   "time: {steps: 4}\n"
                                   "boundary: {width: 4}\n"
                                   "sources:\n"
                                   "  - position: [110, 100, 90]\n"
                                   "    wavelet: {type: ricker, frequency: 10}\n"
                                   "receivers:\n"
                                   "  points: [[130, 100, 90]]\n";
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string at(const std::string& name) const { return (m_dir / name).string(); }

  /// Runs the survey on the CPU with `-o output --summary sum.json`; the exit code.
  int run(const std::string& output) const {
    const std::string command = std::string("'") + MINIMOD_BINARY + "' run '" + at("s.yaml") +
                                "' -o '" + output + "' --backend cpu --quiet --summary '" +
                                at("sum.json") + "' > '" + at("log") + "' 2>&1";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string read(const std::string& name) const {
    std::ifstream in(at(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path m_dir;
};

std::vector<std::string> keys_of(const Json& object) {
  std::vector<std::string> out;
  for (const auto& item : object.items())
    out.push_back(item.key());
  return out;
}

TEST_F(SummaryDir, FieldsInOrderWithTheirValues) {
  ASSERT_EQ(run(at("out.h5")), 0) << read("log");
  const std::string text = read("sum.json");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.rfind("{\n  \"program\": \"minimod-gpu\",\n", 0), 0u) << text;
  EXPECT_EQ(text.substr(text.size() - 6), "  ]\n}\n") << "one newline at the end";
  EXPECT_FALSE(fs::exists(at("sum.json.tmp"))) << "written through a temporary name";

  const Json doc = Json::parse(text);
  EXPECT_EQ(keys_of(doc),
            (std::vector<std::string>{"program", "version", "commit", "date", "grid", "boundary",
                                      "dt", "steps", "backend", "device", "kernels",
                                      "ms_per_step_median", "ms_total", "mpoints_per_s",
                                      "final_wavefield", "output", "startup", "wall", "shots"}));
  EXPECT_EQ(doc["program"], "minimod-gpu");
  const std::string date = doc["date"].get<std::string>();
  EXPECT_EQ(date.size(), 20u) << date;
  EXPECT_EQ(date.back(), 'Z') << date;

  const Json& grid = doc["grid"];
  EXPECT_EQ(keys_of(grid), (std::vector<std::string>{"shape", "spacing", "layer"}));
  EXPECT_EQ(grid["shape"], Json({24, 22, 20}));
  EXPECT_EQ(grid["spacing"], Json({10.0, 10.0, 10.0}));
  EXPECT_EQ(grid["layer"], Json({4, 4, 4, 4, 4, 4}));
  EXPECT_EQ(doc["boundary"], Json({{"type", "minimod"}})) << "the width given: no target";

  ASSERT_TRUE(doc["dt"].is_number_float());
  EXPECT_GT(doc["dt"].get<double>(), 0.0);
  EXPECT_LT(doc["dt"].get<double>(), 0.01);
  EXPECT_EQ(doc["steps"], 4);
  EXPECT_EQ(doc["backend"], "cpu");
  EXPECT_TRUE(doc["device"].is_string());
  EXPECT_EQ(keys_of(doc["kernels"]),
            (std::vector<std::string>{"inner", "top", "bottom", "front", "back", "left", "right"}));
  for (const auto& item : doc["kernels"].items())
    EXPECT_EQ(item.value(), "cpu") << item.key();
  EXPECT_GT(doc["ms_per_step_median"].get<double>(), 0.0);
  EXPECT_GE(doc["ms_total"].get<double>(), doc["ms_per_step_median"].get<double>());
  EXPECT_GT(doc["mpoints_per_s"].get<double>(), 0.0);

  const Json& field = doc["final_wavefield"];
  EXPECT_EQ(keys_of(field), (std::vector<std::string>{"min", "max", "rms"}));
  for (const auto& item : field.items())
    EXPECT_TRUE(item.value().is_number()) << item.key() << " is " << item.value();
  EXPECT_LT(field["min"].get<double>(), field["max"].get<double>()) << "the source has fired";
  EXPECT_GT(field["rms"].get<double>(), 0.0);

  EXPECT_EQ(doc["output"], at("out.h5"));
  EXPECT_EQ(keys_of(doc["startup"]),
            (std::vector<std::string>{"mpi_init_ms", "model_ms", "problem_ms", "device_setup_ms"}));
  EXPECT_EQ(doc["startup"]["mpi_init_ms"].get<double>(), 0.0) << "no MPI launcher";
  // The wall time: the shots within the program, the assembly after them.
  const Json& wall = doc["wall"];
  EXPECT_EQ(keys_of(wall), (std::vector<std::string>{"program_ms", "farm_ms", "assemble_ms"}));
  EXPECT_GT(wall["assemble_ms"].get<double>(), 0.0);
  EXPECT_GE(wall["farm_ms"].get<double>(), doc["ms_total"].get<double>());
  EXPECT_GE(wall["program_ms"].get<double>(),
            wall["farm_ms"].get<double>() + wall["assemble_ms"].get<double>());
  ASSERT_EQ(doc["shots"].size(), 1u);
  const Json& shot = doc["shots"][0];
  EXPECT_EQ(keys_of(shot),
            (std::vector<std::string>{"shot", "rank", "setup_ms", "step_ms", "output_ms", "ranks",
                                      "halo_ms", "halo_transport", "wait_ms", "overhead_percent"}));
  EXPECT_EQ(shot["shot"], 0);
  EXPECT_EQ(shot["rank"], 0);
  EXPECT_EQ(shot["ranks"], 1); // the grid is not split: one rank, no halo exchange
  EXPECT_EQ(shot["halo_ms"].get<double>(), 0.0);
  EXPECT_EQ(shot["halo_transport"], "none");
  EXPECT_EQ(shot["wait_ms"].get<double>(), 0.0) << "one process asks no one for its shots";
  EXPECT_NEAR(shot["overhead_percent"].get<double>(),
              100.0 * (shot["setup_ms"].get<double>() + shot["output_ms"].get<double>()) /
                  shot["step_ms"].get<double>(),
              1e-9);
}

// A C-PML whose width the plan chose from its reflection target names the target beside the
// type, and the layer is the width it chose (-47 dB: 9 points, which the 20-point z axis holds).
TEST_F(SummaryDir, NamesTheReflectionTargetThatChoseTheWidth) {
  std::string survey = read("s.yaml");
  const std::string width = "boundary: {width: 4}\n";
  survey.replace(survey.find(width), width.size(), "boundary: {type: cpml, reflection_db: -47}\n");
  std::ofstream(at("s.yaml")) << survey;
  ASSERT_EQ(run(at("out.h5")), 0) << read("log");
  const Json doc = Json::parse(read("sum.json"));
  EXPECT_EQ(doc["boundary"], Json({{"type", "cpml"}, {"reflection_db", -47.0}}));
  EXPECT_EQ(doc["grid"]["layer"], Json({9, 9, 9, 9, 9, 9}));
}

// A path in another encoding than UTF-8 is written with U+FFFD for the stray byte: the summary
// stays valid JSON and the run succeeds, rather than failing at its end.
TEST_F(SummaryDir, OutputPathThatIsNotUtf8) {
  const std::string output = at("out\xff.h5");
  ASSERT_EQ(run(output), 0) << read("log");
  EXPECT_TRUE(fs::exists(output));
  const Json doc = Json::parse(read("sum.json"));
  EXPECT_EQ(doc["output"], at("out\xef\xbf\xbd.h5"));
}

} // namespace
