/// Model files in every format (raw, .npy, HDF5, SEG-Y), SEG-Y gathers out, and the resampling of
/// a model onto the grid. Files are written here by hand (npy headers byte by byte, HDF5 through
/// its C API), by NumPy and segyio-python when present, and taken from real SEG-Y files written by
/// other software (tests/data/segy), so the readers are not only checked against themselves.

#include "core/errors.hpp"
#include "io/npy.hpp"
#include "io/segy.hpp"
#include "models/model_file.hpp"
#include "tests/grid_helpers.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(MINIMOD_HAVE_SEGYIO)
#include <segyio/segy.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKey = "survey.yaml:6: model.file";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Exit status of a shell command, or -1 when it did not exit normally.
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The system Python (Debian's python3-numpy and python3-segyio live there); MINIMOD_PYTHON,
/// when set, replaces it.
std::string python() {
  const char* chosen = std::getenv("MINIMOD_PYTHON");
  return chosen != nullptr ? chosen : "/usr/bin/python3";
}

/// Empty when `python -c "import MODULE"` works, else why not.
std::string python_missing(const std::string& module, const fs::path& dir) {
  const fs::path log = dir / ("import_" + module + ".log");
  if (run(python() + " -c 'import " + module + "' > '" + log.string() + "' 2>&1") == 0) return "";
  return python() + " cannot import " + module + ": " + read_text(log);
}

/// The message of the InputError that `f` throws; a test failure when it throws none.
template <typename F> std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError thrown";
  return "";
}

/// Velocity of model point (i, j, k) in the hand-made models: every index shows in the value.
float velocity_at(int i, int j, int k) {
  return static_cast<float>(1000 + i + 10 * j + 100 * k);
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T> std::string bytes_of(const std::vector<T>& values, bool big_endian) {
  std::string bytes;
  for (const T& value : values) {
    char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));
    if (big_endian) std::reverse(b, b + sizeof(T));
    bytes.append(b, sizeof(T));
  }
  return bytes;
}

/// A .npy file as numpy lays it out: magic, version, header length, the dict padded with spaces
/// and a newline so that the data starts at a multiple of 64 bytes.
std::string npy_file(int major, const std::string& dict, const std::string& data) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  const std::size_t n = header.size();
  bytes += static_cast<char>(n & 0xff);
  bytes += static_cast<char>((n >> 8) & 0xff);
  if (major > 1) {
    bytes += static_cast<char>((n >> 16) & 0xff);
    bytes += static_cast<char>((n >> 24) & 0xff);
  }
  return bytes + header + data;
}

/// Values of a 5 x 3 x 4 model in the array layout of `order` and storage order.
template <typename T>
std::vector<T> model_array(AxisOrder order, bool fortran, int nx = 5, int ny = 3, int nz = 4) {
  // Array dimensions, slowest first in C order, and the model axis of each.
  const std::array<int, 3> dims =
      order == AxisOrder::Xyz ? std::array<int, 3>{nz, ny, nx} : std::array<int, 3>{nx, ny, nz};
  std::vector<T> values(static_cast<std::size_t>(nx * ny * nz));
  for (int a0 = 0; a0 < dims[0]; ++a0) {
    for (int a1 = 0; a1 < dims[1]; ++a1) {
      for (int a2 = 0; a2 < dims[2]; ++a2) {
        const int i = order == AxisOrder::Xyz ? a2 : a0;
        const int j = a1;
        const int k = order == AxisOrder::Xyz ? a0 : a2;
        const int index =
            fortran ? a0 + dims[0] * (a1 + dims[1] * a2) : a2 + dims[2] * (a1 + dims[1] * a0);
        values[static_cast<std::size_t>(index)] = static_cast<T>(velocity_at(i, j, k));
      }
    }
  }
  return values;
}

void expect_model_values(const ModelVolume& model, int nx = 5, int ny = 3, int nz = 4) {
  ASSERT_EQ(model.shape, (std::array<int, 3>{nx, ny, nz}));
  ASSERT_EQ(model.values.size(), static_cast<std::size_t>(nx * ny * nz));
  for (int k = 0; k < nz; ++k) {
    for (int j = 0; j < ny; ++j) {
      for (int i = 0; i < nx; ++i) {
        ASSERT_EQ(model.values[static_cast<std::size_t>(i + nx * (j + ny * k))],
                  velocity_at(i, j, k))
            << "at (" << i << ", " << j << ", " << k << ")";
      }
    }
  }
}

/// A fresh folder per test, removed afterwards.
class ModelFiles : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() / ("minimod_models_" + std::to_string(getpid()) + "_" +
                                         info->test_suite_name() + "_" + info->name());
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

// ---- .npy ------------------------------------------------------------------------------------

class NpyRead : public ModelFiles {};

TEST_F(NpyRead, HandWrittenFloat32COrderXyz) {
  write_bytes(path("v.npy"),
              npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3, 5), }",
                       bytes_of(model_array<float>(AxisOrder::Xyz, false), false)));
  const NpyHeader header = read_npy_header(path("v.npy"), kKey);
  EXPECT_EQ(header.major_version, 1);
  EXPECT_EQ(header.descr, "<f4");
  EXPECT_FALSE(header.fortran_order);
  EXPECT_EQ(header.shape, (std::array<std::size_t, 3>{4, 3, 5}));
  EXPECT_EQ(header.data_offset % 64, 0u);
  const ModelVolume model =
      read_model_volume(ModelFormat::Npy, path("v.npy"), "", AxisOrder::Xyz, kKey);
  expect_model_values(model);
  EXPECT_FALSE(model.file_spacing[0] || model.file_spacing[1] || model.file_spacing[2]);
}

TEST_F(NpyRead, HandWrittenFloat64FortranOrderZyxVersion2) {
  write_bytes(path("v.npy"),
              npy_file(2, "{'descr': '<f8', 'fortran_order': True, 'shape': (5, 3, 4), }",
                       bytes_of(model_array<double>(AxisOrder::Zyx, true), false)));
  expect_model_values(read_model_volume(ModelFormat::Npy, path("v.npy"), "", AxisOrder::Zyx, kKey));
}

TEST_F(NpyRead, HandWrittenBigEndianFloat32Version3) {
  // Keys in another order, double quotes and no trailing comma are valid dict literals too.
  write_bytes(path("v.npy"),
              npy_file(3, "{\"shape\": (5, 3, 4), \"fortran_order\": False, \"descr\": \">f4\"}",
                       bytes_of(model_array<float>(AxisOrder::Zyx, false), true)));
  expect_model_values(read_model_volume(ModelFormat::Npy, path("v.npy"), "", AxisOrder::Zyx, kKey));
  // The same bytes read with the other order give the transposed shape.
  const ModelVolume swapped =
      read_model_volume(ModelFormat::Npy, path("v.npy"), "", AxisOrder::Xyz, kKey);
  EXPECT_EQ(swapped.shape, (std::array<int, 3>{4, 3, 5}));
}

TEST_F(NpyRead, RejectsWhatItCannotRead) {
  const std::string data = bytes_of(model_array<float>(AxisOrder::Xyz, false), false);
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3, 5), }";
  struct Case {
    const char* name;
    std::string bytes;
    const char* expected;
  };
  std::string bad_version = npy_file(1, good, data);
  bad_version[6] = 4;
  std::string long_header = npy_file(1, good, data).substr(0, 10);
  long_header[8] = static_cast<char>(0xe8);
  long_header[9] = 0x03; // 1000 header bytes in a 10-byte file
  const std::vector<Case> cases = {
      {"magic", "NUMPY" + npy_file(1, good, data), "no .npy magic string"},
      {"version", bad_version, "format version 4.0"},
      {"integers",
       npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 3, 5), }", data),
       "dtype '<i4'"},
      {"half", npy_file(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (4, 3, 5), }", data),
       "float32 or float64"},
      {"2-D", npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (12, 5), }", data),
       "2 dimensions"},
      {"empty", npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 0, 5), }", ""),
       "dimension 1 is 0"},
      {"structured",
       npy_file(1, "{'descr': [('v', '<f4')], 'fortran_order': False, 'shape': (4, 3, 5), }", data),
       "structured dtype"},
      {"no shape", npy_file(1, "{'descr': '<f4', 'fortran_order': False, }", data),
       "lacks 'shape'"},
      {"truncated", npy_file(1, good, data.substr(0, data.size() - 3)), "truncated"},
      {"extra", npy_file(1, good, data + "xyz"), "extra bytes at the end"},
      {"header cut", long_header, "truncated or damaged"},
  };
  for (const Case& c : cases) {
    write_bytes(path("bad.npy"), c.bytes);
    const std::string message = input_error(
        [&] { read_model_volume(ModelFormat::Npy, path("bad.npy"), "", AxisOrder::Xyz, kKey); });
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.name << ": " << message;
    EXPECT_EQ(message.rfind(kKey, 0), 0u) << c.name << ": " << message;
  }
  EXPECT_NE(input_error([&] { read_npy(path("missing.npy"), kKey); }).find("not found"),
            std::string::npos);
}

