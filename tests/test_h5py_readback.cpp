/// The output file as a Python user sees it: tests/check_output.py reads it with h5py alone, so a
/// layout that only our own C reader accepts (bytes instead of str, wrong dtype) fails here.

#include "io/h5_output.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Exit status of a shell command, or -1 when it did not exit normally.
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class H5pyReadback : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            ("minimod_h5py_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    // h5py often lives in the system Python (Debian python3-h5py) while `python3` on PATH is
    // another one (pyenv, a venv); MINIMOD_PYTHON, when set, is the only one tried.
    std::vector<std::string> candidates{"python3", "/usr/bin/python3"};
    if (const char* chosen = std::getenv("MINIMOD_PYTHON")) candidates = {chosen};
    const fs::path log = m_dir / "import.log";
    for (const std::string& python : candidates) {
      if (run(python + " -c 'import h5py, numpy' > '" + log.string() + "' 2>&1") == 0) {
        m_python = python;
        break;
      }
      m_skip_reason += python + ": " + read_text(log) + " ";
    }
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
  }

  /// Run check_output.py on `file`; its output is in `*output`.
  int check(const fs::path& file, std::string* output) const {
    const fs::path log = m_dir / "check.log";
    const int status = run(m_python + " '" MINIMOD_SOURCE_DIR "/tests/check_output.py' '" +
                           file.string() + "' > '" + log.string() + "' 2>&1");
    *output = read_text(log);
    return status;
  }

  fs::path m_dir;
  std::string m_python;
  std::string m_skip_reason;
};

TEST_F(H5pyReadback, CheckScriptAcceptsWrittenFile) {
  if (m_python.empty()) GTEST_SKIP() << "no Python with h5py and numpy: " << m_skip_reason;

  OutputMeta meta;
  meta.program_version = "0.1.0";
  meta.git_commit = "unknown";
  meta.survey_text = "grid: {shape: [8, 8, 8]}\n";
  meta.survey_path = "tiny.yaml";
  meta.physics = "acoustic";
  meta.backend = "cpu";
  meta.device_name = "test";
  meta.region_kernels = {"a", "b", "c", "d", "e", "f", "g"};
  meta.grid_shape = {8, 8, 8};
  meta.grid_spacing = {10, 10, 10};
  meta.dt = 1e-3;
  meta.steps = 20;

  const fs::path file_path = m_dir / "tiny.h5";
  {
    OutputFile file(file_path.string(), meta);
    ShotGather gather;
    gather.source_positions = {{40, 40, 10}};
    gather.receiver_positions = {{0, 0, 0}, {10, 0, 0}};
    gather.dt_out = 2e-3;
    gather.samples = 10;
    gather.traces.assign(20, 0.25f);
    gather.wavelet.assign(20, 0.5f);
    gather.wavelet_samples = 20;
    gather.wavelet_dt = 1e-3;
    file.write_shot(gather);
    StoredModel model = model_geometry({8, 8, 8}, {0, 0, 0}, {10, 10, 10});
    add_model_property(model, "vp", "m/s", std::vector<float>(512, 1500.0f));
    file.write_model(model);
    file.begin_snapshots(SnapshotGeometry{{4, 3, 2}, {0, 0, 0}, {20, 20, 20}, 2});
    std::vector<float> data(24);
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<float>(i) - 10.0f;
    file.append_snapshot(10, 0.01, data);
    file.append_snapshot(20, 0.02, data);
    file.commit();
  }

  std::string output;
  EXPECT_EQ(check(file_path, &output), 0) << output;
  EXPECT_NE(output.find("snapshots: 2 of [nz, ny, nx] = [2, 3, 4]"), std::string::npos) << output;
  EXPECT_NE(output.find("min -10 max 13"), std::string::npos) << output;
  EXPECT_NE(output.find("model: vp [nz, ny, nx] = [8, 8, 8]"), std::string::npos) << output;

  // A model property with the wrong units is malformed.
  const fs::path wrong = m_dir / "wrong.h5";
  {
    OutputFile file(wrong.string(), meta);
    StoredModel model = model_geometry({8, 8, 8}, {0, 0, 0}, {10, 10, 10});
    add_model_property(model, "theta", "degrees", std::vector<float>(512, 0.0f));
    file.write_model(model);
    file.commit();
  }
  EXPECT_EQ(check(wrong, &output), 1) << output;
  EXPECT_NE(output.find("/model/theta: units 'degrees', expected 'rad'"), std::string::npos)
      << output;
  EXPECT_NE(output.find("/model: missing dataset 'vp'"), std::string::npos) << output;
}

TEST_F(H5pyReadback, CheckScriptRejectsForeignFile) {
  if (m_python.empty()) GTEST_SKIP() << "no Python with h5py and numpy: " << m_skip_reason;
  // A valid HDF5 file without our attributes: the script must say it is malformed.
  const fs::path file_path = m_dir / "foreign.h5";
  const hid_t file = H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Fclose(file);
  std::string output;
  EXPECT_EQ(check(file_path, &output), 1) << output;
  EXPECT_NE(output.find("missing attribute 'format'"), std::string::npos) << output;
}

} // namespace
} // namespace minimod
