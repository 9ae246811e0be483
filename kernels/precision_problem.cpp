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

void code_medium(AcousticProblem& p) {
  const FieldLayout& l = p.layout;
  if (p.vp2dt2.size() != static_cast<std::size_t>(l.size))
    throw std::invalid_argument("float16 problem: vp2dt2 has " + std::to_string(p.vp2dt2.size()) +
                                " values, the padded layout " + std::to_string(l.size) +
                                " (a model in GPU memory has none on the host)");
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
#pragma omp parallel for collapse(2) schedule(static) reduction(min : lo) reduction(max : hi)
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j) {
      const float* row = p.vp2dt2.data() + l.index(0, j, k);
      for (int i = 0; i < l.nx; ++i) {
        lo = std::min(lo, row[i]);
        hi = std::max(hi, row[i]);
      }
    }
  if (!(lo <= hi)) lo = hi = 0.0f; // no grid point
  const MediumCode code = medium_code(lo, hi);
  p.medium_code = code;
  p.vp2dt2_code.assign(static_cast<std::size_t>(l.size), 0);
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < l.nz; ++k)
    for (int j = 0; j < l.ny; ++j) {
      const std::int64_t at = l.index(0, j, k);
      float* value = p.vp2dt2.data() + at;
      std::uint16_t* coded = p.vp2dt2_code.data() + at;
      for (int i = 0; i < l.nx; ++i) {
        coded[i] = encode_medium(code, value[i]);
        value[i] = code.decode(coded[i]);
      }
    }
}

void make_float16(AcousticProblem& p) {
  code_medium(p);
  p.precision = Precision::Float16;
  p.field_scale = source_field_scale(p);
}

} // namespace minimod
