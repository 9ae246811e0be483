#pragma once
/// The scan of a wavefield for values that are not finite (NaN, +Inf, -Inf), shared by every
/// backend: the CPU loop and the GPU reduction reduce the same three 64-bit keys with the same
/// rules, so that both report the same points for the same field.
///
/// Points are numbered densely, d = i + nx (j + ny k) (the ghost excluded), so that memory order
/// and dense order agree. The keys:
/// - the count of non-finite points (a sum);
/// - ~d of each non-finite point (a maximum: the first non-finite point in memory order);
/// - (|value|'s float bits << 33) | (kFiniteScanIndexMask - d) of each finite point (a maximum:
///   the largest finite |value|, the first point holding it on ties). Non-negative floats order as
///   their bit patterns do, so the key needs no float arithmetic, and 0 means "no finite point"
///   (a finite point's low bits are never 0 on grids of fewer than 2^33 points).

#include "core/host_device.hpp"
#include "core/precision.hpp"

#include <cstdint>
#include <cstring>

namespace minimod {

/// Low bits of a maximum key that hold the point.
inline constexpr std::uint64_t kFiniteScanIndexMask = (std::uint64_t{1} << 33) - 1;

/// Whether float bits are a finite value (the exponent is not all ones). Works under fast-math
/// options that let std::isfinite fold to true.
MINIMOD_HD bool finite_bits(std::uint32_t bits) {
  return (bits & 0x7f800000u) != 0x7f800000u;
}

/// The maximum key of a finite value at dense point d.
MINIMOD_HD std::uint64_t finite_scan_max_key(std::uint32_t bits, std::int64_t d) {
  return (static_cast<std::uint64_t>(bits & 0x7fffffffu) << 33) |
         (kFiniteScanIndexMask - (static_cast<std::uint64_t>(d) & kFiniteScanIndexMask));
}

/// Fold one value at dense point d into the three keys.
MINIMOD_HD void finite_scan_point(float v, std::int64_t d, std::uint64_t& count,
                                  std::uint64_t& first, std::uint64_t& max_key) {
  const std::uint32_t bits = float_bits(v);
  if (finite_bits(bits)) {
    const std::uint64_t key = finite_scan_max_key(bits, d);
    max_key = key > max_key ? key : max_key;
  } else {
    ++count;
    const std::uint64_t key = ~static_cast<std::uint64_t>(d);
    first = key > first ? key : first;
  }
}

/// What a scan of one field found.
struct FiniteScan {
  std::int64_t points = 0;    ///< grid points scanned
  std::int64_t nonfinite = 0; ///< points holding NaN or +-Inf
  std::int64_t first = -1;    ///< dense index of the first of them in memory order; -1: none
  float max_abs = 0;          ///< the largest finite |value|
  std::int64_t max_at = -1;   ///< dense index of the first point holding it; -1: none or unknown
  bool finite() const { return nonfinite == 0; }
};

/// The result of the three reduced keys on a grid of `points` points. max_at is -1 on grids of
/// 2^33 points or more, whose indices do not fit the key.
inline FiniteScan decode_finite_scan(std::uint64_t count, std::uint64_t first,
                                     std::uint64_t max_key, std::int64_t points) {
  FiniteScan s;
  s.points = points;
  s.nonfinite = static_cast<std::int64_t>(count);
  s.first = count > 0 ? static_cast<std::int64_t>(~first) : -1;
  if (max_key != 0) {
    const auto bits = static_cast<std::uint32_t>(max_key >> 33);
    std::memcpy(&s.max_abs, &bits, sizeof bits);
    if (static_cast<std::uint64_t>(points) <= kFiniteScanIndexMask)
      s.max_at = static_cast<std::int64_t>(kFiniteScanIndexMask - (max_key & kFiniteScanIndexMask));
  }
  return s;
}

} // namespace minimod
