#pragma once
/// The host-side parts of the CUDA backend (kernels/gpu/gpu_backend.cu, both equations) and of
/// the device tools beside it: the tap kernels (source injection, receiver sampling), the choice
/// of device, the free-memory and tap-table checks, owning handles for streams, events and pinned
/// memory, and the streams a step runs on (StepStreams). Included by .cu files only.

#include "core/errors.hpp"
#include "core/grid.hpp"
#include "kernels/backend.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace minimod::gpu {

// Internal linkage: each backend's translation unit gets its own copy of the kernels.
namespace {

/// Threads per block of the tap kernels (sources, receivers).
constexpr int kTapThreads = 128;
/// Device memory kept free beyond the problem's own needs (kernels/backend.hpp).
constexpr std::size_t kMemoryMarginBytes = kGpuMemoryMarginBytes;

/// Source injection into u^{n+1} (held in v), one thread per tap. Atomic because taps of
/// different sources may land on the same point.
__global__ void MINIMOD_LAUNCH_BOUNDS(kTapThreads)
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
__global__ void MINIMOD_LAUNCH_BOUNDS(kTapThreads)
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

/// Float16 source injection (core/precision.hpp), one thread per distinct tap point: the point's
/// increments (weight x sample) x scale summed in table order, then u^{n+1} and the step d^{n+1}
/// each take the sum with one rounding to binary16.
__global__ void MINIMOD_LAUNCH_BOUNDS(kTapThreads)
    inject_half_kernel(std::uint16_t* __restrict__ u, std::uint16_t* __restrict__ d,
                       const std::int64_t* __restrict__ point_index,
                       const std::int64_t* __restrict__ point_begin,
                       const float* __restrict__ tap_weight, const int* __restrict__ tap_owner,
                       const float* __restrict__ samples, std::int64_t points, int steps, int n,
                       float scale) {
  const std::int64_t q = static_cast<std::int64_t>(blockIdx.x) * kTapThreads + threadIdx.x;
  if (q >= points) return;
  float sum = 0.0f;
  for (std::int64_t t = point_begin[q]; t < point_begin[q + 1]; ++t) {
    const float amplitude = samples[static_cast<std::int64_t>(tap_owner[t]) * steps + n];
    sum = __fadd_rn(sum, __fmul_rn(__fmul_rn(tap_weight[t], amplitude), scale));
  }
  const std::int64_t at = point_index[q];
  u[at] = __half_as_ushort(__float2half_rn(__half2float(__ushort_as_half(u[at])) + sum));
  d[at] = __half_as_ushort(__float2half_rn(__half2float(__ushort_as_half(d[at])) + sum));
}

/// Receiver sampling of a float16 u^{n+1} (binary16 times the field scale) into trace sample n+1:
/// the taps summed in table order as sample_receivers_kernel does, times 1 / scale.
__global__ void MINIMOD_LAUNCH_BOUNDS(kTapThreads) sample_receivers_half_kernel(
    const std::uint16_t* __restrict__ u, const std::int64_t* __restrict__ tap_begin,
    const std::int64_t* __restrict__ tap_index, const float* __restrict__ tap_weight,
    float* __restrict__ traces, int receivers, int samples_per_trace, int sample, float inv_scale) {
  const int r = static_cast<int>(blockIdx.x) * kTapThreads + static_cast<int>(threadIdx.x);
  if (r >= receivers) return;
  float sum = 0.0f;
  for (std::int64_t t = tap_begin[r]; t < tap_begin[r + 1]; ++t)
    sum += tap_weight[t] * __half2float(__ushort_as_half(u[tap_index[t]]));
  traces[static_cast<std::int64_t>(r) * samples_per_trace + sample] = sum * inv_scale;
}

/// GiB with two decimals.
inline std::string gib_text(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / double(1ull << 30));
  return buf;
}

