/// The GPU memory floor (kernels/gpu_probe.hpp): a device-to-device copy and a streaming kernel
/// with the acoustic step's traffic (read u, v, w; write v: 16 bytes per point), timed with
/// device events after a warm-up, medians of several repeats. Two launch shapes of the streaming
/// kernel are timed and the faster one is kept, so that the floor is what the memory can do, not
/// what one launch shape happens to reach.

#include "core/errors.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu_probe.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace minimod {
namespace gpu {
namespace {

/// Threads per block of the probe kernels.
constexpr int kProbeThreads = 256;
/// float4 loads in flight per thread in the grid-stride variant.
constexpr int kStrideUnroll = 4;
/// Untimed launches before the timed ones (clocks up, TLB and L2 in their steady state).
constexpr int kWarmups = 2;
/// Device memory left free besides the probe's arrays.
constexpr std::size_t kMarginBytes = std::size_t{256} << 20;

/// The acoustic step's arithmetic shape on one float: 2u - v + w u.
__device__ __forceinline__ float stream_update(float u, float v, float w) {
  return fmaf(w, u, fmaf(2.0f, u, -v));
}

__device__ __forceinline__ float4 stream_update4(float4 u, float4 v, float4 w) {
  return make_float4(stream_update(u.x, v.x, w.x), stream_update(u.y, v.y, w.y),
                     stream_update(u.z, v.z, w.z), stream_update(u.w, v.w, w.w));
}

/// Non-zero, varying inputs: timing on zeros can mislead.
__global__ void MINIMOD_LAUNCH_BOUNDS(kProbeThreads)
    fill_kernel(float* __restrict__ u, float* __restrict__ v, float* __restrict__ w,
                std::int64_t n) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kProbeThreads;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kProbeThreads + threadIdx.x; i < n;
       i += stride) {
    const auto h = static_cast<unsigned>(i * 2654435761u);
    u[i] = 1.0f + static_cast<float>(h & 1023u) * (1.0f / 1024.0f);
    v[i] = 0.5f + static_cast<float>((h >> 10) & 1023u) * (1.0f / 2048.0f);
    w[i] = 0.01f * static_cast<float>((h >> 20) & 63u);
  }
}

/// One float4 per thread, one block per 256 float4.
__global__ void MINIMOD_LAUNCH_BOUNDS(kProbeThreads)
    stream_flat_kernel(const float4* __restrict__ u, float4* __restrict__ v,
                       const float4* __restrict__ w, std::int64_t n4) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kProbeThreads + threadIdx.x;
  if (i >= n4) return;
  v[i] = stream_update4(u[i], v[i], w[i]);
}

/// A grid sized to the device, each thread with kStrideUnroll float4 of each array in flight.
__global__ void MINIMOD_LAUNCH_BOUNDS(kProbeThreads)
    stream_strided_kernel(const float4* __restrict__ u, float4* __restrict__ v,
                          const float4* __restrict__ w, std::int64_t n4) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kProbeThreads;
  std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kProbeThreads + threadIdx.x;
  for (; i + (kStrideUnroll - 1) * stride < n4; i += kStrideUnroll * stride) {
    float4 a[kStrideUnroll], b[kStrideUnroll], c[kStrideUnroll];
#pragma unroll
    for (int q = 0; q < kStrideUnroll; ++q) {
      a[q] = u[i + q * stride];
      b[q] = v[i + q * stride];
      c[q] = w[i + q * stride];
    }
#pragma unroll
    for (int q = 0; q < kStrideUnroll; ++q)
      v[i + q * stride] = stream_update4(a[q], b[q], c[q]);
  }
  for (; i < n4; i += stride)
    v[i] = stream_update4(u[i], v[i], w[i]);
}

/// A timing event pair on one stream, destroyed with its owner.
class EventPair {
public:
  EventPair() {
    MINIMOD_GPU_CHECK_WHAT(gpuEventCreateWithFlags(&m_start, 0u), "memory floor start event");
    MINIMOD_GPU_CHECK_WHAT(gpuEventCreateWithFlags(&m_stop, 0u), "memory floor stop event");
  }
  ~EventPair() {
    if (m_start) (void)gpuEventDestroy(m_start);
    if (m_stop) (void)gpuEventDestroy(m_stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  /// Milliseconds taken by the work `enqueue` puts on `stream`.
  double time(gpuStream_t stream, const std::function<void()>& enqueue) {
    MINIMOD_GPU_CHECK(gpuEventRecord(m_start, stream));
    enqueue();
    MINIMOD_GPU_CHECK(gpuEventRecord(m_stop, stream));
    MINIMOD_GPU_CHECK(gpuEventSynchronize(m_stop));
    float ms = 0.0f;
    MINIMOD_GPU_CHECK(gpuEventElapsedTime(&ms, m_start, m_stop));
    return static_cast<double>(ms);
  }

private:
  gpuEvent_t m_start = nullptr;
  gpuEvent_t m_stop = nullptr;
};

/// A non-blocking stream, destroyed with its owner.
class ProbeStream {
public:
  ProbeStream() {
    MINIMOD_GPU_CHECK_WHAT(gpuStreamCreateWithFlags(&m_stream, gpuStreamNonBlocking),
                           "memory floor stream");
  }
  ~ProbeStream() {
    if (m_stream) {
      (void)gpuStreamSynchronize(m_stream);
      (void)gpuStreamDestroy(m_stream);
    }
  }
  ProbeStream(const ProbeStream&) = delete;
  ProbeStream& operator=(const ProbeStream&) = delete;
  gpuStream_t get() const { return m_stream; }

private:
  gpuStream_t m_stream = nullptr;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / double(1ull << 30));
  return buf;
}

/// kWarmups untimed runs of `enqueue`, then `repeats` timed ones.
std::vector<double> timed_runs(EventPair& events, gpuStream_t stream, int repeats,
                               const std::function<void()>& enqueue) {
  for (int r = 0; r < kWarmups; ++r)
    enqueue();
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(stream));
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r)
    ms.push_back(events.time(stream, enqueue));
  return ms;
}

} // namespace
} // namespace gpu

