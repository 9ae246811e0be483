/// The semi-stencil family's shared host code (chunking, argument checks, registration) and the
/// semi_25d variant's instantiations. The other variants instantiate in semi_b.cu, semi_b_a.cu
/// and semi_2z.cu, so that the four compile in parallel.

#include "kernels/gpu/launch_limits.hpp"
#include "kernels/gpu/semi_25d.cuh"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

namespace minimod::gpu {

namespace {

/// Threads a launch should offer so that every SM of a large GPU gets several waves of blocks
/// (132 SMs x 2048 threads x 4).
constexpr long long kTargetThreads = 132LL * 2048 * 4;

/// Shortest z chunk: each chunk re-reads 8 planes of its own column (4 above, 4 below).
constexpr int kMinChunk = 32;

} // namespace

int semi_z_chunk(long long tiles, int nz, int threads, int preferred) {
  if (nz <= 0 || tiles <= 0) return std::max(nz, 1);
  const long long for_occupancy =
      std::min(ceil_div(kTargetThreads, tiles * threads), ceil_div(nz, kMinChunk));
  const long long for_locality = preferred > 0 ? ceil_div(nz, preferred) : 1;
  const long long chunks =
      std::clamp<long long>(std::max(for_occupancy, for_locality), 1, kMaxGridYZ);
  return static_cast<int>(ceil_div(nz, chunks));
}

std::string semi_can_run(const Region& region, const FieldLayout& layout, int dx, int dy,
                         int preferred) {
  // In-plane offsets are 32-bit (they sit in registers for the whole stream).
  if (layout.plane > std::numeric_limits<int>::max())
    return "a padded xy plane of " + std::to_string(layout.plane) +
           " floats exceeds the 32-bit in-plane offsets of the semi-stencil kernels";
  const Box& b = region.box;
  if (b.empty()) return {};
  const long long gx = ceil_div(b.nx(), dx), gy = ceil_div(b.ny(), dy);
  const long long gz = ceil_div(b.nz(), semi_z_chunk(gx * gy, b.nz(), dx * dy, preferred));
  if (auto limit = launch_grid_limit(gx, gy, gz); !limit.empty()) return limit;
  return {};
}

bool semi_prepare(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                  const Region& region, int z_chunk, int preferred, int dx, int dy, SemiArgs& args,
                  dim3& grid) {
  const Box& b = region.box;
  if (b.empty()) return false;
  if (region.kind() == RegionKind::Layer && (f.phi == nullptr || f.eta == nullptr))
    throw std::invalid_argument("semi-stencil kernel: a layer region needs the phi and eta fields");
  args.u = f.u;
  args.v = f.v;
  args.vp2dt2 = f.vp2dt2;
  args.phi = f.phi;
  args.eta = f.eta;
  args.layout = layout;
  args.coefs = coefs;
  args.box = b;
  const long long gx = ceil_div(b.nx(), dx), gy = ceil_div(b.ny(), dy);
  args.z_chunk =
      z_chunk > 0 ? std::min(z_chunk, b.nz()) : semi_z_chunk(gx * gy, b.nz(), dx * dy, preferred);
  grid = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
              static_cast<unsigned>(ceil_div(b.nz(), args.z_chunk)));
  return true;
}

template class SemiKernel<SemiVariant::Plain, 32, 16>;
template class SemiKernel<SemiVariant::Plain, 32, 32>;
template class SemiKernel<SemiVariant::Plain, 64, 8>;

void register_semi_25d_kernels(KernelRegistry& registry) {
  // Family defaults: the tile measured fastest on the seeds' problem (H100).
  registry.add(std::make_unique<SemiKernel<SemiVariant::Plain, 32, 16>>(), true);
  registry.add(std::make_unique<SemiKernel<SemiVariant::Plain, 32, 32>>());
  registry.add(std::make_unique<SemiKernel<SemiVariant::Plain, 64, 8>>());
  registry.add(std::make_unique<SemiKernel<SemiVariant::Buffered, 32, 16>>(), true);
  registry.add(std::make_unique<SemiKernel<SemiVariant::Buffered, 32, 32>>());
  registry.add(std::make_unique<SemiKernel<SemiVariant::Buffered, 64, 8>>());
#if MINIMOD_GPU_CP_ASYNC
  registry.add(std::make_unique<SemiKernel<SemiVariant::Async, 32, 16>>(), true);
  registry.add(std::make_unique<SemiKernel<SemiVariant::Async, 32, 32>>());
  registry.add(std::make_unique<SemiKernel<SemiVariant::Async, 64, 8>>());
#endif
  registry.add(std::make_unique<SemiKernel<SemiVariant::Fold2z, 32, 16>>(), true);
  registry.add(std::make_unique<SemiKernel<SemiVariant::Fold2z, 32, 32>>());
  registry.add(std::make_unique<SemiKernel<SemiVariant::Fold2z, 64, 8>>());
}

} // namespace minimod::gpu
