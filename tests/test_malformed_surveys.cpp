/// The program on malformed surveys (tests/data/bad): `validate` and `run` must both exit with
/// code 2, print one error that names the field, its line and value, and leave no file behind.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
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
    {"reflection_db_with_minimod.yaml", "boundary.reflection_db", 11, "-50"},
    {"reflection_db_unreachable.yaml", "boundary.reflection_db", 11, "-90"},  // checked by the plan
    {"cpml_target_too_wide.yaml", "boundary.reflection_db", 10, "10 points"}, // checked by the plan
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
    {"snapshot_shots_past_last.yaml", "output.snapshots.shots[1]", 16, "2"},
    {"snapshot_shots_negative.yaml", "output.snapshots.shots[0]", 16, "-1"},
    {"snapshot_shots_repeated.yaml", "output.snapshots.shots[2]", 18, "1"},
    {"snapshot_shots_empty.yaml", "output.snapshots.shots", 16, "[]"},
    {"snapshot_shots_word.yaml", "output.snapshots.shots", 16, "every"},
    {"snapshot_shots_fraction.yaml", "output.snapshots.shots[0]", 16, "0.5"},
    {"snapshot_shots_scalar.yaml", "output.snapshots.shots", 16, "1"},
    {"empty_file.yaml", "empty", 0, ""},
    {"top_level_list.yaml", "a map with keys", 1, "[grid, model]"},
    {"does_not_exist.yaml", "does_not_exist.yaml", 0, ""}, // the survey itself is missing
    // Limits (io/limits.hpp): counts, float32, sizes; inputs only the run used to meet (wavelet
    // files, SEG-Y interval, kernel names); angles with their key and unit; line endings, UTF-8.
    {"amplitude_above_float32.yaml", "sources[0].wavelet.amplitude", 15, "-1e39"},
    {"amplitude_overflows_samples.yaml", "sources[0].wavelet", 15, "(amplitude 3e+38)"},
    {"cr_only_line_endings.yaml", "grid.spacing", 5, "-10"},
    {"dt_out_subnormal.yaml", "output.dt_out", 19, "1e-45"},
    {"dt_subnormal.yaml", "time.dt", 11, "1e-40"},
    {"epsilon_above_float32.yaml", "anisotropy.epsilon", 21, "1e39"},
    {"frequency_above_float32.yaml", "sources[0].wavelet.frequency", 15, "1e308"},
    {"frequency_above_nyquist.yaml", "sources[0].wavelet.frequency", 15, "Nyquist"},
    {"grid_axis_too_large.yaml", "grid.shape[0]", 4, "2147483647"},
    {"grid_too_many_points.yaml", "grid.shape", 4, "2^40"},
    {"kernel_unknown.yaml", "kernel", 18, "no_such_kernel"},
    {"kernel_unknown_region.yaml", "kernel", 18, "unknown region 'middle'"},
    {"layer_velocity_above_float32.yaml", "model.layers[1].velocity", 10, "5e38"},
    {"layer_width_overflow.yaml", "boundary", 12, "wider than half the grid"},
    {"minimod_fmax_above_nyquist.yaml", "sources[0].wavelet.fmax", 15, "1e+30"},
    {"model_shape_too_many_points.yaml", "model.shape", 9, "2^40"},
    {"non_utf8.yaml", "byte 0xE9 at byte offset", 2, "UTF-8"},
    {"output_too_large.yaml", "output.snapshots", 19, "PiB"},
    {"phi_out_of_range.yaml", "anisotropy.phi", 24, "-200 degrees"},
    {"segy_interval_not_whole_us.yaml", "output.", 0, "SEG-Y"},
    {"spacing_huge.yaml", "grid.spacing[1]", 5, "1e200"},
    {"spacing_tiny.yaml", "grid.spacing", 5, "1e-300"},
    {"steps_overflow.yaml", "time.duration", 10, "2147483646"},
    {"theta_degrees_out_of_range.yaml", "anisotropy.theta", 23,
     "120 degrees is not allowed: -90 <= theta <= 90 degrees"},
    {"theta_gradient_out_of_range.yaml", "anisotropy.theta.gradient", 23,
     "190 degrees at z = 190 m"},
    {"theta_radians_out_of_range.yaml", "anisotropy.theta", 23,
     "2 radians is not allowed: -pi/2 <= theta <= pi/2 radians"},
    {"trace_samples_overflow.yaml", "output.dt_out", 20, "2147483647"},
    {"velocity_above_float32.yaml", "model.velocity", 8, "1e39"},
    {"vmax_above_float32.yaml", "model.vmax", 9, "1e300"},
    {"wavelet_file_dt_subnormal.yaml", "sources[0].wavelet.dt", 15, "1e-50"},
    {"wavelet_file_empty.yaml", "sources[0].wavelet", 15, "holds no samples"},
    {"wavelet_file_nan.yaml", "sources[0].wavelet", 15, "sample 2 (byte offset 8)"},
    {"wavelet_file_seven_bytes.yaml", "sources[0].wavelet", 15, "7 bytes"},
    {"wavelet_text_above_float32.yaml", "sources[0].wavelet", 15, "line 4 (sample 2): '1e39'"},
    // Silent traps: a source on the free surface, a model that covers part of the grid, an
    // array in the other axis order or one whose shape cannot tell, a format from the extension
    // that the content contradicts.
    {"source_on_free_surface.yaml", "sources[0].position", 14,
     "[100, 100, 0]: a source on the "
     "free surface"},
    {"model_covers_part_of_grid.yaml", "model.file", 7, "the grid x [0, 110]"},
    {"npy_devito_order_without_key.yaml", "model.file", 7, "model.order: zyx"},
    {"npy_x_and_z_equal_without_order.yaml", "model.file", 7, "does not tell x from z"},
    {"npy_extension_raw_content.yaml", "model.file", 7, "no .npy magic string"},
    {"h5_extension_raw_content.yaml", "model.file", 7, "(not an HDF5 file)"},
    // Kernel specs checked for TTI as for acoustic surveys, and their grammar; units whose
    // first symptom is another error (named first); TTI counts beyond their limits.
    {"tti_kernel_unknown.yaml", "kernel", 24, "no tti kernel named 'no_such_tti_kernel'"},
    {"tti_kernel_gpu_name_on_cpu.yaml", "kernel", 24, "'semi+b+a_32x8' for backend cpu"},
    {"tti_kernel_unknown_region.yaml", "kernel", 24, "unknown region 'middle'"},
    {"kernel_trailing_comma.yaml", "kernel", 18, "'inner=cpu,': trailing ','"},
    {"kernel_item_not_key_value.yaml", "kernel", 18, "item 'cpu' is not KEY=NAME"},
    {"kernel_auto_in_item.yaml", "kernel", 18, "'pml=auto': no acoustic kernel named 'auto'"},
    {"velocity_km_per_s.yaml", "model: velocities look like km/s", 7,
     "1.5 m/s; the survey's velocities are in m/s"},
    {"layered_km_per_s_minimod.yaml", "sources[0].wavelet.fmax", 17,
     "model: velocities look like km/s (the model's largest is 2.5 m/s"},
    {"tti_velocity_km_per_s.yaml", "model: velocities look like km/s", 8,
     "sources[0].wavelet.frequency: 10 Hz is not allowed"},
    {"tti_steps_overflow.yaml", "time.duration", 11, "is not allowed: at most 2147483646"},
    {"tti_trace_samples_overflow.yaml", "output.dt_out", 26,
     "= 15151515152 is not allowed: at most 2147483647"},
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
  expect_rejected("validate " + quoted(survey_path()) + " --backend cpu", scratch);
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
  EXPECT_GE(std::size(kCases), 18u + 30u + 11u);
}

