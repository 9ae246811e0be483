/// PartsStore: the folder of parts of a run in progress (io/parts_store.hpp, docs/output.md).

#include "io/parts_store.hpp"

#include "core/errors.hpp"
#include "io/durable_file.hpp"
#include "io/memory_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include <memory>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace minimod {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* kManifestFormat = "minimod-gpu-run-parts";
constexpr int kManifestVersion = 1;

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

std::string in_quotes(const std::string& path) {
  return "'" + path + "'";
}

/// Size and CRC-32 of a whole file, read in large blocks.
InputFilePrint print_file(const std::string& role, const std::string& path) {
  InputFilePrint p;
  p.role = role;
  p.path = path;
  if (const auto file = find_memory_file(path); file && file->device) {
    // A GPU array is not read back to the host for its print: its device checksum stands in.
    p.size = file->device->bytes();
    p.crc = static_cast<std::uint32_t>(file->device->checksum ^ (file->device->checksum >> 32));
    return p;
  }
  const std::unique_ptr<std::istream> stream = open_input_file(path); // disk or memory
  std::istream& in = *stream;
  if (!in) throw InputError(role + ": cannot read " + in_quotes(path) + " to fingerprint the run");
  std::vector<char> block(std::size_t{4} << 20);
  uLong crc = crc32_z(0L, Z_NULL, 0);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(block.data()), static_cast<z_size_t>(n));
    p.size += static_cast<std::uint64_t>(n);
  }
  if (in.bad())
    throw InputError(role + ": cannot read " + in_quotes(path) + " to fingerprint the run");
  p.crc = static_cast<std::uint32_t>(crc);
  return p;
}

Json to_json(const RunFingerprint& f) {
  Json inputs = Json::array();
  for (const auto& in : f.inputs) {
    inputs.push_back(
        {{"role", in.role}, {"path", in.path}, {"size", in.size}, {"crc32", hex32(in.crc)}});
  }
  return Json{{"format", kManifestFormat},
              {"format_version", kManifestVersion},
              {"program_version", f.program_version},
              {"git_commit", f.git_commit},
              {"steps", f.steps},
              {"backend", f.backend},
              {"kernel", f.kernel},
              {"precision", f.precision},
              {"shots", f.shots},
              {"shots_selected", f.selected},
              {"survey_path", f.survey_path},
              {"inputs", inputs},
              {"survey", f.survey_text}};
}

RunFingerprint from_json(const Json& j) {
  if (j.value("format", "") != kManifestFormat) throw std::runtime_error("not a manifest");
  if (j.at("format_version").get<int>() != kManifestVersion) {
    throw std::runtime_error("manifest format_version " +
                             std::to_string(j.at("format_version").get<int>()) + ", expected " +
                             std::to_string(kManifestVersion));
  }
  RunFingerprint f;
  f.program_version = j.at("program_version").get<std::string>();
  f.git_commit = j.at("git_commit").get<std::string>();
  f.steps = j.at("steps").get<int>();
  f.backend = j.at("backend").get<std::string>();
  f.kernel = j.at("kernel").get<std::string>();
  // A manifest written before runs had a precision is of a float32 run.
  f.precision = j.value("precision", std::string("float32"));
  f.shots = j.at("shots").get<int>();
  f.selected = j.value("shots_selected", std::vector<int>{});
  f.survey_path = j.at("survey_path").get<std::string>();
  f.survey_text = j.at("survey").get<std::string>();
  for (const auto& in : j.at("inputs")) {
    InputFilePrint p;
    p.role = in.at("role").get<std::string>();
    p.path = in.at("path").get<std::string>();
    p.size = in.at("size").get<std::uint64_t>();
    p.crc = static_cast<std::uint32_t>(std::stoul(in.at("crc32").get<std::string>(), nullptr, 16));
    f.inputs.push_back(p);
  }
  return f;
}