/// Throws RuntimeFailure unless the current device has `need` bytes free beyond the margin. The
/// message names the problem (`problem`, e.g. "the TTI problem"), what `need` holds and the grid.
inline void require_free_memory(std::size_t need, const std::string& problem,
                                const std::string& holds, const std::string& device,
                                const Grid& grid) {
  std::size_t free_bytes = 0, total_bytes = 0;
  MINIMOD_GPU_CHECK(gpuMemGetInfo(&free_bytes, &total_bytes));
  if (need + kMemoryMarginBytes <= free_bytes) return;
  throw RuntimeFailure(problem + " needs " + gib_text(need + kMemoryMarginBytes) + " GiB on " +
                       device + ", " + gib_text(free_bytes) + " GiB free (" + holds + " " +
                       gib_text(need) + " GiB, plus a " + gib_text(kMemoryMarginBytes) +
                       " GiB margin; " + std::to_string(grid.nx) + "x" + std::to_string(grid.ny) +
                       "x" + std::to_string(grid.nz) + " grid)");
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

/// Throws std::invalid_argument unless the tap tables index a field of `field_size` floats and
/// `samples` holds `steps` samples for every source.
inline void check_taps(const TapTable& sources, const std::vector<float>& samples,
                       const TapTable& receivers, int steps, std::int64_t field_size) {
  check_tap_table(sources, field_size, "source");
  check_tap_table(receivers, field_size, "receiver");
  if (samples.size() != sources.owners() * static_cast<std::size_t>(steps))
    throw std::invalid_argument("source samples: " + std::to_string(samples.size()) +
                                " floats for " + std::to_string(sources.owners()) + " sources of " +
                                std::to_string(steps) + " steps");
}

/// The device a backend of this process uses (select_device), made current on the calling
/// thread, and its name.
struct OpenedDevice {
  int id = 0;
  std::string name;
};
inline OpenedDevice open_device() {
  OpenedDevice d;
  d.id = select_device();
  MINIMOD_GPU_CHECK(gpuSetDevice(d.id));
  gpuDeviceProp_t prop{};
  MINIMOD_GPU_CHECK(gpuGetDeviceProperties(&prop, d.id));
  d.name = prop.name;
  return d;
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

/// A stream of the highest priority the device has: as SMs free up, the blocks of its kernels are
/// dispatched before those of ordinary streams' kernels.
inline StreamHandle make_priority_stream(const char* what) {
  int least = 0, greatest = 0;
  MINIMOD_GPU_CHECK_WHAT(gpuDeviceGetStreamPriorityRange(&least, &greatest), what);
  gpuStream_t s = nullptr;
  MINIMOD_GPU_CHECK_WHAT(gpuStreamCreateWithPriority(&s, gpuStreamNonBlocking, greatest), what);
  return StreamHandle(s);
}

/// Enqueue on_side(side) on stream `side` after what `main` has queued so far, then on_main(main)
/// on `main`, and make `main` wait for `side`'s work (the backends' steps: the layer slabs on a
/// high-priority side stream, the inner region on the main one). When a launch throws, `main`
/// still waits for what `side` has queued, so that a later synchronize covers it, and the
/// exception goes on.
template <class Side, class Main>
void fork_join(gpuStream_t main, gpuStream_t side, gpuEvent_t fork, gpuEvent_t join, Side&& on_side,
               Main&& on_main) {
  MINIMOD_GPU_CHECK(gpuEventRecord(fork, main));
  MINIMOD_GPU_CHECK(gpuStreamWaitEvent(side, fork, 0));
  try {
    on_side(side);
    MINIMOD_GPU_CHECK(gpuEventRecord(join, side));
    on_main(main);
  } catch (...) {
    (void)gpuEventRecord(join, side);
    (void)gpuStreamWaitEvent(main, join, 0);
    throw;
  }
  MINIMOD_GPU_CHECK(gpuStreamWaitEvent(main, join, 0));
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

/// A new device buffer holding a copy of `host`, copied on `stream` (pageable memory: the caller
/// keeps `host` alive until the stream has passed the copy).
template <class T>
DeviceBuffer upload_new(const std::vector<T>& host, const char* what, gpuStream_t stream) {
  DeviceBuffer b(host.size() * sizeof(T), what);
  if (!host.empty())
    MINIMOD_GPU_CHECK_WHAT(
        gpuMemcpyAsync(b.as<void>(), host.data(), b.bytes(), gpuMemcpyHostToDevice, stream),
        std::string("upload of ") + what + ", " + std::to_string(b.bytes()) + " B");
  return b;
}

/// The device side of a run's sources and receivers: tap tables, source samples, traces; and the
/// two tap kernels' launches. The CUDA backend holds one.
class DeviceTaps {
public:
  /// Replace everything with `sources` (and their samples, [sources][steps]) and `receivers`;
  /// the traces (steps + 1 samples a receiver) start at zero. Queued on `stream`.
  /// `half_scale` > 0: a float16 run whose fields carry that scale (inject_half, sample_half).
  void upload(const TapTable& sources, const std::vector<float>& samples, const TapTable& receivers,
              int steps, gpuStream_t stream, float half_scale = 0.0f) {
    *this = DeviceTaps();
    m_steps = steps;
    m_half_scale = half_scale;
    // Each source tap carries its owner so that one thread per tap finds its sample.
    m_source_taps = static_cast<std::int64_t>(sources.index.size());
    if (m_source_taps > 0) {
      std::vector<int> owner(sources.index.size());
      for (std::size_t src = 0; src < sources.owners(); ++src)
        for (std::int64_t t = sources.begin[src]; t < sources.begin[src + 1]; ++t)
          owner[static_cast<std::size_t>(t)] = static_cast<int>(src);
      m_src_index = upload_new(sources.index, "source tap indices", stream);
      m_src_weight = upload_new(sources.weight, "source tap weights", stream);
      m_src_owner = upload_new(owner, "source tap owners", stream);
      m_src_samples = upload_new(samples, "source samples", stream);
      // Float16: the taps grouped by point (points in the order of their first tap, each point's
      // taps in table order), so that each point is rounded once.
      std::vector<std::int64_t> point_index, point_begin;
      std::vector<float> point_weight;
      std::vector<int> point_owner;
      if (half_scale > 0.0f) {
        group_taps_by_point(sources, owner, point_index, point_begin, point_weight, point_owner);
        m_points = static_cast<std::int64_t>(point_index.size());
        m_pt_index = upload_new(point_index, "float16 source points", stream);
        m_pt_begin = upload_new(point_begin, "float16 source point offsets", stream);
        m_pt_weight = upload_new(point_weight, "float16 source point weights", stream);
        m_pt_owner = upload_new(point_owner, "float16 source point owners", stream);
      }
      // `owner` and the groups die here: wait for their copies.
      MINIMOD_GPU_CHECK(gpuStreamSynchronize(stream));
    }
    m_receivers = static_cast<int>(receivers.owners());
    if (m_receivers > 0) {
      m_rcv_begin = upload_new(receivers.begin, "receiver tap offsets", stream);
      m_rcv_index = upload_new(receivers.index, "receiver tap indices", stream);
      m_rcv_weight = upload_new(receivers.weight, "receiver tap weights", stream);
      m_traces = DeviceBuffer(static_cast<std::size_t>(m_receivers) *
                                  (static_cast<std::size_t>(steps) + 1) * sizeof(float),
                              "receiver traces");
      zero_traces(stream);
    }
  }

  /// Add step n's source samples into `field` (u^{n+1}); atomic, since taps of different
  /// sources may share a point.
  void inject(float* field, int n, gpuStream_t stream, const char* what) const {
    if (m_source_taps == 0) return;
    const dim3 grid(static_cast<unsigned>((m_source_taps + kTapThreads - 1) / kTapThreads));
    const dim3 block(kTapThreads);
    inject_sources_kernel<<<grid, block, 0, stream>>>(
        field, m_src_index.as<const std::int64_t>(), m_src_weight.as<const float>(),
        m_src_owner.as<const int>(), m_src_samples.as<const float>(), m_source_taps, m_steps, n);
    MINIMOD_GPU_CHECK_LAUNCH(what, grid, block, 0);
  }

  /// Float16: add step n's source samples into u^{n+1} and the step d^{n+1}, one rounding a point
  /// (inject_half_kernel).
  void inject_half(std::uint16_t* u, std::uint16_t* d, int n, gpuStream_t stream) const {
    if (m_points == 0) return;
    const dim3 grid(static_cast<unsigned>((m_points + kTapThreads - 1) / kTapThreads));
    const dim3 block(kTapThreads);
    inject_half_kernel<<<grid, block, 0, stream>>>(
        u, d, m_pt_index.as<const std::int64_t>(), m_pt_begin.as<const std::int64_t>(),
        m_pt_weight.as<const float>(), m_pt_owner.as<const int>(), m_src_samples.as<const float>(),
        m_points, m_steps, n, m_half_scale);
    MINIMOD_GPU_CHECK_LAUNCH("inject_half_kernel", grid, block, 0);
  }

  /// Float16: sample u^{n+1} (binary16) into trace sample n + 1.
  void sample_half(const std::uint16_t* field, int n, gpuStream_t stream) const {
    if (m_receivers == 0) return;
    const dim3 grid(static_cast<unsigned>((m_receivers + kTapThreads - 1) / kTapThreads));
    const dim3 block(kTapThreads);
    sample_receivers_half_kernel<<<grid, block, 0, stream>>>(
        field, m_rcv_begin.as<const std::int64_t>(), m_rcv_index.as<const std::int64_t>(),
        m_rcv_weight.as<const float>(), m_traces.as<float>(), m_receivers, m_steps + 1, n + 1,
        1.0f / m_half_scale);
    MINIMOD_GPU_CHECK_LAUNCH("sample_receivers_half_kernel", grid, block, 0);
  }

  /// Sample `field` (u^{n+1}) into trace sample n + 1.
  void sample(const float* field, int n, gpuStream_t stream, const char* what) const {
    if (m_receivers == 0) return;
    const dim3 grid(static_cast<unsigned>((m_receivers + kTapThreads - 1) / kTapThreads));
    const dim3 block(kTapThreads);
    sample_receivers_kernel<<<grid, block, 0, stream>>>(
        field, m_rcv_begin.as<const std::int64_t>(), m_rcv_index.as<const std::int64_t>(),
        m_rcv_weight.as<const float>(), m_traces.as<float>(), m_receivers, m_steps + 1, n + 1);
    MINIMOD_GPU_CHECK_LAUNCH(what, grid, block, 0);
  }

  /// Zero the traces (queued on `stream`).
  void zero_traces(gpuStream_t stream) {
    if (!m_traces.empty())
      MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(m_traces.as<void>(), 0, m_traces.bytes(), stream),
                             "reset of the traces");
  }

  /// The traces so far, [receivers][steps + 1] (waits for `stream`).
  void fetch(std::vector<float>& traces, gpuStream_t stream) const {
    traces.assign(static_cast<std::size_t>(m_receivers) * (static_cast<std::size_t>(m_steps) + 1),
                  0.0f);
    if (m_receivers == 0) return;
    MINIMOD_GPU_CHECK(gpuMemcpyAsync(traces.data(), m_traces.as<const void>(), m_traces.bytes(),
                                     gpuMemcpyDeviceToHost, stream));
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(stream));
  }

private:
  /// The source taps grouped by point: point q is index[q], its taps [begin[q], begin[q + 1]) of
  /// weight and owner, points in the order of their first tap, each point's taps in table order.
  static void group_taps_by_point(const TapTable& sources, const std::vector<int>& owner,
                                  std::vector<std::int64_t>& index,
                                  std::vector<std::int64_t>& begin, std::vector<float>& weight,
                                  std::vector<int>& point_owner) {
    std::vector<std::size_t> order(sources.index.size());
    for (std::size_t t = 0; t < order.size(); ++t)
      order[t] = t;
    // Stable: equal points keep table order; then points sorted by their first tap.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return sources.index[a] < sources.index[b];
    });
    std::vector<std::pair<std::size_t, std::size_t>> runs; // (first tap, start in order)
    for (std::size_t r = 0; r < order.size(); ++r)
      if (r == 0 || sources.index[order[r]] != sources.index[order[r - 1]])
        runs.emplace_back(order[r], r);
    std::sort(runs.begin(), runs.end());
    begin.push_back(0);
    for (const auto& run : runs) {
      const std::int64_t at = sources.index[run.first];
      index.push_back(at);
      for (std::size_t r = run.second; r < order.size() && sources.index[order[r]] == at; ++r) {
        weight.push_back(sources.weight[order[r]]);
        point_owner.push_back(owner[order[r]]);
      }
      begin.push_back(static_cast<std::int64_t>(weight.size()));
    }
  }

  int m_steps = 0;
  float m_half_scale = 0.0f;
  std::int64_t m_source_taps = 0;
  DeviceBuffer m_src_index, m_src_weight, m_src_owner, m_src_samples;
  std::int64_t m_points = 0;
  DeviceBuffer m_pt_index, m_pt_begin, m_pt_weight, m_pt_owner;
  int m_receivers = 0;
  DeviceBuffer m_rcv_begin, m_rcv_index, m_rcv_weight, m_traces;
};

