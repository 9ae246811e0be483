#include "kernels/autotune.hpp"

#include "core/errors.hpp"
#include "version.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

namespace minimod {
namespace {

/// A timed repeat shorter than this is dominated by launch gaps and timer resolution: the step
/// count is raised until one repeat lasts about this long.
constexpr double kMinRepeatMs = 10.0;
/// Most steps in one timed repeat, however small the grid.
constexpr int kMaxTimedSteps = 2000;
/// Cache file format version.
constexpr int kCacheVersion = 1;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

using Json = nlohmann::ordered_json;

/// A damaged cache: what is wrong and where ("entries[2].grid is [1,2], not an array of 3 ...").
struct CacheError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Member `name` of the object `object`; nullptr when it is missing.
const Json* member(const Json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

/// Member `name` of `object` (at `where` in the file), which must be there.
const Json& required(const Json& object, const char* name, const std::string& where) {
  const Json* v = member(object, name);
  if (!v) throw CacheError(where + "." + name + " is missing");
  return *v;
}

std::string string_at(const Json& v, const std::string& where) {
  if (!v.is_string()) throw CacheError(where + " is " + v.dump() + ", not a string");
  return v.get<std::string>();
}

int int_at(const Json& v, const std::string& where) {
  if (v.is_number_unsigned() && v.get<std::uint64_t>() <= std::numeric_limits<int>::max())
    return static_cast<int>(v.get<std::uint64_t>());
  if (v.is_number_integer() && !v.is_number_unsigned() &&
      v.get<std::int64_t>() >= std::numeric_limits<int>::min())
    return static_cast<int>(v.get<std::int64_t>());
  throw CacheError(where + " is " + v.dump() + ", not an integer of int range");
}

/// The N integers of the array `v`.
template <std::size_t N> std::array<int, N> ints_at(const Json& v, const std::string& where) {
  if (!v.is_array() || v.size() != N)
    throw CacheError(where + " is " + v.dump() + ", not an array of " + std::to_string(N) +
                     " integers");
  std::array<int, N> out{};
  for (std::size_t i = 0; i < N; ++i)
    out[i] = int_at(v[i], where + "[" + std::to_string(i) + "]");
  return out;
}

/// Every entry of the cache file at `path`. Throws CacheError when the file cannot be read or is
/// not a cache of this format; the message names the offending field.
std::vector<AutotuneEntry> read_entries(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CacheError("cannot be opened");
  Json root;
  try {
    root = Json::parse(in);
  } catch (const Json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 4: ..." without the tag.
    const std::string what = e.what();
    const std::size_t tag_end = what.find("] ");
    throw CacheError("not JSON: " +
                     (tag_end == std::string::npos ? what : what.substr(tag_end + 2)));
  }
  if (!root.is_object()) throw CacheError("the top level is not an object");
  if (const Json* version = member(root, "version")) {
    if (!version->is_number_integer() || version->get<std::int64_t>() != kCacheVersion)
      throw CacheError("cache format version " + version->dump() + ", this program writes " +
                       std::to_string(kCacheVersion));
  }
  const std::string top = "cache"; // a named string: gcc 13 warns of a temporary here
  const Json& entries = required(root, "entries", top);
  if (!entries.is_array()) throw CacheError("cache.entries is not an array");
  std::vector<AutotuneEntry> out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "entries[" + std::to_string(i) + "]";
    const Json& n = entries[i];
    if (!n.is_object()) throw CacheError(where + " is not an object");
    AutotuneEntry e;
    e.key.device = string_at(required(n, "device", where), where + ".device");
    e.key.physics = string_at(required(n, "physics", where), where + ".physics");
    e.key.shape = ints_at<3>(required(n, "grid", where), where + ".grid");
    e.key.layer = ints_at<6>(required(n, "layer", where), where + ".layer");
    e.inner = string_at(required(n, "inner", where), where + ".inner");
    if (const Json* v = member(n, "pml")) e.layer = string_at(*v, where + ".pml");
    if (const Json* v = member(n, "ms_per_step")) {
      if (!v->is_number())
        throw CacheError(where + ".ms_per_step is " + v->dump() + ", not a number");
      e.ms_per_step = v->get<double>();
    }
    if (const Json* v = member(n, "candidates")) {
      if (!v->is_array()) throw CacheError(where + ".candidates is not an array");
      for (std::size_t c = 0; c < v->size(); ++c)
        e.candidates.push_back(
            string_at((*v)[c], where + ".candidates[" + std::to_string(c) + "]"));
    }
    if (const Json* v = member(n, "date")) e.date = string_at(*v, where + ".date");
    if (const Json* v = member(n, "commit")) e.commit = string_at(*v, where + ".commit");
    out.push_back(std::move(e));
  }
  return out;
}

std::string cache_json(const std::vector<AutotuneEntry>& entries) {
  Json list = Json::array();
  for (const AutotuneEntry& e : entries) {
    Json j;
    j["key"] = e.key.text();
    j["device"] = e.key.device;
    j["physics"] = e.key.physics;
    j["grid"] = e.key.shape;
    j["layer"] = e.key.layer;
    j["inner"] = e.inner;
    j["pml"] = e.layer;
    j["ms_per_step"] = e.ms_per_step;
    j["candidates"] = e.candidates;
    j["date"] = e.date;
    j["commit"] = e.commit;
    list.push_back(std::move(j));
  }
  Json root;
  root["format"] = "minimod-gpu autotune cache";
  root["version"] = kCacheVersion;
  root["entries"] = std::move(list);
  // Bytes that are not UTF-8 become U+FFFD rather than an exception (device names are ASCII).
  return root.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

/// Kernels of `backend` and `physics` that can run every non-empty region of `kind`.
std::vector<const StencilKernel*> candidates_for(BackendKind backend, Physics physics,
                                                 RegionKind kind, const Problem& p) {
  std::vector<const StencilKernel*> out;
  for (const StencilKernel* k : kernel_registry().all()) {
    if (k->backend() != backend || k->physics() != physics || !k->handles(kind)) continue;
    // A float16 run (core/precision.hpp) takes the kernels with a float16 form only.
    if (!k->handles_precision(p.precision)) continue;
    // A C-PML run's layer regions need a kernel with the C-PML update.
    if (kind == RegionKind::Layer && p.boundary == BoundaryType::Cpml && !k->handles_cpml())
      continue;
    bool ok = true;
    for (const Region& r : p.regions)
      if (!r.box.empty() && r.kind() == kind && !k->can_run(r, p.layout).empty()) ok = false;
    if (ok) out.push_back(k);
  }
  return out;
}

bool has_layer(const Problem& p) {
  for (const Region& r : p.regions)
    if (!r.box.empty() && r.kind() == RegionKind::Layer) return true;
  return false;
}

RegionKernels combine(const StencilKernel* inner, const StencilKernel* layer) {
  RegionKernels k;
  k.fill(layer);
  k[static_cast<int>(RegionId::Inner)] = inner;
  return k;
}

std::string spec_of(const StencilKernel* inner, const StencilKernel* layer, bool with_layer) {
  return "inner=" + inner->name() + (with_layer ? ",pml=" + layer->name() : std::string());
}

/// Times full steps with `kernels`: warm-up, then `repeats` repeats of `steps` steps; the median
/// milliseconds per step.
double time_choice(Backend& backend, const RegionKernels& kernels, int warmup, int steps,
                   int repeats) {
  backend.set_kernels(kernels);
  backend.reset();
  if (warmup > 0) backend.time_steps(0, warmup);
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r)
    ms.push_back(backend.time_steps(warmup + r * steps, steps) / steps);
  return median_of(ms);
}

const StencilKernel* find_in(const std::vector<const StencilKernel*>& list,
                             const std::string& name) {
  for (const StencilKernel* k : list)
    if (k->name() == name) return k;
  return nullptr;
}

} // namespace

std::string AutotuneKey::text() const {
  std::ostringstream o;
  o << device << "|" << physics << "|" << shape[0] << "x" << shape[1] << "x" << shape[2] << "|";
  for (int a = 0; a < 6; ++a)
    o << (a ? "," : "") << layer[a];
  return o.str();
}

AutotuneKey autotune_key(const std::string& device, Physics physics, const Problem& p) {
  AutotuneKey k;
  k.device = device;
  k.physics = physics_name(physics);
  k.shape = {p.grid.nx, p.grid.ny, p.grid.nz};
  k.layer = {p.layer.x_lo, p.layer.x_hi, p.layer.y_lo, p.layer.y_hi, p.layer.z_lo, p.layer.z_hi};
  return k;
}

std::string autotune_cache_path() {
  if (const char* p = env("MINIMOD_AUTOTUNE_CACHE")) return p;
  if (const char* x = env("XDG_CACHE_HOME"))
    return (std::filesystem::path(x) / "minimod-gpu" / "autotune.json").string();
  if (const char* h = env("HOME"))
    return (std::filesystem::path(h) / ".cache" / "minimod-gpu" / "autotune.json").string();
  return {};
}

std::optional<AutotuneEntry> read_autotune_cache(const std::string& path, const AutotuneKey& key,
                                                 std::string* problem) {
  if (problem) problem->clear();
  if (path.empty()) return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    for (AutotuneEntry& e : read_entries(path))
      if (e.key == key) return std::move(e);
  } catch (const std::exception& e) {
    if (problem) *problem = path + " is not a readable autotune cache (" + e.what() + ")";
  }
  return std::nullopt;
}

