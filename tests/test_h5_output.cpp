/// OutputFile: writes the layout of docs/output.md, read back here with the plain HDF5 C API so the
/// test does not share code (or mistakes) with the writer.

#include "core/errors.hpp"
#include "io/h5_output.hpp"
#include "tests/h5_read.hpp"

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
using test_support::read_string_attribute;

/// A fresh folder per test, removed afterwards, so tests can run in parallel under ctest.
class H5Output : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir =
        fs::temp_directory_path() / ("minimod_h5_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(m_dir, ignored);
  }
  std::string path(const std::string& name) const { return (m_dir / name).string(); }

  fs::path m_dir;
};

OutputMeta make_meta() {
  OutputMeta meta;
  meta.program_version = "0.1.0";
  meta.git_commit = "0123456789ab";
  meta.survey_text = "grid:\n  shape: [40, 30, 20]\n";
  meta.survey_path = "surveys/small.yaml";
  meta.physics = "acoustic";
  meta.backend = "cpu";
  meta.device_name = "test CPU";
  meta.region_kernels = {"gmem_3d", "k_top", "k_bottom", "k_front", "k_back", "k_left", "k_right"};
  meta.grid_shape = {40, 30, 20};
  meta.grid_spacing = {10.0, 12.5, 5.0};
  meta.grid_origin = {-100.0, 0.0, 50.0};
  meta.layer_widths = {1, 2, 3, 4, 5, 6};
  meta.dt = 1.25e-3;
  meta.steps = 400;
  return meta;
}

// ---- HDF5 C API readers (each closes what it opens) ----------------------------------------

template <typename T>
std::vector<T> read_attribute(hid_t object, const char* name, hid_t mem_type) {
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  if (attribute < 0) return {};
  const hid_t space = H5Aget_space(attribute);
  std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Aread(attribute, mem_type, values.data());
  H5Sclose(space);
  H5Aclose(attribute);
  return values;
}

double read_double_attribute(hid_t object, const char* name) {
  const auto values = read_attribute<double>(object, name, H5T_NATIVE_DOUBLE);
  return values.size() == 1 ? values[0] : -12345.0;
}

int read_int_attribute(hid_t object, const char* name) {
  const auto values = read_attribute<int>(object, name, H5T_NATIVE_INT);
  return values.size() == 1 ? values[0] : -12345;
}

std::vector<hsize_t> dataset_dims(hid_t file, const char* path,
                                  std::vector<hsize_t>* max_dims = nullptr) {
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return {};
  const hid_t space = H5Dget_space(dataset);
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), maxs(dims.size());
  H5Sget_simple_extent_dims(space, dims.data(), maxs.data());
  if (max_dims != nullptr) *max_dims = maxs;
  H5Sclose(space);
  H5Dclose(dataset);
  return dims;
}

