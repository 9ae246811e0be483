#pragma once
/// The 2.5D streaming families (Sai et al. 2022, sections 5.4-5.6 and 6.6): a 2D thread block per
/// Dx x Dy tile of xy points streams along z, so that each u value is read from device memory once
/// per block instead of once per stencil tap. Five families, each for the inner and the layer
/// update, tile in the name (`st_reg_fixed_25d+db_32x16`):
///
/// | family                | z neighbours                        | shared planes | barriers |
/// | --------------------- | ----------------------------------- | ------------- | -------- |
/// | `st_smem_25d`         | 2R+1 shared planes, a ring          | 9             | 2 a step |
/// | `st_reg_shft_25d`     | 2R+1 registers, shifted each step   | 1             | 2 a step |
/// | `st_reg_fixed_25d`    | 2R+1 registers, names rotated       | 1             | 2 a step |
/// | `st_reg_shft_25d+db`  | as st_reg_shft_25d, one plane ahead | 2             | 1 a step |
/// | `st_reg_fixed_25d+db` | as st_reg_fixed_25d, one plane ahead| 2             | 1 a step |
///
/// A block streams through one chunk of the region's z range (grid z = chunks), so that thin
/// slabs (left/right: 27 x 946 points a plane) still give the GPU enough blocks; each chunk
/// re-reads 2R planes of u. The chunk length is chosen per launch (default_z_chunk).

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/gpu_kernel.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <string>

namespace minimod::gpu {

/// The five 2.5D streaming variants.
enum class Stream25d : int {
  SmemPlanes = 0, ///< st_smem_25d: 2R+1 planes in shared memory
  RegShift = 1,   ///< st_reg_shft_25d: one shared plane, z column in shifted registers
  RegFixed = 2,   ///< st_reg_fixed_25d: one shared plane, z column in a register ring
  RegShiftDb = 3, ///< st_reg_shft_25d+db: two shared planes, next plane loaded ahead
  RegFixedDb = 4  ///< st_reg_fixed_25d+db: two shared planes, next plane loaded ahead
};

/// Registered family name of a variant (`st_reg_fixed_25d+db`).
const char* stream_25d_family(Stream25d variant);

/// What every 2.5D streaming kernel shares: both region kinds, the launch-grid checks and the
/// choice of the z chunk. Public so that tuning tools can launch with a chosen chunk.
class Streaming25dKernel : public GpuKernel {
public:
  std::string can_run(const Region& region, const FieldLayout& layout) const override;
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;

  /// Which of the five families.
  virtual Stream25d variant() const = 0;
  /// Tile extent along x (threads of a block).
  virtual int tile_x() const = 0;
  /// Tile extent along y.
  virtual int tile_y() const = 0;
  /// Planes a block streams through for `box` on the current device: chunks of at most
  /// max_z_chunk(), more of them where the launch would otherwise have fewer than kTargetWaves
  /// full-occupancy waves of threads, none shorter than kMinZChunk (unless the box is).
  int default_z_chunk(const Box& box) const;
  /// Enqueue one update of `region`, each block streaming through `z_chunk` planes (>= 1).
  virtual void launch_chunked(const IsoFields& f, const FieldLayout& layout,
                              const StencilCoefs& coefs, const Region& region, int z_chunk,
                              void* stream) const = 0;

  /// Longest z chunk default_z_chunk chooses for a variant (measured on the seeds' problem).
  static int max_z_chunk(Stream25d variant);
  /// Threads per multiprocessor of a full wave (the sm_70..sm_90 limit), for default_z_chunk.
  static constexpr int kThreadsPerSm = 2048;
  /// Waves of threads that default_z_chunk aims for in thin slabs (blocks of one wave finish
  /// together, so more waves shorten the tail of a launch).
  static constexpr int kTargetWaves = 8;
  /// Shortest z chunk default_z_chunk chooses (each chunk re-reads 2R planes).
  static constexpr int kMinZChunk = 8;

protected:
  using GpuKernel::GpuKernel;
};

/// One registered 2.5D streaming kernel: `<family>_<Dx>x<Dy>`.
/// \tparam Variant which of the five families
/// \tparam Dx tile extent along x (threads)
/// \tparam Dy tile extent along y (threads)
template <Stream25d Variant, int Dx, int Dy>
class Streaming25dTileKernel final : public Streaming25dKernel {
public:
  static_assert(Dx > 0 && Dy > 0, "tile extents must be positive");
  static_assert(Dx * Dy <= 1024, "a thread block holds at most 1024 threads");
  static_assert(Dx * Dy % kGpuWarpSize == 0, "whole warps (wavefronts) per block");

  Streaming25dTileKernel();
  std::string description() const override;
  Stream25d variant() const override { return Variant; }
  int tile_x() const override { return Dx; }
  int tile_y() const override { return Dy; }
  void launch_chunked(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                      const Region& region, int z_chunk, void* stream) const override;
  /// st_reg_shft_25d has a float16 form: its own tiles for the inner region, the float16 point
  /// update (kernels/gpu/half_kernels.cuh) for the layer's.
  bool handles_precision(Precision p) const override {
    return p == Precision::Float32 || Variant == Stream25d::RegShift;
  }
  void launch16(const IsoFields16& f, const FieldLayout& layout, const StencilCoefs& coefs,
                const Region& region, void* stream) const override;

private:
  std::string m_inner_launch_name; ///< name in launch errors, inner instantiation
  std::string m_layer_launch_name; ///< name in launch errors, layer instantiation
};

/// The fused acoustic C-PML update (cpml_gpu.cuh) of a box of the z slabs that meets no x or y
/// slab: st_reg_shft_25d's inner update with the z terms stretched (st25d::CpmlZColumn), each
/// block streaming through the whole box along z. f.cpml: a host pointer to a fused C-PML's view.
void launch_cpml_z_slab(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                        const Box& box, gpuStream_t stream);

/// Add every 2.5D streaming kernel to `registry`, the measured best tile of each family as its
/// default.
void register_streaming_25d_kernels(KernelRegistry& registry);

// The registered tiles, instantiated in streaming_25d_<variant>.cu.
extern template class Streaming25dTileKernel<Stream25d::SmemPlanes, 32, 16>;
extern template class Streaming25dTileKernel<Stream25d::SmemPlanes, 32, 8>;
extern template class Streaming25dTileKernel<Stream25d::SmemPlanes, 64, 8>;
extern template class Streaming25dTileKernel<Stream25d::SmemPlanes, 16, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegShift, 32, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegShift, 32, 32>;
extern template class Streaming25dTileKernel<Stream25d::RegShift, 32, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegShift, 64, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegShift, 16, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegFixed, 32, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegFixed, 32, 32>;
extern template class Streaming25dTileKernel<Stream25d::RegFixed, 32, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegFixed, 64, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegFixed, 16, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegShiftDb, 32, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegShiftDb, 32, 32>;
extern template class Streaming25dTileKernel<Stream25d::RegShiftDb, 32, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegShiftDb, 64, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegShiftDb, 16, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegFixedDb, 32, 16>;
extern template class Streaming25dTileKernel<Stream25d::RegFixedDb, 32, 32>;
extern template class Streaming25dTileKernel<Stream25d::RegFixedDb, 32, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegFixedDb, 64, 8>;
extern template class Streaming25dTileKernel<Stream25d::RegFixedDb, 16, 16>;

} // namespace minimod::gpu
