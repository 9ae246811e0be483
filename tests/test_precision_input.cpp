/// What a run's precision takes as input: the survey key `precision`, --precision in its place,
/// the refusals of what float16 does not have yet (TTI, the C-PML, a split grid) before any step,
/// the run's fingerprint and what validate prints.
#include "core/errors.hpp"
#include "io/parts_store.hpp"
#include "io/survey.hpp"
#include "solver/decomposition.hpp"
#include "solver/survey_run.hpp"
#include "solver/validate.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace minimod {
namespace {

const std::string kSurvey = "grid: {shape: [40, 30, 24], spacing: 10}\n"
                            "model: {type: constant, velocity: 2000}\n"
                            "time: {steps: 10}\n"
                            "boundary: {width: 5}\n"
                            "sources: [{position: [200, 150, 120], wavelet: {type: ricker, "
                            "frequency: 10}}]\n"
                            "receivers: {points: [[197, 150, 120]]}\n";

const std::string kTti = "physics: tti\n"
                         "anisotropy: {angle_unit: degrees, epsilon: 0.1, delta: 0, theta: 0}\n";

Survey parse(const std::string& text) {
  return parse_survey(text, "p.yaml", ".");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return "";
}

/// The message of the InputError that `f` throws ("" and a failure when it throws none).
template <class F> std::string error_from(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

void expect_has(const std::string& text, std::initializer_list<const char*> pieces) {
  for (const char* piece : pieces)
    EXPECT_NE(text.find(piece), std::string::npos) << "'" << piece << "' not in: " << text;
}

TEST(PrecisionInput, SurveyKey) {
  EXPECT_EQ(parse(kSurvey).precision, Precision::Float32);
  EXPECT_EQ(parse(kSurvey + "precision: float32\n").precision, Precision::Float32);
  const Survey s = parse(kSurvey + "precision: float16\n");
  EXPECT_EQ(s.precision, Precision::Float16);
  EXPECT_EQ(s.precision_loc.where(), "p.yaml:7: precision");

  expect_has(error_of(kSurvey + "precision: float64\n"),
             {"p.yaml:7: precision", "float64", "is not allowed", "float32, float16"});
  expect_has(error_of(kSurvey + "precision: [float16]\n"), {"p.yaml:7: precision", "float32"});
  expect_has(error_of(kSurvey + "precision:\n"), {"precision: (empty) is not allowed"});
}

TEST(PrecisionInput, SurveyRefusesWhatFloat16DoesNotHave) {
  // Each names precision (its line) and the other key (its line).
  expect_has(error_of(kTti + kSurvey + "precision: float16\n"),
             {"p.yaml:9: precision: float16", "physics: tti (p.yaml:1: physics)", "acoustic"});
  EXPECT_NO_THROW(parse(kTti + kSurvey + "precision: float32\n"));
  const std::string cpml = "grid: {shape: [40, 30, 24], spacing: 10}\n"
                           "model: {type: constant, velocity: 2000}\n"
                           "time: {steps: 10}\n"
                           "boundary: {type: cpml,\n  width: 5}\n"
                           "sources: [{position: [200, 150, 120], wavelet: {type: ricker, "
                           "frequency: 10}}]\n";
  expect_has(error_of(cpml + "precision: float16\n"),
             {"p.yaml:7: precision: float16", "boundary.type: cpml (p.yaml:4: boundary.type)",
              "Minimod's layer"});
  expect_has(error_of(kSurvey + "decomposition: [2, 1, 1]\nprecision: float16\n"),
             {"p.yaml:8: precision", "decomposition: [2, 1, 1] (p.yaml:7: decomposition)",
              "one whole grid"});
  expect_has(error_of(kSurvey + "ranks_per_shot: 2\nprecision: float16\n"),
             {"p.yaml:8: precision", "ranks_per_shot: 2 (p.yaml:7: ranks_per_shot)"});
  // A decomposition of one subdomain splits nothing.
  EXPECT_NO_THROW(parse(kSurvey + "decomposition: [1, 1, 1]\nprecision: float16\n"));
  // decomposition: auto splits by the run's ranks: refused where the split is chosen.
  const Survey a = parse(kSurvey + "decomposition: auto\nprecision: float16\n");
  const Grid grid = make_grid(a.grid);
  EXPECT_EQ(run_split(a, grid, std::nullopt, "--decompose", 1), (Split{1, 1, 1}));
  expect_has(error_from([&] { run_split(a, grid, std::nullopt, "--decompose", 2); }),
             {"p.yaml:8: precision", "float16", "p.yaml:7: decomposition", "one whole grid"});
  expect_has(error_from([&] {
               run_split(a, grid, Split{1, 2, 1}, "--decompose", 2);
             }),
             {"p.yaml:8: precision", "--decompose", "1x2x1"});
}

TEST(PrecisionInput, CommandLineOption) {
  Survey s = parse(kSurvey);
  apply_precision_option(s, "float16", "--precision");
  EXPECT_EQ(s.precision, Precision::Float16);
  EXPECT_EQ(s.precision_loc.where(), "--precision");
  apply_precision_option(s, "float32", "--precision");
  EXPECT_EQ(s.precision, Precision::Float32);
  // The option overrides the survey's key either way.
  Survey h = parse(kSurvey + "precision: float16\n");
  apply_precision_option(h, "float32", "--precision");
  EXPECT_EQ(h.precision, Precision::Float32);

  expect_has(error_from([&] { apply_precision_option(s, "half", "--precision"); }),
             {"--precision", "'half'", "float32, float16"});
  Survey tti = parse(kTti + kSurvey);
  expect_has(error_from([&] { apply_precision_option(tti, "float16", "--precision"); }),
             {"--precision: float16 is not allowed with physics: tti", "float32"});
  Survey split = parse(kSurvey + "decomposition: [1, 2, 1]\n");
  expect_has(error_from([&] { apply_precision_option(split, "float16", "--precision"); }),
             {"--precision", "decomposition: [1, 2, 1] (p.yaml:7: decomposition)", "[1, 2, 1]"});
  Survey whole = parse(kSurvey + "decomposition: auto\n");
  apply_precision_option(whole, "float16", "--precision");
  expect_has(
      error_from([&] { run_split(whole, make_grid(whole.grid), std::nullopt, "--decompose", 4); }),
      {"--precision: float16 is not allowed with p.yaml:7: decomposition"});
}

TEST(PrecisionInput, ValidatePrintsThePrecisionAndItsMemory) {
  ValidateOptions o;
  o.backend = "cpu";
  const std::string f32 = validate_survey(parse(kSurvey), o);
  expect_has(f32, {"precision   float32", "20 B a point", "would store 14", "1.43 times"});
  const std::string f16 = validate_survey(parse(kSurvey + "precision: float16\n"), o);
  expect_has(f16, {"precision   float16 (p.yaml:7: precision)", "14 B a point against float32's 20",
                   "1.43 times the points"});
  EXPECT_NE(f32, f16);
  o.precision = "float16";
  expect_has(validate_survey(parse(kSurvey), o), {"precision   float16 (--precision)"});
  // Without a layer: 8 B against 12.
  const std::string bare = "grid: {shape: [20, 20, 20], spacing: 10}\n"
                           "model: {type: constant, velocity: 2000}\n"
                           "time: {steps: 10}\n"
                           "boundary: {width: 0}\n"
                           "sources: [{position: [100, 100, 100], wavelet: {type: ricker, "
                           "frequency: 10}}]\n";
  expect_has(validate_survey(parse(bare), o), {"8 B a point against float32's 12", "1.50 times"});
  o.precision = "half";
  expect_has(error_from([&] { validate_survey(parse(kSurvey), o); }), {"--precision", "'half'"});
  o.precision = "float16";
  expect_has(error_from([&] { validate_survey(parse(kTti + kSurvey), o); }),
             {"--precision: float16", "physics: tti"});
  o.precision.clear();
  o.decompose = "2x1x1";
  expect_has(error_from([&] { validate_survey(parse(kSurvey + "precision: float16\n"), o); }),
             {"p.yaml:7: precision", "--decompose", "2x1x1"});
}

TEST(PrecisionInput, FingerprintCarriesThePrecision) {
  Survey s = parse(kSurvey);
  const RunFingerprint f32 = make_fingerprint(s, 0, "cpu", "");
  EXPECT_EQ(f32.precision, "float32");
  apply_precision_option(s, "float16", "--precision");
  const RunFingerprint f16 = make_fingerprint(s, 0, "cpu", "");
  EXPECT_EQ(f16.precision, "float16");
  EXPECT_NE(fingerprint_text(f16).find("\"precision\":\"float16\""), std::string::npos)
      << fingerprint_text(f16);
  const auto diffs = fingerprint_differences(f32, f16);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "precision float16 vs float32 of the interrupted run (the survey's "
                      "precision or --precision)");
  EXPECT_TRUE(fingerprint_differences(f16, f16).empty());
}

/// The exit code of `minimod-gpu ARGS` (its output in `log`).
int program(const std::string& args, const std::filesystem::path& log) {
  const int rc = std::system(
      (std::string("'") + MINIMOD_BINARY + "' " + args + " > '" + log.string() + "' 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(PrecisionInput, CommandLineRefusesBeforeAnyStepAndWritesNothing) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("minimod_precision_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path log = dir / "log";
  const auto text = [&] {
    std::ifstream in(log);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::ofstream(dir / "a.yaml") << kSurvey;
  std::ofstream(dir / "t.yaml") << kTti + kSurvey;
  const std::string a = "'" + (dir / "a.yaml").string() + "'";
  const std::string t = "'" + (dir / "t.yaml").string() + "'";
  const std::string out = " -o '" + (dir / "out.h5").string() + "'";

  EXPECT_EQ(program("validate " + a + " --precision half", log), 2);
  expect_has(text(), {"--precision", "'half'", "float32, float16"});
  EXPECT_EQ(program("validate " + a + " --backend cpu --precision float16", log), 0) << text();
  expect_has(text(), {"precision   float16 (--precision)"});
  EXPECT_EQ(program("run " + t + " --backend cpu --precision float16" + out, log), 2);
  expect_has(text(), {"--precision: float16 is not allowed with physics: tti"});
  EXPECT_EQ(program("run " + a + " --backend cpu --precision float16 --decompose 2x1x1" + out, log),
            2);
  expect_has(text(), {"--precision: float16 is not allowed with --decompose"});
  EXPECT_FALSE(fs::exists(dir / "out.h5")) << "refused before any step: nothing written";
  EXPECT_FALSE(fs::exists(dir / "out.h5.parts"));
  fs::remove_all(dir);
}

} // namespace
} // namespace minimod