TEST_F(NpyRead, FilesWrittenByNumpy) {
  const std::string missing = python_missing("numpy", m_dir);
  if (!missing.empty()) GTEST_SKIP() << missing;
  const fs::path script = m_dir / "write.py";
  std::ofstream(script) << R"(import sys, numpy as np
d = sys.argv[1]
f = lambda i, j, k: 1000 + i + 10 * j + 100 * k
xyz = np.fromfunction(lambda k, j, i: f(i, j, k), (4, 3, 5))
zyx = np.fromfunction(f, (5, 3, 4))
np.save(d + "/c32.npy", xyz.astype("<f4"))
np.save(d + "/f64.npy", np.asfortranarray(zyx.astype("<f8")))
np.save(d + "/big.npy", xyz.astype(">f4"))
with open(d + "/v3.npy", "wb") as out:
    np.lib.format.write_array(out, np.asfortranarray(xyz.astype("<f4")), version=(3, 0))
with open(d + "/v2.npy", "wb") as out:
    np.lib.format.write_array(out, zyx.astype(">f8"), version=(2, 0))
)";
  ASSERT_EQ(run(python() + " '" + script.string() + "' '" + m_dir.string() + "'"), 0);
  const std::vector<std::pair<std::string, AxisOrder>> files = {{"c32.npy", AxisOrder::Xyz},
                                                                {"f64.npy", AxisOrder::Zyx},
                                                                {"big.npy", AxisOrder::Xyz},
                                                                {"v3.npy", AxisOrder::Xyz},
                                                                {"v2.npy", AxisOrder::Zyx}};
  for (const auto& [name, order] : files) {
    SCOPED_TRACE(name);
    expect_model_values(read_model_volume(ModelFormat::Npy, path(name), "", order, kKey));
  }
  EXPECT_EQ(read_npy_header(path("v3.npy"), kKey).major_version, 3);
  EXPECT_TRUE(read_npy_header(path("f64.npy"), kKey).fortran_order);
}

// ---- raw ---------------------------------------------------------------------------------------

class ModelFormatRaw : public ModelFiles {};

TEST_F(ModelFormatRaw, BothOrdersAndSizeCheck) {
  ModelFileOptions options;
  options.shape = std::array<int, 3>{5, 3, 4};
  write_bytes(path("xyz.bin"), bytes_of(model_array<float>(AxisOrder::Xyz, false), false));
  write_bytes(path("zyx.bin"), bytes_of(model_array<float>(AxisOrder::Zyx, false), false));
  expect_model_values(
      read_model_volume(ModelFormat::Raw, path("xyz.bin"), "", AxisOrder::Xyz, kKey, options));
  expect_model_values(
      read_model_volume(ModelFormat::Raw, path("zyx.bin"), "", AxisOrder::Zyx, kKey, options));
  options.shape = std::array<int, 3>{5, 3, 5};
  const std::string message = input_error([&] {
    read_model_volume(ModelFormat::Raw, path("xyz.bin"), "", AxisOrder::Xyz, kKey, options);
  });
  EXPECT_NE(message.find("(240 bytes) is not allowed: exactly 300 bytes"), std::string::npos)
      << message;
  EXPECT_NE(input_error([&] {
              read_model_volume(ModelFormat::Raw, path("none.bin"), "", AxisOrder::Xyz, kKey,
                                options);
            }).find("not found"),
            std::string::npos);
}

TEST_F(ModelFormatRaw, ShapeOfOtherFormatsMustMatchWhenGiven) {
  write_bytes(path("v.npy"),
              npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3, 5), }",
                       bytes_of(model_array<float>(AxisOrder::Xyz, false), false)));
  ModelFileOptions options;
  options.shape = std::array<int, 3>{5, 3, 4};
  EXPECT_NO_THROW(
      read_model_volume(ModelFormat::Npy, path("v.npy"), "", AxisOrder::Xyz, kKey, options));
  options.shape = std::array<int, 3>{4, 3, 5};
  const std::string message = input_error([&] {
    read_model_volume(ModelFormat::Npy, path("v.npy"), "", AxisOrder::Xyz, kKey, options);
  });
  EXPECT_NE(message.find("a 5 x 3 x 4 model"), std::string::npos) << message;
  EXPECT_EQ(parse_model_format("segy"), ModelFormat::Segy);
  EXPECT_EQ(parse_model_format("hdf5"), ModelFormat::Hdf5);
  EXPECT_FALSE(parse_model_format("sgy"));
}

// ---- HDF5 --------------------------------------------------------------------------------------