/// First line where two texts differ, as "line N: 'a' vs 'b'".
std::string first_line_difference(const std::string& now, const std::string& was) {
  std::istringstream a(now), b(was);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "in line endings or the final newline";
    if (!more_a) la = "(end of file)";
    if (!more_b) lb = "(end of file)";
    if (!more_a || !more_b || la != lb) {
      auto cut = [](std::string s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; };
      return "first at line " + std::to_string(line) + ": '" + cut(la) + "' vs '" + cut(lb) +
             "' of the interrupted run";
    }
  }
}

std::string option_text(const std::string& value) {
  return value.empty() ? "(not given)" : value;
}

std::string steps_text(int steps) {
  return steps > 0 ? std::to_string(steps) : "(not given)";
}

/// "shot-0003.h5" -> 3; -1 for any other name.
int shot_of_part(const std::string& name) {
  if (name.size() < 12 || name.rfind("shot-", 0) != 0 || name.substr(name.size() - 3) != ".h5") {
    return -1;
  }
  const std::string digits = name.substr(5, name.size() - 8);
  if (digits.size() < 4 || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoi(digits);
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "unknown host";
  return host;
}

std::string system_reason(int error) {
  return std::strerror(error);
}

} // namespace

// ---- fingerprint -----------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> survey_input_files(const Survey& s) {
  std::vector<std::pair<std::string, std::string>> files;
  std::set<std::string> seen;
  auto add = [&](const std::string& role, const std::string& path) {
    if (!path.empty() && seen.insert(path).second) files.emplace_back(role, path);
  };
  if (s.model.kind == ModelSpec::Kind::File) add("model.file", s.model.file);
  if (s.anisotropy) {
    const AnisotropySpec& a = *s.anisotropy;
    const std::pair<const char*, const PropertySpec*> properties[] = {
        {"anisotropy.epsilon.file", &a.epsilon},
        {"anisotropy.delta.file", &a.delta},
        {"anisotropy.theta.file", &a.theta},
        {"anisotropy.phi.file", a.phi ? &*a.phi : nullptr}};
    for (const auto& [role, p] : properties) {
      if (p != nullptr && p->kind == PropertySpec::Kind::File) add(role, p->file);
    }
  }
  for (std::size_t shot = 0; shot < s.shots.size(); ++shot) {
    for (std::size_t k = 0; k < s.shots[shot].sources.size(); ++k) {
      const WaveletSpec& w = s.shots[shot].sources[k].wavelet;
      if (w.kind != WaveletSpec::Kind::File) continue;
      add(w.loc.key.empty() ? "shots[" + std::to_string(shot) + "].sources[" + std::to_string(k) +
                                  "].wavelet.file"
                            : w.loc.key + ".file",
          w.file);
    }
  }
  for (const auto& src : s.sources) {
    if (src.wavelet.kind == WaveletSpec::Kind::File) add("sources.wavelet.file", src.wavelet.file);
  }
  // The receiver and shot CSV files are expanded into positions by the survey parser; their
  // names are in the text, resolved against the survey's folder as the parser does.
  try {
    const YAML::Node doc = YAML::Load(s.text);
    auto add_csv = [&](const YAML::Node& map, const std::string& role) {
      if (!map || !map.IsMap() || !map["csv"] || !map["csv"].IsScalar()) return;
      fs::path csv(map["csv"].as<std::string>());
      if (!csv.is_absolute()) {
        const fs::path base = fs::path(s.path).parent_path();
        csv = (base.empty() ? fs::path(".") : base) / csv;
      }
      add(role, csv.lexically_normal().string());
    };
    if (doc.IsMap()) {
      add_csv(doc["receivers"], "receivers.csv");
      if (doc["shots"] && doc["shots"].IsMap()) {
        add_csv(doc["shots"]["positions"], "shots.positions.csv");
      }
    }
  } catch (const YAML::Exception&) {
    // The survey parsed before, so this does not happen; the positions are in the text then.
  }
  return files;
}

RunFingerprint make_fingerprint(const Survey& survey, int steps, const std::string& backend,
                                const std::string& kernel) {
  RunFingerprint f;
  f.survey_path = survey.path;
  f.survey_text = survey.text;
  for (const auto& [role, path] : survey_input_files(survey))
    f.inputs.push_back(print_file(role, path));
  f.steps = steps;
  f.backend = backend;
  f.kernel = kernel;
  f.precision = precision_name(survey.precision);
  f.shots = static_cast<int>(survey.shots.size());
  return f;
}

