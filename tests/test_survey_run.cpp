/// Survey-scale runs through the real program: many shots, MPI ranks, --resume after a kill, the
/// free surface's ghost, and the plot and SEG-Y outputs of a multi-shot file.
#include "io/h5_output.hpp"
#include "solver/simulation.hpp"
#include "tests/h5_read.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// A folder of its own (the process id keeps two test runs on one machine apart), removed at the
/// end.
class RunDir : public ::testing::Test {
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            (std::string("minimod_run_") + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string at(const std::string& name) const { return (m_dir / name).string(); }
  fs::path m_dir;
};

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// A small survey of `shots` shots along x with a receiver spread that moves with the source.
std::string multishot_survey(int shots) {
  return "grid: {shape: [61, 31, 41], spacing: 10}\n"
         "model: {type: layered, layers: [{top: 0, velocity: 1600}, {top: 200, velocity: 2400}]}\n"
         "time: {duration: 0.3}\n"
         "boundary: {width: 10}\n"
         "shots:\n"
         "  wavelet: {type: ricker, frequency: 15}\n"
         "  positions: {lines: [{start: [150, 150, 50], end: [450, 150, 50], count: " +
         std::to_string(shots) +
         "}]}\n"
         "receivers:\n"
         "  moving: true\n"
         "  lines: [{start: [-140, 0, -30], end: [140, 0, -30], count: 29}]\n"
         "output:\n  dt_out: 0.004\n";
}

/// Every shot's traces, in shot order.
std::vector<std::vector<float>> gathers(const std::string& path) {
  std::vector<std::vector<float>> out;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << path;
  if (f < 0) return out;
  for (int shot = 0;; ++shot) {
    char name[64];
    std::snprintf(name, sizeof name, "/shots/%04d/traces", shot);
    if (H5Lexists(f, "/shots", H5P_DEFAULT) <= 0) break;
    char group[64];
    std::snprintf(group, sizeof group, "/shots/%04d", shot);
    if (H5Lexists(f, group, H5P_DEFAULT) <= 0) break;
    const hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    const hid_t s = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(s, dims, nullptr);
    std::vector<float> v(dims[0] * dims[1]);
    H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Sclose(s);
    H5Dclose(d);
    out.push_back(std::move(v));
  }
  H5Fclose(f);
  return out;
}

const std::string kBinary = MINIMOD_BINARY;
const std::string kMpiEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                            "OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1 ";

bool have_mpirun() {
  return shell("command -v mpirun > /dev/null 2>&1") == 0;
}

TEST_F(RunDir, MpiRanksGiveTheSameGathersAsOneRank) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  std::ofstream(at("s.yaml")) << multishot_survey(6);
  ASSERT_EQ(
      shell(kBinary + " run " + at("s.yaml") + " -o " + at("one.h5") + " --backend cpu --quiet"),
      0);
  const auto one = gathers(at("one.h5"));
  ASSERT_EQ(one.size(), 6u);
  for (int ranks : {2, 4}) {
    const std::string out = at("mpi" + std::to_string(ranks) + ".h5");
    const int code = shell(kMpiEnv + "mpirun --oversubscribe -np " + std::to_string(ranks) + " " +
                           kBinary + " run " + at("s.yaml") + " -o " + out +
                           " --backend cpu --quiet > " + at("mpi.log") + " 2>&1");
    ASSERT_EQ(code, 0) << "mpirun -np " << ranks << " failed; see the log:\n"
                       << std::ifstream(at("mpi.log")).rdbuf();
    const auto many = gathers(out);
    ASSERT_EQ(many.size(), one.size()) << ranks << " ranks";
    for (std::size_t s = 0; s < one.size(); ++s) {
      EXPECT_EQ(many[s], one[s]) << "shot " << s << " differs with " << ranks << " ranks";
    }
  }
  // Not quiet, a subset: the rule (every rank models, rank 0 also coordinates) is said at the
  // start, and every shot is named by its number, as in /shots/NNNN.
  const int code =
      shell(kMpiEnv + "mpirun --oversubscribe -np 3 " + kBinary + " run " + at("s.yaml") + " -o " +
            at("sel.h5") + " --backend cpu --shots 1-4 > " + at("mpi.log") + " 2>&1");
  std::stringstream log;
  log << std::ifstream(at("mpi.log")).rdbuf();
  ASSERT_EQ(code, 0) << log.str();
  EXPECT_NE(log.str().find("\nMPI: 3 ranks model shots (on the CPU: 3 CPU ranks, no GPU); rank 0 "
                           "also hands out shots and writes the output\n"),
            std::string::npos)
      << log.str();
  for (int s = 1; s <= 4; ++s) {
    EXPECT_NE(log.str().find("shot " + std::to_string(s) + " done on rank "), std::string::npos)
        << log.str();
    const minimod::ShotGather g = minimod::read_shot_gather(at("sel.h5"), s);
    EXPECT_EQ(g.traces, one[static_cast<std::size_t>(s)]) << "shot " << s;
    EXPECT_EQ(g.wavelet, minimod::read_shot_gather(at("one.h5"), s).wavelet) << "shot " << s;
  }
  EXPECT_EQ(log.str().find("shot 0 done"), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("shot 5 done"), std::string::npos) << log.str();
}