/// Throws RuntimeFailure unless every non-empty region gets a CUDA kernel of `physics` that can
/// update it, and layer regions have an eta field.
inline void check_region_kernels(const std::array<Region, kRegionCount>& regions,
                                 const FieldLayout& layout, bool have_eta,
                                 const std::array<const StencilKernel*, kRegionCount>& kernels,
                                 Physics physics, bool cpml = false,
                                 Precision precision = Precision::Float32) {
  for (int r = 0; r < kRegionCount; ++r) {
    const Region& region = regions[r];
    if (region.box.empty()) continue;
    const StencilKernel* k = kernels[r];
    if (k == nullptr || k->backend() != kGpuBackend || k->physics() != physics)
      throw RuntimeFailure(std::string("no ") + backend_name(kGpuBackend) + " " +
                           physics_name(physics) + " kernel chosen for region " +
                           region_name(region.id) +
                           (k ? " (got " + k->name() + " for " + backend_name(k->backend()) + "/" +
                                    physics_name(k->physics()) + ")"
                              : std::string()));
    if (!k->handles_precision(precision))
      throw InputError("precision: " + std::string(precision_name(precision)) + ": kernel " +
                       k->name() + " (region " + region_name(region.id) +
                       ") has no float16 form; allowed: st_reg_shft_25d and gmem_3d_f4 (and cpu "
                       "on the CPU backend), or precision float32");
    const std::string why = k->can_run(region, layout);
    if (!why.empty())
      throw RuntimeFailure("kernel " + k->name() + " cannot update region " +
                           region_name(region.id) + ": " + why);
    if (region.kind() == RegionKind::Layer && cpml && !k->handles_cpml())
      throw RuntimeFailure("kernel " + k->name() + " cannot update region " +
                           region_name(region.id) +
                           ": it has no C-PML layer update (boundary.type: cpml; the layer "
                           "kernels gmem_3d and gmem_3d_f4 have one)");
    if (region.kind() == RegionKind::Layer && !cpml && !have_eta)
      throw RuntimeFailure(std::string("region ") + region_name(region.id) +
                           " is an absorbing layer but the problem has no eta field");
  }
}

