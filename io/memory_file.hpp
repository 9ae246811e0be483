#pragma once
/// Input files held in memory instead of on disk: what the Python module hands the program for a
/// model, an anisotropy field or a wavelet given as an array (python/, docs/python.md). A survey
/// names one like any file; every reader of input files (the survey's existence check, the .npy
/// and wavelet readers, the run's fingerprint) opens it through these functions, so that an array
/// gets exactly the checks and messages a file with the same bytes gets.
///
/// A memory file's name starts with kMemoryFilePrefix and carries the bytes' CRC-32, so that the
/// same array gives the same name (and the same survey text) in a run and in its --resume.

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <system_error>

namespace minimod {

/// What every memory file's name starts with.
inline constexpr const char* kMemoryFilePrefix = "array:";

/// A file's bytes held in memory, under its name.
struct MemoryFile {
  std::string name;
  std::string bytes;
};

/// Whether `path` is a memory file's name (whether or not one is registered under it).
bool is_memory_file_name(const std::string& path);

/// Register `bytes` as a memory file named kMemoryFilePrefix + `stem` + "@" + its CRC-32 in hex +
/// `extension` ("array:model.file@1a2b3c4d.npy"). The file exists while a handle returned for it
/// lives; registering the same bytes under the same stem again returns the live file.
std::shared_ptr<const MemoryFile>
register_memory_file(const std::string& stem, const std::string& extension, std::string bytes);

/// The live memory file named `path`, or null.
std::shared_ptr<const MemoryFile> find_memory_file(const std::string& path);

/// Whether `path` is an existing regular file on disk or a live memory file.
bool input_file_exists(const std::string& path);

/// The size of a file on disk or in memory; sets `ec` (and returns 0) when it has none.
std::uintmax_t input_file_size(const std::string& path, std::error_code& ec);

/// A binary stream over a file on disk or in memory; a stream whose fail() is set when it cannot
/// be opened.
std::unique_ptr<std::istream> open_input_file(const std::string& path);

} // namespace minimod
