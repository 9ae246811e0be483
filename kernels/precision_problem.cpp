#include "kernels/precision_problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace minimod {

float source_field_scale(const Problem& p) {
  const TapTable& s = p.sources;
  double peak = 0.0;
  const auto steps = static_cast<std::size_t>(p.steps);
  for (std::size_t src = 0; src < s.owners(); ++src) {
    double amplitude = 0.0;
    for (std::size_t n = 0; n < steps; ++n)
      amplitude =
          std::max(amplitude, std::fabs(static_cast<double>(p.source_samples[src * steps + n])));
    for (std::int64_t t = s.begin[src]; t < s.begin[src + 1]; ++t)
      peak = std::max(peak, std::fabs(static_cast<double>(s.weight[static_cast<std::size_t>(t)])) *
                                amplitude);
  }
  return half_field_scale(peak);
}

void make_float16(AcousticProblem& p) {
  const FieldLayout& l = p.layout;
  if (p.vp2dt2.size() != static_cast<std::size_t>(l.size))
    throw std::invalid_argument("float16 problem: vp2dt2 has " + std::to_string(p.vp2dt2.size()) +
                                " values, the padded layout " + std::to_string(l.size) +
                                " (a model in GPU memory has none on the host)");
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j)
      for (int i = 0; i < l.nx; ++i) {
        const float v = p.vp2dt2[static_cast<std::size_t>(l.index(i, j, k))];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  if (!(lo <= hi)) lo = hi = 0.0f; // no grid points
  p.medium_code = medium_code(lo, hi);
  p.vp2dt2_code.assign(static_cast<std::size_t>(l.size), 0);
  std::vector<float> decoded(static_cast<std::size_t>(l.size), 0.0f);
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j)
      for (int i = 0; i < l.nx; ++i) {
        const auto at = static_cast<std::size_t>(l.index(i, j, k));
        const std::uint16_t c = encode_medium(p.medium_code, p.vp2dt2[at]);
        p.vp2dt2_code[at] = c;
        decoded[at] = p.medium_code.decode(c);
      }
  p.vp2dt2 = std::move(decoded);
  p.precision = Precision::Float16;
  p.field_scale = source_field_scale(p);
}

} // namespace minimod