class ModelFormatHdf5 : public ModelFiles {
protected:
  /// Write `values` as dataset `name` (groups created) of type `file_type` and shape `dims`.
  template <typename T>
  void write_dataset(const std::string& file, const std::string& name, hid_t memory_type,
                     hid_t file_type, const std::vector<hsize_t>& dims,
                     const std::vector<T>& values) {
    const hid_t f = fs::exists(file)
                        ? H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                        : H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t links = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(links, 1);
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t d = H5Dcreate2(f, name.c_str(), file_type, space, links, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    ASSERT_GE(H5Dwrite(d, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    H5Dclose(d);
    H5Sclose(space);
    H5Pclose(links);
    H5Fclose(f);
  }
};

TEST_F(ModelFormatHdf5, Float32AndFloat64DatasetsInBothOrders) {
  const std::string file = path("model.h5");
  write_dataset(file, "/models/vp", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, {4, 3, 5},
                model_array<float>(AxisOrder::Xyz, false));
  write_dataset(file, "/models/vp64", H5T_NATIVE_DOUBLE, H5T_IEEE_F64BE, {5, 3, 4},
                model_array<double>(AxisOrder::Zyx, false));
  expect_model_values(
      read_model_volume(ModelFormat::Hdf5, file, "/models/vp", AxisOrder::Xyz, kKey));
  const ModelVolume model =
      read_model_volume(ModelFormat::Hdf5, file, "models/vp64", AxisOrder::Zyx, kKey);
  expect_model_values(model);
  EXPECT_NE(model.description.find("float64"), std::string::npos) << model.description;
  EXPECT_NE(model.locate(1, 2, 3).find("element [1][2][3] of dataset /models/vp64"),
            std::string::npos)
      << model.locate(1, 2, 3);
}

TEST_F(ModelFormatHdf5, DatasetNameMayBeLeftOutWhenThereIsOne) {
  write_dataset(path("one.h5"), "/velocity", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {4, 3, 5},
                model_array<float>(AxisOrder::Xyz, false));
  expect_model_values(
      read_model_volume(ModelFormat::Hdf5, path("one.h5"), "", AxisOrder::Xyz, kKey));
}

TEST_F(ModelFormatHdf5, ClearErrors) {
  const std::string file = path("model.h5");
  write_dataset(file, "/vp", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {4, 3, 5},
                model_array<float>(AxisOrder::Xyz, false));
  write_dataset(file, "/ints", H5T_NATIVE_INT, H5T_STD_I32LE, {4, 3, 5},
                std::vector<int>(60, 1500));
  write_dataset(file, "/sheet", H5T_NATIVE_FLOAT, H5T_NATIVE_FLOAT, {12, 5},
                std::vector<float>(60, 1500));
  auto message = [&](const std::string& dataset) {
    return input_error(
        [&] { read_model_volume(ModelFormat::Hdf5, file, dataset, AxisOrder::Xyz, kKey); });
  };
  EXPECT_NE(message("").find("3 datasets: /ints, /sheet, /vp"), std::string::npos) << message("");
  EXPECT_NE(message("/nope").find("no dataset /nope; the datasets there: /ints, /sheet, /vp"),
            std::string::npos)
      << message("/nope");
  EXPECT_NE(message("/ints").find("4-byte integer values"), std::string::npos) << message("/ints");
  EXPECT_NE(message("/sheet").find("2 dimensions"), std::string::npos) << message("/sheet");

  write_bytes(path("text.h5"), "grid: {shape: [9, 9, 9]}\n");
  EXPECT_NE(input_error([&] {
              read_model_volume(ModelFormat::Hdf5, path("text.h5"), "/vp", AxisOrder::Xyz, kKey);
            }).find("not an HDF5 file"),
            std::string::npos);
}

TEST_F(ModelFormatHdf5, Float64BeyondFloatRangeIsRejectedAsInfinite) {
  std::vector<double> values = model_array<double>(AxisOrder::Xyz, false);
  values[1 + 5 * (2 + 3 * 3)] = 1e300; // (i, j, k) = (1, 2, 3)
  write_dataset(path("big.h5"), "/vp", H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, {4, 3, 5}, values);
  const ModelVolume model =
      read_model_volume(ModelFormat::Hdf5, path("big.h5"), "/vp", AxisOrder::Xyz, kKey);
  const std::string message = input_error([&] { check_model_values(model); });
  EXPECT_NE(message.find("inf at (i, j, k) = (1, 2, 3)"), std::string::npos) << message;
  EXPECT_NE(message.find("element [3][2][1] of dataset /vp"), std::string::npos) << message;
}

// ---- SEG-Y in
// ------------------------------------------------------------------------------------

std::string segy_data_dir() {
  return MINIMOD_SOURCE_DIR "/tests/data/segy/";
}

/// Empty when the SEG-Y tests can run here, else why not.
std::string segy_unavailable(bool need_data) {
  if (!segy_supported()) return "this build has no SEG-Y support (segyio not found by CMake)";
  std::error_code ec;
  if (need_data && !fs::is_directory(segy_data_dir(), ec)) {
    return "no SEG-Y test data at " + segy_data_dir() + "";
  }
  return "";
}

class SegyRead : public ModelFiles {
protected:
  void SetUp() override {
    ModelFiles::SetUp();
    m_skip = segy_unavailable(true);
  }
  std::string m_skip;
};

/// small.sgy and tiny.sgy hold IL + XL/100 + k/1e5 at sample k of inline IL, crossline XL.
void expect_line_numbered_samples(const SegyCube& cube) {
  const auto nx = static_cast<std::size_t>(cube.shape[0]);
  const auto ny = static_cast<std::size_t>(cube.shape[1]);
  for (int k = 0; k < cube.shape[2]; ++k) {
    for (std::size_t j = 0; j < ny; ++j) {
      for (std::size_t i = 0; i < nx; ++i) {
        const double expected = cube.inlines[j] + cube.crosslines[i] / 100.0 + k / 1e5;
        // IBM floats keep 24 bits with hexadecimal normalisation: ~1e-6 at these magnitudes.
        ASSERT_NEAR(cube.values[i + nx * (j + ny * static_cast<std::size_t>(k))], expected, 3e-6)
            << "inline " << cube.inlines[j] << " crossline " << cube.crosslines[i] << " sample "
            << k;
      }
    }
  }
}

TEST_F(SegyRead, SmallCubeAxesAndIbmSamples) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const SegyCube cube = read_segy_cube(segy_data_dir() + "small.sgy", kKey);
  ASSERT_EQ(cube.shape, (std::array<int, 3>{5, 5, 50}));
  EXPECT_EQ(cube.inlines, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(cube.crosslines, (std::vector<int>{20, 21, 22, 23, 24}));
  EXPECT_EQ(cube.format, 1);
  EXPECT_TRUE(cube.inline_sorted);
  EXPECT_EQ(cube.sample_interval, 4000);
  ASSERT_TRUE(cube.spacing[2]);
  EXPECT_DOUBLE_EQ(*cube.spacing[2], 4.0);
  EXPECT_FALSE(cube.spacing[0]); // no CDP coordinates in this file
  EXPECT_FALSE(cube.spacing[1]);
  EXPECT_FALSE(cube.first_cdp);
  // x is the crossline axis, y the inline axis: (i, j) = (3, 1) is inline 2, crossline 23, which
  // is trace 1 * 5 + 3 of the inline-sorted file.
  EXPECT_NEAR(cube.values[3 + 5 * 1], 2.23, 3e-6);
  EXPECT_EQ(cube.trace_index[3 + 5 * 1], 8);
  EXPECT_NEAR(cube.values[4 + 5 * (4 + 5 * 49)], 5.24 + 49e-5, 3e-6);
  expect_line_numbered_samples(cube);
}

TEST_F(SegyRead, TinyCube) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const SegyCube cube = read_segy_cube(segy_data_dir() + "tiny.sgy", kKey);
  ASSERT_EQ(cube.shape, (std::array<int, 3>{2, 3, 4}));
  EXPECT_EQ(cube.inlines, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(cube.crosslines, (std::vector<int>{20, 21}));
  EXPECT_EQ(cube.sample_interval, 1000);
  expect_line_numbered_samples(cube);
}

TEST_F(SegyRead, DelayAndCoordinateScalar) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const SegyCube cube = read_segy_cube(segy_data_dir() + "delay-scalar.sgy", kKey);
  ASSERT_EQ(cube.shape, (std::array<int, 3>{1, 1, 251}));
  EXPECT_EQ(cube.delay, 10000);
  EXPECT_EQ(cube.sample_interval, 4000);
  EXPECT_EQ(cube.measurement_system, 1);
  // The shared README says -10; the file's byte 71 holds -100 (0xff9c), and with it the CDP
  // coordinates 46709336 and 655770167 are plausible UTM metres.
  EXPECT_EQ(cube.coordinate_scalar, -100);
  ASSERT_TRUE(cube.first_cdp);
  EXPECT_NEAR((*cube.first_cdp)[0], 467093.36, 1e-6);
  EXPECT_NEAR((*cube.first_cdp)[1], 6557701.67, 1e-6);
  for (int k = 0; k < 251; ++k)
    ASSERT_EQ(cube.values[static_cast<std::size_t>(k)], static_cast<float>(k));
}

TEST_F(SegyRead, PreStackShotGatherIsNotACube) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const std::string message =
      input_error([&] { read_segy_cube(segy_data_dir() + "shot-gather.sgy", kKey); });
  EXPECT_NE(message.find("pre-stack data"), std::string::npos) << message;
  EXPECT_NE(message.find("is not allowed: a post-stack cube"), std::string::npos) << message;
  EXPECT_EQ(message.rfind(kKey, 0), 0u) << message;
}

TEST_F(SegyRead, BrokenAndTruncatedFilesFailCleanly) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  std::string message = input_error([&] { read_segy_cube(segy_data_dir() + "broken.sgy", kKey); });
  EXPECT_NE(message.find("truncated or damaged"), std::string::npos) << message;
  EXPECT_NE(message.find("2 extended textual headers"), std::string::npos) << message;

  // small.sgy cut inside its last trace, inside the headers, and a file that is not there.
  const std::string small = read_text(segy_data_dir() + "small.sgy");
  write_bytes(path("cut.sgy"), small.substr(0, small.size() - 7));
  message = input_error([&] { read_segy_cube(path("cut.sgy"), kKey); });
  EXPECT_NE(message.find("truncated or damaged"), std::string::npos) << message;
  EXPECT_NE(message.find("433 bytes are left over"), std::string::npos) << message;
  write_bytes(path("stub.sgy"), small.substr(0, 1000));
  message = input_error([&] { read_segy_cube(path("stub.sgy"), kKey); });
  EXPECT_NE(message.find("headers alone take 3600"), std::string::npos) << message;
  SegyReadOptions odd_bytes;
  odd_bytes.inline_byte = 190; // inside the 4-byte inline field: segyio refuses it
  message = input_error([&] { read_segy_cube(segy_data_dir() + "small.sgy", kKey, odd_bytes); });
  EXPECT_NE(message.find("reading inline (byte 190)"), std::string::npos) << message;
  odd_bytes.inline_byte = 239;
  message = input_error([&] { read_segy_cube(segy_data_dir() + "small.sgy", kKey, odd_bytes); });
  EXPECT_NE(message.find("trace header byte 239"), std::string::npos) << message;
  message = input_error([&] { read_segy_cube(path("none.sgy"), kKey); });
  EXPECT_NE(message.find("not found"), std::string::npos) << message;

  // A trace missing from the middle of the cube: whole traces, but not a full grid.
  const std::size_t trace_bytes = 240 + 50 * 4;
  write_bytes(path("hole.sgy"),
              small.substr(0, 3600 + 7 * trace_bytes) + small.substr(3600 + 8 * trace_bytes));
  message = input_error([&] { read_segy_cube(path("hole.sgy"), kKey); });
  EXPECT_NE(message.find("24 traces"), std::string::npos) << message;
}