/// The same commands on a good survey succeed, so the rejections above are the survey's doing.
TEST(SurveyGoodFiles, ValidateAndRunSucceed) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  for (const char* name : {"tiny.yaml", "file_model.yaml", "npy_devito_order.yaml"}) {
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

namespace {

/// `validate` accepts exactly what `run` accepts: with the same options, both refuse a survey
/// (exit 2) or both take it (exit 0), for every survey in tests/data/bad and tests/data/good.
TEST(ValidateRunAgreement, SameVerdictOnEverySurvey) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  std::vector<fs::path> surveys;
  for (const char* folder : {"bad", "good"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(MINIMOD_TEST_DATA) / folder))
      surveys.push_back(entry.path());
  }
  std::sort(surveys.begin(), surveys.end());
  int refused = 0, accepted = 0;
  for (const fs::path& survey : surveys) {
    const ScratchDir scratch;
    const std::string in_scratch = "cd " + quoted(scratch.path().string()) + " && ";
    // --steps 2 keeps every accepted run short; validate gets it too, as it changes the plan.
    const std::string options = " --backend cpu --steps 2";
    const CommandResult validate = run_command(in_scratch + quoted(MINIMOD_BINARY) + " validate " +
                                               quoted(survey.string()) + options);
    const CommandResult run =
        run_command(in_scratch + quoted(MINIMOD_BINARY) + " run " + quoted(survey.string()) +
                    options + " --quiet -o " + quoted((scratch.path() / "out.h5").string()));
    const std::string name = survey.filename().string();
    EXPECT_TRUE(validate.exit_code == 0 || validate.exit_code == 2)
        << name << ": validate " << validate.exit_code << ": " << validate.output;
    EXPECT_EQ(validate.exit_code, run.exit_code)
        << name << ": validate said " << validate.output << "run said " << run.output;
    if (validate.exit_code == 2 && run.exit_code == 2) {
      // The same first error: the message after "error: " (run may print notices before it).
      const auto line = [](const std::string& out) {
        const auto at = out.find("error: ");
        return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
      };
      EXPECT_EQ(line(validate.output), line(run.output)) << name;
      ++refused;
    } else if (validate.exit_code == 0 && run.exit_code == 0) {
      ++accepted;
    }
  }
  EXPECT_GE(refused, 60);
  EXPECT_GE(accepted, 2);
}

