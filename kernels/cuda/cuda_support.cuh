#pragma once
/// What the isotropic and the TTI CUDA backends share: the tap kernels (source injection, receiver
/// sampling), the choice of device, tap-table checks, and owning handles for streams, events and
/// pinned memory. Included by .cu files only.

#include "io/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/gpu_check.hpp"
#include "kernels/cuda/gpu_runtime.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

// Elapsed time between two events; gpu_runtime.hpp does not map it yet (HIP: hipEventElapsedTime).
#if !defined(gpuEventElapsedTime)
#define gpuEventElapsedTime cudaEventElapsedTime
#endif

namespace minimod::gpu {
// Internal linkage: each backend's translation unit gets its own copy of the kernels.
namespace {

/// Threads per block of the tap kernels (sources, receivers).
constexpr int kTapThreads = 128;
/// Device memory kept free beyond the problem's own needs (context, launch queues, library
/// workspaces): short of it a run fails later in a less readable way.
constexpr std::size_t kMemoryMarginBytes = std::size_t{256} << 20;

/// Source injection into u^{n+1} (held in v), one thread per tap. Atomic because taps of
/// different sources may land on the same point.
__global__ void __launch_bounds__(kTapThreads)
    inject_sources_kernel(float* __restrict__ v, const std::int64_t* __restrict__ tap_index,
                          const float* __restrict__ tap_weight, const int* __restrict__ tap_owner,
                          const float* __restrict__ samples, std::int64_t taps, int steps, int n) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kTapThreads + threadIdx.x;
  if (t >= taps) return;
  const float amplitude = samples[static_cast<std::int64_t>(tap_owner[t]) * steps + n];
  atomicAdd(v + tap_index[t], tap_weight[t] * amplitude);
}

/// Receiver sampling of u^{n+1} into trace sample n+1, one thread per receiver, its taps summed in
/// table order (the CPU reference's order).
__global__ void __launch_bounds__(kTapThreads)
    sample_receivers_kernel(const float* __restrict__ u, const std::int64_t* __restrict__ tap_begin,
                            const std::int64_t* __restrict__ tap_index,
                            const float* __restrict__ tap_weight, float* __restrict__ traces,
                            int receivers, int samples_per_trace, int sample) {
  const int r = static_cast<int>(blockIdx.x) * kTapThreads + static_cast<int>(threadIdx.x);
  if (r >= receivers) return;
  float sum = 0.0f;
  for (std::int64_t t = tap_begin[r]; t < tap_begin[r + 1]; ++t)
    sum += tap_weight[t] * u[tap_index[t]];
  traces[static_cast<std::int64_t>(r) * samples_per_trace + sample] = sum;
}

/// GiB with two decimals.
inline std::string gib_text(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / double(1ull << 30));
  return buf;
}

/// The device this process uses. The one place that chooses it: multi-GPU runs will pick by MPI
/// rank here.
inline int select_device() {
  int count = 0;
  MINIMOD_GPU_CHECK(gpuGetDeviceCount(&count));
  if (count <= 0) throw RuntimeFailure("no CUDA device");
  // MPI ranks of one node share its GPUs round robin, by their rank on the node.
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v) % count;
  }
  return 0;
}

/// Throws std::invalid_argument unless `t` is a well-formed tap table into a field of
/// `field_size` floats (a bad index would write outside the device field).
inline void check_tap_table(const TapTable& t, std::int64_t field_size, const char* what) {
  const std::string name(what);
  if (t.begin.empty() && t.index.empty() && t.weight.empty()) return;
  if (t.begin.empty() || t.begin.front() != 0 ||
      t.begin.back() != static_cast<std::int64_t>(t.index.size()) ||
      t.weight.size() != t.index.size())
    throw std::invalid_argument(name + " tap table is malformed (begin/index/weight sizes)");
  for (std::size_t r = 0; r + 1 < t.begin.size(); ++r)
    if (t.begin[r + 1] < t.begin[r])
      throw std::invalid_argument(name + " tap table: begin is not monotonic");
  for (const std::int64_t i : t.index)
    if (i < 0 || i >= field_size)
      throw std::invalid_argument(name + " tap table: index " + std::to_string(i) +
                                  " outside the field of " + std::to_string(field_size) +
                                  " floats");
}

/// A stream or event handle destroyed with its owner.
struct StreamDeleter {
  void operator()(gpuStream_t s) const { (void)gpuStreamDestroy(s); }
};
struct EventDeleter {
  void operator()(gpuEvent_t e) const { (void)gpuEventDestroy(e); }
};
using StreamHandle = std::unique_ptr<std::remove_pointer_t<gpuStream_t>, StreamDeleter>;
using EventHandle = std::unique_ptr<std::remove_pointer_t<gpuEvent_t>, EventDeleter>;

/// Pinned host memory, freed with its owner.
struct PinnedDeleter {
  void operator()(float* p) const { (void)gpuFreeHost(p); }
};
using PinnedFloats = std::unique_ptr<float[], PinnedDeleter>;

inline StreamHandle make_stream(const char* what) {
  gpuStream_t s = nullptr;
  MINIMOD_GPU_CHECK_WHAT(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking), what);
  return StreamHandle(s);
}

inline EventHandle make_event(const char* what) {
  gpuEvent_t e = nullptr;
  MINIMOD_GPU_CHECK_WHAT(gpuEventCreateWithFlags(&e, gpuEventDisableTiming), what);
  return EventHandle(e);
}

/// An event that records time (for time_steps).
inline EventHandle make_timing_event(const char* what) {
  gpuEvent_t e = nullptr;
  MINIMOD_GPU_CHECK_WHAT(gpuEventCreateWithFlags(&e, 0u), what);
  return EventHandle(e);
}

} // namespace
} // namespace minimod::gpu