/// A SEG-Y file made byte by byte, in either byte order: `inlines` x `crosslines` traces of
/// IEEE floats, sample k of (inline il, crossline xl) = il + xl / 100 + k / 1e5. Revision 2 files
/// carry the byte-order constant and may give the sample count and interval in the extended
/// fields only (the 2-byte fields then hold `short_samples` and `short_interval`).
struct HandMadeSegy {
  bool little_endian = false;
  int revision = 1;
  int samples = 6;
  int short_samples = 6;    ///< binary header bytes 3221-3222 (and trace byte 115)
  int short_interval = 500; ///< bytes 3217-3218 (and trace byte 117), microseconds
  double extended_interval = 0;
  int extended_samples = 0;
  int format = 5;
  int extra_trace_headers = 0;
  int extended_texts = 0;
  int inlines = 2, crosslines = 3;
  std::size_t cut = 0; ///< bytes left off the end

  template <typename T> void put(std::string& bytes, std::size_t at, T value) const {
    char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));
    if (!little_endian) std::reverse(b, b + sizeof(T)); // the host is little-endian
    bytes.replace(at, sizeof(T), b, sizeof(T));
  }
  std::string bytes() const {
    std::string file(3600, '\0');
    file.replace(0, 3200, 3200, ' ');
    auto bin = [&](int byte) { return static_cast<std::size_t>(byte - 1); };
    put<std::int16_t>(file, bin(3217), static_cast<std::int16_t>(short_interval));
    put<std::uint16_t>(file, bin(3221), static_cast<std::uint16_t>(short_samples));
    put<std::int16_t>(file, bin(3225), static_cast<std::int16_t>(format));
    put<std::int16_t>(file, bin(3255), 1);
    if (revision >= 2) {
      put<std::int32_t>(file, bin(3269), extended_samples);
      put<double>(file, bin(3273), extended_interval);
      put<std::int32_t>(file, bin(3297), 16909060);
      put<std::int32_t>(file, bin(3507), extra_trace_headers);
    }
    file[bin(3501)] = static_cast<char>(revision);
    put<std::int16_t>(file, bin(3503), 1);
    put<std::int16_t>(file, bin(3505), static_cast<std::int16_t>(extended_texts));
    for (int il = 1; il <= inlines; ++il) {
      for (int xl = 20; xl < 20 + crosslines; ++xl) {
        std::string trace(240 + 4 * static_cast<std::size_t>(samples), '\0');
        put<std::int32_t>(trace, 188, il);
        put<std::int32_t>(trace, 192, xl);
        put<std::uint16_t>(trace, 114, static_cast<std::uint16_t>(short_samples));
        put<std::int16_t>(trace, 116, static_cast<std::int16_t>(short_interval));
        for (int k = 0; k < samples; ++k) {
          put<float>(trace, 240 + 4 * static_cast<std::size_t>(k),
                     static_cast<float>(il + xl / 100.0 + k / 1e5));
        }
        file += trace;
      }
    }
    return file.substr(0, file.size() - cut);
  }
};

void expect_hand_made_samples(const SegyCube& cube, const HandMadeSegy& made) {
  ASSERT_EQ(cube.shape, (std::array<int, 3>{made.crosslines, made.inlines, made.samples}));
  for (int k = 0; k < made.samples; k += std::max(1, made.samples / 7)) {
    for (int j = 0; j < made.inlines; ++j) {
      for (int i = 0; i < made.crosslines; ++i) {
        const std::size_t at =
            static_cast<std::size_t>(i) +
            static_cast<std::size_t>(made.crosslines) *
                (static_cast<std::size_t>(j) + static_cast<std::size_t>(made.inlines) * k);
        ASSERT_EQ(cube.values[at], static_cast<float>((j + 1) + (20 + i) / 100.0 + k / 1e5))
            << "inline " << j + 1 << " crossline " << 20 + i << " sample " << k;
      }
    }
  }
}

TEST_F(SegyRead, LittleEndianFilesReadAsTheirBigEndianTwins) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  HandMadeSegy made;
  for (const bool little : {false, true}) {
    SCOPED_TRACE(little ? "little-endian" : "big-endian");
    made.little_endian = little;
    write_bytes(path("made.sgy"), made.bytes());
    const SegyCube cube = read_segy_cube(path("made.sgy"), kKey);
    EXPECT_EQ(cube.little_endian, little);
    EXPECT_EQ(cube.format, 5);
    EXPECT_EQ(cube.sample_interval, 500);
    EXPECT_EQ(cube.inlines, (std::vector<int>{1, 2}));
    EXPECT_EQ(cube.crosslines, (std::vector<int>{20, 21, 22}));
    expect_hand_made_samples(cube, made);
    const ModelVolume model =
        read_model_volume(ModelFormat::Segy, path("made.sgy"), "", AxisOrder::Xyz, kKey);
    EXPECT_EQ(model.description.find("little-endian") != std::string::npos, little)
        << model.description;
  }
#if defined(MINIMOD_HAVE_SEGYIO)
  // small.sgy (IBM floats, written by segyio) swapped field by field through segyio's C API.
  const std::string big = segy_data_dir() + "small.sgy";
  const std::string little = path("small-lsb.sgy");
  fs::copy_file(big, little);
  {
    segy_file* in = segy_open(big.c_str(), "rb");
    segy_file* out = segy_open(little.c_str(), "r+b");
    ASSERT_NE(in, nullptr);
    ASSERT_NE(out, nullptr);
    char bin[SEGY_BINARY_HEADER_SIZE];
    ASSERT_EQ(segy_binheader(in, bin), SEGY_OK);
    const int samples = segy_samples(bin), trace_bytes = segy_trsize(1, samples);
    ASSERT_EQ(segy_set_format(in, 1), SEGY_OK);
    ASSERT_EQ(segy_set_format(out, 1 | SEGY_LSB), SEGY_OK);
    ASSERT_EQ(segy_write_binheader(out, bin), SEGY_OK);
    std::vector<char> trace(static_cast<std::size_t>(trace_bytes));
    for (int t = 0; t < 25; ++t) {
      char header[SEGY_TRACE_HEADER_SIZE];
      ASSERT_EQ(segy_traceheader(in, t, header, 3600, trace_bytes), SEGY_OK);
      ASSERT_EQ(segy_write_traceheader(out, t, header, 3600, trace_bytes), SEGY_OK);
      ASSERT_EQ(segy_readtrace(in, t, trace.data(), 3600, trace_bytes), SEGY_OK);
      ASSERT_EQ(segy_writetrace(out, t, trace.data(), 3600, trace_bytes), SEGY_OK);
    }
    segy_close(in);
    segy_close(out);
  }
  ASSERT_NE(read_text(little), read_text(big)) << "the copy is byte-swapped";
  const SegyCube a = read_segy_cube(big, kKey), b = read_segy_cube(little, kKey);
  EXPECT_FALSE(a.little_endian);
  EXPECT_TRUE(b.little_endian);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.inlines, a.inlines);
  EXPECT_EQ(b.crosslines, a.crosslines);
  EXPECT_EQ(b.sample_interval, a.sample_interval);
  EXPECT_EQ(b.values, a.values);
  expect_line_numbered_samples(b);
#endif
}

TEST_F(SegyRead, LittleEndianFileOfSegyioPython) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const std::string missing = python_missing("segyio", m_dir);
  if (!missing.empty()) GTEST_SKIP() << missing << " (Debian: apt-get install python3-segyio)";
  const fs::path script = m_dir / "make.py";
  std::ofstream(script) << R"(import sys, numpy as np, segyio
spec = segyio.spec()
spec.format, spec.sorting, spec.endian = 5, 2, sys.argv[2]
spec.samples, spec.ilines, spec.xlines = list(range(7)), [3, 4], [30, 31, 32]
with segyio.create(sys.argv[1], spec) as f:
    t = 0
    for il in spec.ilines:
        for xl in spec.xlines:
            f.header[t] = {segyio.su.iline: il, segyio.su.xline: xl}
            f.trace[t] = (il + xl / 100.0 + np.arange(7) / 1e5).astype(np.float32)
            t += 1
    f.bin.update(hdt=2000, hns=7, format=5)
)";
  for (const std::string endian : {"big", "little"}) {
    SCOPED_TRACE(endian);
    const std::string file = path(endian + ".sgy");
    const fs::path log = m_dir / "make.log";
    ASSERT_EQ(run(python() + " '" + script.string() + "' '" + file + "' " + endian + " > '" +
                  log.string() + "' 2>&1"),
              0)
        << read_text(log);
    const SegyCube cube = read_segy_cube(file, kKey);
    EXPECT_EQ(cube.little_endian, endian == "little");
    ASSERT_EQ(cube.shape, (std::array<int, 3>{3, 2, 7}));
    EXPECT_EQ(cube.sample_interval, 2000);
    expect_line_numbered_samples(cube);
  }
}