void write_autotune_cache(const std::string& path, const AutotuneEntry& entry) {
  namespace fs = std::filesystem;
  if (path.empty()) throw OutputError("autotune cache: no path (set MINIMOD_AUTOTUNE_CACHE)");
  std::vector<AutotuneEntry> entries;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    try {
      entries = read_entries(path);
    } catch (const std::exception&) {
      entries.clear(); // a damaged cache is replaced
    }
  }
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const AutotuneEntry& e) { return e.key == entry.key; }),
                entries.end());
  entries.push_back(entry);

  const fs::path target(path);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      throw OutputError("autotune cache: cannot create '" + target.parent_path().string() +
                        "': " + ec.message());
  }
  const std::string tmp = path + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << cache_json(entries);
    if (!out) {
      fs::remove(tmp, ec);
      throw OutputError("autotune cache: cannot write '" + tmp + "'");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw OutputError("autotune cache: cannot rename '" + tmp + "' to '" + path + "'");
  }
}

AutotuneResult autotune_kernels(Backend& backend, const Problem& p, Physics physics,
                                const AutotuneOptions& options,
                                const std::function<void(const std::string&)>& notice) {
  auto say = [&](const std::string& line) {
    if (notice) notice(line);
  };
  const BackendKind kind = backend.kind();
  AutotuneResult result;
  const bool with_layer = has_layer(p);

  const StencilKernel* fallback = kernel_registry().find(default_kernel_name(kind), kind, physics);
  if (!fallback)
    throw RuntimeFailure(std::string("auto: no default kernel ") + default_kernel_name(kind) +
                         " for " + backend_name(kind) + "/" + physics_name(physics));
  if (kind == BackendKind::Cpu) {
    // One CPU kernel: nothing to choose.
    result.kernels = combine(fallback, fallback);
    result.spec = fallback->name();
    backend.set_kernels(result.kernels);
    backend.reset();
    say("auto: the cpu backend has one kernel: " + fallback->name());
    return result;
  }

  const auto inner_c = candidates_for(kind, physics, RegionKind::Inner, p);
  const auto layer_c = with_layer ? candidates_for(kind, physics, RegionKind::Layer, p)
                                  : std::vector<const StencilKernel*>{fallback};
  if (inner_c.empty() || layer_c.empty())
    throw RuntimeFailure("auto: no registered " + std::string(backend_name(kind)) +
                         " kernel can run every region of this grid");
  std::vector<std::string> names;
  for (const StencilKernel* k : inner_c)
    names.push_back("inner:" + k->name());
  if (with_layer)
    for (const StencilKernel* k : layer_c)
      names.push_back("layer:" + k->name());

  const AutotuneKey key = autotune_key(backend.device_name(), physics, p);
  result.cache_path =
      options.use_cache ? (options.cache_path.empty() ? autotune_cache_path() : options.cache_path)
                        : std::string();

  if (!result.cache_path.empty()) {
    std::string problem;
    const auto cached = read_autotune_cache(result.cache_path, key, &problem);
    if (!problem.empty()) say("auto: ignoring the cache: " + problem);
    if (cached) {
      const StencilKernel* in = find_in(inner_c, cached->inner);
      const StencilKernel* lay = with_layer ? find_in(layer_c, cached->layer) : fallback;
      if (in && lay && cached->candidates == names) {
        result.kernels = combine(in, lay);
        result.spec = spec_of(in, lay, with_layer);
        result.ms_per_step = cached->ms_per_step;
        result.from_cache = true;
        backend.set_kernels(result.kernels);
        backend.reset();
        say("auto: cached choice " + result.spec + " (" + ms_text(cached->ms_per_step) +
            " ms per step on " + key.device + ", " + cached->date + "; " + result.cache_path + ")");
        return result;
      }
      say("auto: the cached choice for this grid was made among other kernels; tuning again");
    }
  }

  int steps = std::max(1, options.timed_steps);
  const int repeats = std::max(1, options.repeats);
  const int warmup = std::max(0, options.warmup_steps);
  // Small grids: more steps per repeat, so that launch gaps and timer resolution do not decide.
  {
    const double ms = time_choice(backend, combine(fallback, fallback), warmup, steps, 1);
    if (ms > 0 && ms * steps < kMinRepeatMs)
      steps = std::min(kMaxTimedSteps, static_cast<int>(std::ceil(kMinRepeatMs / ms)));
  }
  say("auto: timing " + std::to_string(inner_c.size()) + " inner" +
      (with_layer ? " and " + std::to_string(layer_c.size()) + " layer" : std::string()) +
      " candidates on " + key.device + ", " + std::to_string(p.grid.nx) + "x" +
      std::to_string(p.grid.ny) + "x" + std::to_string(p.grid.nz) + " (" + std::to_string(steps) +
      " steps x " + std::to_string(repeats) + " after " + std::to_string(warmup) +
      " warm-up steps each)");

  const StencilKernel* best_inner = nullptr;
  double best_ms = 0;
  std::string line = "auto: inner (ms per step, layers on " + fallback->name() + "):";
  for (const StencilKernel* k : inner_c) {
    const double ms = time_choice(backend, combine(k, fallback), warmup, steps, repeats);
    result.inner_ms.emplace_back(k->name(), ms);
    line += " " + k->name() + " " + ms_text(ms);
    if (!best_inner || ms < best_ms) {
      best_inner = k;
      best_ms = ms;
    }
  }
  say(line);

  const StencilKernel* best_layer = fallback;
  if (with_layer) {
    best_layer = nullptr;
    line = "auto: layers (ms per step, inner on " + best_inner->name() + "):";
    for (const StencilKernel* k : layer_c) {
      const double ms = time_choice(backend, combine(best_inner, k), warmup, steps, repeats);
      result.layer_ms.emplace_back(k->name(), ms);
      line += " " + k->name() + " " + ms_text(ms);
      if (!best_layer || ms < best_ms) {
        best_layer = k;
        best_ms = ms;
      }
    }
    say(line);
  }

  result.kernels = combine(best_inner, best_layer);
  result.spec = spec_of(best_inner, best_layer, with_layer);
  result.ms_per_step = best_ms;
  backend.set_kernels(result.kernels);
  backend.reset();

  std::string where;
  if (!result.cache_path.empty()) {
    AutotuneEntry e;
    e.key = key;
    e.inner = best_inner->name();
    e.layer = with_layer ? best_layer->name() : std::string();
    e.ms_per_step = best_ms;
    e.candidates = names;
    e.date = utc_now();
    e.commit = kGitCommit;
    try {
      write_autotune_cache(result.cache_path, e);
      where = "; cached in " + result.cache_path;
    } catch (const OutputError& err) {
      where = std::string("; not cached: ") + err.what();
    }
  }
  say("auto: chose " + result.spec + " (" + ms_text(best_ms) + " ms per step)" + where);
  return result;
}

} // namespace minimod
