#pragma once
/// The temporally blocked isotropic family `tb2_25d` (docs/kernels.md, "Temporal blocking"):
/// every pass over memory advances the whole grid, inner points and absorbing layer together, by
/// two time steps. Declared in plain C++ (no GPU runtime headers) so that host code such as the
/// GPU tests can drive it; implemented in tblock_25d.cu.

#include "kernels/backend.hpp"
#include "kernels/gpu/gpu_kernel.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace minimod::gpu {

/// A tile of the family: threads (output points) of a block along x and y.
struct TblockTile {
  int dx = 32;
  int dy = 16;
};

/// The tiles compiled for the family, default first.
std::vector<TblockTile> tblock_tiles();

/// Registered name of a tile: "tb2_25d_32x16".
std::string tblock_name(const TblockTile& tile);

/// Design options of the pass (bit flags, docs/kernels.md "Temporal blocking"); a variant is a set
/// of them. Every compiled variant runs every tile and computes the same values.
enum TblockOption : unsigned {
  /// Each column's layout index advanced by one plane a plane: no clamp and no 64-bit multiply a
  /// load. The u buffers carry R guard planes after the top ghost planes (zero, never written),
  /// which the reads 2R planes beyond the last chunk's end touch.
  kTblockPlaneStride = 1u,
  /// Source taps scanned only by blocks whose tile and cross hold one (a flag a tile, built when
  /// the problem is set up).
  kTblockSourceTiles = 2u,
  /// Blocks whose tile, cross and planes lie inside the inner region, away from the free surface,
  /// run a path without the grid-edge, layer and free-surface tests (chosen per block).
  kTblockInnerFast = 4u,
  /// Registers: up to 128 a thread (one 512-thread block a SM; 1024-thread tiles stay at 64)
  /// instead of 64 (two 512-thread blocks a SM), the same for the two-step and one-step passes.
  kTblockWideRegisters = 8u,
  /// The second design of the two-step pass: u^n and u^{n+1} kept as rings of whole planes in
  /// shared memory (u^n filled by asynchronous copies one plane ahead), four x points a thread,
  /// step 1 on the tile and its full R-point frame; no register ring and no per-load address.
  /// Tiles start on 128-byte columns of the padded rows; one-step passes run this design too.
  kTblockSmemRing = 16u,
  /// The ring design's copies of u^n issued two planes ahead of their use instead of one (one more
  /// plane of shared memory).
  kTblockRingAhead2 = 32u,
  /// With the ring design: the third design's pass runs the two-step passes of the blocks that are
  /// inside (kTblockInnerFast's test) and hold no source tap, as a second kernel: u^n's z
  /// neighbours in a register queue a thread, a double-buffered shared u^n plane, a shared ring of
  /// u^{n+1} planes, one barrier a plane; the ring design's kernel runs the other blocks.
  kTblockRegQueue = 64u,
};

/// The compiled variants (option sets), the first design (no option) first.
inline constexpr unsigned kTblockVariants[] = {
    0u,
    kTblockPlaneStride,
    kTblockSourceTiles,
    kTblockInnerFast,
    kTblockPlaneStride | kTblockSourceTiles,
    kTblockPlaneStride | kTblockSourceTiles | kTblockInnerFast,
    kTblockWideRegisters,
    kTblockPlaneStride | kTblockSourceTiles | kTblockInnerFast | kTblockWideRegisters,
    kTblockSmemRing | kTblockSourceTiles,
    kTblockSmemRing | kTblockSourceTiles | kTblockInnerFast,
    kTblockSmemRing | kTblockSourceTiles | kTblockInnerFast | kTblockRingAhead2,
    kTblockSmemRing | kTblockSourceTiles | kTblockInnerFast | kTblockRingAhead2 | kTblockRegQueue,
};

/// Name of an option set, its options joined by `sep`: "base" for none,
/// "ring+srctile+inside" for the second design with both block-level options.
inline std::string tblock_variant_name(unsigned options, char sep = '+') {
  if (options == 0) return "base";
  std::string s;
  const char* names[] = {"stride", "srctile", "inside", "regs128", "ring", "ahead2", "regq"};
  for (int b : {4, 0, 1, 2, 3, 5, 6})
    if (options & (1u << b)) {
      if (!s.empty()) s += sep;
      s += names[b];
    }
  return s;
}

/// The variant the registered kernels (`tb2_25d_<tile>`, TblockKernel) run: the third design for
/// the inside blocks, the ring design's for the others (docs/kernels.md, "Temporal blocking").
inline constexpr unsigned kTblockRegistered =
    kTblockSmemRing | kTblockSourceTiles | kTblockInnerFast | kTblockRingAhead2 | kTblockRegQueue;
/// The depth range a block of the registered kernels streams through.
inline constexpr int kTblockRegisteredChunk = 128;

