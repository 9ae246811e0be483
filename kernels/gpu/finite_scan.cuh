#pragma once
/// The device side of the NaN/Inf watch (kernels/finite_scan.hpp): one pass over a padded field's
/// grid points reduces the three keys, per block in shared memory and then with one 64-bit atomic
/// per key and block. Portable code only (shared-memory tree, atomicAdd/atomicMax on unsigned long
/// long, no warp shuffles or warp-size assumptions), so that a HIP build compiles it unchanged.
/// Included by .cu files only.

#include "core/field_layout.hpp"
#include "kernels/finite_scan.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace minimod::gpu {
// Internal linkage: each backend's translation unit gets its own copy of the kernel.
namespace {

/// Block of the scan: 32 points of a row by 8 rows.
constexpr int kScanX = 32, kScanY = 8, kScanThreads = kScanX * kScanY;
/// Rows a thread loads before it tests them (independent loads in flight).
constexpr int kScanUnroll = 4;
/// Most blocks a scan launches; each thread loops over the rest. About eight waves of resident
/// blocks on a large GPU: enough loads in flight for the memory bandwidth, few atomics.
constexpr int kScanMaxBlocks = 8192;

/// The keys of finite_scan_point over f's grid points, added into out[0] (count), out[1] (first)
/// and out[2] (max key). Threads stride over x within a row (coalesced) and over rows (j, k),
/// kScanUnroll rows at a time; (j, k) advance by addition, with no division in the loop.
/// A scanned value as a float: float fields as they are, binary16 fields (float16 runs) converted
/// exactly (NaN and infinity stay NaN and infinity).
__device__ __forceinline__ float scan_value(float x) {
  return x;
}
__device__ __forceinline__ float scan_value(std::uint16_t h) {
  return __half2float(__ushort_as_half(h));
}

template <class T>
__global__ void MINIMOD_LAUNCH_BOUNDS(kScanThreads)
    finite_scan_kernel(const T* __restrict__ f, const FieldLayout l,
                       unsigned long long* __restrict__ out) {
  const std::int64_t rows = static_cast<std::int64_t>(l.ny) * l.nz;
  const std::int64_t row_stride = static_cast<std::int64_t>(gridDim.y) * kScanY;
  const int dj = static_cast<int>(row_stride % l.ny), dk = static_cast<int>(row_stride / l.ny);
  const int x_stride = static_cast<int>(gridDim.x) * kScanX;
  const int x0 = static_cast<int>(blockIdx.x) * kScanX + static_cast<int>(threadIdx.x);
  std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * kScanY + threadIdx.y;
  int j = static_cast<int>(row % l.ny), k = static_cast<int>(row / l.ny);
  std::uint64_t count = 0, first = 0, max_key = 0;
  while (row < rows) {
    std::int64_t base[kScanUnroll], dense[kScanUnroll];
    bool live[kScanUnroll];
    MINIMOD_UNROLL
    for (int u = 0; u < kScanUnroll; ++u) {
      live[u] = row < rows;
      base[u] = live[u] ? l.index(0, j, k) : 0;
      dense[u] = row * l.nx;
      row += row_stride;
      j += dj;
      k += dk;
      if (j >= l.ny) {
        j -= l.ny;
        ++k;
      }
    }
    for (int i = x0; i < l.nx; i += x_stride) {
      float v[kScanUnroll];
      MINIMOD_UNROLL
      for (int u = 0; u < kScanUnroll; ++u)
        v[u] = live[u] ? scan_value(f[base[u] + i]) : 0.0f;
      MINIMOD_UNROLL
      for (int u = 0; u < kScanUnroll; ++u)
        if (live[u]) finite_scan_point(v[u], dense[u] + i, count, first, max_key);
    }
  }
  __shared__ std::uint64_t s_count[kScanThreads], s_first[kScanThreads], s_max[kScanThreads];
  const int t = static_cast<int>(threadIdx.y) * kScanX + static_cast<int>(threadIdx.x);
  s_count[t] = count;
  s_first[t] = first;
  s_max[t] = max_key;
  __syncthreads();
  for (int half = kScanThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      s_count[t] += s_count[t + half];
      s_first[t] = s_first[t] > s_first[t + half] ? s_first[t] : s_first[t + half];
      s_max[t] = s_max[t] > s_max[t + half] ? s_max[t] : s_max[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    if (s_count[0] != 0) {
      atomicAdd(out, static_cast<unsigned long long>(s_count[0]));
      atomicMax(out + 1, static_cast<unsigned long long>(s_first[0]));
    }
    if (s_max[0] != 0) atomicMax(out + 2, static_cast<unsigned long long>(s_max[0]));
  }
}

/// Scans device fields for NaN and Inf on a stream: a 24-byte device buffer for the keys (kept
/// between scans) and a synchronous copy back.
class DeviceFiniteScan {
public:
  /// Scan `field` (padded, layout `l`) after the work queued on `stream`; waits for the scan.
  /// `what` names the field in errors ("u", "TTI p").
  /// T: float, or std::uint16_t for a binary16 field.
  template <class T>
  FiniteScan scan(const T* field, const FieldLayout& l, gpuStream_t stream,
                  const std::string& what) {
    const std::size_t bytes = 3 * sizeof(unsigned long long);
    if (m_keys.empty()) m_keys = DeviceBuffer(bytes, "NaN/Inf scan keys");
    const std::int64_t rows = static_cast<std::int64_t>(l.ny) * l.nz;
    const std::int64_t points = rows * l.nx;
    if (points == 0) return decode_finite_scan(0, 0, 0, 0);
    const int bx = std::min((l.nx + kScanX - 1) / kScanX, 8);
    const std::int64_t by_rows = (rows + kScanY - 1) / kScanY;
    const std::int64_t by_cap = std::max<std::int64_t>(1, kScanMaxBlocks / bx);
    const dim3 grid(static_cast<unsigned>(bx),
                    static_cast<unsigned>(std::min<std::int64_t>({by_rows, by_cap, 65535})));
    const dim3 block(kScanX, kScanY);
    const std::string sizes = std::to_string(l.nx) + "x" + std::to_string(l.ny) + "x" +
                              std::to_string(l.nz) + " points of " + what;
    MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(m_keys.as<void>(), 0, bytes, stream),
                           "reset of the NaN/Inf scan keys for " + sizes);
    finite_scan_kernel<T><<<grid, block, 0, stream>>>(field, l, m_keys.as<unsigned long long>());
    MINIMOD_GPU_CHECK_LAUNCH(("finite_scan_kernel over " + sizes).c_str(), grid, block, 0);
    unsigned long long keys[3] = {0, 0, 0};
    MINIMOD_GPU_CHECK_WHAT(
        gpuMemcpyAsync(keys, m_keys.as<const void>(), bytes, gpuMemcpyDeviceToHost, stream),
        "copy of the NaN/Inf scan keys of " + sizes + ", " + std::to_string(bytes) + " B");
    MINIMOD_GPU_CHECK_WHAT(gpuStreamSynchronize(stream), "NaN/Inf scan of " + sizes);
    return decode_finite_scan(keys[0], keys[1], keys[2], points);
  }

private:
  DeviceBuffer m_keys;
};

} // namespace
} // namespace minimod::gpu
