/// Memory files (io/memory_file.hpp): arrays handed over in memory read like the files they stand
/// for, and exist only while a handle to them lives.

#include "core/errors.hpp"
#include "io/h5_output.hpp"
#include "io/memory_file.hpp"
#include "io/npy.hpp"
#include "models/velocity.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace minimod;

/// A version 1.0 .npy image of a little-endian float32 array of shape (2, 3, 4), C order.
std::string npy_bytes(const std::vector<float>& values) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return bytes;
}

TEST(MemoryFile, ReadsAsTheFileWithItsBytes) {
  std::vector<float> values(24);
  for (std::size_t n = 0; n < values.size(); ++n)
    values[n] = 1500.0f + static_cast<float>(n);
  const std::string bytes = npy_bytes(values);
  const auto path = std::filesystem::temp_directory_path() / "minimod_memory_file_test.npy";
  std::ofstream(path, std::ios::binary) << bytes;

  const auto file = register_memory_file("model.file", ".npy", bytes);
  EXPECT_EQ(file->name.rfind("array:model.file@", 0), 0u);
  EXPECT_EQ(file->name.substr(file->name.size() - 4), ".npy");
  EXPECT_TRUE(input_file_exists(file->name));
  std::error_code ec;
  EXPECT_EQ(input_file_size(file->name, ec), bytes.size());
  EXPECT_FALSE(ec);

  const NpyArray from_memory = read_npy(file->name, "key");
  const NpyArray from_disk = read_npy(path.string(), "key");
  EXPECT_EQ(from_memory.values, from_disk.values);
  EXPECT_EQ(from_memory.header.shape, from_disk.header.shape);

  // Seeking works as in a file: the last four bytes are the last value.
  const auto in = open_input_file(file->name);
  in->seekg(-4, std::ios::end);
  float last = 0;
  in->read(reinterpret_cast<char*>(&last), sizeof last);
  EXPECT_EQ(last, values.back());
  std::filesystem::remove(path);
}

TEST(MemoryFile, SameBytesSameNameAndGoneWithItsLastHandle) {
  const std::string bytes(64, '\x01');
  auto a = register_memory_file("w", ".f32", bytes);
  auto b = register_memory_file("w", ".f32", bytes);
  EXPECT_EQ(a, b);
  const auto other = register_memory_file("w", ".f32", std::string(64, '\x02'));
  EXPECT_NE(other->name, a->name); // other bytes, another CRC-32
  const std::string name = a->name;
  a.reset();
  EXPECT_TRUE(input_file_exists(name));
  b.reset();
  EXPECT_FALSE(input_file_exists(name));
  EXPECT_THROW(read_npy(name, "model.file"), InputError);
}

TEST(MemoryFile, GpuArrayIsNamedByItsChecksumAndNoByteReaderOpensIt) {
  DeviceArray d;
  static const float fake = 0; // never read: no reader dereferences a GPU array's address
  d.data = &fake;
  d.shape = {4, 3, 2};
  d.stride = {6, 2, 1}; // v[x, y, z] in C order
  d.array_axes = {0, 1, 2};
  d.owner = "torch.Tensor on cuda:0";
  d.checksum = 0x0123456789abcdefull;
  auto file = register_device_array("model.file", d);
  EXPECT_EQ(file->name, "array:model.file@0123456789abcdef.gpu");
  EXPECT_EQ(register_device_array("model.file", d), file); // the same array: the live file
  EXPECT_TRUE(input_file_exists(file->name));
  std::error_code ec;
  EXPECT_EQ(input_file_size(file->name, ec), 24u * 4u);
  EXPECT_EQ(d.element(3, 1, 0), "element [3][1][0] of torch.Tensor on cuda:0");
  d.array_axes = {2, 1, 0};
  EXPECT_EQ(d.element(3, 1, 0), "element [0][1][3] of torch.Tensor on cuda:0");

  // A host reader of it (another equation, the CPU resampler) refuses it by name.
  ModelSpec spec;
  spec.kind = ModelSpec::Kind::File;
  spec.file = file->name;
  spec.format = "npy";
  Grid grid;
  grid.nx = 4;
  grid.ny = 3;
  grid.nz = 2;
  grid.dx = grid.dy = grid.dz = 10;
  try {
    build_velocity(spec, grid);
    FAIL() << "a GPU array read on the host";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(torch.Tensor on cuda:0) is not allowed here: a GPU "
                                         "array is read on its GPU only"),
              std::string::npos)
        << e.what();
  }
  const std::string name = file->name;
  file.reset();
  EXPECT_FALSE(input_file_exists(name));
}

TEST(StoredModelPoints, KeptPointsAreTheDecimatedGridPoints) {
  // 300 points along x keep every second one; the property at the kept points alone is the same.
  StoredModel a = model_geometry({300, 3, 2}, {0, 0, 0}, {10, 10, 10});
  std::vector<float> grid_values(300 * 3 * 2);
  for (std::size_t n = 0; n < grid_values.size(); ++n)
    grid_values[n] = 1500.0f + static_cast<float>(n);
  StoredModel b = a;
  add_model_property(a, "vp", "m/s", grid_values);
  const std::vector<std::int64_t> points = model_kept_points(b);
  ASSERT_EQ(points.size(), 150u * 3u * 2u);
  EXPECT_EQ(points[1], 2);
  EXPECT_EQ(points[150], 300);
  std::vector<float> kept;
  for (const std::int64_t p : points)
    kept.push_back(grid_values[static_cast<std::size_t>(p)]);
  add_kept_model_property(b, "vp", "m/s", kept);
  EXPECT_EQ(a.properties[0].values, b.properties[0].values);
  EXPECT_THROW(add_kept_model_property(b, "x", "m/s", {1.0f}), std::logic_error);
}

} // namespace