// The per-shot timing that `run` prints and writes with --summary: setup, stepping and output of
// every shot, the one-time split, and the overhead of the shots after the first.
TEST_F(RunDir, SummaryCarriesPerShotTiming) {
  std::ofstream(at("s.yaml")) << multishot_survey(3);
  ASSERT_EQ(shell(kBinary + " run " + at("s.yaml") + " -o " + at("t.h5") + " --backend cpu " +
                  "--summary " + at("sum.json") + " > " + at("out.txt") + " 2> /dev/null"),
            0);
  const std::string printed((std::istreambuf_iterator<char>(std::ifstream(at("out.txt")).rdbuf())),
                            std::istreambuf_iterator<char>());
  EXPECT_NE(printed.find("per shot    stepping"), std::string::npos) << printed;
  EXPECT_NE(printed.find("later shots' overhead"), std::string::npos) << printed;
  const YAML::Node doc = YAML::LoadFile(at("sum.json"));
  ASSERT_TRUE(doc["shots"].IsSequence());
  ASSERT_EQ(doc["shots"].size(), 3u);
  for (std::size_t n = 0; n < 3; ++n) {
    const YAML::Node shot = doc["shots"][n];
    EXPECT_EQ(shot["shot"].as<int>(), static_cast<int>(n));
    EXPECT_GT(shot["step_ms"].as<double>(), 0.0);
    EXPECT_GE(shot["setup_ms"].as<double>(), 0.0);
    EXPECT_GE(shot["output_ms"].as<double>(), 0.0);
    const double overhead = 100.0 *
                            (shot["setup_ms"].as<double>() + shot["output_ms"].as<double>()) /
                            shot["step_ms"].as<double>();
    EXPECT_NEAR(shot["overhead_percent"].as<double>(), overhead, 1e-6 * overhead + 1e-9);
  }
  // The first shot's setup holds the one-time work (problem and backend).
  const YAML::Node startup = doc["startup"];
  ASSERT_TRUE(startup.IsMap());
  EXPECT_GT(startup["problem_ms"].as<double>(), 0.0);
  EXPECT_GE(startup["device_setup_ms"].as<double>(), 0.0);
  EXPECT_GE(doc["shots"][0]["setup_ms"].as<double>(),
            startup["problem_ms"].as<double>() + startup["device_setup_ms"].as<double>() - 1e-6);
}

