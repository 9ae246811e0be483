/// The survey-scale paths of the CUDA backend against the CPU backend: the free surface's mirror
/// kernel and switching shots (Backend::set_taps + reset) on one backend. Skipped without a GPU.
#include "kernels/backend.hpp"
#include "solver/simulation.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/gpu_environment.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace minimod {
namespace {

using test_support::expect_close;

/// A layered survey on an awkward grid with an off-grid source and a few receivers.
Survey layered_survey(bool free_surface) {
  Survey s;
  s.path = "gpu-survey-test";
  s.grid.shape = {83, 61, 47};
  s.grid.spacing = {10, 10, 10};
  s.model.kind = ModelSpec::Kind::Constant;
  s.time.steps = 150;
  s.boundary.width = 8;
  s.boundary.free_surface = free_surface;
  for (const double x : {312.3, 507.9}) {
    SourceSpec src;
    src.position = {x, 301.7, 55.5};
    src.wavelet.kind = WaveletSpec::Kind::Ricker;
    src.wavelet.frequency = 14;
    s.shots.push_back(ShotSpec{{src}, {}});
  }
  s.sources = s.shots.front().sources;
  for (int r = 0; r < 9; ++r) {
    s.receivers.push_back(ReceiverSpec{{150.0 + 60.0 * r, 300.0, 30.0}, {}});
  }
  return s;
}

std::vector<float> layered_velocity(const Survey& s) {
  const auto& n = s.grid.shape;
  std::vector<float> v(static_cast<std::size_t>(n[0]) * n[1] * n[2]);
  for (int k = 0; k < n[2]; ++k) {
    const float c = k < 20 ? 1600.0f : (k < 35 ? 2300.0f : 2900.0f);
    for (std::size_t p = 0; p < static_cast<std::size_t>(n[0]) * n[1]; ++p) {
      v[static_cast<std::size_t>(k) * n[0] * n[1] + p] = c;
    }
  }
  return v;
}

/// Traces and final wavefield of shots 0 and 1 run one after the other on one backend.
struct TwoShots {
  std::vector<float> traces0, traces1, field1;
};

TwoShots run_two_shots(const Survey& s, BackendChoice backend) {
  SimulationOptions o;
  o.backend = backend;
  Simulation sim(survey_for_shot(s, 0), layered_velocity(s), o);
  TwoShots out;
  sim.run({}, nullptr);
  out.traces0 = sim.raw_traces();
  sim.load_shot(survey_for_shot(s, 1));
  sim.run({}, nullptr);
  out.traces1 = sim.raw_traces();
  out.field1 = sim.wavefield();
  return out;
}

TEST(GpuSurvey, SecondShotOnOneBackendMatchesCpu) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const Survey s = layered_survey(false);
  const TwoShots gpu = run_two_shots(s, BackendChoice::Cuda);
  const TwoShots cpu = run_two_shots(s, BackendChoice::Cpu);
  expect_close(gpu.traces0, cpu.traces0, "shot 0 traces");
  expect_close(gpu.traces1, cpu.traces1, "shot 1 traces (after set_taps and reset)");
  expect_close(gpu.field1, cpu.field1, "shot 1 final wavefield");
}

TEST(GpuSurvey, FreeSurfaceMatchesCpu) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const Survey s = layered_survey(true);
  const TwoShots gpu = run_two_shots(s, BackendChoice::Cuda);
  const TwoShots cpu = run_two_shots(s, BackendChoice::Cpu);
  expect_close(gpu.traces0, cpu.traces0, "free surface, shot 0 traces");
  expect_close(gpu.field1, cpu.field1, "free surface, shot 1 final wavefield");
}

} // namespace
} // namespace minimod
