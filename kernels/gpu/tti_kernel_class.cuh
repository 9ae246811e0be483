#pragma once
/// The TTI kernels' class and launcher (host code; tti_kernels.cuh has the device code), shared
/// by the files that register them: tti_kernels.cu, tti_kernels_tma.cu for semi+b+tma and
/// tti_kernels_semib.cu for semi+b. Those two are compiled on their own because other kernels in
/// the same file make the compiler allocate semi+b's registers differently: beside semi+b+tma,
/// semi+b_32x8 spills 96 bytes instead of none, and beside the other families' layer forms without
/// phi, 80-220 bytes in every form, inner included (ptxas 13.0; a like spill makes semi+b_32x8
/// take 21.4 ms a step instead of 16.9 at 900^3).

#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_kernel.hpp"
#include "kernels/gpu/launch_limits.hpp"
#include "kernels/gpu/tensor_map.hpp"
#include "kernels/gpu/tti_cpml_gpu.cuh"
#include "kernels/gpu/tti_kernels.cuh"
#include "kernels/kernel.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace minimod::gpu {

/// Planes a streaming block walks along z: short chunks give many blocks (the launch fills the
/// GPU several times over) and keep the blocks that share halo rows close in time, at the price
/// of 2R planes loaded again per chunk; a box not much deeper than a chunk is one chunk.
constexpr int kTtiChunk = 64;
inline int tti_z_chunk(const Box& b) {
  return b.nz() <= kTtiChunk + kTtiChunk / 2 ? std::max(b.nz(), 1) : kTtiChunk;
}