TEST_F(SegyRead, Revision2ExtendedSampleCountAndInterval) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  HandMadeSegy made;
  made.revision = 2;
  made.samples = 40000; // beyond the 2-byte fields
  made.extended_samples = 40000;
  made.short_samples = 0;
  made.short_interval = 0;
  made.extended_interval = 250.0;
  made.inlines = 1;
  made.crosslines = 2;
  for (const bool little : {false, true}) {
    SCOPED_TRACE(little ? "little-endian" : "big-endian");
    made.little_endian = little;
    write_bytes(path("rev2.sgy"), made.bytes());
    const SegyCube cube = read_segy_cube(path("rev2.sgy"), kKey);
    EXPECT_EQ(cube.revision, 2);
    EXPECT_EQ(cube.little_endian, little);
    EXPECT_EQ(cube.sample_interval, 250);
    ASSERT_TRUE(cube.spacing[2]);
    EXPECT_DOUBLE_EQ(*cube.spacing[2], 0.25);
    expect_hand_made_samples(cube, made);
  }
  // The extended fields win over 2-byte fields that hold something else.
  made.little_endian = false;
  made.short_samples = 40000; // fits the 2-byte field read unsigned; the extended one says so too
  made.short_interval = 1000;
  write_bytes(path("rev2-both.sgy"), made.bytes());
  const SegyCube both = read_segy_cube(path("rev2-both.sgy"), kKey);
  EXPECT_EQ(both.shape[2], 40000);
  EXPECT_EQ(both.sample_interval, 250);
  // Revision 1 keeps bytes 3261-3500 unassigned: whatever they hold is not read.
  HandMadeSegy rev1;
  std::string bytes = rev1.bytes();
  bytes[3268] = 0x7f; // a "sample count" of 2 billion in a revision 1 file
  write_bytes(path("rev1-junk.sgy"), bytes);
  EXPECT_EQ(read_segy_cube(path("rev1-junk.sgy"), kKey).shape[2], 6);
}

/// Headers that lie about the file: each refused, naming the bytes and the value.
TEST_F(SegyRead, HeadersThatLieAboutSizesAreRefused) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  struct Case {
    const char* what;
    HandMadeSegy made;
    std::vector<std::string> expected;
  };
  std::vector<Case> cases;
  HandMadeSegy base;
  base.revision = 2;
  base.little_endian = true;
  {
    HandMadeSegy m = base;
    m.extended_samples = 50000; // the traces hold 6
    cases.push_back({"extended sample count beyond the file",
                     m,
                     {"cannot hold one trace of the 50000 samples",
                      "binary header bytes 3269-3272 (revision 2)"}});
  }
  {
    HandMadeSegy m = base;
    m.extended_samples = -7;
    cases.push_back({"negative extended sample count",
                     m,
                     {"extended sample count -7 in binary header bytes 3269-3272"}});
  }
  {
    HandMadeSegy m = base;
    m.extended_interval = std::nan("");
    cases.push_back({"extended interval NaN",
                     m,
                     {"extended sample interval nan in binary header bytes 3273-3280",
                      "a positive finite interval"}});
  }
  {
    HandMadeSegy m = base;
    m.extended_interval = -4.0;
    cases.push_back({"negative extended interval", m, {"extended sample interval -4"}});
  }
  {
    HandMadeSegy m = base;
    m.extra_trace_headers = 2;
    cases.push_back(
        {"additional trace headers",
         m,
         {"2 additional 240-byte trace headers per trace", "the standard 240-byte header alone"}});
  }
  {
    HandMadeSegy m = base;
    m.extended_texts = -1;
    cases.push_back(
        {"variable extended textual headers", m, {"-1 extended textual headers", "((EndText))"}});
  }
  {
    HandMadeSegy m;
    m.short_samples = 30000; // a 2-byte count far beyond the file's traces
    cases.push_back(
        {"2-byte sample count beyond the file",
         m,
         {"cannot hold one trace of the 30000 samples", "binary header bytes 3221-3222"}});
  }
  {
    HandMadeSegy m;
    m.little_endian = true;
    m.format = 3; // 2-byte integers: a real code, but not a float
    cases.push_back({"little-endian file of 2-byte integers",
                     m,
                     {"sample format code 3 (2-byte integer)", "read little-endian"}});
  }
  {
    HandMadeSegy m;
    m.cut = 5; // the last trace cut short
    cases.push_back({"a big-endian file cut inside its last trace",
                     m,
                     {"truncated or damaged", "bytes are left over"}});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    write_bytes(path("lies.sgy"), c.made.bytes());
    const std::string message = input_error([&] { read_segy_cube(path("lies.sgy"), kKey); });
    EXPECT_EQ(message.rfind(std::string(kKey) + ": " + path("lies.sgy"), 0), 0u) << message;
    for (const std::string& part : c.expected)
      EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  }
}

TEST_F(SegyRead, AsModelVolumeAndOnTheGrid) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  ModelVolume model =
      read_model_volume(ModelFormat::Segy, segy_data_dir() + "small.sgy", "", AxisOrder::Xyz, kKey);
  ASSERT_EQ(model.shape, (std::array<int, 3>{5, 5, 50}));
  EXPECT_NE(model.description.find("IBM float"), std::string::npos) << model.description;
  ASSERT_TRUE(model.file_spacing[2]);
  EXPECT_DOUBLE_EQ(*model.file_spacing[2], 4.0);
  EXPECT_NE(model.locate(1, 2, 3).find("inline 3, crossline 21, sample 3 (trace 11)"),
            std::string::npos)
      << model.locate(1, 2, 3);

  // A grid of twice the density in x and y over the same extent: the x and y spacing must come
  // from the survey; z takes the header's 4 (m) and the grid matches it.
  Grid grid;
  grid.nx = 9, grid.ny = 9, grid.nz = 50;
  grid.dx = 5, grid.dy = 5, grid.dz = 4;
  const std::string missing = input_error(
      [&] { model_geometry(model, std::nullopt, std::nullopt, grid, "s.yaml:7: model.spacing"); });
  EXPECT_NE(missing.find("s.yaml:7: model.spacing: missing"), std::string::npos) << missing;
  const ModelGeometry geometry =
      model_geometry(model, std::array<double, 3>{10, 10, 4}, std::nullopt, grid, "k");
  const ResampledModel placed = resample_model(std::move(model), geometry, grid);
  // Grid point (3, 4, 2) sits halfway between crosslines 21 and 22 on inline 3, at sample 2.
  EXPECT_NEAR(placed.velocity[3 + 9 * (4 + 9 * 2)], 3 + 0.215 + 2e-5, 3e-6);
  EXPECT_NE(placed.notice.find("resampled trilinearly"), std::string::npos) << placed.notice;
}

// ---- SEG-Y out ---------------------------------------------------------------------------------

/// A shot with two sources and receivers on every side of the first one, fractional positions
/// and depths, so that offsets' signs, rounding and the centimetre scalar all show.
ShotGather make_gather(int shot) {
  ShotGather gather;
  gather.shot = shot;
  gather.source_positions = {{100.25, 200.5, 10.0}, {150, 200, 10}};
  gather.receiver_positions = {{50.004, 200.5, 5.0},     {100.25, 150.0, 0.0},
                               {100.25, 260.0, 20.3749}, {300.0, 100.0, 12.3456},
                               {0.0, 0.0, 0.0},          {-40.0, 1200.0, 7.5}};
  gather.dt_out = 0.002;
  gather.samples = 7;
  gather.traces.resize(gather.receiver_positions.size() * 7);
  for (std::size_t n = 0; n < gather.traces.size(); ++n) {
    gather.traces[n] = static_cast<float>(std::sin(0.7 * static_cast<double>(n)) * 1e-3 *
                                          static_cast<double>(shot + 1));
  }
  gather.traces[3] = -0.0f;
  gather.traces[4] = 3.0e-41f; // subnormal
  return gather;
}

