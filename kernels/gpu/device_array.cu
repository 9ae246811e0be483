/// kernels/device_array.hpp on the GPU: one thread a model point (grid-stride), consecutive
/// threads along x, reading the producer's array through its strides (any memory order).
#include "core/errors.hpp"
#include "kernels/device_array.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace minimod {
namespace {

constexpr int kThreads = 256;
/// Blocks of the grid-stride scan: enough to fill any current GPU, few atomics at the end.
constexpr int kScanBlocks = 1024;

/// The array's geometry as the kernels take it.
struct ArrayView {
  const void* data;
  bool f64;
  std::int64_t nx, ny, n;
  std::int64_t sx, sy, sz;
};

ArrayView view_of(const DeviceArray& a) {
  return ArrayView{
      a.data,      a.f64,       a.shape[0], a.shape[1], static_cast<std::int64_t>(a.points()),
      a.stride[0], a.stride[1], a.stride[2]};
}

/// The float32 value at x-fastest model index `idx` (a float64 rounded to nearest).
__device__ __forceinline__ float value_at(const ArrayView& a, std::int64_t idx) {
  const std::int64_t i = idx % a.nx, j = (idx / a.nx) % a.ny, k = idx / (a.nx * a.ny);
  const std::int64_t off = i * a.sx + j * a.sy + k * a.sz;
  return a.f64 ? static_cast<float>(static_cast<const double*>(a.data)[off])
               : static_cast<const float*>(a.data)[off];
}

/// splitmix64's finaliser: a value and its index mixed into 64 well-spread bits.
__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The scan's result: positive floats compare as their bit patterns, so min and max are integer
/// atomics; the checksum is a sum modulo 2^64, the same in any order.
struct ScanResult {
  unsigned int min_bits, max_bits;
  unsigned long long first_bad, checksum;
};

__global__ void MINIMOD_LAUNCH_BOUNDS(kThreads) scan_kernel(const ArrayView a, ScanResult* out) {
  __shared__ unsigned int s_min[kThreads], s_max[kThreads];
  __shared__ unsigned long long s_bad[kThreads], s_sum[kThreads];
  unsigned int lo = 0x7f800000u, hi = 0;
  unsigned long long bad = ~0ull, sum = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < a.n; idx += stride) {
    const float v = value_at(a, idx);
    const unsigned int bits = __float_as_uint(v);
    if (isfinite(v) && v > 0.0f) {
      lo = min(lo, bits);
      hi = max(hi, bits);
    } else {
      bad = min(bad, static_cast<unsigned long long>(idx));
    }
    sum += mix(static_cast<std::uint64_t>(bits) ^ (static_cast<std::uint64_t>(idx) << 32));
  }
  const int t = threadIdx.x;
  s_min[t] = lo;
  s_max[t] = hi;
  s_bad[t] = bad;
  s_sum[t] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      s_min[t] = min(s_min[t], s_min[t + half]);
      s_max[t] = max(s_max[t], s_max[t + half]);
      s_bad[t] = min(s_bad[t], s_bad[t + half]);
      s_sum[t] += s_sum[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    atomicMin(&out->min_bits, s_min[0]);
    atomicMax(&out->max_bits, s_max[0]);
    atomicMin(&out->first_bad, s_bad[0]);
    atomicAdd(&out->checksum, s_sum[0]);
  }
}

__global__ void MINIMOD_LAUNCH_BOUNDS(kThreads)
    medium_kernel(const ArrayView a, double dt, const FieldLayout l, float* __restrict__ medium) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < a.n; idx += stride) {
    const int i = static_cast<int>(idx % a.nx), j = static_cast<int>((idx / a.nx) % a.ny),
              k = static_cast<int>(idx / (a.nx * a.ny));
    const double c = static_cast<double>(value_at(a, idx)) * dt;
    medium[l.index(i, j, k)] = static_cast<float>(c * c);
  }
}

__global__ void MINIMOD_LAUNCH_BOUNDS(kThreads)
    gather_kernel(const ArrayView a, const std::int64_t* __restrict__ points, std::int64_t n,
                  float* __restrict__ values) {
  const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < n) values[p] = value_at(a, points[p]);
}