std::vector<std::string> fingerprint_differences(const RunFingerprint& was,
                                                 const RunFingerprint& now) {
  std::vector<std::string> d;
  if (was.program_version != now.program_version || was.git_commit != now.git_commit) {
    d.push_back("minimod-gpu " + now.program_version + " (commit " + now.git_commit + ") vs " +
                was.program_version + " (commit " + was.git_commit +
                ") of the interrupted run: another build may compute other samples");
  }
  if (was.survey_text != now.survey_text) {
    d.push_back("the survey text differs (" +
                first_line_difference(now.survey_text, was.survey_text) + ")");
  }
  std::map<std::string, const InputFilePrint*> before;
  for (const auto& in : was.inputs)
    before[in.role] = &in;
  for (const auto& in : now.inputs) {
    const auto at = before.find(in.role);
    if (at == before.end()) {
      d.push_back(in.role + " " + in_quotes(in.path) + " was not read by the interrupted run");
      continue;
    }
    const InputFilePrint& old = *at->second;
    if (old.path != in.path) {
      d.push_back(in.role + " is " + in_quotes(in.path) + " vs " + in_quotes(old.path) +
                  " of the interrupted run");
    } else if (old.size != in.size || old.crc != in.crc) {
      d.push_back(in.role + " " + in_quotes(in.path) + " changed (" + std::to_string(in.size) +
                  " bytes, CRC-32 " + hex32(in.crc) + " vs " + std::to_string(old.size) +
                  " bytes, CRC-32 " + hex32(old.crc) + " when the interrupted run read it)");
    }
    before.erase(at);
  }
  for (const auto& [role, old] : before) {
    d.push_back(role + " " + in_quotes(old->path) + " of the interrupted run is not read now");
  }
  if (was.steps != now.steps) {
    d.push_back("--steps " + steps_text(now.steps) + " vs " + steps_text(was.steps) +
                " of the interrupted run");
  }
  if (was.backend != now.backend) {
    d.push_back("--backend " + option_text(now.backend) + " vs " + option_text(was.backend) +
                " of the interrupted run");
  }
  if (was.kernel != now.kernel) {
    d.push_back("--kernel " + option_text(now.kernel) + " vs " + option_text(was.kernel) +
                " of the interrupted run");
  }
  if (was.precision != now.precision) {
    d.push_back("precision " + now.precision + " vs " + was.precision +
                " of the interrupted run (the survey's precision or --precision)");
  }
  if (was.shots != now.shots && was.survey_text == now.survey_text) {
    d.push_back(std::to_string(now.shots) + " shots vs " + std::to_string(was.shots) +
                " of the interrupted run");
  }
  if (was.selected != now.selected) {
    auto text = [](const std::vector<int>& shots) {
      if (shots.empty()) return std::string("every shot");
      std::string t;
      for (const int s : shots)
        t += (t.empty() ? "" : ",") + std::to_string(s);
      return "--shots " + t;
    };
    d.push_back(text(now.selected) + " vs " + text(was.selected) + " of the interrupted run");
  }
  return d;
}

std::string fingerprint_text(const RunFingerprint& fingerprint) {
  Json j = to_json(fingerprint);
  j.erase("survey_path");
  j.erase("shots_selected");
  return j.dump();
}

// ---- the store -------------------------------------------------------------------------------

struct PartsStore::Impl {
  std::string output;
  std::string folder;
  std::string lock_path, manifest_path;
  int lock_fd = -1;
  bool owned = false; ///< the lock is held and the folder is this run's
  std::vector<int> complete;
  std::vector<int> snapshots; ///< shots whose snapshots are complete, sorted
  std::function<void(const std::string&)> notice;
  RunFingerprint fingerprint; ///< this run's

  ~Impl() {
    if (lock_fd >= 0) ::close(lock_fd);
  }

