#pragma once
/// The memory floor of a time step: what the device's memory can move, measured in this process
/// (docs/benchmark.md). An isotropic step must read u, v and vp2dt2 and write v, 16 bytes per
/// grid point at least; a plain streaming kernel that does exactly that over as many points as
/// the grid has gives the fastest a stencil kernel could possibly run. Host-only declarations;
/// the GPU probe lives in kernels/gpu/memory_floor.cu, the host probe and the fallback of a
/// build without CUDA in kernels/memory_floor.cpp.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minimod {

/// Bytes one acoustic step must move per grid point: read u, v, vp2dt2; write v.
inline constexpr double kAcousticBytesPerPoint = 16.0;

/// What the probe measured.
struct MemoryFloor {
  std::string device;                ///< device measured (GPU name, or the CPU model)
  std::int64_t points = 0;           ///< points of the streaming kernel (>= the grid's points)
  std::size_t cache_bytes = 0;       ///< last-level cache the size was chosen against (GPU: L2)
  int repeats = 0;                   ///< timed repeats of each measurement (medians are reported)
  double copy_gbps = 0;              ///< device-to-device copy: (bytes read + bytes written) / time
  double stream_gbps = 0;            ///< streaming kernel: 16 B per point / time
  double stream_ms = 0;              ///< median time of one streaming pass over `points`
  std::vector<double> stream_ms_all; ///< every timed pass (ms), in order
  std::vector<double> copy_ms_all;   ///< every timed copy (ms), in order

  /// Implied milliseconds per step for `grid_points` points at stream_gbps: the floor.
  double floor_ms(std::int64_t grid_points) const {
    return stream_gbps > 0
               ? kAcousticBytesPerPoint * static_cast<double>(grid_points) / (stream_gbps * 1e6)
               : 0.0;
  }
};

/// Measure the floor on the CUDA device the backend uses: a device-to-device copy and a streaming
/// kernel (read three float arrays, write one of them: the acoustic step's traffic) over
/// max(grid_points, L2 bytes) points, so that every array is at least 4x the L2 cache; each timed
/// with device events after a warm-up, median of `repeats` (>= 5). Allocates three arrays of
/// that many floats and frees them before returning. Throws RuntimeFailure without a GPU, without
/// CUDA in this build, or when the arrays do not fit in free device memory.
MemoryFloor measure_gpu_memory_floor(std::int64_t grid_points, int repeats = 7);

/// The same measurement on the host (OpenMP, steady_clock), over max(grid_points, 2^23) points:
/// an indication for `bench --backend cpu`, not a tight bound.
MemoryFloor measure_host_memory_floor(std::int64_t grid_points, int repeats = 7);

} // namespace minimod