/// Blocks of a grid-stride launch over `n` points, at most kScanBlocks * 64.
unsigned int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(b, kScanBlocks * 64)));
}

/// Makes the array's device current on this thread, and the one before current again after.
class OnDevice {
public:
  explicit OnDevice(int device) {
    MINIMOD_GPU_CHECK(gpuGetDevice(&m_previous));
    if (device != m_previous)
      MINIMOD_GPU_CHECK_WHAT(gpuSetDevice(device),
                             "the GPU array's device " + std::to_string(device));
  }
  ~OnDevice() { (void)gpuSetDevice(m_previous); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

private:
  int m_previous = 0;
};

std::string sizes(const DeviceArray& a) {
  return a.owner + ", " + std::to_string(a.shape[0]) + " x " + std::to_string(a.shape[1]) + " x " +
         std::to_string(a.shape[2]) + (a.f64 ? " float64" : " float32");
}

} // namespace

void scan_device_array(DeviceArray& array) {
  const OnDevice on(array.device);
  const ArrayView a = view_of(array);
  gpu::DeviceBuffer result(sizeof(ScanResult), "the GPU array's scan");
  const ScanResult init{0x7f800000u, 0u, ~0ull, 0ull};
  result.upload(&init, sizeof init);
  const dim3 grid(std::min<unsigned int>(blocks_for(a.n), kScanBlocks)), block(kThreads);
  scan_kernel<<<grid, block>>>(a, result.as<ScanResult>());
  MINIMOD_GPU_CHECK_LAUNCH("scan_kernel", grid, block, 0);
  ScanResult r{};
  result.download(&r, sizeof r); // synchronises: a fault in the scan surfaces here
  array.first_bad = r.first_bad == ~0ull ? -1 : static_cast<std::int64_t>(r.first_bad);
  array.checksum = r.checksum;
  const bool any_good = r.max_bits != 0u;
  float lo = 0, hi = 0;
  if (any_good) {
    std::memcpy(&lo, &r.min_bits, sizeof lo);
    std::memcpy(&hi, &r.max_bits, sizeof hi);
  }
  array.vmin = lo;
  array.vmax = hi;
  array.bad_value = array.first_bad >= 0 ? device_array_values(array, {array.first_bad})[0] : 0.0f;
}

void device_array_medium(const DeviceArray& array, double dt, const FieldLayout& layout,
                         float* medium, void* stream) {
  const OnDevice on(array.device);
  const auto s = static_cast<gpuStream_t>(stream);
  MINIMOD_GPU_CHECK_WHAT(
      gpuMemsetAsync(medium, 0, static_cast<std::size_t>(layout.size) * sizeof(float), s),
      "zero the medium (c dt)^2 of " + std::to_string(layout.size) + " floats");
  const ArrayView a = view_of(array);
  const dim3 grid(blocks_for(a.n)), block(kThreads);
  medium_kernel<<<grid, block, 0, s>>>(a, dt, layout, medium);
  MINIMOD_GPU_CHECK_LAUNCH("medium_kernel", grid, block, 0);
}

std::vector<float> device_array_values(const DeviceArray& array,
                                       const std::vector<std::int64_t>& points) {
  std::vector<float> values(points.size());
  if (points.empty()) return values;
  const OnDevice on(array.device);
  const auto n = static_cast<std::int64_t>(points.size());
  gpu::DeviceBuffer where(points.size() * sizeof(std::int64_t),
                          "the points to gather from " + sizes(array));
  gpu::DeviceBuffer got(points.size() * sizeof(float), "the values gathered from " + sizes(array));
  where.upload(points.data(), points.size() * sizeof(std::int64_t));
  const dim3 grid(static_cast<unsigned int>((n + kThreads - 1) / kThreads)), block(kThreads);
  gather_kernel<<<grid, block>>>(view_of(array), where.as<const std::int64_t>(), n,
                                 got.as<float>());
  MINIMOD_GPU_CHECK_LAUNCH("gather_kernel", grid, block, 0);
  got.download(values.data(), values.size() * sizeof(float));
  return values;
}

} // namespace minimod
