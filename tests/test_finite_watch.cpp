/// The NaN/Inf watch: the scan of a backend's field (NaN, +Inf, -Inf planted at known points of the
/// inner region, the layer, the faces and the ghost), the watch's schedule and messages, the trace
/// and snapshot checks, runs that blow up on purpose (acoustic and TTI, exit 3 naming the step,
/// time and place, no output left), a stable run whose traces the watch leaves bit for bit as
/// they are, and SIGINT/SIGTERM stopping the time loops between steps.

#include "core/errors.hpp"
#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "models/velocity.hpp"
#include "solver/finite_watch.hpp"
#include "solver/interrupt.hpp"
#include "solver/simulation.hpp"
#include "solver/survey_run.hpp"
#include "solver/tti.hpp"
#include "solver/tti_run.hpp"
#include "tests/gpu/problem_builder.hpp"
#include "tests/grid_helpers.hpp"
#include "tests/planted_values.hpp"
#include "tests/tti_cpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

using test::kInf;
using test::kNaN;
using test::Plant;
using test::plant;

std::int64_t dense(const Grid& g, int i, int j, int k) {
  return i + static_cast<std::int64_t>(g.nx) * (j + static_cast<std::int64_t>(g.ny) * k);
}

/// The small acoustic problem of the scan tests: 23 x 19 x 17 points, 4-point layers.
AcousticProblem scan_problem() {
  test_support::ProblemSpec spec;
  spec.nx = 23;
  spec.ny = 19;
  spec.nz = 17;
  spec.n_layer = 4;
  spec.steps = 3;
  spec.random_receivers = 0;
  return test_support::build_acoustic_problem(spec);
}

/// The scan of u after one step of the CPU backend with `plants`.
FiniteScan cpu_scan_after_plants(const std::vector<Plant>& plants) {
  AcousticProblem p = scan_problem();
  plant(p, plants);
  auto backend = make_cpu_backend();
  backend->setup(
      p, resolve_kernels("", BackendKind::Cpu, Physics::Acoustic, p.regions, p.layout, "--kernel"));
  backend->step(0);
  return backend->scan_field(0);
}

TEST(FiniteScan, CpuBackendNamesTheFirstNonFinitePointAndTheLargestFiniteValue) {
  const Grid g = scan_problem().grid;
  // Inner region, layer (x low face), the far corner of the faces, the ghost (ignored).
  const std::vector<Plant> plants = {{11, 9, 8, kNaN}, {1, 9, 8, -kInf},  {22, 18, 16, kInf},
                                     {-1, 3, 3, kNaN}, {5, 5, 12, -7.5f}, {17, 2, 4, 3.25f},
                                     {11, 10, 8, 7.5f}};
  const FiniteScan s = cpu_scan_after_plants(plants);
  EXPECT_EQ(s.points, static_cast<std::int64_t>(g.points()));
  EXPECT_EQ(s.nonfinite, 3) << "NaN, -Inf and +Inf inside the grid; the ghost's NaN is not counted";
  EXPECT_FALSE(s.finite());
  // The first in memory order: (1, 9, 8) comes before (11, 9, 8) in the same row.
  EXPECT_EQ(s.first, dense(g, 1, 9, 8));
  // |-7.5| and 7.5 tie: the first in memory order holds it, (5, 5, 12) is later than (11, 10, 8).
  EXPECT_EQ(s.max_abs, 7.5f);
  EXPECT_EQ(s.max_at, dense(g, 11, 10, 8));
}

TEST(FiniteScan, CpuBackendFindsOnePlantedPointWherever) {
  const Grid g = scan_problem().grid;
  for (const Plant at : {Plant{0, 0, 0, kNaN}, Plant{22, 0, 0, kInf}, Plant{0, 18, 16, -kInf},
                         Plant{3, 9, 8, kNaN}, Plant{11, 15, 2, kNaN}, Plant{22, 18, 16, kNaN}}) {
    const FiniteScan s = cpu_scan_after_plants({at, {12, 12, 12, 2.0f}});
    EXPECT_EQ(s.nonfinite, 1) << at.i << "," << at.j << "," << at.k;
    EXPECT_EQ(s.first, dense(g, at.i, at.j, at.k)) << at.i << "," << at.j << "," << at.k;
    EXPECT_EQ(s.max_abs, 2.0f);
    EXPECT_EQ(s.max_at, dense(g, 12, 12, 12));
  }
}