template <typename T> std::vector<T> read_dataset(hid_t file, const char* path, hid_t mem_type) {
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return {};
  const hid_t space = H5Dget_space(dataset);
  std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  if (!values.empty()) H5Dread(dataset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Sclose(space);
  H5Dclose(dataset);
  return values;
}

/// Chunk shape of a dataset, empty when it is not chunked.
std::vector<hsize_t> chunk_dims(hid_t file, const char* path) {
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return {};
  const hid_t create = H5Dget_create_plist(dataset);
  std::vector<hsize_t> chunk(4, 0);
  int rank = -1;
  if (H5Pget_layout(create) == H5D_CHUNKED) rank = H5Pget_chunk(create, 4, chunk.data());
  chunk.resize(rank > 0 ? static_cast<std::size_t>(rank) : 0);
  H5Pclose(create);
  H5Dclose(dataset);
  return chunk;
}

/// Dataset type class and size, e.g. {H5T_FLOAT, 4}.
std::pair<H5T_class_t, std::size_t> dataset_type(hid_t file, const char* path) {
  const hid_t dataset = H5Dopen2(file, path, H5P_DEFAULT);
  if (dataset < 0) return {H5T_NO_CLASS, 0};
  const hid_t type = H5Dget_type(dataset);
  const std::pair<H5T_class_t, std::size_t> result{H5Tget_class(type), H5Tget_size(type)};
  H5Tclose(type);
  H5Dclose(dataset);
  return result;
}

/// Snapshot value at point (x, y, z) of snapshot n: distinct everywhere, so a transposed or
/// misplaced write shows up.
float snapshot_value(int n, int x, int y, int z) {
  return static_cast<float>(1000 * n + 100 * z + 10 * y + x);
}

constexpr int kSnapNx = 4, kSnapNy = 3, kSnapNz = 2;

/// The file of the main test: two shots (one without receivers) and three snapshots.
void write_sample_file(const std::string& final_path) {
  OutputFile file(final_path, make_meta());

  ShotGather shot0;
  shot0.shot = 0;
  shot0.source_positions = {{100.0, 150.0, 10.0}};
  shot0.receiver_positions = {{0.0, 0.0, 20.0}, {10.0, 0.0, 20.0}, {20.0, 5.0, 20.0}};
  shot0.dt_out = 2.5e-3;
  shot0.samples = 5;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 5; ++k)
      shot0.traces.push_back(static_cast<float>(r * 10 + k) + 0.5f);
  }
  file.write_shot(shot0);

  ShotGather shot1; // no receivers in range: the gather must still be written
  shot1.shot = 1;
  shot1.source_positions = {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  shot1.dt_out = 5e-3;
  shot1.samples = 7;
  file.write_shot(shot1);

  SnapshotGeometry geometry;
  geometry.shape = {kSnapNx, kSnapNy, kSnapNz};
  geometry.origin = {-100.0, 0.0, 50.0};
  geometry.spacing = {20.0, 25.0, 10.0};
  geometry.expected_count = 3;
  file.begin_snapshots(geometry);
  for (int n = 0; n < 3; ++n) {
    std::vector<float> data;
    for (int z = 0; z < kSnapNz; ++z) {
      for (int y = 0; y < kSnapNy; ++y) {
        for (int x = 0; x < kSnapNx; ++x)
          data.push_back(snapshot_value(n, x, y, z));
      }
    }
    file.append_snapshot(10 * (n + 1), 0.0125 * (n + 1), data);
  }

  file.set_attribute("run_seconds", 12.5);
  file.set_attribute("note", "first");
  file.set_attribute("note", "replaced"); // set_attribute may overwrite
  file.commit();
}