/// Backend::time_steps for a backend that queues its steps on `stream`: `count` steps from
/// `first_step`, indices modulo `steps` (`step(n)` advances step n), timed with two events around
/// them; waits for them.
template <class StepFn>
double time_steps_on(gpuStream_t stream, gpuEvent_t start, gpuEvent_t stop, int first_step,
                     int count, int steps, StepFn&& step) {
  if (count < 0 || first_step < 0)
    throw std::invalid_argument("time_steps: negative first step or count");
  if (count > 0 && steps <= 0) throw std::invalid_argument("time_steps: the problem has no steps");
  MINIMOD_GPU_CHECK(gpuEventRecord(start, stream));
  for (int n = 0; n < count; ++n)
    step(static_cast<int>((static_cast<long long>(first_step) + n) % steps));
  MINIMOD_GPU_CHECK(gpuEventRecord(stop, stream));
  MINIMOD_GPU_CHECK(gpuEventSynchronize(stop));
  float ms = 0.0f;
  MINIMOD_GPU_CHECK(gpuEventElapsedTime(&ms, start, stop));
  return static_cast<double>(ms);
}

/// What the CUDA backend steps with: the device it opened (made current on construction), a
/// main stream (every step's kernels in order, then the taps), a stream of the highest priority
/// for the layer slabs with the events that fork it off the main stream and join it back, and two
/// timing events. `owner` starts the handles' names in errors ("TTI ", or "" for the acoustic
/// equation).
class StepStreams {
public:
  explicit StepStreams(const std::string& owner)
      : m_device(open_device()), m_main(make_stream((owner + "compute stream").c_str())),
        m_layers(make_priority_stream((owner + "layer stream").c_str())),
        m_fork(make_event((owner + "layer fork event").c_str())),
        m_join(make_event((owner + "layer join event").c_str())),
        m_start(make_timing_event((owner + "time_steps start event").c_str())),
        m_stop(make_timing_event((owner + "time_steps stop event").c_str())) {}