TEST(FiniteScan, FiniteFieldAndGhostOnly) {
  const FiniteScan clean = cpu_scan_after_plants({{4, 4, 4, -1e30f}, {0, -2, 5, kInf}});
  EXPECT_TRUE(clean.finite());
  EXPECT_EQ(clean.first, -1);
  EXPECT_EQ(clean.max_abs, 1e30f);
  EXPECT_EQ(clean.max_at, dense(scan_problem().grid, 4, 4, 4));
  // A field of zeros: the largest |value| is 0 at the first point.
  const FiniteScan zero = cpu_scan_after_plants({});
  EXPECT_TRUE(zero.finite());
  EXPECT_EQ(zero.max_abs, 0.0f);
  EXPECT_EQ(zero.max_at, 0);
}

TEST(FiniteScan, TtiReferenceScansPAndQ) {
  const Grid g = test_support::make_grid(21, 18, 16, 10.0, 10.0, 10.0);
  TtiModel m;
  m.vp.assign(g.points(), 2000.0f);
  m.epsilon.assign(g.points(), 0.2f);
  m.delta.assign(g.points(), 0.1f);
  m.theta.assign(g.points(), 0.3f);
  TtiPlanOptions o;
  o.steps = 4;
  o.layer_width = 4;
  const TtiPlan plan = make_tti_plan(g, m, o);
  TtiProblem p = build_tti_problem(plan, m, {}, {});
  plant(p, {{7, 8, 9, kNaN}, {0, 17, 15, -kInf}, {3, 3, 3, 5.0f}, {-1, 2, 2, kNaN}});
  TtiCpuRun sim(plan, std::move(p));
  sim.step(0);
  const FiniteScan sp = sim.scan_field(false);
  EXPECT_EQ(sp.nonfinite, 2);
  EXPECT_EQ(sp.first, dense(g, 7, 8, 9));
  EXPECT_EQ(sp.max_abs, 5.0f);
  EXPECT_EQ(sp.max_at, dense(g, 3, 3, 3));
  // Sources enter p only: q is zero after the first step.
  const FiniteScan sq = sim.scan_field(true);
  EXPECT_TRUE(sq.finite());
  EXPECT_EQ(sq.max_abs, 0.0f);
}

/// A watch on a 30 x 20 x 10 grid of 10 m, 5-point layers, one source at (150, 100, 50) m.
FiniteWatchSetup watch_setup(int steps) {
  FiniteWatchSetup w;
  w.grid = test_support::make_grid(30, 20, 10, 10.0, 10.0, 10.0, 1000.0, 0.0, 0.0);
  w.layer = test_support::widths(5, 5, 5, 5, 5, 0);
  w.sources = {{1150.0, 100.0, 50.0}};
  w.dt = 0.001;
  w.steps = steps;
  w.cfl = 0.95;
  w.dt_origin = "time.dt";
  w.vmax = 3000;
  w.source_peak = 1.0;
  return w;
}

FiniteScan scan_of(std::int64_t nonfinite, std::int64_t first, float max_abs, std::int64_t max_at) {
  FiniteScan s;
  s.points = 6000;
  s.nonfinite = nonfinite;
  s.first = first;
  s.max_abs = max_abs;
  s.max_at = max_at;
  return s;
}

TEST(FiniteWatch, ScansAfterSteps1248ThenEveryIntervalThenEveryStepNearOverflow) {
  EXPECT_EQ(finite_check_interval(500), kFiniteCheckMinInterval);
  EXPECT_EQ(finite_check_interval(50000), 500);
  // Steps 1, 2, 4, ..., 128, then every 100, and the last.
  FiniteWatch w(watch_setup(1000));
  std::vector<int> scans;
  for (int done = 1; done <= 1000; ++done) {
    if (!w.due(done)) continue;
    scans.push_back(done);
    w.check(done, scan_of(0, -1, 1.0f, 0), "u");
  }
  const std::vector<int> regular = {1,   2,   4,   8,   16,  32,  64,  128, 228,
                                    328, 428, 528, 628, 728, 828, 928, 1000};
  EXPECT_EQ(scans, regular);

  // A value near the float32 limit in the scans after steps 228 to 230: every step is scanned
  // until one is below it again.
  FiniteWatch dense_watch(watch_setup(1000));
  scans.clear();
  for (int done = 1; done <= 1000; ++done) {
    if (!dense_watch.due(done)) continue;
    scans.push_back(done);
    dense_watch.check(done, scan_of(0, -1, done >= 228 && done < 231 ? 1e31f : 1.0f, 0), "u");
  }
  const std::vector<int> dense_scans = {1,   2,   4,   8,   16,  32,  64,  128, 228, 229,
                                        230, 231, 331, 431, 531, 631, 731, 831, 931, 1000};
  EXPECT_EQ(scans, dense_scans);
}