/// Kill a run of `survey` (6 shots) once its third shot has started, resume it, and expect the
/// gathers of an uninterrupted run. `at` names files in the test's folder.
void expect_resume_after_kill(const std::string& survey,
                              const std::function<std::string(const std::string&)>& at) {
  std::ofstream(at("s.yaml")) << survey;
  ASSERT_EQ(
      shell(kBinary + " run " + at("s.yaml") + " -o " + at("whole.h5") + " --backend cpu --quiet"),
      0);
  // Kill (SIGKILL: no clean-up at all) once the third shot has started.
  const std::string killer = "(" + kBinary + " run " + at("s.yaml") + " -o " + at("resumed.h5") +
                             " --backend cpu > " + at("run.log") +
                             " 2>&1 & pid=$!; "
                             "for i in $(seq 1 3000); do grep -q 'shot 2 (3 of 6)' " +
                             at("run.log") +
                             " && break; sleep 0.01; done; kill -9 $pid; wait $pid; exit 0)";
  ASSERT_EQ(shell(killer), 0);
  ASSERT_FALSE(fs::exists(at("resumed.h5"))) << "a killed run must not leave a finished file";
  ASSERT_TRUE(fs::exists(at("resumed.h5.parts/manifest")));
  ASSERT_TRUE(fs::exists(at("resumed.h5.parts/shot-0001.h5"))) << "shots 0 and 1 were complete";
  ASSERT_EQ(shell(kBinary + " run " + at("s.yaml") + " -o " + at("resumed.h5") +
                  " --backend cpu --resume > " + at("resume.log") + " 2>&1"),
            0)
      << std::ifstream(at("resume.log")).rdbuf();
  const std::string log((std::istreambuf_iterator<char>(std::ifstream(at("resume.log")).rdbuf())),
                        std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("complete shot(s) of 6 kept"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(at("resumed.h5.parts")));
  const auto whole = gathers(at("whole.h5")), resumed = gathers(at("resumed.h5"));
  ASSERT_EQ(resumed.size(), whole.size());
  for (std::size_t s = 0; s < whole.size(); ++s)
    EXPECT_EQ(resumed[s], whole[s]) << "shot " << s;
}

TEST_F(RunDir, ResumeAfterKillGivesTheSameFile) {
  expect_resume_after_kill(multishot_survey(6), [this](const std::string& n) { return at(n); });
}

bool python_has(const std::string& modules) {
  return shell("/usr/bin/python3 -c 'import " + modules + "' > /dev/null 2>&1") == 0;
}

TEST_F(RunDir, SegyGathersMatchTheHdf5Copy) {
  if (!python_has("segyio, h5py, numpy")) {
    GTEST_SKIP() << "/usr/bin/python3 lacks segyio, h5py or numpy (python3-segyio, python3-h5py)";
  }
  for (const std::string layout : {"one_file", "per_shot"}) {
    std::ofstream(at("s.yaml")) << multishot_survey(3) << "  segy: " << at("g.sgy")
                                << "\n  segy_layout: " << layout << "\n";
    const int code = shell(kBinary + " run " + at("s.yaml") + " -o " + at("g.h5") +
                           " --backend cpu --quiet > " + at("run.log") + " 2>&1");
    if (code == 2 && std::ifstream(at("run.log")).rdbuf() &&
        shell("grep -q 'without segyio' " + at("run.log")) == 0) {
      GTEST_SKIP() << "this build has no segyio";
    }
    ASSERT_EQ(code, 0) << std::ifstream(at("run.log")).rdbuf();
    // segyio (Python) reads every trace; samples and headers must match the HDF5 gathers.
    std::ofstream(at("check.py")) << R"(import sys, segyio, h5py, numpy as np
h5, sgy, layout = sys.argv[1], sys.argv[2], sys.argv[3]
f = h5py.File(h5, 'r')
files = [sgy] if layout == 'one_file' else [sgy.replace('.sgy', '-shot%d.sgy' % k) for k in range(3)]
traces = []
for name in files:
    with segyio.open(name, ignore_geometry=True) as s:
        for t in range(s.tracecount):
            h = s.header[t]
            traces.append((h[segyio.TraceField.FieldRecord], h[segyio.TraceField.TraceNumber], s.trace[t].copy(), s.samples))
for ffid, number, samples, axis in traces:
    g = f['shots/%04d' % (ffid - 1)]  # field records count from 1
    ref = g['traces'][number - 1]
    assert np.array_equal(ref, samples), (ffid, number)
    assert abs((axis[1] - axis[0]) * 1e-3 - g.attrs['dt_out']) < 1e-9, axis[:2]
assert len(traces) == sum(f['shots/%04d' % k]['traces'].shape[0] for k in range(3)), len(traces)
print('ok', len(traces))
)";
    EXPECT_EQ(shell("/usr/bin/python3 " + at("check.py") + " " + at("g.h5") + " " + at("g.sgy") +
                    " " + layout + " > " + at("check.log") + " 2>&1"),
              0)
        << layout << ": " << std::ifstream(at("check.log")).rdbuf();
  }
}

} // namespace

