/// The shared part of the 2.5D streaming families: launch-grid checks, the z-chunk choice and
/// registration. The kernels and their instantiations are in streaming_25d_<variant>.cu.

#include "kernels/gpu/launch_limits.hpp"
#include "kernels/gpu/streaming_25d.cuh"

#include "kernels/gpu/gpu_check.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

namespace minimod::gpu {

namespace {

/// Multiprocessors of the current device (queried once per device).
int multiprocessor_count() {
  int device = 0;
  MINIMOD_GPU_CHECK(gpuGetDevice(&device));
  static std::mutex mutex;
  static std::map<int, int> counts;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto it = counts.find(device);
  if (it != counts.end()) return it->second;
  gpuDeviceProp_t prop;
  MINIMOD_GPU_CHECK(gpuGetDeviceProperties(&prop, device));
  counts[device] = prop.multiProcessorCount;
  return prop.multiProcessorCount;
}

/// Registers one tile; `family_default` marks the tile the bare family name selects.
template <Stream25d Variant, int Dx, int Dy>
void add_tile(KernelRegistry& registry, bool family_default = false) {
  registry.add(std::make_unique<Streaming25dTileKernel<Variant, Dx, Dy>>(), family_default);
}

} // namespace

const char* stream_25d_family(Stream25d variant) {
  switch (variant) {
  case Stream25d::SmemPlanes:
    return "st_smem_25d";
  case Stream25d::RegShift:
    return "st_reg_shft_25d";
  case Stream25d::RegFixed:
    return "st_reg_fixed_25d";
  case Stream25d::RegShiftDb:
    return "st_reg_shft_25d+db";
  case Stream25d::RegFixedDb:
    return "st_reg_fixed_25d+db";
  }
  return "st_unknown_25d";
}

std::string Streaming25dKernel::can_run(const Region& region, const FieldLayout& layout) const {
  // The common checks: the kind is handled and the box lies inside the field.
  std::string why = StencilKernel::can_run(region, layout);
  if (!why.empty()) return why;
  const Box& b = region.box;
  if (b.empty()) return {};
  const long long gx = ceil_div(b.nx(), tile_x()), gy = ceil_div(b.ny(), tile_y());
  if (auto limit = launch_grid_limit(gx, gy); !limit.empty()) return limit;
  // Offsets inside a tile's rows are ints (pitch * (Dy + 2R) floats).
  if (static_cast<long long>(layout.pitch) * (tile_y() + 2 * kHalo) >
      std::numeric_limits<int>::max())
    return "rows of " + std::to_string(layout.pitch) + " floats are too long for " + name();
  return {};
}

int Streaming25dKernel::max_z_chunk(Stream25d variant) {
  // Swept from 7 to 946 planes (H100, 1000^3, inner region): st_smem_25d, which refills 2R
  // shared planes at each chunk start, is fastest near 80 planes (79: 5.43 ms, 946: 5.99 for
  // 32x8); the register families near 32 (st_reg_shft_25d_32x16: 30: 5.32 ms, 316: 6.12).
  return variant == Stream25d::SmemPlanes ? 80 : 32;
}

int Streaming25dKernel::default_z_chunk(const Box& b) const {
  const long long threads = static_cast<long long>(tile_x()) * tile_y();
  const long long tiles = ceil_div(b.nx(), tile_x()) * ceil_div(b.ny(), tile_y());
  const long long wanted =
      static_cast<long long>(kTargetWaves) * kThreadsPerSm * multiprocessor_count();
  const long long for_waves = ceil_div(wanted, tiles * threads);
  const long long for_length = ceil_div(b.nz(), max_z_chunk(variant()));
  const long long most = std::max(1LL, static_cast<long long>(b.nz()) / kMinZChunk);
  const long long chunks = std::clamp(std::max(for_waves, for_length), 1LL, most);
  const long long chunk = std::max(ceil_div(b.nz(), chunks), ceil_div(b.nz(), kMaxGridYZ));
  return static_cast<int>(chunk);
}

void Streaming25dKernel::launch(const IsoFields& f, const FieldLayout& layout,
                                const StencilCoefs& coefs, const Region& region,
                                void* stream) const {
  if (region.box.empty()) return;
  launch_chunked(f, layout, coefs, region, default_z_chunk(region.box), stream);
}

void register_streaming_25d_kernels(KernelRegistry& registry) {
  // Family defaults (`true`): the tile with the fastest whole step (inner + six layer slabs) on
  // the seeds' problem, H200: st_smem_25d_32x8 6.86 ms, st_reg_shft_25d_32x16 6.29,
  // st_reg_fixed_25d_32x8 6.65, st_reg_shft_25d+db_32x8 6.71, st_reg_fixed_25d+db_32x16 6.60
  // (gmem_3d_32x4x4: 9.65).
  add_tile<Stream25d::SmemPlanes, 32, 16>(registry);
  add_tile<Stream25d::SmemPlanes, 32, 8>(registry, true);
  add_tile<Stream25d::SmemPlanes, 64, 8>(registry);
  add_tile<Stream25d::SmemPlanes, 16, 16>(registry);
  add_tile<Stream25d::RegShift, 32, 16>(registry, true);
  add_tile<Stream25d::RegShift, 32, 32>(registry);
  add_tile<Stream25d::RegShift, 32, 8>(registry);
  add_tile<Stream25d::RegShift, 64, 8>(registry);
  add_tile<Stream25d::RegShift, 16, 16>(registry);
  add_tile<Stream25d::RegFixed, 32, 16>(registry);
  add_tile<Stream25d::RegFixed, 32, 32>(registry);
  add_tile<Stream25d::RegFixed, 32, 8>(registry, true);
  add_tile<Stream25d::RegFixed, 64, 8>(registry);
  add_tile<Stream25d::RegFixed, 16, 16>(registry);
  add_tile<Stream25d::RegShiftDb, 32, 16>(registry);
  add_tile<Stream25d::RegShiftDb, 32, 32>(registry);
  add_tile<Stream25d::RegShiftDb, 32, 8>(registry, true);
  add_tile<Stream25d::RegShiftDb, 64, 8>(registry);
  add_tile<Stream25d::RegShiftDb, 16, 16>(registry);
  add_tile<Stream25d::RegFixedDb, 32, 16>(registry, true);
  add_tile<Stream25d::RegFixedDb, 32, 32>(registry);
  add_tile<Stream25d::RegFixedDb, 32, 8>(registry);
  add_tile<Stream25d::RegFixedDb, 64, 8>(registry);
  add_tile<Stream25d::RegFixedDb, 16, 16>(registry);
}

} // namespace minimod::gpu