std::string failure_of(FiniteWatch& w, int done, const FiniteScan& s, const std::string& field) {
  try {
    w.check(done, s, field);
  } catch (const RuntimeFailure& e) {
    return e.what();
  }
  ADD_FAILURE() << "no RuntimeFailure";
  return {};
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in:\n" << text;
}

TEST(FiniteWatch, FailureNamesStepTimePointLayerSourceAndCauses) {
  FiniteWatch w(watch_setup(400));
  const Grid g = watch_setup(400).grid;
  w.check(64, scan_of(0, -1, 2.5e33f, dense(g, 15, 10, 5)), "u");
  const std::string msg =
      failure_of(w, 65, scan_of(17, dense(g, 2, 3, 9), 1e20f, dense(g, 1, 1, 1)), "u");
  expect_has(msg, "the wavefield u is not finite (NaN or Inf) after step 65 of 400 (t = 0.065 s)");
  expect_has(msg, "17 of 6000 grid points");
  // x = 1000 + 2 * 10: in the left and front layers; the bottom face has none.
  expect_has(msg, "the first at (i, j, k) = (2, 3, 9) = (1020, 30, 90) m, in the absorbing layer "
                  "(left, front faces)");
  expect_has(msg, "the scan after step 64 was finite, its largest |u| 2.5e+33 at (i, j, k) = "
                  "(15, 10, 5) = (1150, 100, 50) m, outside the absorbing layer, near source 1 "
                  "(0 m away)");
  expect_has(msg, "likely causes: values near the float32 limit (|u| reached 2.5e+33");
  expect_has(msg, "the time step: dt = 0.001 s is 0.95 of the stability limit (set by time.dt");
  expect_has(msg, "a velocity model with extreme values or sharp contrasts (vmax 3000 m/s)");
  EXPECT_EQ(msg.find("anisotropy"), std::string::npos) << msg;
  // Four lines at most.
  EXPECT_LE(std::count(msg.begin(), msg.end(), '\n'), 3) << msg;
}

TEST(FiniteWatch, TtiFailureWithoutACleanScanNamesTheFieldAndAnisotropy) {
  FiniteWatchSetup setup = watch_setup(10);
  setup.tti = true;
  setup.cfl = 0.5;
  setup.dt_origin = "time.cfl = 0.5";
  FiniteWatch w(setup);
  const Grid g = setup.grid;
  const std::string msg =
      failure_of(w, 10, scan_of(1, dense(g, 29, 19, 9), 4.0f, dense(g, 20, 2, 3)), "q");
  expect_has(msg, "the wavefield q is not finite (NaN or Inf) after step 10 of 10 (t = 0.01 s): "
                  "1 of 6000 grid points; the first at (i, j, k) = (29, 19, 9) = (1290, 190, 90) "
                  "m, in the absorbing layer (right, back faces), 171.2 m from the nearest "
                  "source (1)");
  expect_has(msg, "the largest finite |q| is 4 at (i, j, k) = (20, 2, 3)");
  expect_has(msg, "epsilon barely above delta");
  expect_has(msg, "set by time.cfl = 0.5");
  // Neither a huge value nor a huge source: no float32 cause.
  EXPECT_EQ(msg.find("float32"), std::string::npos) << msg;
}

