#pragma once
/// NaN and Inf planted at chosen grid points through the sources, and the bit-for-bit check of
/// the watch, for the tests of the wavefield scan (CPU and GPU backends alike).

#include "kernels/backend.hpp"
#include "models/velocity.hpp"
#include "solver/simulation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace minimod::test {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// A value planted at grid point (i, j, k) (i = -1: the ghost).
struct Plant {
  int i, j, k;
  float value;
};

/// Replace a problem's sources by one tap of weight 1 a plant, whose sample at step 0 is the
/// planted value: after step(0) of zero fields, the field holds exactly the plants.
template <class Problem> void plant(Problem& p, const std::vector<Plant>& plants) {
  p.sources = TapTable{};
  p.sources.begin.push_back(0);
  p.source_samples.assign(plants.size() * static_cast<std::size_t>(p.steps), 0.0f);
  for (std::size_t s = 0; s < plants.size(); ++s) {
    p.sources.index.push_back(p.layout.index(plants[s].i, plants[s].j, plants[s].k));
    p.sources.weight.push_back(1.0f);
    p.sources.begin.push_back(static_cast<std::int64_t>(s + 1));
    p.source_samples[s * static_cast<std::size_t>(p.steps)] = plants[s].value;
  }
}

/// Simulation::run (with its scans) against the same steps without it, on `backend`: traces and
/// wavefield equal bit for bit, and the traces not trivially zero.
inline void expect_watch_leaves_results_bit_for_bit(const Survey& survey, BackendChoice backend) {
  const Grid grid = make_grid(survey.grid);
  SimulationOptions options;
  options.backend = backend;
  Simulation watched(survey, build_velocity(survey.model, grid), options);
  watched.run({}, nullptr);
  const std::vector<float> a = watched.raw_traces();
  Simulation plain(survey, build_velocity(survey.model, grid), options);
  for (int n = 0; n < plain.plan().steps; ++n)
    plain.backend().step(n);
  std::vector<float> b;
  plain.backend().fetch_traces(b);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  EXPECT_EQ(watched.wavefield(), plain.wavefield());
  EXPECT_GT(*std::max_element(a.begin(), a.end()), 0.0f);
}

} // namespace minimod::test