/// The levels of one pass: device pointers in the problem's padded layout. u0 = u^n (ghost planes
/// mirrored under a free surface), um = u^{n-1}; the pass writes u1 = u^{n+1} and, with two steps,
/// u2 = u^{n+2}: four distinct buffers of TblockPass::level_bytes. phi_in (phi^n) is read and
/// phi_out written at layer points only; both null without a layer.
struct TblockLevels {
  const float* u0 = nullptr;
  const float* um = nullptr;
  float* u1 = nullptr;
  float* u2 = nullptr;
  const float* phi_in = nullptr;
  float* phi_out = nullptr;
};

/// What the family's passes read of one AcousticProblem besides the fields, on the device: eta's
/// three profiles, the source taps grouped by plane with their samples, the per-tile source flags.
/// The caller owns the wavefields and vp2dt2 (TemporalBlock25d, the GPU backend's whole-grid
/// mode) and samples the receivers.
class TblockPass {
public:
  /// `z_chunk`: planes a block streams through; `options`: one of kTblockVariants. Throws
  /// std::invalid_argument for a tile or an option set that is not compiled, or a chunk < 2R.
  TblockPass(TblockTile tile, int z_chunk, unsigned options);
  ~TblockPass();
  TblockPass(const TblockPass&) = delete;
  TblockPass& operator=(const TblockPass&) = delete;

  /// Empty when the family can run `p`; else why not.
  static std::string can_run(const AcousticProblem& p, TblockTile tile);
  /// Bytes of a u level of a variant: the padded field, and with kTblockPlaneStride R guard
  /// planes after it (zero, never written) that its reads 2R planes beyond the last chunk touch.
  static std::size_t level_bytes(const FieldLayout& layout, unsigned options);
  /// Dynamic shared memory a block of the variant needs at most (its largest kernel).
  static int shared_bytes(TblockTile tile, unsigned options);

  /// Upload what the passes read of `p` (taps, profiles, flags), queued on `stream` (a
  /// gpuStream_t) and waited for. Throws std::invalid_argument when can_run refuses (a source
  /// tap outside the grid among its reasons).
  void setup(const AcousticProblem& p, void* stream);
  /// Queue one pass of `k` steps (1 or 2) from step n: the update of every point, step n's (and
  /// n + 1's) source samples added after each update, the free surface applied to each level.
  void launch(int n, int k, const TblockLevels& levels, const float* vp2dt2, void* stream) const;
  /// Whether the problem set up has an absorbing layer (then the pass reads and writes phi).
  bool layer() const;
  /// The tile's name, with "+" and the variant's name when it has options.
  std::string name() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

/// A registered kernel of the family: `tb2_25d_<tile>` (kTblockRegistered), a whole-grid kernel
/// (StencilKernel::whole_grid) of the acoustic equation with Minimod's layer. The GPU backend
/// steps it through TblockPass: two steps a pass where the run allows, one step a pass otherwise.
class TblockKernel final : public GpuKernel {
public:
  explicit TblockKernel(TblockTile tile);
  std::string description() const override;
  bool whole_grid() const override { return true; }
  /// The pass forms eta from its three profiles.
  bool reads_eta_array() const override { return false; }
  /// Refuses a device whose blocks cannot have the variant's shared memory.
  std::string can_run(const Region& region, const FieldLayout& layout) const override;
  /// Throws std::logic_error: the family has no region update (whole_grid).
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;
  TblockTile tblock_tile() const { return m_tile; }

private:
  TblockTile m_tile;
};

/// Register `tb2_25d_<tile>` for every compiled tile (32x16 the family's default).
void register_tblock_kernels(KernelRegistry& registry);

/// Owns the device state of one AcousticProblem and advances it two steps a pass (a final
/// one-step pass when the count is odd). Sources are injected and receivers sampled at every
/// step, the intermediate one included; the free surface is applied at every step.
class TemporalBlock25d {
public:
  /// `z_chunk`: planes a block streams through (the depth range is cut into chunks);
  /// `options`: one of kTblockVariants (TblockOption bits).
  explicit TemporalBlock25d(TblockTile tile, int z_chunk = 128, unsigned options = 0);
  ~TemporalBlock25d();
  TemporalBlock25d(const TemporalBlock25d&) = delete;
  TemporalBlock25d& operator=(const TemporalBlock25d&) = delete;

  /// Empty when the family can run `p`; else why not.
  static std::string can_run(const AcousticProblem& p, TblockTile tile);

  /// Allocate and upload `p`; u = v = phi = 0. Throws std::invalid_argument when can_run refuses.
  void setup(const AcousticProblem& p);
  /// Advance `count` steps starting at step `first` (first + count <= the problem's steps):
  /// passes of two steps, and one of one step when count is odd.
  void advance(int first, int count);
  /// Time `count` steps from `first` (as advance, indices modulo the problem's steps), in ms.
  double time_steps(int first, int count);
  /// The current wavefield u^n, dense, x fastest.
  void fetch_wavefield(std::vector<float>& dense);
  /// Receiver traces so far, [receivers][steps + 1].
  void fetch_traces(std::vector<float>& traces);
  /// Zero u, v, phi and the traces.
  void reset();
  /// The tile's name, with "+" and the variant's name when it has options.
  std::string name() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

} // namespace minimod::gpu