SegyWriteOptions write_options(SegyWriteMode mode) {
  SegyWriteOptions options;
  options.mode = mode;
  options.program = "minimod-gpu 1.2.3 (commit 0123456789ab)";
  options.survey_name = "demo survey";
  options.survey_path = "input/demo.yaml";
  options.key = "survey.yaml:40: output.segy";
  return options;
}

class SegyWrite : public ModelFiles {
protected:
  void SetUp() override {
    ModelFiles::SetUp();
    m_skip = segy_unavailable(false);
  }
  std::string m_skip;
};

#if defined(MINIMOD_HAVE_SEGYIO)

/// The trace header values a SEG-Y writer must produce for receiver r, computed here without the
/// writer's code.
struct ExpectedTrace {
  std::int32_t field_record, trace_in_record, offset, group_elevation, source_depth;
  std::int32_t source_x, source_y, group_x, group_y, cdp_x, cdp_y;
};

ExpectedTrace expected_trace(const ShotGather& gather, std::size_t r) {
  const Vec3& s = gather.source_positions[0];
  const Vec3& g = gather.receiver_positions[r];
  auto cm = [](double metres) { return static_cast<std::int32_t>(std::llround(metres * 100)); };
  const double dx = g[0] - s[0], dy = g[1] - s[1];
  const double sign = (dx < 0 || (dx == 0 && dy < 0)) ? -1 : 1;
  return {gather.shot + 1, // SEG-Y counts field records from 1, shots count from 0
          static_cast<std::int32_t>(r) + 1,
          static_cast<std::int32_t>(std::llround(sign * std::hypot(dx, dy))),
          cm(-g[2]),
          cm(s[2]),
          cm(s[0]),
          cm(s[1]),
          cm(g[0]),
          cm(g[1]),
          cm((s[0] + g[0]) / 2),
          cm((s[1] + g[1]) / 2)};
}

std::int32_t field_of(const char* header, int field) {
  std::int32_t value = 0;
  EXPECT_EQ(segy_get_field(header, field, &value), SEGY_OK) << "field " << field;
  return value;
}

std::int32_t bfield_of(const char* header, int field) {
  std::int32_t value = 0;
  EXPECT_EQ(segy_get_bfield(header, field, &value), SEGY_OK) << "field " << field;
  return value;
}

/// Check the file's traces from `first` against the gather, with segyio's C API.
void expect_gather_in_file(const std::string& file, const ShotGather& gather, int first) {
  segy_file* fp = segy_open(file.c_str(), "rb");
  ASSERT_NE(fp, nullptr);
  char bin[SEGY_BINARY_HEADER_SIZE];
  ASSERT_EQ(segy_binheader(fp, bin), SEGY_OK);
  const int samples = segy_samples(bin);
  ASSERT_EQ(samples, gather.samples);
  const long trace0 = segy_trace0(bin);
  const int trace_bytes = segy_trsize(segy_format(bin), samples);
  std::vector<float> data(static_cast<std::size_t>(samples));
  for (std::size_t r = 0; r < gather.receiver_positions.size(); ++r) {
    SCOPED_TRACE("receiver " + std::to_string(r));
    const int trace = first + static_cast<int>(r);
    char h[SEGY_TRACE_HEADER_SIZE];
    ASSERT_EQ(segy_traceheader(fp, trace, h, trace0, trace_bytes), SEGY_OK);
    const ExpectedTrace e = expected_trace(gather, r);
    EXPECT_EQ(field_of(h, SEGY_TR_SEQ_LINE), trace + 1);
    EXPECT_EQ(field_of(h, SEGY_TR_SEQ_FILE), trace + 1);
    EXPECT_EQ(field_of(h, SEGY_TR_FIELD_RECORD), e.field_record);
    EXPECT_EQ(field_of(h, SEGY_TR_NUMBER_ORIG_FIELD), e.trace_in_record);
    EXPECT_EQ(field_of(h, SEGY_TR_ENERGY_SOURCE_POINT), e.field_record);
    EXPECT_EQ(field_of(h, SEGY_TR_TRACE_ID), 1);
    EXPECT_EQ(field_of(h, SEGY_TR_OFFSET), e.offset);
    EXPECT_EQ(field_of(h, SEGY_TR_RECV_GROUP_ELEV), e.group_elevation);
    EXPECT_EQ(field_of(h, SEGY_TR_SOURCE_DEPTH), e.source_depth);
    EXPECT_EQ(field_of(h, SEGY_TR_ELEV_SCALAR), -100);
    EXPECT_EQ(field_of(h, SEGY_TR_SOURCE_GROUP_SCALAR), -100);
    EXPECT_EQ(field_of(h, SEGY_TR_SOURCE_X), e.source_x);
    EXPECT_EQ(field_of(h, SEGY_TR_SOURCE_Y), e.source_y);
    EXPECT_EQ(field_of(h, SEGY_TR_GROUP_X), e.group_x);
    EXPECT_EQ(field_of(h, SEGY_TR_GROUP_Y), e.group_y);
    EXPECT_EQ(field_of(h, SEGY_TR_COORD_UNITS), 1);
    EXPECT_EQ(field_of(h, SEGY_TR_SAMPLE_COUNT), gather.samples);
    EXPECT_EQ(field_of(h, SEGY_TR_SAMPLE_INTER), 2000);
    EXPECT_EQ(field_of(h, SEGY_TR_CDP_X), e.cdp_x);
    EXPECT_EQ(field_of(h, SEGY_TR_CDP_Y), e.cdp_y);
    ASSERT_EQ(segy_readtrace(fp, trace, data.data(), trace0, trace_bytes), SEGY_OK);
    ASSERT_EQ(segy_to_native(segy_format(bin), samples, data.data()), SEGY_OK);
    for (int s = 0; s < samples; ++s) {
      const float in =
          gather.traces[r * static_cast<std::size_t>(samples) + static_cast<std::size_t>(s)];
      EXPECT_EQ(std::memcmp(&data[static_cast<std::size_t>(s)], &in, sizeof in), 0)
          << "sample " << s << ": " << data[static_cast<std::size_t>(s)] << " != " << in;
    }
  }
  segy_close(fp);
}

TEST_F(SegyWrite, RoundTripEveryHeaderFieldAndSample) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const ShotGather gather = make_gather(4);
  const std::string file = path("out/shot.sgy");
  write_segy_gather(file, gather, write_options(SegyWriteMode::Create));
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(fs::file_size(file), 3600u + 6u * (240u + 7u * 4u));
  for (const auto& entry : fs::directory_iterator(path("out")))
    EXPECT_EQ(entry.path().filename(), "shot.sgy") << "temporary file left behind";

  segy_file* fp = segy_open(file.c_str(), "rb");
  ASSERT_NE(fp, nullptr);
  char bin[SEGY_BINARY_HEADER_SIZE];
  ASSERT_EQ(segy_binheader(fp, bin), SEGY_OK);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_INTERVAL), 2000);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_SAMPLES), 7);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_FORMAT), 5);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_MEASUREMENT_SYSTEM), 1);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_SEGY_REVISION), 0x0100);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_TRACE_FLAG), 1);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_EXT_HEADERS), 0);
  EXPECT_EQ(bfield_of(bin, SEGY_BIN_TRACES), 6);
  int traces = 0;
  ASSERT_EQ(segy_traces(fp, &traces, segy_trace0(bin), segy_trsize(5, 7)), SEGY_OK);
  EXPECT_EQ(traces, 6);
  char text[SEGY_TEXT_HEADER_SIZE + 1] = {};
  ASSERT_EQ(segy_read_textheader(fp, text), SEGY_OK);
  const std::string header(text, SEGY_TEXT_HEADER_SIZE);
  for (const char* expected :
       {"C 1 Synthetic acoustic shot gathers written by minimod-gpu 1.2.3", "demo survey",
        "input/demo.yaml", "shot 4 = field record 5", "x 100.25  y 200.50  z 10.00 m",
        "scalar (byte 69) -100", "C39 SEG Y REV1", "C40 END TEXTUAL HEADER"}) {
    EXPECT_NE(header.find(expected), std::string::npos) << expected << "\n" << header;
  }
  for (std::size_t line = 0; line < 40; ++line)
    EXPECT_EQ(header[line * 80], 'C') << "card " << line + 1;
  segy_close(fp);

  // On disk: an EBCDIC "C" (0xC3) first, big-endian IEEE samples.
  const std::string bytes = read_text(file);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0xC3);
  const float first = gather.traces[0];
  std::uint32_t bits = 0;
  std::memcpy(&bits, &first, 4);
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(static_cast<unsigned char>(bytes[3600 + 240 + static_cast<std::size_t>(b)]),
              (bits >> (24 - 8 * b)) & 0xff);
  }
  expect_gather_in_file(file, gather, 0);
}

