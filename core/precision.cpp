#include "core/precision.hpp"

#include <algorithm>
#include <cmath>

namespace minimod {

const char* precision_name(Precision p) {
  return p == Precision::Float16 ? "float16" : "float32";
}

std::optional<Precision> parse_precision(const std::string& name) {
  if (name == "float32") return Precision::Float32;
  if (name == "float16") return Precision::Float16;
  return std::nullopt;
}

const char* precision_choices() {
  return "float32, float16";
}

MediumCode medium_code(float lo, float hi) {
  MediumCode c;
  c.lo = lo;
  c.step = hi > lo ? static_cast<float>((static_cast<double>(hi) - lo) / 65535.0) : 0.0f;
  return c;
}

std::uint16_t encode_medium(const MediumCode& code, float x) {
  if (code.step == 0.0f) return 0;
  const double guess = std::round((static_cast<double>(x) - code.lo) / code.step);
  int c = static_cast<int>(std::clamp(guess, 0.0, 65535.0));
  // The float decode may round differently from the double estimate: take the nearer neighbour.
  auto err = [&](int k) { return std::fabs(code.decode(static_cast<std::uint16_t>(k)) - x); };
  for (const int k : {c - 1, c + 1})
    if (k >= 0 && k <= 65535 && err(k) < err(c)) c = k;
  return static_cast<std::uint16_t>(c);
}

float half_field_scale(double peak) {
  if (!(peak > 0.0) || !std::isfinite(peak)) return 1.0f;
  const int e = static_cast<int>(std::lround(std::log2(peak)));
  return std::ldexp(1.0f, std::clamp(-e, -60, 60));
}

} // namespace minimod