  std::string part(int shot) const {
    char name[32];
    std::snprintf(name, sizeof name, "shot-%04d.h5", shot);
    return (fs::path(folder) / name).string();
  }
  std::string snapshots_part(int shot) const {
    char name[40];
    std::snprintf(name, sizeof name, "snapshots-%04d.h5", shot);
    return (fs::path(folder) / name).string();
  }

  void say(const std::string& line) const {
    if (notice) notice(line);
  }

  /// Take the lock, creating the folder and the lock file when needed. Throws OutputError when
  /// another process holds it.
  void lock() {
    for (int attempt = 0; attempt < 8; ++attempt) {
      if (::mkdir(folder.c_str(), 0755) == 0) {
        fsync_folder(parent_folder(folder)); // the folder's own entry survives a power cut too
      } else if (errno != EEXIST) {
        throw OutputError("cannot create the folder " + in_quotes(folder) + " for the parts of " +
                          in_quotes(output) + ": " + system_reason(errno));
      }
      std::error_code ec;
      if (!fs::is_directory(folder, ec)) {
        throw OutputError(in_quotes(folder) + " is in the way of the parts of " +
                          in_quotes(output) +
                          ": it is not a folder; allowed: remove it, or another -o");
      }
      const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) {
        if (errno == ENOENT) continue; // the folder was removed meanwhile (a run finishing)
        throw OutputError("cannot create the lock " + in_quotes(lock_path) + " of output " +
                          in_quotes(output) + ": " + system_reason(errno));
      }
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        char text[512] = {};
        const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
        ::close(fd);
        if (error != EWOULDBLOCK) {
          throw OutputError("cannot lock " + in_quotes(lock_path) + ": " + system_reason(error));
        }
        std::istringstream in(std::string(text, n > 0 ? static_cast<std::size_t>(n) : 0));
        std::string key, value, pid = "?", host = "?";
        while (in >> key >> value) {
          if (key == "pid") pid = value;
          if (key == "host") host = value;
        }
        throw OutputError("output " + in_quotes(output) +
                          " is being written by another run (process " + pid + " on " + host +
                          ", holding " + in_quotes(lock_path) +
                          "); nothing was changed; allowed: wait for it to end, or another -o");
      }
      // The lock file may have been removed (a run finishing) between open and flock: then the
      // lock is on a file nobody else sees, and another run could create a new one. Try again.
      struct stat opened {
      }, named{};
      if (::fstat(fd, &opened) != 0 || ::stat(lock_path.c_str(), &named) != 0 ||
          opened.st_ino != named.st_ino || opened.st_dev != named.st_dev) {
        ::close(fd);
        continue;
      }
      lock_fd = fd;
      return;
    }
    throw OutputError("cannot lock " + in_quotes(lock_path) +
                      ": the folder keeps disappearing (another run finishing?); try again");
  }

  /// Name this process as the holder in the lock file, once the folder is this run's (a refused
  /// run leaves the file as it was). Best effort: the lock is what counts, the text only names.
  void name_holder() const {
    const std::string holder =
        "pid " + std::to_string(static_cast<long>(::getpid())) + "\nhost " + host_name() + "\n";
    if (::ftruncate(lock_fd, 0) == 0) {
      [[maybe_unused]] const ssize_t ignored = ::pwrite(lock_fd, holder.data(), holder.size(), 0);
    }
  }

  /// Remove everything in the folder but the lock.
  void clear() {
    std::error_code ec;
    fs::remove(manifest_path, ec);
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (entry.path() == fs::path(lock_path)) continue;
      fs::remove_all(entry.path(), ec);
    }
    complete.clear();
    snapshots.clear();
  }

  /// Remove the whole folder, the manifest first: a folder without one holds nothing to resume.
  void remove_folder() {
    std::error_code ec;
    fs::remove(manifest_path, ec);
    try {
      fsync_folder(folder);
    } catch (const OutputError&) {
      // Removal goes on regardless; the worst a crash now leaves is a folder without manifest.
    }
    fs::remove_all(folder, ec);
    if (lock_fd >= 0) ::close(lock_fd);
    lock_fd = -1;
    owned = false;
  }
};

