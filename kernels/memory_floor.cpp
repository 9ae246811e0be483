/// The host memory floor (kernels/gpu_probe.hpp), and the GPU probe's stand-in for a build
/// without CUDA.

#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/gpu_probe.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace minimod {
namespace {

/// Smallest host probe: 32 MiB per array, past the private caches of any current core.
constexpr std::int64_t kHostMinPoints = std::int64_t{1} << 23;
/// Untimed passes before the timed ones (first touch, page faults).
constexpr int kHostWarmups = 1;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

template <class F> std::vector<double> host_timed_runs(int repeats, F&& body) {
  for (int r = 0; r < kHostWarmups; ++r)
    body();
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

} // namespace

MemoryFloor measure_host_memory_floor(std::int64_t grid_points, int repeats) {
  if (grid_points <= 0) throw InputError("memory floor: the grid has no points");
  repeats = std::max(repeats, 5);
  MemoryFloor f;
  f.device = cpu_model_name();
  f.repeats = repeats;
  f.points = std::max(grid_points, kHostMinPoints);
  const std::int64_t n = f.points;
  // Not std::vector: its zero fill would be a first touch by one thread; let OpenMP place pages.
  std::unique_ptr<float[]> u(new float[n]), v(new float[n]), w(new float[n]);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    u[i] = 1.0f + static_cast<float>(i % 1021) * (1.0f / 1024.0f);
    v[i] = 0.5f + static_cast<float>(i % 509) * (1.0f / 1024.0f);
    w[i] = 0.01f * static_cast<float>(i % 61);
  }
  float* pu = u.get();
  float* pv = v.get();
  float* pw = w.get();
  f.copy_ms_all = host_timed_runs(repeats, [&] {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      pw[i] = pu[i];
  });
  f.copy_gbps = 2.0 * static_cast<double>(n) * sizeof(float) / (median_of(f.copy_ms_all) * 1e6);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    pw[i] = 0.01f * static_cast<float>(i % 61);
  f.stream_ms_all = host_timed_runs(repeats, [&] {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      pv[i] = pw[i] * pu[i] + (2.0f * pu[i] - pv[i]);
  });
  f.stream_ms = median_of(f.stream_ms_all);
  f.stream_gbps = kAcousticBytesPerPoint * static_cast<double>(n) / (f.stream_ms * 1e6);
  return f;
}

#if !defined(MINIMOD_HAVE_GPU)
MemoryFloor measure_gpu_memory_floor(std::int64_t, int) {
  throw RuntimeFailure("memory floor: this minimod-gpu was built without a GPU backend "
                       "(configure with -DMINIMOD_CUDA=ON or -DMINIMOD_HIP=ON); use --backend cpu");
}
#endif

} // namespace minimod
