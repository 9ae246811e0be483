/// GPU tests (CTest label gpu) of the memory floor, `bench` and `--kernel auto`. Each test skips,
/// with the runtime's reason, when no CUDA device is usable. The binary's main is in
/// test_gpu_kernels.cpp.

#include "app/bench.hpp"
#include "io/survey.hpp"
#include "kernels/autotune.hpp"
#include "kernels/backend.hpp"
#include "kernels/gpu_probe.hpp"
#include "kernels/kernel.hpp"
#include "solver/simulation.hpp"
#include "tests/gpu/gpu_environment.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace minimod {
namespace {

namespace fs = std::filesystem;

/// Skip the current test, with the reason, when no device is usable.

/// A folder under the system temp folder, removed with its contents.
class GpuTempDir {
public:
  explicit GpuTempDir(const std::string& tag) {
    m_path = fs::temp_directory_path() /
             ("minimod_gpu_" + tag + "_" + std::to_string(static_cast<long>(::getpid())));
    fs::remove_all(m_path);
    fs::create_directories(m_path);
  }
  ~GpuTempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

private:
  fs::path m_path;
};

bool is_registered_cuda_kernel(const std::string& name) {
  const StencilKernel* k = kernel_registry().find(name, kGpuBackend, Physics::Acoustic);
  return k != nullptr && k->name() == name;
}

BenchOptions small_gpu_options(std::vector<std::string> kernels) {
  BenchOptions o;
  o.kernels = std::move(kernels);
  o.shape = {96, 88, 80};
  o.steps = 10;
  o.warmup = 2;
  o.repeats = 3;
  o.backend = kGpuBackend;
  return o;
}

TEST(BenchGpu, MemoryFloorIsPlausible) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const MemoryFloor f = measure_gpu_memory_floor(96 * 88 * 80);
  std::cout << "[ FLOOR    ] " << f.device << ": copy " << f.copy_gbps << " GB/s, stream "
            << f.stream_gbps << " GB/s over " << f.points << " points, L2 " << f.cache_bytes
            << " B\n";
  EXPECT_GE(f.points, static_cast<std::int64_t>(f.cache_bytes)) << "arrays must dwarf the L2";
  EXPECT_GE(f.stream_ms_all.size(), 5u);
  EXPECT_GE(f.copy_ms_all.size(), 5u);
  EXPECT_GT(f.copy_gbps, 100.0);
  EXPECT_GT(f.stream_gbps, 100.0);
  // Far above any HBM of today: the timing would be wrong (a kernel that did not run).
  EXPECT_LT(f.stream_gbps, 20000.0);
  EXPECT_LT(f.copy_gbps, 20000.0);
  EXPECT_GT(f.floor_ms(1000000000), 0.0);
}

TEST(BenchGpu, TwoKernelsProduceRecords) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const BenchReport rep =
      run_bench(small_gpu_options({"gmem_3d_32x4x4", "inner=gmem_3d_64x4x2,pml=gmem_3d"}), {});
  ASSERT_EQ(rep.records.size(), 2u);
  EXPECT_GT(rep.floor_ms, 0.0);
  for (const BenchRecord& r : rep.records) {
    EXPECT_EQ(r.status, "ok") << r.spec << ": " << r.reason;
    EXPECT_EQ(r.ms_all.size(), 3u);
    EXPECT_GT(r.ms, 0.0);
    EXPECT_GT(r.percent_of_floor, 0.0);
    EXPECT_LT(r.percent_of_floor, 150.0) << "faster than the memory floor: a timing error";
  }
  EXPECT_EQ(rep.records[0].kernels[0], "gmem_3d_32x4x4");
  EXPECT_EQ(rep.records[1].kernels[0], "gmem_3d_64x4x2");
  EXPECT_EQ(rep.records[1].kernels[1], "gmem_3d_32x4x4");
  // Every record says what was modelled: the layer's type and width per face, the precision.
  const auto doc = nlohmann::ordered_json::parse(bench_json(rep));
  ASSERT_EQ(doc["records"].size(), 2u);
  for (const auto& rec : doc["records"]) {
    EXPECT_EQ(rec["boundary"], "minimod");
    EXPECT_EQ(rec["precision"], "float32");
    for (const char* face : {"x-", "x+", "y-", "y+", "z-", "z+"})
      EXPECT_EQ(rec["boundary_width"][face], rep.layer.x_lo) << face;
  }
  EXPECT_GT(rep.layer.x_lo, 0) << "the seeds' layer";
  std::cout << bench_table(rep);
}