PartsStore::PartsStore(const std::string& output, const RunFingerprint& fingerprint,
                       const PartsOptions& options)
    : m_impl(std::make_unique<Impl>()) {
  Impl& impl = *m_impl;
  impl.output = output;
  impl.folder = output + ".parts";
  impl.lock_path = (fs::path(impl.folder) / "lock").string();
  impl.manifest_path = (fs::path(impl.folder) / "manifest").string();
  impl.notice = options.notice;
  impl.fingerprint = fingerprint;

  // 1. Never overwrite an input: compare files, not names (links and ./ give other names).
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"the survey", fingerprint.survey_path}};
  for (const auto& in : fingerprint.inputs)
    inputs.emplace_back(in.role, in.path);
  std::vector<std::string> outputs = {output};
  outputs.insert(outputs.end(), options.outputs.begin(), options.outputs.end());
  for (const auto& out : outputs) {
    for (const auto& [role, path] : inputs) {
      std::error_code ec;
      if (fs::exists(out, ec) && fs::exists(path, ec) && fs::equivalent(out, path, ec)) {
        throw InputError("output " + in_quotes(out) + " is the input file " + in_quotes(path) +
                         " (" + role +
                         "): writing it would destroy the input; allowed: an output path "
                         "that is none of the run's inputs (-o)");
      }
    }
  }
  // No two outputs on one path (an OUT named like its own sidecar or SEG-Y file, a --summary
  // on OUT): they share temporaries, and the last rename would destroy the others.
  for (std::size_t a = 0; a < outputs.size(); ++a) {
    for (std::size_t b = a + 1; b < outputs.size(); ++b) {
      std::error_code ea, eb;
      const fs::path pa = fs::absolute(outputs[a], ea).lexically_normal();
      const fs::path pb = fs::absolute(outputs[b], eb).lexically_normal();
      if (!ea && !eb && pa == pb) {
        throw InputError("outputs " + in_quotes(outputs[a]) + " and " + in_quotes(outputs[b]) +
                         " are one file: the run writes " + in_quotes(output) +
                         " and, beside it, its XDMF sidecar (.xmf), its SEG-Y files and the "
                         "--summary; allowed: paths that differ (e.g. -o ending in .h5)");
      }
    }
  }
  // 2. Paths that can be written: OUT not a folder, in a folder that exists or can be created;
  // the other outputs regular files where they exist (never a folder or a device).
  std::error_code ec;
  for (const auto& out : options.outputs) {
    if (fs::exists(out, ec) && !fs::is_regular_file(out, ec)) {
      throw OutputError("output " + in_quotes(out) +
                        " exists and is no regular file (a folder or a device); allowed: a file "
                        "path");
    }
  }
  if (fs::is_directory(output, ec)) {
    throw OutputError("output " + in_quotes(output) + " is a folder; allowed: a file path, e.g. " +
                      in_quotes((fs::path(output) / "survey.h5").string()));
  }
  const std::string parent = parent_folder(output);
  fs::create_directories(parent, ec);
  if (ec) {
    throw OutputError("cannot create the folder " + in_quotes(parent) + " for output " +
                      in_quotes(output) + ": " + ec.message());
  }
  // 3. The lock, before anything is written or removed.
  impl.lock();
  open_locked(fingerprint, options, outputs);
}

