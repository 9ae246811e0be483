#include "solver/rtm.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace minimod {
namespace {

/// `taps` with each weight times (scale) or over (!scale) vp2dt2 at its point.
TapTable reweighted(const TapTable& taps, const std::vector<float>& vp2dt2, bool scale) {
  TapTable out = taps;
  for (std::size_t t = 0; t < out.index.size(); ++t) {
    const float d = vp2dt2[static_cast<std::size_t>(out.index[t])];
    if (!scale && d == 0.0f)
      throw std::invalid_argument("backward problem: a source tap where (c dt)^2 is zero");
    out.weight[t] = scale ? out.weight[t] * d : out.weight[t] / d;
  }
  if (out.begin.empty()) out.begin.push_back(0);
  return out;
}

} // namespace

AcousticProblem backward_problem(const AcousticProblem& p, const std::vector<float>& traces) {
  const std::size_t receivers = p.receivers.owners();
  const auto steps = static_cast<std::size_t>(p.steps);
  if (traces.size() != receivers * (steps + 1))
    throw std::invalid_argument("backward problem: " + std::to_string(traces.size()) +
                                " trace samples for " + std::to_string(receivers) +
                                " receivers of " + std::to_string(steps + 1) + " samples");
  if (p.precision != Precision::Float32 ||
      p.vp2dt2.size() != static_cast<std::size_t>(p.layout.size))
    throw std::invalid_argument("backward problem: a float32 problem with its medium on the host");
  AcousticProblem q = p;
  q.sources = reweighted(p.receivers, p.vp2dt2, true);
  q.receivers = reweighted(p.sources, p.vp2dt2, false);
  q.source_samples.assign(receivers * steps, 0.0f);
  for (std::size_t r = 0; r < receivers; ++r)
    for (std::size_t j = 0; j < steps; ++j)
      q.source_samples[r * steps + j] = traces[r * (steps + 1) + (steps - j)];
  return q;
}

std::vector<float> adjoint_samples(const AcousticProblem& p,
                                   const std::vector<float>& backward_traces) {
  const std::size_t sources = p.sources.owners();
  const auto steps = static_cast<std::size_t>(p.steps);
  if (backward_traces.size() != sources * (steps + 1))
    throw std::invalid_argument("adjoint samples: " + std::to_string(backward_traces.size()) +
                                " samples for " + std::to_string(sources) + " sources");
  std::vector<float> out(sources * steps);
  for (std::size_t s = 0; s < sources; ++s)
    for (std::size_t n = 0; n < steps; ++n)
      out[s * steps + n] = backward_traces[s * (steps + 1) + (steps - n)];
  return out;
}

ShotImage migrate_shot(Backend& backend, const RegionKernels& kernels, const AcousticProblem& p,
                       const std::vector<float>& traces, int stride) {
  if (stride < 1)
    throw std::invalid_argument("migrate_shot: imaging stride " + std::to_string(stride) + " < 1");
  const AcousticProblem q = backward_problem(p, traces);
  const int steps = p.steps;
  // The source wavefield at every imaging time m = stride, 2 stride, ...
  std::vector<std::vector<float>> saved(static_cast<std::size_t>(steps / stride));
  backend.setup(p, kernels);
  for (int n = 0; n < steps; ++n) {
    backend.step(n);
    const int m = n + 1;
    if (m % stride == 0) backend.fetch_field(0, saved[static_cast<std::size_t>(m / stride - 1)]);
  }
  const FieldLayout& l = p.layout;
  const std::size_t points = static_cast<std::size_t>(l.nx) * static_cast<std::size_t>(l.ny) *
                             static_cast<std::size_t>(l.nz);
  std::vector<float> d(points);
  unpad_field(l, p.vp2dt2.data(), d.data());
  ShotImage out;
  out.image.assign(points, 0.0);
  out.illumination.assign(points, 0.0);
  // The backward run: after its step j the field is nu^{j+1} = D lambda^{steps - j}.
  backend.set_taps(q);
  std::vector<float> nu;
  for (int j = 0; j < steps; ++j) {
    backend.step(j);
    const int m = steps - j;
    if (m % stride != 0) continue;
    backend.fetch_field(0, nu);
    const std::vector<float>& u = saved[static_cast<std::size_t>(m / stride - 1)];
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < points; ++i) {
      const double lambda = static_cast<double>(nu[i]) / d[i];
      out.image[i] += static_cast<double>(u[i]) * lambda;
      out.illumination[i] += static_cast<double>(u[i]) * u[i];
    }
    ++out.imaging_times;
  }
  return out;
}

std::vector<float> normalised_image(const ShotImage& s, double epsilon) {
  const double peak = s.illumination.empty()
                          ? 0.0
                          : *std::max_element(s.illumination.begin(), s.illumination.end());
  std::vector<float> out(s.image.size(), 0.0f);
  const double floor = epsilon * peak;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double den = s.illumination[i] + floor;
    out[i] = den > 0.0 ? static_cast<float>(s.image[i] / den) : 0.0f;
  }
  return out;
}

} // namespace minimod
