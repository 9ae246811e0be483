#pragma once
/// The temporally blocked isotropic family `tb2_25d` (docs/kernels.md, "Temporal blocking"):
/// every pass over memory advances the whole grid, inner points and absorbing layer together, by
/// two time steps. Declared in plain C++ (no GPU runtime headers) so that host code such as the
/// GPU tests can drive it; implemented in tblock_25d.cu.

#include "kernels/backend.hpp"

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

/// Owns the device state of one AcousticProblem and advances it two steps a pass (a final
/// one-step pass when the count is odd). Sources are injected and receivers sampled at every
/// step, the intermediate one included; the free surface is applied at every step.
class TemporalBlock25d {
public:
  /// `z_chunk`: planes a block streams through (the depth range is cut into chunks).
  explicit TemporalBlock25d(TblockTile tile, int z_chunk = 128);
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
  /// The tile's name.
  std::string name() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

} // namespace minimod::gpu
