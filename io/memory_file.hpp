#pragma once
/// Input files held in memory instead of on disk: what the Python module hands the program for a
/// model, an anisotropy field or a wavelet given as an array (python/, docs/python.md). A survey
/// names one like any file; every reader of input files (the survey's existence check, the .npy
/// and wavelet readers, the run's fingerprint) opens it through these functions, so that an array
/// gets exactly the checks and messages a file with the same bytes gets.
///
/// A memory file's name starts with kMemoryFilePrefix and carries the bytes' CRC-32, so that the
/// same array gives the same name (and the same survey text) in a run and in its --resume.

#include <array>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

namespace minimod {

/// What every memory file's name starts with.
inline constexpr const char* kMemoryFilePrefix = "array:";

/// A 3-D velocity model of float32 or float64 values in GPU memory, handed over by the Python
/// module from a CuPy or PyTorch array (DLPack) so that a GPU run builds its medium from it on the
/// device, without a host copy (kernels/device_array.hpp, docs/python.md). The array stays owned
/// by its producer: the Python handle that registered it keeps it alive. Its values are scanned
/// on the device when it is registered (scan_device_array): range, first bad value, checksum.
struct DeviceArray {
  const void* data = nullptr;             ///< device address of model point (0, 0, 0)
  bool f64 = false;                       ///< float64 values (float32 otherwise)
  int device = 0;                         ///< the GPU's ordinal in this process
  std::array<int, 3> shape{};             ///< nx, ny, nz
  std::array<std::int64_t, 3> stride{};   ///< elements between neighbours along x, y, z
  std::array<std::string, 3> index_names; ///< the array's axes as "[a][b][c]" names them
  std::array<int, 3> array_axes{0, 1, 2}; ///< the model axis of each array axis, first first
  std::string owner; ///< what the array is, for messages ("torch.Tensor on cuda:0")
  std::shared_ptr<const void> keep_alive; ///< the producer's reference to the memory
  // Found by scan_device_array, values as float32 (a float64 value rounded as a file's is).
  double vmin = 0, vmax = 0;   ///< range of the finite values > 0
  std::int64_t first_bad = -1; ///< x-fastest index of the first value not finite and > 0
  float bad_value = 0;         ///< that value
  std::uint64_t checksum = 0;  ///< of the float32 values and their indices (the run's print)
  std::uint64_t points() const {
    return static_cast<std::uint64_t>(shape[0]) * static_cast<std::uint64_t>(shape[1]) *
           static_cast<std::uint64_t>(shape[2]);
  }
  std::uint64_t bytes() const { return points() * (f64 ? 8u : 4u); }
  /// "element [i][j][k] of <owner>" of model point (i, j, k).
  std::string element(int i, int j, int k) const;
};

/// A file's bytes held in memory, under its name; or, for `device`, an array on a GPU that no
/// byte reader opens (its bytes are empty).
struct MemoryFile {
  std::string name;
  std::string bytes;
  std::optional<DeviceArray> device;
};

/// Whether `path` is a memory file's name (whether or not one is registered under it).
bool is_memory_file_name(const std::string& path);

/// Register `bytes` as a memory file named kMemoryFilePrefix + `stem` + "@" + its CRC-32 in hex +
/// `extension` ("array:model.file@1a2b3c4d.npy"). The file exists while a handle returned for it
/// lives; registering the same bytes under the same stem again returns the live file.
std::shared_ptr<const MemoryFile>
register_memory_file(const std::string& stem, const std::string& extension, std::string bytes);

/// Register a scanned GPU array as the memory file kMemoryFilePrefix + `stem` + "@" + its
/// checksum in hex + ".gpu". Registering the same array again returns the live file.
std::shared_ptr<const MemoryFile> register_device_array(const std::string& stem, DeviceArray array);

/// The live memory file named `path`, or null.
std::shared_ptr<const MemoryFile> find_memory_file(const std::string& path);

/// Whether `path` is an existing regular file on disk or a live memory file.
bool input_file_exists(const std::string& path);

/// The size of a file on disk or in memory (a GPU array's values); sets `ec` (and returns 0) when
/// it has none.
std::uintmax_t input_file_size(const std::string& path, std::error_code& ec);

/// A binary stream over a file on disk or in memory; a stream whose fail() is set when it cannot
/// be opened.
std::unique_ptr<std::istream> open_input_file(const std::string& path);

} // namespace minimod