TEST(BenchGpu, TimeStepsAndResetRepeat) {
  MINIMOD_SKIP_WITHOUT_GPU();
  // Two repeats from a reset must produce the same traces: reset clears every field.
  const Survey s = parse_survey("grid: {shape: [40, 36, 32], spacing: 10}\n"
                                "model: {type: constant, velocity: 2000}\n"
                                "time: {steps: 30}\n"
                                "boundary: {width: 6}\n"
                                "sources:\n"
                                "  - position: [200, 180, 160]\n"
                                "    wavelet: {type: ricker, frequency: 15}\n"
                                "receivers:\n"
                                "  points: [[230, 180, 160]]\n",
                                "reset.yaml", ".");
  SimulationOptions opt;
  opt.backend = BackendChoice::Cuda;
  Simulation sim(s, std::vector<float>(40 * 36 * 32, 2000.0f), opt);
  Backend& b = sim.backend();
  EXPECT_GT(b.time_steps(0, 30), 0.0);
  const std::vector<float> first = sim.raw_traces();
  b.reset();
  b.time_steps(0, 30);
  const std::vector<float> second = sim.raw_traces();
  ASSERT_EQ(first.size(), second.size());
  double peak = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i], second[i]) << "sample " << i;
    peak = std::max(peak, static_cast<double>(std::abs(first[i])));
  }
  EXPECT_GT(peak, 0.0) << "the receiver saw nothing; the test proves nothing";
}

TEST(BenchGpu, AutoPicksRegisteredKernelsAndCaches) {
  MINIMOD_SKIP_WITHOUT_GPU();
  GpuTempDir dir("autotune");
  BenchOptions o = small_gpu_options({"auto"});
  o.autotune_cache = (dir.path() / "autotune.json").string();
  std::vector<std::string> tuned;
  const BenchReport rep = run_bench(o, [&](const std::string& l) { tuned.push_back(l); });
  ASSERT_EQ(rep.records.size(), 1u);
  const BenchRecord& r = rep.records[0];
  EXPECT_EQ(r.status, "ok") << r.reason;
  for (const std::string& k : r.kernels)
    EXPECT_TRUE(is_registered_cuda_kernel(k)) << k;
  ASSERT_TRUE(fs::exists(o.autotune_cache));
  AutotuneKey key;
  key.device = rep.device;
  key.physics = "acoustic";
  key.shape = {rep.grid.nx, rep.grid.ny, rep.grid.nz};
  key.layer = {rep.layer.x_lo, rep.layer.x_hi, rep.layer.y_lo,
               rep.layer.y_hi, rep.layer.z_lo, rep.layer.z_hi};
  const auto cached = read_autotune_cache(o.autotune_cache, key);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->inner, r.kernels[0]);
  EXPECT_EQ(cached->layer, r.kernels[1]);

  // The second run takes the cached choice at once.
  std::vector<std::string> lines;
  const BenchReport again = run_bench(o, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(again.records.size(), 1u);
  EXPECT_EQ(again.records[0].kernels, r.kernels);
  bool said_cached = false;
  for (const auto& l : lines)
    said_cached = said_cached || l.find("auto: cached choice") != std::string::npos;
  EXPECT_TRUE(said_cached);
}

TEST(BenchGpu, AutoInSimulationOnCuda) {
  MINIMOD_SKIP_WITHOUT_GPU();
  GpuTempDir dir("autotune_sim");
  const std::string cache = (dir.path() / "autotune.json").string();
  std::optional<std::string> old;
  if (const char* v = std::getenv("MINIMOD_AUTOTUNE_CACHE")) old = v;
  ::setenv("MINIMOD_AUTOTUNE_CACHE", cache.c_str(), 1);
  {
    const Survey s = parse_survey("grid: {shape: [72, 64, 60], spacing: 10}\n"
                                  "model: {type: constant, velocity: 2000}\n"
                                  "time: {steps: 12}\n"
                                  "boundary: {width: 8}\n"
                                  "sources:\n"
                                  "  - position: [360, 320, 300]\n"
                                  "    wavelet: {type: ricker, frequency: 15}\n"
                                  "kernel: auto\n",
                                  "auto.yaml", ".");
    SimulationOptions opt;
    opt.backend = BackendChoice::Cuda;
    std::vector<std::string> notices;
    Simulation sim(s, std::vector<float>(72 * 64 * 60, 2000.0f), opt,
                   [&](const std::string& l) { notices.push_back(l); });
    for (const std::string& k : sim.kernel_names())
      EXPECT_TRUE(is_registered_cuda_kernel(k)) << k;
    const LoopTiming t = sim.run({}, nullptr);
    EXPECT_GT(t.total_ms, 0.0);
    EXPECT_FALSE(notices.empty());
  }
  if (old)
    ::setenv("MINIMOD_AUTOTUNE_CACHE", old->c_str(), 1);
  else
    ::unsetenv("MINIMOD_AUTOTUNE_CACHE");
  EXPECT_TRUE(fs::exists(cache));
}

} // namespace
} // namespace minimod