TEST(FiniteChecks, TracesNameReceiverSampleAndTime) {
  std::vector<float> traces(3 * 11, 0.5f);
  EXPECT_NO_THROW(require_finite_traces(traces, 3, 0.002, "the traces"));
  traces[2 * 11 + 7] = kInf;
  traces[2 * 11 + 9] = kNaN;
  try {
    require_finite_traces(traces, 3, 0.002, "shot 4's traces");
    ADD_FAILURE() << "no RuntimeFailure";
  } catch (const RuntimeFailure& e) {
    expect_has(e.what(), "shot 4's traces: 2 of 33 samples are not finite; the first, +Inf, is "
                         "receiver 2 (from 0), sample 7 (t = 0.014 s)");
  }
  // Resampling checks its input first.
  try {
    (void)resample_finite_traces(traces, 3, 0.002, 0.004, 6, "the traces");
    ADD_FAILURE() << "no RuntimeFailure";
  } catch (const RuntimeFailure& e) {
    expect_has(e.what(), "the traces: 2 of 33 samples are not finite");
  }
}

TEST(FiniteChecks, SnapshotNamesStepTimeAndGridPoint) {
  SnapshotGeometry geometry;
  geometry.shape = {4, 3, 2};
  Box box;
  box.x0 = 2;
  box.x1 = 10;
  box.y0 = 1;
  box.y1 = 7;
  box.z0 = 5;
  box.z1 = 9;
  std::vector<float> snapshot(24, 1.0f);
  EXPECT_NO_THROW(require_finite_snapshot(snapshot, 30, 0.06, box, 2, geometry));
  snapshot[1 * 12 + 2 * 4 + 3] = -kInf; // (3, 2, 1) in the snapshot
  try {
    require_finite_snapshot(snapshot, 30, 0.06, box, 2, geometry);
    ADD_FAILURE() << "no RuntimeFailure";
  } catch (const RuntimeFailure& e) {
    expect_has(e.what(), "the snapshot of step 30 (t = 0.06 s) is not finite at 1 of 24 "
                         "points; the first, -Inf, at grid point (i, j, k) = (8, 5, 7)");
  }
}

// ---- Runs through the program ----

class WatchRun : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() / (std::string("minimod_watch_") + info->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string at(const std::string& name) const { return (m_dir / name).string(); }
  /// Exit code of `minimod-gpu args`; its stderr in *err.
  int run(const std::string& args, std::string* err) const {
    const std::string command =
        std::string(MINIMOD_BINARY) + " " + args + " > /dev/null 2> " + at("stderr.txt");
    const int status = std::system(command.c_str());
    std::ifstream in(at("stderr.txt"));
    *err = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  /// Files in the folder besides the survey and the captured stderr.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(m_dir)) {
      const std::string name = e.path().filename().string();
      if (name.find(".yaml") == std::string::npos && name != "stderr.txt") names.push_back(name);
    }
    return names;
  }
  fs::path m_dir;
};

/// A survey whose source overflows float32 at its peak: a Ricker of amplitude 3e38 added raw
/// (injection: minimod) at grid point (12, 10, 9); the first Inf appears there at step 40
/// (acoustic) or 42 (TTI).
std::string overflowing_survey(bool tti) {
  return std::string(tti ? "physics: tti\n"
                           "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, "
                           "theta: 30}\n"
                         : "") +
         "grid: {shape: [24, 22, 20], spacing: 10}\n"
         "model: {type: constant, velocity: 2000}\n"
         "time: {steps: 60}\n"
         "boundary: {width: 4}\n"
         "sources:\n"
         "  - position: [120, 100, 90]\n"
         "    injection: minimod\n"
         "    wavelet: {type: ricker, frequency: 15, amplitude: 3e38}\n"
         "receivers:\n"
         "  points: [[150, 100, 50]]\n"
         "output:\n"
         "  snapshots: {every: 20}\n";
}