  int device() const { return m_device.id; }
  const std::string& device_name() const { return m_device.name; }
  gpuStream_t main() const { return m_main.get(); }

  /// Wait for what both streams have queued, errors ignored: for the owner's destructor, before
  /// its device memory goes (the errors were or will be reported where they happened).
  void drain() const noexcept {
    if (m_layers) (void)gpuStreamSynchronize(m_layers.get());
    if (m_main) (void)gpuStreamSynchronize(m_main.get());
  }

  /// One step's region launches (fork_join): on_layers(layer stream) after what the main stream
  /// has queued, then on_main(main stream), the main stream then waiting for the layers.
  template <class Layers, class Main> void fork_join(Layers&& on_layers, Main&& on_main) const {
    gpu::fork_join(m_main.get(), m_layers.get(), m_fork.get(), m_join.get(), on_layers, on_main);
  }

  /// Backend::time_steps on the main stream (time_steps_on).
  template <class StepFn>
  double time_steps(int first_step, int count, int steps, StepFn&& step) const {
    return time_steps_on(m_main.get(), m_start.get(), m_stop.get(), first_step, count, steps, step);
  }

private:
  OpenedDevice m_device;
  StreamHandle m_main;
  StreamHandle m_layers;
  EventHandle m_fork, m_join;
  EventHandle m_start, m_stop;
};

} // namespace
} // namespace minimod::gpu
