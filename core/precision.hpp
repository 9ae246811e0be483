#pragma once
/// How a run stores its wavefields and its medium (docs/physics.md, "16-bit storage").
///
/// - float32: every field and the medium in float32 (the default).
/// - float16: arithmetic in float32, storage in 16 bits:
///   - the wavefield u^n and its step d^n = u^n - u^{n-1} in IEEE binary16, both times a power of
///     two (Problem::field_scale) chosen from the shot's source samples, so that the field sits in
///     binary16's normal range. The step is stored, not u^{n-1}: a rounded u^{n-1} carries the
///     rounding of two levels into the velocity (u^n - u^{n-1}) / dt, which the recursion then
///     amplifies by about 1 / (omega dt); a rounded step has the velocity to binary16's relative
///     precision. A kernel reads u^{n-1} as u^n - d^n in float32;
///   - (c dt)^2 as a 16-bit code between the medium's least and greatest value (MediumCode): steps
///     of (max - min) / 65535, 0.05 m/s of velocity over 1500-4500 m/s, where a binary16 would
///     have 1 m/s at 4000 m/s; a medium of two values is stored exactly.
///
/// The host conversions below give the bits of the GPU's __float2half_rn / __half2float (IEEE
/// round to nearest, ties to even; subnormals kept; overflow to infinity, which the NaN/Inf watch
/// reports), so that the CPU backend's 16-bit run is the GPU's.

#include "core/host_device.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace minimod {

/// The storage of a run's wavefields and medium.
enum class Precision : int { Float32 = 0, Float16 = 1 };

/// "float32" / "float16".
const char* precision_name(Precision p);
/// The precision named `name`, or none.
std::optional<Precision> parse_precision(const std::string& name);
/// The names a survey or an option may give, for messages: "float32, float16".
const char* precision_choices();

/// The bits of a float, and the float of bits (host and device: no vendor intrinsic is needed).
MINIMOD_HD std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(x);
#else
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
MINIMOD_HD float bits_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(b);
#else
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}

/// x as IEEE binary16, rounded to nearest with ties to even (the bits of __float2half_rn).
MINIMOD_HD std::uint16_t float_to_half(float x) {
  const std::uint32_t b = float_bits(x);
  const std::uint32_t sign = (b >> 16) & 0x8000u;
  const std::uint32_t a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // NaN
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u); // rounds past 65504
  if (a >= 0x38800000u) {                                                  // normal binary16
    const std::uint32_t r = a + 0x0FFFu + ((a >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | ((r - 0x38000000u) >> 13));
  }
  if (a < 0x33000000u) return static_cast<std::uint16_t>(sign); // below half the least subnormal
  // Subnormal binary16: the 24-bit significand shifted right by 126 - exponent, rounded.
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - e;
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t q = m >> shift;
  const std::uint32_t rest = m & ((1u << shift) - 1u);
  const std::uint32_t up = rest > half || (rest == half && (q & 1u)) ? 1u : 0u;
  return static_cast<std::uint16_t>(sign | (q + up));
}

/// The float of IEEE binary16 bits h (exact; the value of __half2float; NaNs come back quiet).
MINIMOD_HD float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu;
  const std::uint32_t m = h & 0x3FFu;
  if (e == 0x1Fu) return bits_float(sign | 0x7F800000u | (m ? 0x400000u | (m << 13) : 0u));
  if (e != 0) return bits_float(sign | ((e + 112u) << 23) | (m << 13));
  // Subnormal (or zero): m * 2^-24, exact in float.
  const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

/// x rounded to the nearest binary16 value, as a float.
MINIMOD_HD float round_to_half(float x) {
  return half_to_float(float_to_half(x));
}

/// A medium value stored as a 16-bit code c: value = fmaf(c, step, lo), the same float on every
/// backend. lo is the medium's least value and lo + 65535 step its greatest; a constant medium
/// has step 0 and is exact.
struct MediumCode {
  float lo = 0.0f;
  float step = 0.0f;
  MINIMOD_HD float decode(std::uint16_t c) const { return fmaf(static_cast<float>(c), step, lo); }
};

/// The code of the values [lo, hi] (lo <= hi, both finite).
MediumCode medium_code(float lo, float hi);
/// The code of x in `code`'s range whose decoded value is nearest to x.
std::uint16_t encode_medium(const MediumCode& code, float x);

/// The power of two that scales a field whose largest per-step increment is `peak` (> 0) to
/// about 1 in binary16 (2^-round(log2 peak)); 1 for a peak of zero.
float half_field_scale(double peak);

} // namespace minimod