namespace minimod {
namespace {

// A shot loaded into a used Simulation (new taps, fields reset) gives exactly what a fresh
// Simulation of that shot gives: nothing of the previous shot survives.
TEST(ShotSwitch, LoadShotEqualsAFreshSimulation) {
  Survey s;
  s.path = "switch";
  s.grid.shape = {41, 37, 33};
  s.grid.spacing = {10, 10, 10};
  s.model.kind = ModelSpec::Kind::Constant;
  s.time.steps = 80;
  s.boundary.width = 6;
  s.boundary.free_surface = true;
  for (const double x : {120.5, 260.0}) {
    SourceSpec src;
    src.position = {x, 180.0, 60.0};
    src.wavelet.kind = WaveletSpec::Kind::Ricker;
    src.wavelet.frequency = 20;
    s.shots.push_back(ShotSpec{{src}, {}});
  }
  s.sources = s.shots.front().sources;
  s.receivers_move = true;
  s.receivers.push_back(ReceiverSpec{{50.0, 0.0, -20.0}, {}});
  s.receivers.push_back(ReceiverSpec{{-70.0, 10.0, 40.0}, {}});
  const std::vector<float> velocity(41u * 37u * 33u, 1800.0f);
  SimulationOptions o;
  o.backend = BackendChoice::Cpu;

  Simulation reused(survey_for_shot(s, 0), velocity, o);
  reused.run({}, nullptr);
  reused.load_shot(survey_for_shot(s, 1));
  reused.run({}, nullptr);

  Simulation fresh(survey_for_shot(s, 1), velocity, o);
  fresh.run({}, nullptr);
  EXPECT_EQ(reused.raw_traces(), fresh.raw_traces());
  EXPECT_EQ(reused.wavefield(), fresh.wavefield());
}

} // namespace
} // namespace minimod