/// A TTI kernel of method M with a Dx x Dy x Dz tile (Dz = 1 for the streaming methods).
template <TtiMethod M, int Dx, int Dy, int Dz> class TtiCudaKernel final : public GpuKernel {
  static_assert(Dx * Dy * Dz <= 1024, "a thread block holds at most 1024 threads");
  static_assert(tti_smem_bytes(M, Dx, Dy, Dz) <= 48 * 1024,
                "static shared memory is limited to 48 KB");
  static_assert(tti_streams(M) == (Dz == 1), "streaming methods have 2D tiles");

public:
  TtiCudaKernel()
      : GpuKernel(
            GpuKernelInfo{tti_family_name(M), Dx, Dy, tti_streams(M) ? 0 : Dz, Physics::Tti}) {}
  std::string description() const override {
    static const char* const what[] = {
        "3D blocks, both fields' 73-point stencils read from global memory",
        "3D blocks, the tiles of p and q with their halos staged in shared memory",
        "2.5D streaming along z, nine planes of p and q in shared memory",
        "2.5D streaming with the semi-stencil: one shared plane, each value read once into the "
        "partial sums of the nine points it feeds (registers)",
        "the semi-stencil streaming, the next plane prefetched into registers",
        "the semi-stencil streaming, the next two planes copied by cp.async into shared memory",
        "the semi-stencil streaming, two planes loaded per barrier pair (2z folding)",
        "the semi-stencil streaming, the next two planes copied into shared memory by the tensor "
        "memory accelerator (sm_90+)"};
    return std::string("TTI: ") + what[static_cast<int>(M)] + ", " + tile() + " threads, " +
           std::to_string(tti_smem_bytes(M, Dx, Dy, Dz) / 1024) + " KB shared (inner and layer)";
  }
  /// The C-PML's layer regions go to the shared slab kernel (tti_cpml_gpu.cuh).
  bool handles_cpml() const override { return true; }

  std::string can_run(const Region& region, const FieldLayout& layout) const override {
    std::string why = StencilKernel::can_run(region, layout);
    if (!why.empty()) return why;
    const Box& b = region.box;
    if (b.empty()) return {};
    if constexpr (M == TtiMethod::SemiBT) {
      // The tensor maps need 16-byte rows (make_field_layout pads rows to 128 bytes).
      if (layout.pitch % 4 != 0)
        return name() +
               " copies boxes with tensor copies, which need a row pitch of a multiple of "
               "4 floats (16 bytes); this layout's is " +
               std::to_string(layout.pitch);
#if MINIMOD_GPU_TENSOR_COPY
      why = tensor_copy_unavailable(
          reinterpret_cast<const void*>(&tti_semi_kernel<M, Dx, Dy, false, false>), name());
      if (!why.empty()) return why;
#endif
    }
    if (tti_streams(M)) {
      // Offsets inside a plane are ints.
      if (layout.plane > std::numeric_limits<int>::max())
        return "planes of " + std::to_string(layout.plane) + " floats are too large for " + name();
      const long long gx = ceil_div(b.nx(), Dx), gy = ceil_div(b.ny(), Dy),
                      gz = ceil_div(b.nz(), tti_z_chunk(b));
      // The layer slabs go on a 1D grid (TtiBoxes), the inner region on a 3D one.
      if (region.kind() == RegionKind::Layer) return launch_grid_limit(gx * gy * gz, 1);
      return launch_grid_limit(gx, gy, gz);
    }
    return tile_grid_limit(b.nx(), b.ny(), b.nz(), Dx, Dy, Dz);
  }

  void launch(const IsoFields&, const FieldLayout&, const StencilCoefs&, const Region&,
              void*) const override {
    throw std::logic_error(name() + " is a TTI kernel: launch it with launch_tti");
  }

  void launch_tti(const TtiFields& f, const FieldLayout& layout, const TtiCoefs& coefs,
                  const Region& region, void* stream) const override {
    launch_tti_regions(f, layout, coefs, &region, 1, stream);
  }

  /// The layer form of the streaming methods covers all the regions with one 1D grid (TtiBoxes;
  /// more launches only past TtiBoxes::kMax boxes or the grid's x limit); otherwise each region
  /// gets a 3D grid of its own.
  void launch_tti_regions(const TtiFields& f, const FieldLayout& layout, const TtiCoefs& coefs,
                          const Region* regions, int count, void* stream) const override {
    int first = 0;
    while (first < count && regions[first].box.empty())
      ++first;
    if (first == count) return;
    const bool layer = regions[first].kind() == RegionKind::Layer;
    for (int r = first; r < count; ++r) {
      if (regions[r].kind() != regions[first].kind())
        throw std::invalid_argument(name() + ": one launch covers regions of one kind; " +
                                    region_name(regions[first].id) + " and " +
                                    region_name(regions[r].id) + " differ");
    }
    const auto s = static_cast<gpuStream_t>(stream);
    if (layer && f.cpml) {
      for (int r = first; r < count; ++r)
        tti_cpml_layer_update_gpu(f, layout, coefs, regions[r].box, s);
      return;
    }
    // phi_p is needed only where the layer drives it (tti_needs_phi; the caller knows).
    if (layer && f.eta == nullptr)
      throw std::invalid_argument(name() + ": a layer region needs the eta field");
    TtiArgs a;
    a.f = f;
    a.layout = layout;
    a.c = coefs;
    if (!tti_streams(M) || !layer) {
      for (int r = first; r < count; ++r) {
        const Box& b = regions[r].box;
        if (b.empty()) continue;
        a.box = b;
        a.z_chunk = tti_streams(M) ? tti_z_chunk(b) : Dz;
        launch(a, layer,
               dim3(static_cast<unsigned>(ceil_div(b.nx(), Dx)),
                    static_cast<unsigned>(ceil_div(b.ny(), Dy)),
                    static_cast<unsigned>(ceil_div(b.nz(), a.z_chunk))),
               dim3(Dx, Dy, tti_streams(M) ? 1 : Dz), s);
      }
    } else {
      TtiBoxes& boxes = a.boxes;
      auto flush = [&] {
        if (boxes.count > 0)
          launch(a, layer, dim3(static_cast<unsigned>(boxes.first[boxes.count])), dim3(Dx, Dy, 1),
                 s);
        boxes = TtiBoxes{};
      };
      for (int r = first; r < count; ++r) {
        const Box& b = regions[r].box;
        if (b.empty()) continue;
        const int chunk = tti_z_chunk(b);
        const long long tiles_x = ceil_div(b.nx(), Dx), tiles_y = ceil_div(b.ny(), Dy);
        const long long blocks = tiles_x * tiles_y * ceil_div(b.nz(), chunk);
        if (blocks > kMaxGridX)
          throw std::invalid_argument(name() + ": region " + region_name(regions[r].id) +
                                      " needs " + std::to_string(blocks) +
                                      " blocks, more than one launch holds (can_run says so)");
        if (boxes.count == TtiBoxes::kMax || boxes.first[boxes.count] + blocks > kMaxGridX) flush();
        const int n = boxes.count++;
        boxes.box[n] = b;
        boxes.z_chunk[n] = chunk;
        boxes.tiles_x[n] = static_cast<int>(tiles_x);
        boxes.tiles_y[n] = static_cast<int>(tiles_y);
        boxes.first[n + 1] = boxes.first[n] + static_cast<int>(blocks);
      }
      flush();
    }
  }

private:
  /// Launch the kernel on `a` with the form of the fields (azimuth or not) and regions (layer or
  /// inner; a layer with phi_p, or without: then no point of it is driven, tti_needs_phi), and
  /// check the launch.
  void launch(const TtiArgs& a, bool layer, dim3 grid, dim3 block, gpuStream_t s) const {
    const bool az = a.f.axis_y != nullptr, phi = a.f.phi_p != nullptr;
    const std::string n = name();
    tti_with_form(az, layer, phi, [&](auto kAz, auto kLayer, auto kPhi) {
      run<decltype(kAz)::value, decltype(kLayer)::value, decltype(kPhi)::value>(a, grid, block, s,
                                                                                n);
    });
    const std::string what =
        n + (layer ? (phi ? "<layer" : "<layer without phi") : "<inner") + (az ? ",azimuth>" : ">");
    MINIMOD_GPU_CHECK_LAUNCH(what.c_str(), grid, block, 0);
  }

  /// Launch the kernel; `name` is this kernel's, for errors.
  template <bool kAz, bool kLayer, bool kPhi = true>
  static void run(const TtiArgs& a, dim3 grid, dim3 block, gpuStream_t s, const std::string& name) {
    (void)name; // used by semi+b+tma only
    if constexpr (M == TtiMethod::Gmem3d) {
      tti_gmem_3d_kernel<Dx, Dy, Dz, kAz, kLayer, kPhi><<<grid, block, 0, s>>>(a);
    } else if constexpr (M == TtiMethod::Smem3d) {
      tti_smem_3d_kernel<Dx, Dy, Dz, kAz, kLayer, kPhi><<<grid, block, 0, s>>>(a);
    } else if constexpr (M == TtiMethod::Smem25d) {
      tti_smem_25d_kernel<Dx, Dy, kAz, kLayer, kPhi><<<grid, block, 0, s>>>(a);
    } else if constexpr (M == TtiMethod::SemiBT) {
#if MINIMOD_GPU_TENSOR_COPY
      // The maps are built for every launch: the time loop swaps the fields' buffers.
      constexpr int W = tti_tma_box_w(Dx), H = tti_tma_box_h(Dy);
      const TtiTensorMaps maps{plane_tile_map(a.f.p, a.layout, W, H, name + ", field p"),
                               plane_tile_map(a.f.q, a.layout, W, H, name + ", field q")};
      tti_semi_kernel<M, Dx, Dy, kAz, kLayer, kPhi><<<grid, block, 0, s>>>(a, maps);
#else
      static_assert(M != TtiMethod::SemiBT, "semi+b+tma needs the tensor copies");
#endif
    } else {
      tti_semi_kernel<M, Dx, Dy, kAz, kLayer, kPhi><<<grid, block, 0, s>>>(a, TtiTensorMaps{});
    }
  }
};

template <TtiMethod M, int Dx, int Dy, int Dz = 1>
void add(KernelRegistry& registry, bool family_default = false) {
  registry.add(std::make_unique<TtiCudaKernel<M, Dx, Dy, Dz>>(), family_default);
}

} // namespace minimod::gpu