void PartsStore::open_locked(const RunFingerprint& fingerprint, const PartsOptions& options,
                             const std::vector<std::string>& outputs) {
  Impl& impl = *m_impl;
  std::error_code ec;
  // 4. An earlier run's manifest and parts.
  std::optional<RunFingerprint> earlier;
  if (fs::exists(impl.manifest_path, ec)) {
    try {
      std::ifstream in(impl.manifest_path);
      earlier = from_json(Json::parse(in));
    } catch (const std::exception& e) {
      throw InputError("cannot read the manifest " + in_quotes(impl.manifest_path) + " (" +
                       e.what() +
                       "); nothing was changed; to start afresh, remove the folder: rm -r " +
                       in_quotes(impl.folder));
    }
  }
  if (earlier) {
    for (const auto& entry : fs::directory_iterator(impl.folder, ec)) {
      const int shot = shot_of_part(entry.path().filename().string());
      if (shot >= 0 && shot < fingerprint.shots) impl.complete.push_back(shot);
    }
    std::sort(impl.complete.begin(), impl.complete.end());
    const std::vector<std::string> diffs = fingerprint_differences(*earlier, fingerprint);
    std::string listed;
    for (const auto& line : diffs)
      listed += "\n  - " + line;
    if (options.resume && !diffs.empty()) {
      throw InputError("--resume: the interrupted run in " + in_quotes(impl.folder) +
                       " had other inputs or options; its shots would not match this run's. "
                       "Nothing was changed. Differences:" +
                       listed +
                       "\nallowed: resume with the interrupted run's survey, files and options, "
                       "or start afresh by removing the folder: rm -r " +
                       in_quotes(impl.folder));
    }
    if (!options.resume && !impl.complete.empty()) {
      throw InputError(in_quotes(impl.folder) + " holds " + std::to_string(impl.complete.size()) +
                       " complete shot" + (impl.complete.size() == 1 ? "" : "s") +
                       " of an interrupted run of " + std::to_string(earlier->shots) +
                       "; nothing was changed. To continue it: " + options.resume_command +
                       (diffs.empty() ? "" : " (with its inputs and options:" + listed + "\n)") +
                       "; to start afresh, remove the folder first: rm -r " +
                       in_quotes(impl.folder));
    }
  }
  if (!earlier || !options.resume) {
    if (options.resume) {
      impl.say("resume: " + in_quotes(impl.folder) +
               " holds no interrupted run of this output; starting afresh");
    }
    impl.clear();
  }

  // 5. Leftovers of killed runs: temporaries in the folder and beside every final file.
  for (const auto& entry : fs::directory_iterator(impl.folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "lock" || name == "manifest" || shot_of_part(name) >= 0 ||
        (name.rfind("snapshots-", 0) == 0 && shot_of_part("shot-" + name.substr(10)) >= 0)) {
      continue;
    }
    fs::remove_all(entry.path(), ec);
  }
  std::map<std::string, std::vector<std::string>> prefixes; // folder -> "<name>.tmp-"
  for (const auto& out : outputs)
    prefixes[parent_folder(out)].push_back(fs::path(out).filename().string() + ".tmp-");
  for (const auto& [dir, names] : prefixes) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      for (const auto& prefix : names) {
        if (name.rfind(prefix, 0) == 0 && entry.is_regular_file(ec)) {
          fs::remove(entry.path(), ec);
          break;
        }
      }
    }
  }

  // 6. Parts that do not read back whole, or whose content is not what was written (their
  // CRC-32 differs from the one recorded with it: bit rot, a bad copy), are modelled again.
  if (earlier) {
    std::vector<int> kept;
    for (const int shot : impl.complete) {
      const std::string damage = shot_damage(impl.part(shot), shot);
      if (damage.empty()) {
        kept.push_back(shot);
      } else {
        impl.say("resume: " + in_quotes(impl.part(shot)) + " " + damage + "; shot " +
                 std::to_string(shot) + " is modelled again");
        fs::remove(impl.part(shot), ec);
      }
    }
    impl.complete = kept;
    // A shot's snapshots are complete before its part: kept with it, modelled again with it.
    for (int shot = 0; shot < fingerprint.shots; ++shot) {
      const std::string snapshots = impl.snapshots_part(shot);
      if (!fs::exists(snapshots, ec)) continue;
      const auto complete = std::find(impl.complete.begin(), impl.complete.end(), shot);
      if (complete == impl.complete.end()) {
        fs::remove(snapshots, ec); // belongs to a shot that did not finish
      } else if (const std::string damage = snapshots_damage(snapshots); !damage.empty()) {
        impl.say("resume: " + in_quotes(snapshots) + " " + damage + "; shot " +
                 std::to_string(shot) + " is modelled again for its snapshots");
        fs::remove(snapshots, ec);
        fs::remove(impl.part(shot), ec);
        impl.complete.erase(complete);
      } else {
        impl.snapshots.push_back(shot);
      }
    }
    impl.say("resume: " + std::to_string(impl.complete.size()) + " complete shot(s) of " +
             std::to_string(fingerprint.shots) + " kept in " + in_quotes(impl.folder));
  } else {
    // 7. A new run: its fingerprint, on disk before any shot. A folder this run could not set
    // up holds nothing of value: remove it rather than leave a lock file behind.
    try {
      write_file_durably(impl.manifest_path, to_json(fingerprint).dump(2) + "\n");
    } catch (...) {
      impl.remove_folder();
      throw;
    }
  }
  impl.name_holder();
  impl.owned = true;
}