namespace {

std::string tti_survey(const std::string& delta) {
  return "physics: tti\n"
         "grid: {shape: [41, 31, 37], spacing: 10}\n"
         "model: {type: constant, velocity: 2000}\n"
         "anisotropy: {angle_unit: degrees, epsilon: 0.15, delta: " +
         delta +
         ", theta: 30}\n"
         "time: {steps: 60}\n"
         "boundary: {width: 6}\n"
         "sources: [{position: [200, 150, 180], wavelet: {type: ricker, frequency: 15}}]\n"
         "receivers: {points: [[300, 150, 100], [100, 150, 250]]}\n"
         "output: {snapshots: {every: 30}}\n";
}

TEST_F(RunDir, TtiSurveyRunsOnTheCpuReference) {
  std::ofstream(at("t.yaml")) << tti_survey("0.05");
  ASSERT_EQ(shell(kBinary + " validate " + at("t.yaml") + " > " + at("v.log") + " 2>&1"), 0)
      << std::ifstream(at("v.log")).rdbuf();
  ASSERT_EQ(shell(kBinary + " run " + at("t.yaml") + " -o " + at("t.h5") + " --quiet"), 0);
  const auto g = gathers(at("t.h5"));
  ASSERT_EQ(g.size(), 1u);
  double peak = 0;
  for (float x : g[0])
    peak = std::max(peak, static_cast<double>(std::abs(x)));
  EXPECT_GT(peak, 0) << "the receivers recorded nothing";
  {
    const hid_t f = H5Fopen(at("t.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    EXPECT_EQ(minimod::test_support::read_string_attribute(f, "physics"), "tti");
    H5Fclose(f);
  }
  EXPECT_TRUE(fs::exists(at("t.xmf"))) << "snapshots of a TTI run get their XDMF sidecar too";
  // A GPU kernel name on the CPU reference is bad input; nothing is written.
  EXPECT_EQ(shell(kBinary + " run " + at("t.yaml") + " -o " + at("k.h5") +
                  " --backend cpu --kernel semi+b --quiet 2> " + at("k.log")),
            2);
  EXPECT_FALSE(fs::exists(at("k.h5")));
  // The CUDA TTI backend: a runtime failure without a GPU (nothing written), a run with one.
  std::string why;
  const int cuda = shell(kBinary + " run " + at("t.yaml") + " -o " + at("c.h5") +
                         " --backend cuda --quiet 2> " + at("c.log"));
  if (minimod::cuda_device_available(&why)) {
    EXPECT_EQ(cuda, 0) << std::ifstream(at("c.log")).rdbuf();
    EXPECT_EQ(gathers(at("c.h5")).size(), 1u);
  } else {
    EXPECT_EQ(cuda, 3) << std::ifstream(at("c.log")).rdbuf();
    EXPECT_FALSE(fs::exists(at("c.h5")));
  }
}

/// A TTI survey of `shots` shots along x whose receivers move with the source.
std::string tti_multishot_survey(int shots) {
  return "physics: tti\n"
         "grid: {shape: [45, 33, 39], spacing: 10}\n"
         "model: {type: layered, layers: [{top: 0, velocity: 1800}, {top: 200, velocity: 2400}]}\n"
         "anisotropy: {angle_unit: degrees, epsilon: 0.2, delta: 0.1, theta: 25, phi: 30}\n"
         "time: {duration: 0.06}\n"
         "boundary: {width: 7}\n"
         "shots:\n"
         "  wavelet: {type: ricker, frequency: 15}\n"
         "  positions: {lines: [{start: [150, 160, 100], end: [300, 160, 100], count: " +
         std::to_string(shots) +
         "}]}\n"
         "receivers:\n"
         "  moving: true\n"
         "  lines: [{start: [-100, 0, -30], end: [100, 0, -30], count: 11}]\n"
         "output: {dt_out: 0.002}\n";
}

// TTI shots over MPI ranks (rank 0 hands them out, the others model them on the one driver the
// acoustic runs use) give the gathers of one process, bit for bit.
TEST_F(RunDir, TtiMpiRanksGiveTheSameGathersAsOneRank) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  std::ofstream(at("t.yaml")) << tti_multishot_survey(3);
  ASSERT_EQ(
      shell(kBinary + " run " + at("t.yaml") + " -o " + at("one.h5") + " --backend cpu --quiet"),
      0);
  const auto one = gathers(at("one.h5"));
  ASSERT_EQ(one.size(), 3u);
  for (int ranks : {2, 3}) {
    const std::string out = at("mpi" + std::to_string(ranks) + ".h5");
    const int code = shell(kMpiEnv + "mpirun --oversubscribe -np " + std::to_string(ranks) + " " +
                           kBinary + " run " + at("t.yaml") + " -o " + out +
                           " --backend cpu --quiet > " + at("mpi.log") + " 2>&1");
    ASSERT_EQ(code, 0) << "mpirun -np " << ranks << " failed; see the log:\n"
                       << std::ifstream(at("mpi.log")).rdbuf();
    const auto many = gathers(out);
    ASSERT_EQ(many.size(), one.size()) << ranks << " ranks";
    for (std::size_t s = 0; s < one.size(); ++s)
      EXPECT_EQ(many[s], one[s]) << "shot " << s << " differs with " << ranks << " ranks";
    const hid_t f = H5Fopen(out.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    EXPECT_EQ(minimod::test_support::read_string_attribute(f, "physics"), "tti");
    H5Fclose(f);
  }
}

// A TTI survey resumes after a kill as an acoustic one does: the driver is the same.
TEST_F(RunDir, TtiResumeAfterKillGivesTheSameFile) {
  expect_resume_after_kill(tti_multishot_survey(6), [this](const std::string& n) { return at(n); });
}

// boundary.type: cpml with physics: tti runs on the CPU reference: validate names the C-PML, the
// gathers are finite, and they differ from those of Minimod's layer (the layers differ, the
// direct wave and the medium do not).
TEST_F(RunDir, TtiCpmlSurveyRunsOnTheCpuReference) {
  std::string survey = tti_multishot_survey(2);
  const std::string minimod = "boundary: {width: 7}\n";
  const auto at_layer = survey.find(minimod);
  ASSERT_NE(at_layer, std::string::npos);
  std::ofstream(at("m.yaml")) << survey;
  survey.replace(at_layer, minimod.size(), "boundary: {type: cpml, width: 7}\n");
  std::ofstream(at("c.yaml")) << survey;
  ASSERT_EQ(shell(kBinary + " validate " + at("c.yaml") + " > " + at("v.log") + " 2>&1"), 0)
      << std::ifstream(at("v.log")).rdbuf();
  std::stringstream plan;
  plan << std::ifstream(at("v.log")).rdbuf();
  EXPECT_NE(plan.str().find("(C-PML)"), std::string::npos) << plan.str();
  ASSERT_EQ(shell("OMP_NUM_THREADS=1 " + kBinary + " run " + at("c.yaml") + " -o " + at("c.h5") +
                  " --backend cpu --quiet"),
            0);
  ASSERT_EQ(shell("OMP_NUM_THREADS=1 " + kBinary + " run " + at("m.yaml") + " -o " + at("m.h5") +
                  " --backend cpu --quiet"),
            0);
  const auto c = gathers(at("c.h5")), m = gathers(at("m.h5"));
  ASSERT_EQ(c.size(), 2u);
  ASSERT_EQ(m.size(), 2u);
  ASSERT_EQ(c[0].size(), m[0].size());
  double peak = 0, diff = 0;
  for (std::size_t n = 0; n < c[0].size(); ++n) {
    ASSERT_TRUE(std::isfinite(c[0][n]));
    peak = std::max(peak, static_cast<double>(std::abs(c[0][n])));
    diff = std::max(diff, static_cast<double>(std::abs(c[0][n] - m[0][n])));
  }
  EXPECT_GT(peak, 0) << "the receivers recorded nothing";
  EXPECT_GT(diff, 0) << "the C-PML run is Minimod's";
  EXPECT_LT(diff, peak) << "the C-PML run is not the same wave";
}

/// The snapshots of a file, [count][points], and their steps.
std::pair<std::vector<float>, std::vector<int>> snapshots(const std::string& path) {
  std::vector<float> values;
  std::vector<int> steps;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << path;
  if (f < 0) return {values, steps};
  const hid_t d = H5Dopen2(f, "/snapshots/wavefield", H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  hsize_t dims[4] = {0, 0, 0, 0};
  H5Sget_simple_extent_dims(space, dims, nullptr);
  values.resize(dims[0] * dims[1] * dims[2] * dims[3]);
  H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Sclose(space);
  H5Dclose(d);
  const hid_t st = H5Dopen2(f, "/snapshots/step", H5P_DEFAULT);
  steps.resize(dims[0]);
  H5Dread(st, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps.data());
  H5Dclose(st);
  H5Fclose(f);
  return {values, steps};
}

// A snapshot holds the field of its own step, on either equation: the snapshot of step 30 of a
// 31-step run (taken while the loop goes on) is the last snapshot of a 30-step run.
TEST_F(RunDir, SnapshotsHoldTheFieldOfTheirStep) {
  for (const bool tti : {false, true}) {
    SCOPED_TRACE(tti ? "tti" : "acoustic");
    std::ofstream(at("s.yaml")) << (tti ? tti_survey("0.05")
                                        : multishot_survey(2) + "  snapshots: {every: 30}\n");
    for (const int steps : {30, 31}) {
      ASSERT_EQ(shell(kBinary + " run " + at("s.yaml") + " -o " +
                      at(std::to_string(steps) + ".h5") + " --backend cpu --quiet --steps " +
                      std::to_string(steps)),
                0);
    }
    const auto [last, last_steps] = snapshots(at("30.h5"));
    const auto [during, during_steps] = snapshots(at("31.h5"));
    ASSERT_EQ(last_steps, std::vector<int>{30});
    ASSERT_EQ(during_steps, std::vector<int>{30});
    ASSERT_FALSE(last.empty());
    EXPECT_EQ(during, last);
  }
}

// The CPU backend's multi-step pass (docs/kernels.md) ends a pass at every snapshot and NaN/Inf
// scan: runs whose passes take 1, 3 and 8 steps at most write the same snapshots (every 7 steps)
// and gathers, on either equation.
TEST_F(RunDir, PassesOfAnyLengthWriteTheSameSnapshotsAndGathers) {
  for (const bool tti : {false, true}) {
    SCOPED_TRACE(tti ? "tti" : "acoustic");
    std::string survey =
        tti ? tti_survey("0.05") : multishot_survey(2) + "  snapshots: {every: 30}\n";
    survey.replace(survey.find("every: 30"), 9, "every: 7");
    std::ofstream(at("p.yaml")) << survey;
    for (const char* most : {"1", "3", "8"}) {
      ASSERT_EQ(shell(std::string("MINIMOD_CPU_PASS_STEPS=") + most + " " + kBinary + " run " +
                      at("p.yaml") + " -o " + at(std::string("p") + most + ".h5") +
                      " --backend cpu --quiet --steps 45"),
                0)
          << most;
    }
    const auto [one, one_steps] = snapshots(at("p1.h5"));
    ASSERT_EQ(one_steps, (std::vector<int>{7, 14, 21, 28, 35, 42}));
    for (const char* most : {"3", "8"}) {
      const std::string file = at(std::string("p") + most + ".h5");
      const auto [passes, passes_steps] = snapshots(file);
      EXPECT_EQ(passes_steps, one_steps) << most;
      EXPECT_EQ(passes, one) << most;
      EXPECT_EQ(gathers(file), gathers(at("p1.h5"))) << most;
    }
  }
}

// A malformed MINIMOD_CPU_PASS_STEPS is an input error: exit 2, the variable, its value and what
// is allowed named, and no output file begun.
TEST_F(RunDir, MalformedPassStepsIsAnInputError) {
  std::ofstream(at("p.yaml")) << multishot_survey(2);
  EXPECT_EQ(shell("MINIMOD_CPU_PASS_STEPS=9 " + kBinary + " run " + at("p.yaml") + " -o " +
                  at("bad.h5") + " --backend cpu --quiet --steps 10 > " + at("bad.log") + " 2>&1"),
            2);
  const std::string log((std::istreambuf_iterator<char>(std::ifstream(at("bad.log")).rdbuf())),
                        std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("MINIMOD_CPU_PASS_STEPS is '9'; allowed: 1 to 8"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(at("bad.h5")));
  EXPECT_FALSE(fs::exists(at("bad.h5.parts")));
}

TEST_F(RunDir, TtiEpsilonBelowDeltaIsRefusedWithThePosition) {
  std::ofstream(at("t.yaml")) << tti_survey("0.25");
  EXPECT_EQ(shell(kBinary + " validate " + at("t.yaml") + " > " + at("v.log") + " 2>&1"), 2);
  const std::string log((std::istreambuf_iterator<char>(std::ifstream(at("v.log")).rdbuf())),
                        std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("anisotropy"), std::string::npos) << log;
  EXPECT_NE(log.find("(0, 0, 0)"), std::string::npos) << log;
  EXPECT_NE(log.find("epsilon"), std::string::npos) << log;
}

} // namespace