MemoryFloor measure_gpu_memory_floor(std::int64_t grid_points, int repeats) {
  using namespace gpu;
  if (grid_points <= 0) throw InputError("memory floor: the grid has no points");
  repeats = std::max(repeats, 5);
  int device = 0;
  MINIMOD_GPU_CHECK(gpuGetDevice(&device));
  gpuDeviceProp_t prop{};
  MINIMOD_GPU_CHECK(gpuGetDeviceProperties(&prop, device));

  MemoryFloor f;
  f.device = prop.name;
  f.cache_bytes = static_cast<std::size_t>(std::max(prop.l2CacheSize, 0));
  f.repeats = repeats;
  // Every array at least 4x the L2 (4 bytes a point), a multiple of 4 points for float4 access.
  std::int64_t n = std::max<std::int64_t>(grid_points, static_cast<std::int64_t>(f.cache_bytes));
  n = (n + 3) / 4 * 4;
  f.points = n;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);

  std::size_t free_bytes = 0, total_bytes = 0;
  MINIMOD_GPU_CHECK(gpuMemGetInfo(&free_bytes, &total_bytes));
  if (3 * bytes + kMarginBytes > free_bytes)
    throw RuntimeFailure("memory floor: three arrays of " + std::to_string(n) + " floats need " +
                         gib(3 * bytes) + " on " + f.device + ", " + gib(free_bytes) +
                         " free (plus a " + gib(kMarginBytes) + " margin)");

  DeviceBuffer d_u(bytes, "memory floor u"), d_v(bytes, "memory floor v"),
      d_w(bytes, "memory floor w");
  ProbeStream stream;
  EventPair events;
  const gpuStream_t s = stream.get();

  const dim3 block(kProbeThreads);
  const dim3 fill_grid(static_cast<unsigned>(std::max(prop.multiProcessorCount, 1) * 8));
  fill_kernel<<<fill_grid, block, 0, s>>>(d_u.as<float>(), d_v.as<float>(), d_w.as<float>(), n);
  MINIMOD_GPU_CHECK_LAUNCH("fill_kernel", fill_grid, block, 0);

  // (a) Copy bandwidth: bytes read plus bytes written.
  f.copy_ms_all = timed_runs(events, s, repeats, [&] {
    MINIMOD_GPU_CHECK_WHAT(
        gpuMemcpyAsync(d_w.as<void>(), d_u.as<const void>(), bytes, gpuMemcpyDeviceToDevice, s),
        "memory floor copy of " + gib(bytes));
  });
  f.copy_gbps = 2.0 * static_cast<double>(bytes) / (median_of(f.copy_ms_all) * 1e6);
  // The copy overwrote w with u: give w its own values again.
  fill_kernel<<<fill_grid, block, 0, s>>>(d_u.as<float>(), d_v.as<float>(), d_w.as<float>(), n);
  MINIMOD_GPU_CHECK_LAUNCH("fill_kernel", fill_grid, block, 0);

  // (b) The streaming kernel, in two launch shapes; the faster one's median is the floor.
  const std::int64_t n4 = n / 4;
  const auto* u4 = d_u.as<const float4>();
  auto* v4 = d_v.as<float4>();
  const auto* w4 = d_w.as<const float4>();
  const dim3 flat_grid(static_cast<unsigned>((n4 + kProbeThreads - 1) / kProbeThreads));
  const std::vector<double> flat = timed_runs(events, s, repeats, [&] {
    stream_flat_kernel<<<flat_grid, block, 0, s>>>(u4, v4, w4, n4);
    MINIMOD_GPU_CHECK_LAUNCH("stream_flat_kernel", flat_grid, block, 0);
  });
  // Enough resident blocks to fill every multiprocessor (2048 threads each on sm_70 and later).
  const dim3 strided_grid(
      static_cast<unsigned>(std::max(prop.multiProcessorCount, 1) * (2048 / kProbeThreads)));
  const std::vector<double> strided = timed_runs(events, s, repeats, [&] {
    stream_strided_kernel<<<strided_grid, block, 0, s>>>(u4, v4, w4, n4);
    MINIMOD_GPU_CHECK_LAUNCH("stream_strided_kernel", strided_grid, block, 0);
  });
  const bool flat_wins = median_of(flat) <= median_of(strided);
  f.stream_ms_all = flat_wins ? flat : strided;
  f.stream_ms = median_of(f.stream_ms_all);
  f.stream_gbps = kAcousticBytesPerPoint * static_cast<double>(n) / (f.stream_ms * 1e6);
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(s));
  return f;
}

} // namespace minimod
