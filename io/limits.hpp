#pragma once
/// Limits every input is checked against before any work (docs/survey.md, "Limits"): what float32
/// can hold, counts the solver's int indices can hold, sizes that make sense, and the host memory
/// a run may take. One place, so that `validate` and `run` refuse the same things the same way.

#include <cstdint>
#include <optional>
#include <string>

namespace minimod {

/// Largest count of steps, trace samples or snapshots: the solver counts them in int.
inline constexpr long long kMaxCount = 2147483647; // 2^31 - 1
/// Largest number of steps: traces hold steps + 1 samples (t = 0 included).
inline constexpr long long kMaxSteps = kMaxCount - 1;
/// Largest number of grid points along one axis: padded rows and planes stay within int.
inline constexpr long long kMaxAxisPoints = 1LL << 30;
/// Largest number of grid points in all (a float32 field of them is 4 TiB).
inline constexpr long long kMaxGridPoints = 1LL << 40;
/// Largest output a run may plan to write (traces and snapshots): 1 PiB.
inline constexpr double kMaxOutputBytes = 1125899906842624.0;
/// Largest survey file read: a survey is text of at most a few MiB; more is a wrong file.
inline constexpr std::uint64_t kMaxSurveyBytes = 64ULL << 20;
/// Grid spacings (metres) the solver's float32 arithmetic handles: the stencil weights c/h^2 and
/// the medium (v dt)^2 ~ h^2 stay well inside float32's normal range.
inline constexpr double kMinSpacing = 1e-6, kMaxSpacing = 1e6;

/// Whether float32 holds `value` as zero or a normal number: finite, |value| <= FLT_MAX, and not
/// so small that it would become a subnormal or zero.
bool fits_float32(double value);
/// "a number that float32 holds (|x| <= 3.40282e+38, and 0 or |x| >= 1.17549e-38)".
std::string float32_range_text();

/// Host memory this process can still take, in bytes: the smallest of MemAvailable
/// (/proc/meminfo), the room left under the cgroup's memory.max, and the cap set by
/// set_host_memory_cap. `source` says which one bounds it. nullopt when nothing is known.
struct HostMemory {
  std::uint64_t bytes = 0;
  std::string source;
};
std::optional<HostMemory> host_memory_available();

/// Cap the host memory host_memory_available reports (0: no cap). For tests that must not
/// allocate much whatever the input asks for.
void set_host_memory_cap(std::uint64_t bytes);

/// Throws RuntimeFailure (exit 3) "out of host memory: WHAT needs N, only M available (SOURCE)"
/// when `bytes` do not fit the available host memory; does nothing when it is unknown.
void require_host_memory(double bytes, const std::string& what);

/// "1.23 GiB"-style size.
std::string format_bytes(double bytes);

} // namespace minimod
