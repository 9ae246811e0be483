#include "io/memory_file.hpp"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <streambuf>

namespace minimod {
namespace {

std::mutex g_mutex;
/// The registered files; an entry whose last handle is gone is no file any more.
std::map<std::string, std::weak_ptr<const MemoryFile>> g_files;

/// A read-only stream buffer over a memory file's bytes, which it keeps alive.
class MemoryBuffer : public std::streambuf {
public:
  explicit MemoryBuffer(std::shared_ptr<const MemoryFile> file) : m_file(std::move(file)) {
    char* begin = const_cast<char*>(m_file->bytes.data());
    setg(begin, begin, begin + m_file->bytes.size());
  }

protected:
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) override {
    const off_type size = static_cast<off_type>(m_file->bytes.size());
    off_type at = dir == std::ios_base::beg   ? off
                  : dir == std::ios_base::cur ? static_cast<off_type>(gptr() - eback()) + off
                                              : size + off;
    if (at < 0 || at > size) return pos_type(off_type(-1));
    setg(eback(), eback() + at, egptr());
    return pos_type(at);
  }
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
    return seekoff(off_type(pos), std::ios_base::beg, which);
  }

private:
  std::shared_ptr<const MemoryFile> m_file;
};

/// An istream that owns its MemoryBuffer.
class MemoryStream : public std::istream {
public:
  explicit MemoryStream(std::shared_ptr<const MemoryFile> file)
      : std::istream(nullptr), m_buffer(std::move(file)) {
    rdbuf(&m_buffer);
  }

private:
  MemoryBuffer m_buffer;
};

} // namespace

bool is_memory_file_name(const std::string& path) {
  return path.rfind(kMemoryFilePrefix, 0) == 0;
}

std::shared_ptr<const MemoryFile>
register_memory_file(const std::string& stem, const std::string& extension, std::string bytes) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  const std::string name = kMemoryFilePrefix + stem + "@" + hex + extension;
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_files.begin(); it != g_files.end();) { // drop the entries of freed files
    it = it->second.expired() ? g_files.erase(it) : std::next(it);
  }
  if (auto live = g_files[name].lock()) {
    if (live->bytes == bytes) return live;
  }
  auto file = std::make_shared<const MemoryFile>(MemoryFile{name, std::move(bytes), std::nullopt});
  g_files[name] = file;
  return file;
}

std::string DeviceArray::element(int i, int j, int k) const {
  const std::array<int, 3> ijk{i, j, k};
  std::string text = "element ";
  for (const int a : array_axes)
    text += "[" + std::to_string(ijk[static_cast<std::size_t>(a)]) + "]";
  return text + " of " + owner;
}

std::shared_ptr<const MemoryFile> register_device_array(const std::string& stem,
                                                        DeviceArray array) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(array.checksum));
  const std::string name = kMemoryFilePrefix + stem + "@" + hex + ".gpu";
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_files.begin(); it != g_files.end();) {
    it = it->second.expired() ? g_files.erase(it) : std::next(it);
  }
  if (auto live = g_files[name].lock()) {
    if (live->device && live->device->data == array.data && live->device->shape == array.shape &&
        live->device->stride == array.stride && live->device->f64 == array.f64)
      return live;
  }
  auto file = std::make_shared<const MemoryFile>(MemoryFile{name, std::string(), std::move(array)});
  g_files[name] = file;
  return file;
}

std::shared_ptr<const MemoryFile> find_memory_file(const std::string& path) {
  if (!is_memory_file_name(path)) return nullptr;
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_files.find(path);
  return it == g_files.end() ? nullptr : it->second.lock();
}

bool input_file_exists(const std::string& path) {
  if (find_memory_file(path)) return true;
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::uintmax_t input_file_size(const std::string& path, std::error_code& ec) {
  ec.clear();
  if (const auto file = find_memory_file(path))
    return file->device ? file->device->bytes() : file->bytes.size();
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

std::unique_ptr<std::istream> open_input_file(const std::string& path) {
  if (const auto file = find_memory_file(path)) return std::make_unique<MemoryStream>(file);
  return std::make_unique<std::ifstream>(path, std::ios::binary);
}

} // namespace minimod