TEST_F(H5Output, WritesCompleteLayout) {
  const std::string final_path = path("out/run.h5"); // parent folder does not exist yet
  write_sample_file(final_path);
  ASSERT_TRUE(fs::exists(final_path));
  // The file and, since it holds snapshots, its XDMF sidecar; no temporary left over.
  for (const auto& entry : fs::directory_iterator(m_dir / "out")) {
    const auto name = entry.path().filename();
    EXPECT_TRUE(name == "run.h5" || name == "run.xmf") << "left over: " << entry.path();
  }
  EXPECT_TRUE(fs::exists(m_dir / "out" / "run.xmf"));

  const hid_t file = H5Fopen(final_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);

  // Root attributes.
  EXPECT_EQ(read_string_attribute(file, "format"), "minimod-gpu-output");
  EXPECT_EQ(read_int_attribute(file, "format_version"), 1);
  EXPECT_EQ(read_string_attribute(file, "program_version"), "0.1.0");
  EXPECT_EQ(read_string_attribute(file, "git_commit"), "0123456789ab");
  EXPECT_EQ(read_string_attribute(file, "survey"), "grid:\n  shape: [40, 30, 20]\n");
  EXPECT_EQ(read_string_attribute(file, "survey_path"), "surveys/small.yaml");
  EXPECT_EQ(read_string_attribute(file, "physics"), "acoustic");
  EXPECT_EQ(read_string_attribute(file, "backend"), "cpu");
  EXPECT_EQ(read_string_attribute(file, "device_name"), "test CPU");
  EXPECT_EQ(read_string_attribute(file, "kernel_inner"), "gmem_3d");
  EXPECT_EQ(read_string_attribute(file, "kernel_top"), "k_top");
  EXPECT_EQ(read_string_attribute(file, "kernel_bottom"), "k_bottom");
  EXPECT_EQ(read_string_attribute(file, "kernel_front"), "k_front");
  EXPECT_EQ(read_string_attribute(file, "kernel_back"), "k_back");
  EXPECT_EQ(read_string_attribute(file, "kernel_left"), "k_left");
  EXPECT_EQ(read_string_attribute(file, "kernel_right"), "k_right");
  EXPECT_EQ(read_attribute<int>(file, "grid_shape", H5T_NATIVE_INT),
            (std::vector<int>{40, 30, 20}));
  EXPECT_EQ(read_attribute<double>(file, "grid_spacing", H5T_NATIVE_DOUBLE),
            (std::vector<double>{10.0, 12.5, 5.0}));
  EXPECT_EQ(read_string_attribute(file, "grid_spacing_units"), "m");
  EXPECT_EQ(read_attribute<double>(file, "grid_origin", H5T_NATIVE_DOUBLE),
            (std::vector<double>{-100.0, 0.0, 50.0}));
  EXPECT_EQ(read_attribute<int>(file, "layer_widths", H5T_NATIVE_INT),
            (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_DOUBLE_EQ(read_double_attribute(file, "dt"), 1.25e-3);
  EXPECT_EQ(read_int_attribute(file, "steps"), 400);
  const std::string created = read_string_attribute(file, "created");
  ASSERT_EQ(created.size(), 20u) << created; // 2024-01-31T12:34:56Z
  EXPECT_EQ(created[4], '-');
  EXPECT_EQ(created[10], 'T');
  EXPECT_EQ(created[19], 'Z');
  EXPECT_DOUBLE_EQ(read_double_attribute(file, "run_seconds"), 12.5);
  EXPECT_EQ(read_string_attribute(file, "note"), "replaced");

  // Shot 0.
  EXPECT_EQ(dataset_dims(file, "/shots/0000/traces"), (std::vector<hsize_t>{3, 5}));
  EXPECT_EQ(dataset_type(file, "/shots/0000/traces"), std::make_pair(H5T_FLOAT, std::size_t{4}));
  const auto traces = read_dataset<float>(file, "/shots/0000/traces", H5T_NATIVE_FLOAT);
  ASSERT_EQ(traces.size(), 15u);
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 5; ++k)
      EXPECT_EQ(traces[r * 5 + k], static_cast<float>(r * 10 + k) + 0.5f);
  }
  EXPECT_EQ(dataset_dims(file, "/shots/0000/receiver_positions"), (std::vector<hsize_t>{3, 3}));
  EXPECT_EQ(dataset_type(file, "/shots/0000/receiver_positions"),
            std::make_pair(H5T_FLOAT, std::size_t{8}));
  EXPECT_EQ(read_dataset<double>(file, "/shots/0000/receiver_positions", H5T_NATIVE_DOUBLE),
            (std::vector<double>{0, 0, 20, 10, 0, 20, 20, 5, 20}));
  EXPECT_EQ(read_dataset<double>(file, "/shots/0000/source_positions", H5T_NATIVE_DOUBLE),
            (std::vector<double>{100, 150, 10}));
  {
    const hid_t group = H5Gopen2(file, "/shots/0000", H5P_DEFAULT);
    ASSERT_GE(group, 0);
    EXPECT_DOUBLE_EQ(read_double_attribute(group, "dt_out"), 2.5e-3);
    EXPECT_EQ(read_int_attribute(group, "samples"), 5);
    EXPECT_EQ(read_int_attribute(group, "receivers"), 3);
    EXPECT_EQ(read_int_attribute(group, "shot"), 0);
    H5Gclose(group);
    const hid_t dataset = H5Dopen2(file, "/shots/0000/traces", H5P_DEFAULT);
    ASSERT_GE(dataset, 0);
    EXPECT_DOUBLE_EQ(read_double_attribute(dataset, "dt"), 2.5e-3);
    EXPECT_EQ(read_string_attribute(dataset, "dt_units"), "s");
    EXPECT_DOUBLE_EQ(read_double_attribute(dataset, "t0"), 0.0);
    EXPECT_FALSE(read_string_attribute(dataset, "units").empty());
    H5Dclose(dataset);
    const hid_t receivers = H5Dopen2(file, "/shots/0000/receiver_positions", H5P_DEFAULT);
    ASSERT_GE(receivers, 0);
    EXPECT_EQ(read_string_attribute(receivers, "units"), "m");
    H5Dclose(receivers);
  }

  // Shot 1: no receivers, still a complete group.
  EXPECT_EQ(dataset_dims(file, "/shots/0001/traces"), (std::vector<hsize_t>{0, 7}));
  EXPECT_EQ(dataset_dims(file, "/shots/0001/receiver_positions"), (std::vector<hsize_t>{0, 3}));
  EXPECT_EQ(read_dataset<double>(file, "/shots/0001/source_positions", H5T_NATIVE_DOUBLE),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
  {
    const hid_t group = H5Gopen2(file, "/shots/0001", H5P_DEFAULT);
    ASSERT_GE(group, 0);
    EXPECT_EQ(read_int_attribute(group, "receivers"), 0);
    EXPECT_EQ(read_int_attribute(group, "samples"), 7);
    EXPECT_EQ(read_int_attribute(group, "shot"), 1);
    H5Gclose(group);
  }

  // Snapshots.
  std::vector<hsize_t> max_dims;
  EXPECT_EQ(dataset_dims(file, "/snapshots/wavefield", &max_dims),
            (std::vector<hsize_t>{3, kSnapNz, kSnapNy, kSnapNx}));
  EXPECT_EQ(max_dims, (std::vector<hsize_t>{H5S_UNLIMITED, kSnapNz, kSnapNy, kSnapNx}));
  EXPECT_EQ(chunk_dims(file, "/snapshots/wavefield"),
            (std::vector<hsize_t>{1, kSnapNz, kSnapNy, kSnapNx}));
  EXPECT_EQ(dataset_type(file, "/snapshots/wavefield"), std::make_pair(H5T_FLOAT, std::size_t{4}));
  const auto wavefield = read_dataset<float>(file, "/snapshots/wavefield", H5T_NATIVE_FLOAT);
  ASSERT_EQ(wavefield.size(), static_cast<std::size_t>(3 * kSnapNz * kSnapNy * kSnapNx));
  std::size_t index = 0;
  for (int n = 0; n < 3; ++n) {
    for (int z = 0; z < kSnapNz; ++z) {
      for (int y = 0; y < kSnapNy; ++y) {
        for (int x = 0; x < kSnapNx; ++x) {
          EXPECT_EQ(wavefield[index++], snapshot_value(n, x, y, z)) << n << x << y << z;
        }
      }
    }
  }
  EXPECT_EQ(dataset_dims(file, "/snapshots/step", &max_dims), (std::vector<hsize_t>{3}));
  EXPECT_EQ(max_dims, (std::vector<hsize_t>{H5S_UNLIMITED}));
  EXPECT_EQ(dataset_type(file, "/snapshots/step"), std::make_pair(H5T_INTEGER, std::size_t{4}));
  EXPECT_EQ(read_dataset<int>(file, "/snapshots/step", H5T_NATIVE_INT),
            (std::vector<int>{10, 20, 30}));
  const auto times = read_dataset<double>(file, "/snapshots/time", H5T_NATIVE_DOUBLE);
  ASSERT_EQ(times.size(), 3u);
  EXPECT_DOUBLE_EQ(times[0], 0.0125);
  EXPECT_DOUBLE_EQ(times[2], 0.0375);
  {
    const hid_t group = H5Gopen2(file, "/snapshots", H5P_DEFAULT);
    ASSERT_GE(group, 0);
    EXPECT_EQ(read_attribute<double>(group, "origin", H5T_NATIVE_DOUBLE),
              (std::vector<double>{-100.0, 0.0, 50.0}));
    EXPECT_EQ(read_attribute<double>(group, "spacing", H5T_NATIVE_DOUBLE),
              (std::vector<double>{20.0, 25.0, 10.0}));
    EXPECT_EQ(read_attribute<int>(group, "shape", H5T_NATIVE_INT),
              (std::vector<int>{kSnapNx, kSnapNy, kSnapNz}));
    EXPECT_EQ(read_string_attribute(group, "axis_order"), "[n, z, y, x]");
    H5Gclose(group);
  }
  EXPECT_EQ(H5Fclose(file), 0);
}

TEST_F(H5Output, DestroyedWithoutCommitLeavesNoFile) {
  const std::string final_path = path("abandoned.h5");
  std::string temp;
  {
    OutputFile file(final_path, make_meta());
    temp = file.temp_path();
    EXPECT_EQ(temp, final_path + ".tmp-" + std::to_string(getpid()));
    EXPECT_TRUE(fs::exists(temp));
    EXPECT_FALSE(fs::exists(final_path)); // nothing that looks finished before commit()
    ShotGather gather;
    gather.receiver_positions = {{0, 0, 0}};
    gather.samples = 2;
    gather.traces = {1.0f, 2.0f};
    file.write_shot(gather);
    file.begin_snapshots(SnapshotGeometry{{2, 2, 2}, {}, {1, 1, 1}, 1});
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(final_path));
  EXPECT_TRUE(fs::is_empty(m_dir));
}

TEST_F(H5Output, UnwritablePathThrowsBeforeCreatingAnything) {
  const std::string blocker = path("regular_file");
  std::ofstream(blocker) << "not a folder";
  const std::string final_path = blocker + "/sub/out.h5";
  try {
    OutputFile file(final_path, make_meta());
    FAIL() << "expected OutputError";
  } catch (const OutputError& error) {
    EXPECT_NE(std::string(error.what()).find(final_path), std::string::npos) << error.what();
  }
  // Only the blocker itself is in the folder.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(m_dir))
    names.push_back(entry.path().string());
  EXPECT_EQ(names, std::vector<std::string>{blocker});
}

TEST_F(H5Output, HdfFailureThrowsOutputErrorNamingOperationAndPath) {
  OutputFile file(path("dup.h5"), make_meta());
  ShotGather gather;
  gather.shot = 7;
  file.write_shot(gather);
  try {
    file.write_shot(gather); // same group twice
    FAIL() << "expected OutputError";
  } catch (const OutputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("/shots/0007"), std::string::npos) << message;
    EXPECT_NE(message.find(file.temp_path()), std::string::npos) << message;
  }
}

