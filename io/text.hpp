#pragma once
/// Numbers in error messages: as short as possible, yet read back to the same double.

#include <cstdio>
#include <cstdlib>
#include <string>

namespace minimod {

/// Shortest "%g" text (6 to 17 significant digits) that reads back to `value`.
inline std::string format_number(double value) {
  char text[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

} // namespace minimod