TEST_F(WatchRun, AcousticBlowUpExitsThreeNamingStepTimeAndPlace) {
  std::ofstream(at("s.yaml")) << overflowing_survey(false);
  std::string err;
  EXPECT_EQ(run("run " + at("s.yaml") + " -o " + at("out.h5") + " --backend cpu --quiet", &err), 3)
      << err;
  expect_has(err, "the wavefield u is not finite (NaN or Inf) after step 40 of 60 (t = 0.07246 s)");
  expect_has(err, "the first at (i, j, k) = (12, 10, 9) = (120, 100, 90) m, outside the absorbing "
                  "layer, near source 1 (0 m away)");
  expect_has(err, "the scan after step 39 was finite, its largest |u| 1.788e+38");
  expect_has(err, "likely causes: values near the float32 limit");
  expect_has(err, "a wavelet amplitude too large");
  EXPECT_FALSE(fs::exists(at("out.h5")));
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(WatchRun, TtiBlowUpExitsThreeNamingStepTimeAndPlace) {
  std::ofstream(at("s.yaml")) << overflowing_survey(true);
  std::string err;
  EXPECT_EQ(run("run " + at("s.yaml") + " -o " + at("out.h5") + " --backend cpu --quiet", &err), 3)
      << err;
  expect_has(err, "the wavefield p is not finite (NaN or Inf) after step 42 of 60 (t = 0.0643 s)");
  expect_has(err, "the first at (i, j, k) = (12, 10, 9) = (120, 100, 90) m, outside the absorbing "
                  "layer, near source 1 (0 m away)");
  expect_has(err, "a wavelet amplitude too large");
  expect_has(err, "epsilon barely above delta");
  EXPECT_FALSE(fs::exists(at("out.h5")));
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(WatchRun, StableRunExitsZero) {
  std::string survey = overflowing_survey(false);
  survey.replace(survey.find("3e38"), 4, "1");
  std::ofstream(at("s.yaml")) << survey;
  std::string err;
  EXPECT_EQ(run("run " + at("s.yaml") + " -o " + at("out.h5") + " --backend cpu --quiet", &err), 0)
      << err;
  EXPECT_TRUE(fs::exists(at("out.h5")));
}

/// The acoustic survey of the in-process tests, parsed (stable: amplitude 1).
Survey stable_survey() {
  std::string text = overflowing_survey(false);
  text.replace(text.find("3e38"), 4, "1");
  text.replace(text.find("steps: 60"), 9, "steps: 150"); // past the first regular scans
  return parse_survey(text, "s.yaml", ".");
}

TEST(FiniteWatchRun, WatchLeavesTracesBitForBit) {
  test::expect_watch_leaves_results_bit_for_bit(stable_survey(), BackendChoice::Cpu);
}

// SIGINT/SIGTERM: the flag is process-wide and never cleared, so each case runs in a child.
TEST(InterruptDeathTest, AcousticLoopStopsAtTheNextStep) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Survey survey = stable_survey();
  EXPECT_EXIT(
      {
        const Grid grid = make_grid(survey.grid);
        SimulationOptions options;
        options.backend = BackendChoice::Cpu;
        Simulation sim(survey, build_velocity(survey.model, grid), options);
        install_interrupt_handlers();
        int last = 0;
        try {
          sim.run(
              [&](int done) {
                if (last > 0) {
                  std::fprintf(stderr, "a step ran after the signal\n");
                  std::_Exit(1);
                }
                last = done;
                std::raise(SIGTERM);
              },
              nullptr);
        } catch (const Interrupted& e) {
          std::fprintf(stderr, "%s after %d steps of %d\n", e.what(), last, sim.plan().steps);
          std::_Exit(e.signal() == SIGTERM && last > 0 && last < sim.plan().steps ? 7 : 1);
        }
        std::_Exit(2);
      },
      ::testing::ExitedWithCode(7), "interrupted by SIGTERM after [0-9]+ steps of 150");
}

TEST(InterruptDeathTest, TtiLoopStopsAtTheNextStep) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::string text = overflowing_survey(true);
  text.replace(text.find("3e38"), 4, "1");
  const Survey survey = parse_survey(text, "s.yaml", ".");
  const fs::path dir = fs::temp_directory_path() / "minimod_watch_tti_interrupt";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string out = (dir / "out.h5").string();
  EXPECT_EXIT(
      {
        SurveyRunOptions options;
        options.simulation.backend = BackendChoice::Cpu;
        options.output = out;
        int last = 0;
        options.hooks.on_progress = [&](int done) {
          if (last > 0) {
            std::fprintf(stderr, "a step ran after the signal\n");
            std::_Exit(1);
          }
          last = done;
          std::raise(SIGINT);
        };
        install_interrupt_handlers();
        try {
          run_survey_shots(survey, options);
        } catch (const Interrupted& e) {
          std::fprintf(stderr, "%s after %d steps\n", e.what(), last);
          std::_Exit(e.signal() == SIGINT && last > 0 ? 7 : 1);
        }
        std::_Exit(2);
      },
      ::testing::ExitedWithCode(7), "interrupted by SIGINT after [0-9]+ steps");
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

} // namespace
} // namespace minimod