TEST_F(H5Output, CommitReplacesExistingFile) {
  const std::string final_path = path("existing.h5");
  std::ofstream(final_path) << "an older result";
  OutputFile file(final_path, make_meta());
  file.commit();
  EXPECT_FALSE(fs::exists(file.temp_path()));
  EXPECT_GT(H5Fis_hdf5(final_path.c_str()), 0);
  EXPECT_THROW(file.set_attribute("late", 1.0), std::logic_error);
}

TEST_F(H5Output, AppendBeforeBeginThrowsLogicError) {
  OutputFile file(path("early.h5"), make_meta());
  EXPECT_THROW(file.append_snapshot(0, 0.0, std::vector<float>(8)), std::logic_error);
  file.begin_snapshots(SnapshotGeometry{{2, 2, 2}, {}, {1, 1, 1}, 1});
  EXPECT_THROW(file.append_snapshot(0, 0.0, std::vector<float>(7)), std::invalid_argument);
}

TEST_F(H5Output, WrongTraceCountIsRejected) {
  OutputFile file(path("traces.h5"), make_meta());
  ShotGather gather;
  gather.receiver_positions = {{0, 0, 0}, {1, 0, 0}};
  gather.samples = 3;
  gather.traces.assign(5, 0.0f);
  EXPECT_THROW(file.write_shot(gather), std::invalid_argument);
}