TEST_F(SegyWrite, GathersAppendedToOneFile) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const std::string file = path("survey.sgy");
  const ShotGather shot0 = make_gather(0);
  const ShotGather shot1 = make_gather(1);
  write_segy_gather(file, shot0, write_options(SegyWriteMode::Create));
  write_segy_gather(file, shot1, write_options(SegyWriteMode::Append));
  EXPECT_EQ(fs::file_size(file), 3600u + 12u * (240u + 7u * 4u));
  expect_gather_in_file(file, shot0, 0);
  expect_gather_in_file(file, shot1, 6);

  ShotGather longer = make_gather(2);
  longer.samples = 8;
  longer.traces.resize(longer.receiver_positions.size() * 8);
  EXPECT_THROW(write_segy_gather(file, longer, write_options(SegyWriteMode::Append)), OutputError);
  EXPECT_THROW(write_segy_gather(path("absent.sgy"), shot1, write_options(SegyWriteMode::Append)),
               OutputError);
  // Create replaces what was there.
  write_segy_gather(file, shot1, write_options(SegyWriteMode::Create));
  EXPECT_EQ(fs::file_size(file), 3600u + 6u * (240u + 7u * 4u));
  expect_gather_in_file(file, shot1, 0);
}

TEST_F(SegyWrite, ReadBackBySegyioPython) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  const std::string missing = python_missing("segyio", m_dir);
  if (!missing.empty()) GTEST_SKIP() << missing << " (Debian: apt-get install python3-segyio)";
  const ShotGather gather = make_gather(2);
  const std::string file = path("shot.sgy");
  write_segy_gather(file, gather, write_options(SegyWriteMode::Create));
  const fs::path script = m_dir / "read.py";
  std::ofstream(script) << R"(import sys, segyio
T = segyio.TraceField
fields = (T.TRACE_SEQUENCE_LINE, T.TRACE_SEQUENCE_FILE, T.FieldRecord, T.TraceNumber, T.offset,
          T.ReceiverGroupElevation, T.SourceDepth, T.ElevationScalar, T.SourceGroupScalar,
          T.SourceX, T.SourceY, T.GroupX, T.GroupY, T.TRACE_SAMPLE_COUNT,
          T.TRACE_SAMPLE_INTERVAL, T.CDP_X, T.CDP_Y)
with segyio.open(sys.argv[1], ignore_geometry=True) as f:
    B = segyio.BinField
    print("B", f.bin[B.Interval], f.bin[B.Samples], f.bin[B.Format], f.bin[B.MeasurementSystem],
          f.tracecount, " ".join(repr(float(t)) for t in f.samples))
    for t in range(f.tracecount):
        print("T", t, " ".join(str(f.header[t][x]) for x in fields))
        print("D", t, " ".join(repr(float(v)) for v in f.trace[t]))
)";
  const fs::path log = m_dir / "read.log";
  ASSERT_EQ(
      run(python() + " '" + script.string() + "' '" + file + "' > '" + log.string() + "' 2>&1"), 0)
      << read_text(log);
  std::istringstream lines(read_text(log));
  std::string tag;
  int interval = 0, samples = 0, format = 0, system = 0, count = 0;
  lines >> tag >> interval >> samples >> format >> system >> count;
  ASSERT_EQ(tag, "B") << read_text(log);
  EXPECT_EQ(interval, 2000);
  EXPECT_EQ(samples, 7);
  EXPECT_EQ(format, 5);
  EXPECT_EQ(system, 1);
  ASSERT_EQ(count, 6);
  for (int s = 0; s < samples; ++s) {
    double time_ms = -1;
    lines >> time_ms;
    EXPECT_DOUBLE_EQ(time_ms, 2.0 * s);
  }
  for (std::size_t r = 0; r < 6; ++r) {
    SCOPED_TRACE("receiver " + std::to_string(r));
    std::size_t index = 0;
    std::array<std::int64_t, 17> h{};
    lines >> tag >> index;
    ASSERT_EQ(tag, "T");
    ASSERT_EQ(index, r);
    for (auto& value : h)
      lines >> value;
    const ExpectedTrace e = expected_trace(gather, r);
    const std::array<std::int64_t, 17> expected{static_cast<std::int64_t>(r) + 1,
                                                static_cast<std::int64_t>(r) + 1,
                                                e.field_record,
                                                e.trace_in_record,
                                                e.offset,
                                                e.group_elevation,
                                                e.source_depth,
                                                -100,
                                                -100,
                                                e.source_x,
                                                e.source_y,
                                                e.group_x,
                                                e.group_y,
                                                7,
                                                2000,
                                                e.cdp_x,
                                                e.cdp_y};
    EXPECT_EQ(h, expected);
    lines >> tag >> index;
    ASSERT_EQ(tag, "D");
    for (std::size_t s = 0; s < 7; ++s) {
      std::string text;
      lines >> text;
      EXPECT_EQ(static_cast<float>(std::strtod(text.c_str(), nullptr)), gather.traces[r * 7 + s])
          << "sample " << s;
    }
  }
}

#else // no segyio: the round trips need its C API to read the file back; say so in the results.

TEST_F(SegyWrite, RoundTripEveryHeaderFieldAndSample) {
  GTEST_SKIP() << m_skip;
}
TEST_F(SegyWrite, GathersAppendedToOneFile) {
  GTEST_SKIP() << m_skip;
}
TEST_F(SegyWrite, ReadBackBySegyioPython) {
  GTEST_SKIP() << m_skip;
}

#endif // MINIMOD_HAVE_SEGYIO

TEST_F(SegyWrite, RejectsWhatSegyCannotHold) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  ShotGather gather = make_gather(0);
  const SegyWriteOptions options = write_options(SegyWriteMode::Create);
  gather.dt_out = 0.0004333;
  std::string message = input_error([&] { write_segy_gather(path("a.sgy"), gather, options); });
  EXPECT_NE(message.find("survey.yaml:40: output.segy: sample interval 0.0004333 s"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("whole number of microseconds"), std::string::npos) << message;
  gather.dt_out = 0.002;
  gather.receiver_positions[2][0] = 3e7;
  message = input_error([&] { write_segy_gather(path("b.sgy"), gather, options); });
  EXPECT_NE(message.find("receiver x 3e+07 m is not allowed in SEG-Y"), std::string::npos)
      << message;
  EXPECT_FALSE(fs::exists(path("b.sgy")));
  EXPECT_TRUE(fs::is_empty(m_dir)) << "a temporary file was left behind";
}

TEST(SegyHelpers, SampleIntervalAndShotPaths) {
  EXPECT_EQ(segy_sample_interval_us(0.002, "k"), 2000);
  EXPECT_EQ(segy_sample_interval_us(0.00025, "k"), 250);
  EXPECT_EQ(segy_sample_interval_us(1e-6, "k"), 1);
  EXPECT_THROW(segy_sample_interval_us(0.04, "k"), InputError);
  EXPECT_THROW(segy_sample_interval_us(0, "k"), InputError);
  EXPECT_THROW(segy_sample_interval_us(0.0012345, "k"), InputError);
  EXPECT_EQ(segy_shot_path("out/demo.sgy", 3), "out/demo-shot3.sgy");
  EXPECT_EQ(segy_shot_path("demo.segy", 12), "demo-shot12.segy");
}

TEST(SegyWithoutSegyio, SaysTheBuildLacksIt) {
  if (segy_supported()) GTEST_SKIP() << "this build has segyio; the fallback is not compiled in";
  std::string message = input_error([] { read_segy_cube("model.sgy", kKey); });
  EXPECT_NE(message.find(std::string(kKey) + ": model.sgy: this minimod-gpu was built without "
                                             "SEG-Y support (segyio)"),
            std::string::npos)
      << message;
  SegyWriteOptions options;
  options.key = "survey.yaml:40: output.segy";
  message = input_error([&] { write_segy_gather("out.sgy", make_gather(0), options); });
  EXPECT_NE(message.find("survey.yaml:40: output.segy: out.sgy: this minimod-gpu was built "
                         "without SEG-Y support"),
            std::string::npos)
      << message;
}

