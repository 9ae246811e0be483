/// Memory files (io/memory_file.hpp): arrays handed over in memory read like the files they stand
/// for, and exist only while a handle to them lives.

#include "core/errors.hpp"
#include "io/memory_file.hpp"
#include "io/npy.hpp"

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

} // namespace