TEST_F(H5Output, LargeSnapshotChunksAreCapped) {
  const std::string final_path = path("chunks.h5");
  {
    OutputFile file(final_path, make_meta());
    // 600 x 500 floats = 1.2 MB a plane: 3 planes fit in 4 MiB.
    file.begin_snapshots(SnapshotGeometry{{600, 500, 10}, {}, {1, 1, 1}, 2});
    file.commit();
  }
  const hid_t file = H5Fopen(final_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(chunk_dims(file, "/snapshots/wavefield"), (std::vector<hsize_t>{1, 3, 500, 600}));
  H5Fclose(file);

  const std::string wide_path = path("wide.h5");
  {
    OutputFile wide(wide_path, make_meta());
    // One 1100 x 1000 plane is 4.4 MB: the chunk splits along y as well.
    wide.begin_snapshots(SnapshotGeometry{{1100, 1000, 3}, {}, {1, 1, 1}, 2});
    wide.commit();
  }
  const hid_t wide_file = H5Fopen(wide_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(wide_file, 0);
  const auto chunk = chunk_dims(wide_file, "/snapshots/wavefield");
  ASSERT_EQ(chunk.size(), 4u);
  EXPECT_EQ(chunk[1], 1u);
  EXPECT_LE(chunk[1] * chunk[2] * chunk[3] * sizeof(float), 4u << 20);
  EXPECT_EQ(chunk[3], 1100u);
  H5Fclose(wide_file);
}

TEST_F(H5Output, LongSurveyTextRoundTrips) {
  // Longer than the 64 KiB an attribute may take in an object header.
  std::string survey;
  while (survey.size() < 200000)
    survey += "receivers: [[1.0, 2.0, 3.0]]  # line\n";
  OutputMeta meta = make_meta();
  meta.survey_text = survey;
  const std::string final_path = path("long.h5");
  {
    OutputFile file(final_path, meta);
    file.commit();
  }
  const hid_t file = H5Fopen(final_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  EXPECT_EQ(read_string_attribute(file, "survey"), survey);
  H5Fclose(file);
}

TEST_F(H5Output, H5dumpReadsCommittedFile) {
  if (std::system("command -v h5dump > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "h5dump is not on PATH (Debian package hdf5-tools)";
  }
  const std::string final_path = path("dump.h5");
  write_sample_file(final_path);
  const std::string command = "h5dump -H '" + final_path + "' > '" + path("dump.txt") + "' 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  std::ifstream dump(path("dump.txt"));
  const std::string text((std::istreambuf_iterator<char>(dump)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("DATASET \"wavefield\""), std::string::npos) << text;
}

} // namespace
} // namespace minimod