// ---- resampling ------------------------------------------------------------------------------

ModelVolume memory_model(std::array<int, 3> shape, const std::vector<float>& values) {
  ModelVolume model;
  model.shape = shape;
  model.values = values;
  model.path = "memory";
  model.key = kKey;
  model.description = "test model";
  return model;
}

Grid make_grid(std::array<int, 3> n, std::array<double, 3> h, std::array<double, 3> o) {
  return test_support::make_grid(n[0], n[1], n[2], h[0], h[1], h[2], o[0], o[1], o[2]);
}

class ResampleModel : public ModelFiles {};

TEST_F(ResampleModel, IdentityWhenGeometryMatches) {
  const ModelVolume model = memory_model({5, 3, 4}, model_array<float>(AxisOrder::Xyz, false));
  const Grid grid = make_grid({5, 3, 4}, {10, 12.5, 5}, {-20, 0, 100});
  const ModelGeometry from_grid = model_geometry(model, std::nullopt, std::nullopt, grid, "k");
  EXPECT_EQ(from_grid.spacing_from, "the grid");
  ResampledModel placed = resample_model(model, from_grid, grid);
  EXPECT_EQ(placed.notice, "");
  EXPECT_EQ(placed.velocity, model.values);
  // The same geometry given explicitly is still the identity.
  const ModelGeometry given =
      model_geometry(model, std::array<double, 3>{10, 12.5, 5}, Vec3{-20, 0, 100}, grid, "k");
  placed = resample_model(model, given, grid);
  EXPECT_EQ(placed.notice, "");
  EXPECT_EQ(placed.velocity, model.values);
}

TEST_F(ResampleModel, LinearModelIsReproducedTrilinearly) {
  auto linear = [](double x, double y, double z) { return 1500 + 2 * x + 3 * y + 4 * z; };
  const std::array<int, 3> mshape{11, 9, 7};
  const std::array<double, 3> mh{10, 20, 5};
  const Vec3 mo{-5, 3, 0};
  std::vector<float> values;
  for (int k = 0; k < mshape[2]; ++k)
    for (int j = 0; j < mshape[1]; ++j)
      for (int i = 0; i < mshape[0]; ++i)
        values.push_back(
            static_cast<float>(linear(mo[0] + i * mh[0], mo[1] + j * mh[1], mo[2] + k * mh[2])));
  const ModelVolume model = memory_model(mshape, values);
  // Inside the model's extent [-5, 95] x [3, 163] x [0, 30] on every axis, off its points.
  const Grid grid = make_grid({23, 15, 19}, {4, 10, 1.5}, {0, 5, 2});
  const ModelGeometry geometry = model_geometry(model, mh, mo, grid, "k");
  const ResampledModel placed = resample_model(model, geometry, grid);
  ASSERT_EQ(placed.velocity.size(), grid.points());
  for (int k = 0; k < grid.nz; ++k)
    for (int j = 0; j < grid.ny; ++j)
      for (int i = 0; i < grid.nx; ++i) {
        const double expected =
            linear(grid.ox + i * grid.dx, grid.oy + j * grid.dy, grid.oz + k * grid.dz);
        ASSERT_NEAR(placed.velocity[static_cast<std::size_t>(i + 23 * (j + 15 * k))], expected,
                    expected * 1e-6)
            << "at (" << i << ", " << j << ", " << k << ")";
      }
  EXPECT_NE(placed.notice.find("resampled trilinearly"), std::string::npos) << placed.notice;
  EXPECT_NE(placed.notice.find("11 x 9 x 7 points, spacing 10, 20, 5 m (from model.spacing)"),
            std::string::npos)
      << placed.notice;
  EXPECT_EQ(placed.notice.find("outside"), std::string::npos) << placed.notice;
}

TEST_F(ResampleModel, GridBeyondTheModelTakesTheEdgeValues) {
  const ModelVolume model = memory_model({5, 3, 4}, model_array<float>(AxisOrder::Xyz, false));
  // The model spans x in [0, 40], y in [0, 20], z in [0, 30]; the grid reaches past every face.
  const Grid grid = make_grid({11, 5, 8}, {5, 10, 5}, {-10, -10, -5});
  const ModelGeometry geometry =
      model_geometry(model, std::array<double, 3>{10, 10, 10}, Vec3{0, 0, 0}, grid, "k");
  // Without model.extend: edge, a grid beyond the model is refused with both extents.
  const std::string refused = input_error([&] { resample_model(model, geometry, grid); });
  EXPECT_NE(refused.find("covers x [0, 40], y [0, 20], z [0, 30] m, the grid x [-10, 40], "
                         "y [-10, 30], z [-5, 30] m: " +
                         std::to_string(440 - 9 * 3 * 7) + " of 440 grid points lie outside"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("model.extend: edge"), std::string::npos) << refused;
  const ResampledModel placed = resample_model(model, geometry, grid, true);
  auto at = [&](int i, int j, int k) {
    return placed.velocity[static_cast<std::size_t>(i + 11 * (j + 5 * k))];
  };
  EXPECT_EQ(at(0, 0, 0), velocity_at(0, 0, 0));  // (-10, -10, -5): below on every axis
  EXPECT_EQ(at(10, 4, 7), velocity_at(4, 2, 3)); // (40, 30, 30): on x's edge, past y's
  EXPECT_EQ(at(4, 1, 1), velocity_at(1, 0, 0));  // (10, 0, 0) is model point (1, 0, 0)
  EXPECT_FLOAT_EQ(at(3, 2, 2), (velocity_at(0, 1, 0) + velocity_at(1, 1, 0)) / 2 + 50); // (5,10,5)
  // Outside: x -10, -5 (2 points) and none above 40; y -10 and 30 (2); z -5 and 30 is the
  // edge, so only -5 (1 of 8). Inside: 9 * 3 * 7 of 11 * 5 * 8.
  const std::string expected = std::to_string(440 - 9 * 3 * 7) + " of 440 grid points";
  EXPECT_NE(placed.notice.find(expected), std::string::npos) << placed.notice;
  EXPECT_NE(placed.notice.find("take its nearest edge value"), std::string::npos) << placed.notice;
  EXPECT_NE(placed.notice.find("x: 2 grid points below 0 m; y: 1 grid points below 0 m, 1 grid "
                               "points above 20 m; z: 1 grid points below 0 m)"),
            std::string::npos)
      << placed.notice;
}

TEST_F(ResampleModel, BadValuesNameTheirPositionInTheModelFile) {
  ModelFileOptions options;
  options.shape = std::array<int, 3>{5, 3, 4};
  const Grid grid = make_grid({9, 9, 9}, {5, 5, 5}, {0, 0, 0});
  const ModelGeometry geometry = ModelGeometry{{0, 0, 0}, {10, 10, 10}, "model.spacing"};
  struct Case {
    float value;
    const char* text;
  };
  for (const Case& c : {Case{std::numeric_limits<float>::quiet_NaN(), "nan"}, Case{0.0f, "0"},
                        Case{-5.0f, "-5"}, Case{std::numeric_limits<float>::infinity(), "inf"}}) {
    SCOPED_TRACE(c.text);
    // z fastest on disk: model point (2, 1, 3) is element 3 + 4 * (1 + 3 * 2) = 31.
    std::vector<float> values = model_array<float>(AxisOrder::Zyx, false);
    values[31] = c.value;
    values[59] = -1; // (4, 2, 3): later in x-fastest order, so not the one reported
    write_bytes(path("bad.bin"), bytes_of(values, false));
    ModelVolume model =
        read_model_volume(ModelFormat::Raw, path("bad.bin"), "", AxisOrder::Zyx, kKey, options);
    const std::string message =
        input_error([&] { resample_model(std::move(model), geometry, grid); });
    const std::string expected = std::string(kKey) + ": " + c.text +
                                 " at (i, j, k) = (2, 1, 3) of the model (byte offset 124 of " +
                                 path("bad.bin") +
                                 ") is not allowed: velocities finite and > 0 (m/s)";
    EXPECT_EQ(message, expected);
  }
  // In memory (no file layout): still the position and the value.
  std::vector<float> values(60, 1500.0f);
  values[1 + 5 * (2 + 3 * 0)] = 0;
  const std::string message = input_error([&] {
    check_model_values(memory_model({5, 3, 4}, values));
  });
  EXPECT_NE(message.find("0 at (i, j, k) = (1, 2, 0)"), std::string::npos) << message;
}

} // namespace
} // namespace minimod
