#pragma once
/// Durable file-system steps for output that must survive a crash at any moment: data reaches the
/// disk (fsync) before a rename makes it visible under its final name, and the folder holding the
/// rename is synced too, so after a power cut a name is either absent or names complete data.
/// Every failure throws OutputError naming the path and the system's reason.

#include <string>

namespace minimod {

/// fsync the file at `path` (opened read-only; Linux syncs the file's data and metadata).
void fsync_file(const std::string& path);
/// fsync the folder at `path` ("" means the current folder), making renames and removals in it
/// durable.
void fsync_folder(const std::string& path);
/// The folder holding `path` ("." for a bare name).
std::string parent_folder(const std::string& path);
/// Rename `from` to `to` (replacing `to`) and fsync the folder of `to`.
void rename_durably(const std::string& from, const std::string& to);
/// Write `text` to `path` through `<path>.tmp-<pid>`: written, fsynced, renamed, folder fsynced.
/// The folder is created when missing; a `path` that exists and is no regular file (a folder, a
/// device) is refused. Every failure is an OutputError naming the path.
void write_file_durably(const std::string& path, const std::string& text);
/// A temporary name beside `path` owned by this process: `<path>.tmp-<pid>`.
std::string temp_name(const std::string& path);

} // namespace minimod
