/// The program on malformed surveys (tests/data/bad): `validate` and `run` must both exit with
/// code 2, print one error that names the field, its line and value, and leave no file behind.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// One malformed survey and what its error message must contain.
struct MalformedCase {
  const char* file;  ///< under tests/data/bad/
  const char* key;   ///< the field at fault, as the message must name it
  int line;          ///< the message must contain "FILE:LINE"; 0 when the error has no line
  const char* value; ///< the offending value as written; "" when there is none
};

/// Every file in tests/data/bad/ has a row (checked by SurveyBadFiles.AllHaveATableRow).
const MalformedCase kCases[] = {
    {"syntax_error.yaml", "YAML syntax error", 3, ""},
    {"unknown_top_key.yaml", "receviers", 14, "unknown key"},
    {"unknown_nested_key.yaml", "grid.orgin", 4, "unknown key"},
    {"wrong_type_string.yaml", "grid.spacing[1]", 3, "ten"},
    {"wrong_type_map_for_list.yaml", "sources", 12, "position: [100, 100, 50]"},
    {"non_integer_shape.yaml", "grid.shape[1]", 2, "20.5"},
    {"shape_too_small.yaml", "grid.shape[2]", 2, "8"},
    {"negative_spacing.yaml", "grid.spacing[1]", 3, "-10"},
    {"duplicate_key.yaml", "grid.spacing", 4, "spacing"},
    {"zero_velocity.yaml", "model.velocity", 6, "0"},
    {"physics_tti.yaml", "physics", 1, "tti"},
    {"layers_not_increasing.yaml", "model.layers[2].top", 9, "100"},
    {"gradient_negative.yaml", "model.gradient", 7, "-10"},
    {"missing_model_file.yaml", "model.file", 6, "does_not_exist.bin"},
    {"model_file_wrong_size.yaml", "model.file", 6, "2912 bytes"},
    {"model_file_nan.yaml", "model.file", 6, "nan"},
    {"source_outside.yaml", "sources[0].position", 12, "[100, 500, 50]"},
    {"receiver_outside.yaml", "receivers.points[1]", 17, "[50, 50, -5]"},
    {"receiver_line_outside.yaml", "receivers.lines[0].end", 17, "[250, 100, 20]"},
    {"layer_too_wide.yaml", "boundary.width", 10, "10"},
    {"width_and_ntaper.yaml", "boundary.ntaper", 11, "3"},
    {"dt_unstable.yaml", "time.dt", 9, "0.01"}, // checked by the solver's plan
    {"duration_and_steps.yaml", "time.steps", 9, "10"},
    {"no_duration_no_steps.yaml", "time.duration", 8, ""},
    {"cfl_above_one.yaml", "time.cfl", 9, "1.2"},
    {"unknown_wavelet_type.yaml", "sources[0].wavelet.type", 13, "gabor"},
    {"wavelet_key_of_other_type.yaml", "sources[0].wavelet.fmax", 13, "unknown key"},
    {"negative_ricker_delay.yaml", "sources[0].wavelet.delay", 13, "-0.1"},
    {"unknown_injection.yaml", "sources[0].injection", 14, "additive"},
    {"missing_sources.yaml", "sources", 0, ""},
    {"empty_sources.yaml", "sources", 11, "[]"},
    {"snapshot_every_zero.yaml", "output.snapshots.every", 15, "0"},
    {"snapshot_box_outside.yaml", "output.snapshots.box.max", 17, "[100, 100, 300]"},
    {"empty_file.yaml", "empty", 0, ""},
    {"top_level_list.yaml", "a map with keys", 1, "[grid, model]"},
    {"does_not_exist.yaml", "does_not_exist.yaml", 0, ""}, // the survey itself is missing
};

const fs::path kBadDir = fs::path(MINIMOD_TEST_DATA) / "bad";

/// Exit code and everything the command printed (stdout and stderr).
struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  CommandResult result;
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), got);
  }
  const int status = pclose(pipe);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