/// Surveys that are not files of YAML text.
TEST(SurveyFileLimits, DeviceDirectoryAndHugeFileAreRefused) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  const ScratchDir scratch;
  const CommandResult zero =
      run_command("timeout 20 " + quoted(MINIMOD_BINARY) + " validate /dev/zero");
  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("/dev/zero: cannot read the survey: it is not a regular file"),
            std::string::npos)
      << zero.output;
  const CommandResult folder =
      run_command(quoted(MINIMOD_BINARY) + " validate " + quoted(scratch.path().string()));
  EXPECT_EQ(folder.exit_code, 2) << folder.output;
  EXPECT_NE(folder.output.find("it is a directory"), std::string::npos) << folder.output;
  // 64 MiB + 1 byte of comment: refused by its size before it is read.
  const fs::path big = scratch.path() / "big.yaml";
  {
    std::ofstream create(big);
    create << "# a survey of comments\n";
  }
  fs::resize_file(big, (64u << 20) + 1);
  const CommandResult huge =
      run_command(quoted(MINIMOD_BINARY) + " validate " + quoted(big.string()));
  EXPECT_EQ(huge.exit_code, 2) << huge.output;
  EXPECT_NE(huge.output.find("67108865 bytes; allowed: at most 67108864 bytes (64 MiB)"),
            std::string::npos)
      << huge.output;
}

/// More host memory than this machine has: exit 3 with what is needed and what is available,
/// never std::bad_alloc; `validate` plans it without building the model and says it does not fit.
TEST(HostMemory, RunStopsWithExit3AndValidateSaysItDoesNotFit) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  const ScratchDir scratch;
  const fs::path survey = scratch.path() / "huge.yaml";
  // 8000^3 points: 2 TB for the model alone.
  std::ofstream(survey) << "grid: {shape: [8000, 8000, 8000], spacing: 10}\n"
                           "model: {type: constant, velocity: 2000}\n"
                           "time: {steps: 10}\n"
                           "boundary: {width: 4}\n"
                           "sources: [{position: [100, 100, 50], wavelet: {type: ricker, "
                           "frequency: 10}}]\n";
  const std::string in_scratch = "cd " + quoted(scratch.path().string()) + " && ";
  const CommandResult validate = run_command(in_scratch + quoted(MINIMOD_BINARY) +
                                             " validate --backend cpu " + quoted(survey.string()));
  EXPECT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("does NOT fit this host"), std::string::npos) << validate.output;
  EXPECT_NE(validate.output.find("TiB on the CPU backend"), std::string::npos) << validate.output;
  const CommandResult run =
      run_command(in_scratch + quoted(MINIMOD_BINARY) + " run --backend cpu --quiet " +
                  quoted(survey.string()) + " -o out.h5");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_NE(run.output.find("error: out of host memory: the velocity model (8000 x 8000 x 8000 "
                            "float32 values) needs 1.86 TiB, only "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(" available ("), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("internal error"), std::string::npos) << run.output;
  EXPECT_TRUE(scratch.leftovers().size() == 1) << join(scratch.leftovers()); // the survey alone
}

/// `kernels` says which kernels can run on this machine: every CPU kernel here, and the count.
TEST(KernelsCommand, SaysWhichKernelsCanRunHere) {
  if (!fs::exists(MINIMOD_BINARY)) FAIL() << "the program is not built: " << MINIMOD_BINARY;
  const CommandResult result = run_command(quoted(MINIMOD_BINARY) + " kernels");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string& out = result.output;
  const auto header = out.substr(0, out.find('\n'));
  EXPECT_NE(header.find(" here "), std::string::npos) << header;
  int rows = 0, here = 0;
  std::istringstream lines(out.substr(header.size() + 1));
  for (std::string line; std::getline(lines, line) && !line.empty();) {
    ++rows;
    std::istringstream fields(line);
    std::string name, family, backend, physics, regions, runs;
    fields >> name >> family >> backend >> physics >> regions >> runs;
    EXPECT_TRUE(runs == "yes" || runs == "no") << line;
    if (backend == "cpu") {
      EXPECT_EQ(runs, "yes") << line;
    }
    here += runs == "yes";
  }
  EXPECT_GE(here, 2); // the acoustic and the TTI CPU kernel
  EXPECT_NE(
      out.find(std::to_string(here) + " of " + std::to_string(rows) + " kernels can run here"),
      std::string::npos)
      << out;
  // Without a GPU the GPU kernels (a GPU build's) say why none of them can run.
  if (out.find("no GPU here") != std::string::npos) {
    EXPECT_NE(out.find("; the GPU kernels cannot: no GPU here ("), std::string::npos) << out;
  }
}

} // namespace