PartsStore::~PartsStore() = default;

const std::string& PartsStore::folder() const {
  return m_impl->folder;
}

const std::vector<int>& PartsStore::complete_shots() const {
  return m_impl->complete;
}

bool PartsStore::shot_complete(int shot) const {
  return std::binary_search(m_impl->complete.begin(), m_impl->complete.end(), shot);
}

bool PartsStore::snapshots_complete(int shot) const {
  return std::binary_search(m_impl->snapshots.begin(), m_impl->snapshots.end(), shot);
}

namespace {
/// The root attributes of a part: provenance without the survey text (the manifest has it).
OutputMeta part_meta(const OutputMeta& meta) {
  OutputMeta m = meta;
  m.survey_text.clear();
  return m;
}
} // namespace

void PartsStore::write_shot(const OutputMeta& meta, const ShotGather& gather) {
  Impl& impl = *m_impl;
  OutputOptions options;
  options.xdmf_sidecar = false;
  OutputFile part(impl.part(gather.shot), part_meta(meta), options);
  part.write_shot(gather);
  part.commit();
  impl.complete.insert(std::upper_bound(impl.complete.begin(), impl.complete.end(), gather.shot),
                       gather.shot);
}

std::unique_ptr<OutputFile> PartsStore::begin_snapshots(const OutputMeta& meta, int shot) {
  OutputOptions options;
  options.xdmf_sidecar = false;
  auto file = std::make_unique<OutputFile>(m_impl->snapshots_part(shot), part_meta(meta), options);
  file->set_snapshot_shot(shot);
  return file;
}

void PartsStore::assemble(const OutputMeta& meta, int shots, const SegyTarget& segy,
                          const std::function<void(OutputFile&)>& decorate) {
  std::vector<int> all(static_cast<std::size_t>(std::max(0, shots)));
  for (int shot = 0; shot < shots; ++shot)
    all[static_cast<std::size_t>(shot)] = shot;
  assemble(meta, all, segy, decorate);
}

void PartsStore::assemble(const OutputMeta& meta, const std::vector<int>& shots,
                          const SegyTarget& segy,
                          const std::function<void(OutputFile&)>& decorate) {
  Impl& impl = *m_impl;
  if (!impl.owned) throw std::logic_error("PartsStore::assemble without the lock");
  for (const int shot : shots) {
    if (!shot_complete(shot)) {
      throw std::logic_error("PartsStore::assemble: shot " + std::to_string(shot) +
                             " is not complete");
    }
  }
  OutputMeta root = meta;
  if (root.backend.empty() && !shots.empty()) // every shot was kept
    read_backend_attributes(impl.part(shots.front()), root);
  root.survey_shots = impl.fingerprint.shots;
  root.shots_selected = shots;
  root.run_fingerprint = fingerprint_text(impl.fingerprint);
  OutputOptions no_sidecar;
  no_sidecar.xdmf_sidecar = false; // written below, with the other files beside OUT
  OutputFile out(impl.output, root, no_sidecar);
  // Every final file is first built in full under a temporary name: a failure (a full disk)
  // removes them all and leaves nothing of this assembly; the renames come last.
  std::vector<std::pair<std::string, std::string>> renames; // temporary -> final
  std::error_code ec;
  try {
    try {
      for (const int shot : shots)
        out.copy_shot_from(impl.part(shot), shot);
      for (const int shot : shots) {
        if (fs::exists(impl.snapshots_part(shot), ec))
          out.copy_snapshots_from(impl.snapshots_part(shot));
      }
    } catch (const DamagedDataError& e) {
      // Damaged after it was written: never used. The parts stay for --resume, which models the
      // damaged shot again.
      throw DamagedDataError(std::string(e.what()) + "; it was not used and " +
                             in_quotes(impl.output) + " was not written; the parts stay in " +
                             in_quotes(impl.folder) + ": rerun with --resume to model it again");
    }
    if (decorate) decorate(out);

    const std::string xmf = fs::path(impl.output).replace_extension(".xmf").string();
    const std::string sidecar = out.xdmf_sidecar_text(fs::path(impl.output).filename().string());
    if (!sidecar.empty()) {
      renames.emplace_back(temp_name(xmf), xmf);
      write_file_durably(renames.back().first, sidecar);
    }
    std::vector<std::pair<int, std::string>> shot_files;
    for (const int shot : shots)
      shot_files.emplace_back(shot, impl.part(shot));
    for (auto& entry : write_segy_files(segy, shot_files))
      renames.push_back(std::move(entry));
    // OUT first: once it has its name the run's result exists; the folder (with its manifest)
    // stays until the other files have theirs, so a kill in between is finished by --resume.
    out.commit();
    for (const auto& [from, to] : renames)
      rename_durably(from, to);
  } catch (...) {
    for (const auto& entry : renames)
      fs::remove(entry.first, ec);
    throw;
  }
  impl.remove_folder();
}

