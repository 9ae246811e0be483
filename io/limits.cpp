#include "io/limits.hpp"

#include "core/errors.hpp"
#include "io/text.hpp"

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace minimod {

namespace {

std::atomic<std::uint64_t> g_memory_cap{0};

/// The first number in a file ("max" or a missing file: nullopt).
std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  unsigned long long value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> meminfo_available() {
  std::ifstream in("/proc/meminfo");
  std::string name;
  unsigned long long kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == "MemAvailable:") return static_cast<std::uint64_t>(kib) * 1024;
  }
  return std::nullopt;
}

/// Room left under this process's cgroup limit (v2 memory.max, else v1 limit_in_bytes).
std::optional<std::uint64_t> cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<std::uint64_t> room;
  const auto consider = [&room](const std::string& limit, const std::string& usage) {
    const auto max = read_number(limit);
    const auto used = read_number(usage);
    // v1 reports "no limit" as a number near 2^63.
    if (!max || *max >= (1ULL << 60)) return;
    const std::uint64_t left = used && *used < *max ? *max - *used : 0;
    if (!room || left < *room) room = left;
  };
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (path == "/") path.clear();
    if (controllers.empty()) {
      consider("/sys/fs/cgroup" + path + "/memory.max",
               "/sys/fs/cgroup" + path + "/memory.current");
    } else if (controllers == "memory") {
      consider("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes",
               "/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes");
      // Inside a container the process's cgroup is mounted as the root of the hierarchy.
      consider("/sys/fs/cgroup/memory/memory.limit_in_bytes",
               "/sys/fs/cgroup/memory/memory.usage_in_bytes");
    }
  }
  return room;
}

} // namespace

bool fits_float32(double value) {
  if (!std::isfinite(value)) return false;
  const double magnitude = std::abs(value);
  return magnitude == 0 || (magnitude <= FLT_MAX && magnitude >= FLT_MIN);
}

std::string float32_range_text() {
  return "a number that float32 holds (|x| <= 3.40282e+38, and 0 or |x| >= " +
         std::string("1.17549e-38") + ")";
}

void set_host_memory_cap(std::uint64_t bytes) {
  g_memory_cap = bytes;
}

std::optional<HostMemory> host_memory_available() {
  std::optional<HostMemory> best;
  const auto take = [&best](std::optional<std::uint64_t> bytes, const char* source) {
    if (bytes && (!best || *bytes < best->bytes)) best = HostMemory{*bytes, source};
  };
  take(meminfo_available(), "MemAvailable in /proc/meminfo");
  take(cgroup_room(), "the room left under the cgroup's memory limit");
  const std::uint64_t cap = g_memory_cap;
  if (cap > 0) take(cap, "the host memory cap set for this process");
  return best;
}

void require_host_memory(double bytes, const std::string& what) {
  const auto available = host_memory_available();
  if (!available || bytes <= static_cast<double>(available->bytes)) return;
  throw RuntimeFailure("out of host memory: " + what + " needs " + format_bytes(bytes) + ", only " +
                       format_bytes(static_cast<double>(available->bytes)) + " available (" +
                       available->source +
                       "); run on a host with more memory, or make the grid smaller");
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

} // namespace minimod