/// Single-quoted for the shell.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// An empty folder for one command, removed afterwards; the command runs inside it so that a
/// stray default output would show up too.
class ScratchDir {
public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "minimod_bad_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) m_path = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!m_path.empty()) fs::remove_all(m_path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return m_path; }
  /// Names of everything left in the folder.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::recursive_directory_iterator(m_path)) {
      names.push_back(fs::relative(entry.path(), m_path).string());
    }
    return names;
  }

private:
  fs::path m_path;
};

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

class MalformedSurvey : public ::testing::TestWithParam<MalformedCase> {
protected:
  void SetUp() override {
    if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  }

  /// Runs `arguments` (after the program's name) in an empty folder and checks the rejection.
  void expect_rejected(const std::string& arguments, const ScratchDir& scratch) const {
    const MalformedCase& c = GetParam();
    ASSERT_FALSE(scratch.path().empty()) << "mkdtemp failed";
    const CommandResult result = run_command("cd " + quoted(scratch.path().string()) + " && " +
                                             quoted(MINIMOD_BINARY) + " " + arguments);
    const std::string& out = result.output;
    EXPECT_EQ(result.exit_code, 2) << out;
    EXPECT_NE(out.find("error: "), std::string::npos) << out;
    EXPECT_NE(out.find(c.key), std::string::npos) << "key " << c.key << " not named in: " << out;
    if (c.line > 0) {
      const std::string file_line = std::string(c.file) + ":" + std::to_string(c.line);
      EXPECT_NE(out.find(file_line), std::string::npos) << file_line << " not in: " << out;
    }
    EXPECT_NE(out.find(c.value), std::string::npos) << "value " << c.value << " not in: " << out;
    const std::vector<std::string> left = scratch.leftovers();
    EXPECT_TRUE(left.empty()) << "files left behind: " << join(left);
  }

  std::string survey_path() const { return (kBadDir / GetParam().file).string(); }
};

TEST_P(MalformedSurvey, ValidateExitsWith2) {
  const ScratchDir scratch;
  expect_rejected("validate " + quoted(survey_path()), scratch);
}

TEST_P(MalformedSurvey, RunExitsWith2AndWritesNothing) {
  const ScratchDir scratch;
  expect_rejected("run " + quoted(survey_path()) + " -o " +
                      quoted((scratch.path() / "out.h5").string()) + " --backend cpu --quiet",
                  scratch);
}

std::string case_name(const ::testing::TestParamInfo<MalformedCase>& info) {
  return fs::path(info.param.file).stem().string();
}

INSTANTIATE_TEST_SUITE_P(SurveyFiles, MalformedSurvey, ::testing::ValuesIn(kCases), case_name);

TEST(SurveyBadFiles, AllHaveATableRow) {
  std::set<std::string> in_table;
  for (const MalformedCase& c : kCases)
    in_table.insert(c.file);
  for (const auto& entry : fs::directory_iterator(kBadDir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(in_table.count(name), 1u) << "tests/data/bad/" << name << " has no row in kCases";
  }
  EXPECT_FALSE(fs::exists(kBadDir / "does_not_exist.yaml"));
  EXPECT_GE(std::size(kCases), 18u);
}

/// The same commands on a good survey succeed, so the rejections above are the survey's doing.
TEST(SurveyGoodFiles, ValidateAndRunSucceed) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  for (const char* name : {"tiny.yaml", "file_model.yaml"}) {
    const std::string survey = (fs::path(MINIMOD_TEST_DATA) / "good" / name).string();
    const ScratchDir scratch;
    const std::string in_scratch = "cd " + quoted(scratch.path().string()) + " && ";
    const CommandResult validate =
        run_command(in_scratch + quoted(MINIMOD_BINARY) + " validate " + quoted(survey));
    EXPECT_EQ(validate.exit_code, 0) << name << ": " << validate.output;
    const fs::path out = scratch.path() / "out.h5";
    const CommandResult run =
        run_command(in_scratch + quoted(MINIMOD_BINARY) + " run " + quoted(survey) + " -o " +
                    quoted(out.string()) + " --backend cpu --quiet");
    EXPECT_EQ(run.exit_code, 0) << name << ": " << run.output;
    EXPECT_TRUE(fs::exists(out)) << name << ": " << run.output;
  }
}

} // namespace
