#pragma once
/// The Kaiser window, shared by the windowed-sinc interpolation of points (Hicks 2002) and the
/// band-limited resampling of traces and wavelets.

#include <cmath>

namespace minimod {

/// Zeroth-order modified Bessel function of the first kind (power series).
inline double bessel_i0(double x) {
  double sum = 1.0, term = 1.0;
  const double q = x * x / 4.0;
  for (int k = 1; k < 60; ++k) {
    term *= q / (static_cast<double>(k) * k);
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

/// Kaiser window of shape `beta` at x in [-1, 1]; zero outside.
inline double kaiser_window(double x, double beta) {
  if (std::abs(x) >= 1.0) return 0.0;
  return bessel_i0(beta * std::sqrt(1.0 - x * x)) / bessel_i0(beta);
}

} // namespace minimod