std::vector<std::pair<std::string, std::string>>
write_segy_files(const SegyTarget& segy, const std::vector<std::pair<int, std::string>>& shots) {
  std::vector<std::pair<std::string, std::string>> renames; // temporary -> final
  if (segy.path.empty()) return renames;
  std::error_code ec;
  try {
    SegyWriteOptions options = segy.options;
    if (segy.per_shot) {
      for (const auto& [shot, file] : shots) {
        const std::string path = segy_shot_path(segy.path, shot);
        renames.emplace_back(temp_name(path), path);
        options.mode = SegyWriteMode::Create;
        write_segy_gather(renames.back().first, read_shot_gather(file, shot), options);
        fsync_file(renames.back().first);
      }
    } else if (!shots.empty()) {
      renames.emplace_back(temp_name(segy.path), segy.path);
      for (const auto& [shot, file] : shots) {
        options.mode = shot == shots.front().first ? SegyWriteMode::Create : SegyWriteMode::Append;
        write_segy_gather(renames.back().first, read_shot_gather(file, shot), options);
      }
      fsync_file(renames.back().first);
    }
  } catch (...) {
    for (const auto& entry : renames)
      fs::remove(entry.first, ec);
    throw;
  }
  return renames;
}

SegyTarget merged_segy_target(const OutputMeta& meta, const std::string& output) {
  SegyTarget target;
  YAML::Node doc;
  try {
    doc = YAML::Load(meta.survey_text);
  } catch (const YAML::Exception&) {
    return target; // the survey parsed when it ran; a text that no longer does asks for nothing
  }
  if (!doc.IsMap() || !doc["output"] || !doc["output"].IsMap()) return target;
  const YAML::Node out = doc["output"];
  if (!out["segy"] || !out["segy"].IsScalar()) return target;
  std::string extension = fs::path(out["segy"].as<std::string>()).extension().string();
  if (extension.empty()) extension = ".sgy";
  target.path = fs::path(output).replace_extension(extension).string();
  target.per_shot = out["segy_layout"] && out["segy_layout"].IsScalar() &&
                    out["segy_layout"].as<std::string>() == "per_shot";
  target.options.program = "minimod-gpu " + meta.program_version;
  if (doc["name"] && doc["name"].IsScalar())
    target.options.survey_name = doc["name"].as<std::string>();
  target.options.survey_path = meta.survey_path;
  target.options.key = "output.segy";
  target.options.cdp_bins = segy_cdp_bins(meta.grid_origin, meta.grid_spacing, meta.grid_shape);
  return target;
}

bool PartsStore::abandon(bool keep) {
  Impl& impl = *m_impl;
  if (!impl.owned) return false;
  if (keep && !impl.complete.empty()) return true;
  impl.remove_folder();
  return false;
}

} // namespace minimod
