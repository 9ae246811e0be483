#include "io/durable_file.hpp"

#include "core/errors.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace minimod {

namespace fs = std::filesystem;

namespace {

std::string reason(int error) {
  return std::strerror(error);
}

void sync_path(const std::string& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    throw OutputError(std::string("cannot open ") + what + " '" + path +
                      "' to sync it: " + reason(errno));
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    throw OutputError(std::string("cannot sync ") + what + " '" + path +
                      "' to disk: " + reason(error));
  }
  ::close(fd);
}

} // namespace

void fsync_file(const std::string& path) {
  sync_path(path, O_RDONLY, "file");
}

void fsync_folder(const std::string& path) {
  sync_path(path.empty() ? "." : path, O_RDONLY | O_DIRECTORY, "folder");
}

std::string parent_folder(const std::string& path) {
  const std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

void rename_durably(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw OutputError("cannot rename '" + from + "' to '" + to + "': " + reason(errno));
  }
  fsync_folder(parent_folder(to));
}

std::string temp_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
}

void write_file_durably(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    throw OutputError("cannot write '" + path +
                      "': it exists and is no regular file; allowed: a file path");
  }
  const std::string folder = parent_folder(path);
  fs::create_directories(folder, ec);
  if (ec)
    throw OutputError("cannot create the folder '" + folder + "' for '" + path +
                      "': " + ec.message());
  const std::string tmp = temp_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw OutputError("cannot create '" + tmp + "': " + reason(errno));
  auto fail = [&](const std::string& what) {
    const int error = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw OutputError("cannot " + what + " '" + tmp + "': " + reason(error));
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("sync");
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw OutputError("cannot write '" + tmp + "': " + reason(error));
  }
  try {
    rename_durably(tmp, path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

} // namespace minimod
