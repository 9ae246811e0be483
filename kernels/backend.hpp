#pragma once
/// The interface between the solver and a compute backend (CPU or CUDA), one for both equations.
/// The solver prepares a Problem in host memory: what every equation has (the grid the backend
/// steps, its regions and layout, the time axis, the taps) and the equation's own medium
/// (AcousticProblem here, TtiProblem in kernels/tti_problem.hpp). The backend owns the equation's
/// wavefields and advances them one step at a time with the kernel chosen for each region.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/cpml.hpp"
#include "kernels/finite_scan.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "kernels/stencil_K.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

struct DeviceArray; // io/memory_file.hpp: a velocity model in GPU memory

/// Point taps grouped by owner (a source or a receiver) in compressed-row form: the taps of owner
/// r are [begin[r], begin[r+1]); each tap is a padded-field index and a weight.
struct TapTable {
  std::vector<std::int64_t> begin; ///< size owners + 1
  std::vector<std::int64_t> index; ///< FieldLayout::index of each tap
  std::vector<float> weight;       ///< weight of each tap
  std::size_t owners() const { return begin.empty() ? 0 : begin.size() - 1; }
};

/// Where a problem's grid lies in the run's grid, and which of its faces it shares with another
/// subdomain. A run on one process steps the whole grid: offset zero, no neighbour.
struct Subdomain {
  /// Index in the run's grid of the problem grid's point (0, 0, 0).
  std::array<int, 3> offset{};
  /// Faces shared with another subdomain, in LayerWidths order: x lo, x hi, y lo, y hi, z lo,
  /// z hi. Their kHalo ghost planes hold the neighbours' points, written by a halo exchange.
  std::array<bool, 6> neighbour{};
  /// Whether some face borders another subdomain.
  bool has_neighbour() const {
    for (const bool n : neighbour)
      if (n) return true;
    return false;
  }
};

/// What a problem of either equation holds, in host memory: the grid the backend steps with its
/// regions and layout, the time axis, the free surface and the taps. Each equation adds its medium
/// (AcousticProblem, TtiProblem).
struct Problem {
  virtual ~Problem() = default;
  /// The equation of the medium.
  virtual Physics physics() const = 0;
  /// Bytes of device memory the problem needs (fields, medium, taps, traces).
  virtual std::size_t device_bytes() const = 0;

  /// The grid stepped: the run's grid, or one subdomain of it (`subdomain`).
  Grid grid;
  Subdomain subdomain;
  LayerWidths layer;
  std::array<Region, kRegionCount> regions;
  FieldLayout layout;
  double dt = 0;
  int steps = 0;
  /// Pressure-free top face: after each step the first field is zero at k = 0 and its ghost
  /// planes mirror u(-k) = -u(k) (physics.md section 3).
  bool free_surface = false;
  /// The absorbing layer's formulation: Minimod's (eta, and phi for the acoustic equation) or
  /// the C-PML (kernels/cpml.hpp; `cpml` holds its profile and the medium needs no eta).
  BoundaryType boundary = BoundaryType::Minimod;
  CpmlProfile cpml;
  /// How the backend stores the fields and the medium (core/precision.hpp). Float16: the
  /// wavefield and its step are binary16 values times `field_scale` (a power of two the equation
  /// sets with each shot's taps, half_field_scale of its largest source increment); sources
  /// inject `field_scale` times their samples, traces and snapshots divide by it.
  Precision precision = Precision::Float32;
  float field_scale = 1.0f;
  /// Source taps into the first field; injection after the update of step n adds
  /// weight * source_samples[s * steps + n].
  TapTable sources;
  std::vector<float> source_samples; ///< [sources][steps]
  /// Receiver taps; trace sample n is sum(weight * first field^n).
  TapTable receivers;

protected:
  Problem() = default;
  Problem(const Problem&) = default;
  Problem(Problem&&) = default;
  Problem& operator=(const Problem&) = default;
  Problem& operator=(Problem&&) = default;
};

/// Minimod's damping as its three 1D profiles in double, one an axis of the problem's grid, at
/// index i + 1 for i = -1 .. n (the grid points and one ghost beyond each face): eta(i, j, k) is
/// float((x[i + 1] + y[j + 1]) + z[k + 1]), the value build_eta stores (solver/problem.hpp). The
/// CPU kernel forms eta from them instead of reading the padded array (docs/kernels.md).
struct EtaProfiles {
  std::vector<double> x, y, z;
  bool empty() const { return x.empty() && y.empty() && z.empty(); }
};

/// An isotropic acoustic problem: the medium (c dt)^2 and the layer's damping.
struct AcousticProblem final : Problem {
  Physics physics() const override { return Physics::Acoustic; }
  std::size_t device_bytes() const override;

  StencilCoefs coefs{};
  std::vector<float> vp2dt2; ///< (c dt)^2 in the padded layout, zero ghosts
  /// Float16 runs: (c dt)^2 as codes of `medium_code` in the padded layout (zero ghosts), which a
  /// GPU backend uploads; vp2dt2 then holds their decoded values at the grid points (zero
  /// ghosts), which the CPU backend reads. Empty for float32 runs.
  std::vector<std::uint16_t> vp2dt2_code;
  MediumCode medium_code{};
  /// A velocity model in GPU memory (io/memory_file.hpp) instead of vp2dt2, which is then empty:
  /// a GPU backend builds (c dt)^2 from it on the device (kernels/device_array.hpp); the CPU
  /// backend refuses it. Not owned: the equation holding the model keeps it alive.
  const DeviceArray* device_velocity = nullptr;
  std::vector<float> eta; ///< damping in the padded layout (one ghost ring set); empty: no layer
  /// eta's profiles where it was built from them (build_acoustic_problem); empty otherwise, and
  /// then the CPU kernel reads `eta`. When both are set they must agree at every point.
  EtaProfiles eta_axes;
};

/// The wavefields of an equation, as the NaN/Inf watch and the messages name them: "u" for the
/// acoustic equation, "p" and "q" for TTI. The first is the one sources drive, receivers sample
/// and snapshots show.
std::vector<std::string> wavefield_names(Physics physics);

/// A part of a step's region updates. A run on one subdomain of several updates the shell first
/// (the points within kHalo of a face shared with another subdomain: what the neighbours read as
/// their halo), starts the halo exchange, updates the interior while the exchange is in flight,
/// and waits for it before finish_step. Without a neighbour the shell is empty.
enum class StepPart { Shell, Interior };

/// The boxes `part` updates: each non-empty region cut to its points inside (Interior) or outside
/// (Shell) the core, the grid less kHalo points on every face with a neighbour. Each piece keeps
/// its region's id, so it gets its region's kernel. RegionId order; without a neighbour, Interior
/// is the non-empty regions themselves and Shell is empty.
std::vector<Region> step_part_regions(const std::array<Region, kRegionCount>& regions,
                                      const Grid& grid, const Subdomain& subdomain, StepPart part);

/// A compute backend: the wavefields of one problem of either equation, stepped by region
/// kernels of that equation.
class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu" or "cuda".
  virtual BackendKind kind() const = 0;
  /// The processor the backend runs on (GPU name, or the CPU model).
  virtual std::string device_name() const = 0;
  /// Allocate the equation's fields (zero) and upload its medium. `kernels[r]` updates region r
  /// and must be of the problem's physics. Throws RuntimeFailure (out of memory included: how much
  /// was needed and free) and std::invalid_argument for a malformed problem. The CPU backend reads
  /// the problem's medium and taps while it steps: the problem must outlive it or the next setup.
  virtual void setup(const Problem& problem, const RegionKernels& kernels) = 0;
  /// Replace the source and receiver taps and the source samples with `problem`'s (same grid,
  /// medium and kernels: the next shot of a survey), and zero the fields and the traces.
  virtual void set_taps(const Problem& problem) = 0;
  /// Zero the fields and the traces (the medium and the taps stay), so that stepping can start
  /// again from step 0 of the same problem. Waits for queued work.
  virtual void reset() = 0;
  /// Replace the kernel of each region; the same checks as setup. Reallocates nothing but the GPU
  /// backend's copy of eta's 3D array (formed when a chosen kernel reads it, freed when none
  /// does). Waits for queued work, so that no step in flight uses the old kernels.
  virtual void set_kernels(const RegionKernels& kernels) = 0;

  // ---- A step, in the parts that a decomposed run interleaves with its halo exchange ----

  /// Queue the update of the points of `part` (step_part_regions): the next fields from the
  /// current ones, by every region's kernel.
  virtual void update(StepPart part) = 0;
  /// The fields that update writes and the next step's stencils read (u^{n+1}; p^{n+1} and
  /// q^{n+1}), in the padded layout, on the backend's device: between update and finish_step a
  /// halo exchange writes the neighbours' points into their ghost planes.
  virtual std::vector<float*> halo_fields() = 0;
  /// The stream the backend queues its work on (a gpuStream_t; null on the CPU), so that a halo
  /// exchange can order its packing after update(StepPart::Shell).
  virtual void* stream() = 0;
  /// End step n (0 <= n < steps) after both parts: add step n's source samples to the first next
  /// field, make the next fields current, apply the free surface, record receiver sample n + 1.
  virtual void finish_step(int n) = 0;
  /// The whole step n of a run without neighbours: both parts, then finish_step(n).
  void step(int n) {
    update(StepPart::Shell);
    update(StepPart::Interior);
    finish_step(n);
  }
  /// Most steps that step_pass advances in one pass over memory for the problem set up: more than
  /// 1 where the backend has such a pass for it (the CPU backend with Minimod's layer or none,
  /// docs/kernels.md "The CPU multi-step pass"), else 1.
  virtual int pass_steps() const { return 1; }
  /// Steps n .. n + count - 1 of a run without neighbours, with the results of as many step()
  /// calls: in one pass where 1 < count <= pass_steps(), one step at a time otherwise. n + count <=
  /// the problem's steps.
  virtual void step_pass(int n, int count) {
    for (int s = 0; s < count; ++s)
      step(n + s);
  }
  /// Run `count` steps, step(first_step) to step(first_step + count - 1) with each index taken
  /// modulo the problem's step count (so that a short problem can be timed for longer), and
  /// return their elapsed time in milliseconds: from device events around the steps on a GPU
  /// backend, from steady_clock on the CPU. Waits for the steps to finish.
  virtual double time_steps(int first_step, int count) = 0;

  // ---- Fields and traces out ----

  /// Scan the current field `field` (wavefield_names order) at its grid points, the ghosts
  /// excluded, for NaN and Inf (kernels/finite_scan.hpp): one read of the field, after the queued
  /// steps.
  virtual FiniteScan scan_field(int field) = 0;
  /// Start copying the current field `field` to the host (asynchronous where the backend can:
  /// later steps may be queued before snapshot_end).
  virtual void snapshot_begin(int field = 0) = 0;
  /// Wait for the copy started by snapshot_begin and return it dense, x fastest, the problem
  /// grid's points.
  virtual void snapshot_end(std::vector<float>& dense) = 0;
  /// The current field `field`, dense, x fastest (synchronous).
  void fetch_field(int field, std::vector<float>& dense) {
    snapshot_begin(field);
    snapshot_end(dense);
  }
  /// Wait for all queued work.
  virtual void synchronize() = 0;
  /// Receiver traces so far: [receivers][steps + 1], sample n at time n*dt (sample 0 is zero).
  virtual void fetch_traces(std::vector<float>& traces) = 0;
};

/// The host's CPU model from /proc/cpuinfo, or "CPU".
std::string cpu_model_name();

/// The OpenMP CPU backend (always available), for either equation.
std::unique_ptr<Backend> make_cpu_backend();
/// The binary's GPU backend (kGpuBackend: the kernels/gpu/ sources built by nvcc or by hipcc) for
/// problems of `physics`; throws RuntimeFailure when the binary has none or no GPU is usable.
std::unique_ptr<Backend> make_cuda_backend(Physics physics = Physics::Acoustic);
/// The backend of `kind` for problems of `physics`.
std::unique_ptr<Backend> make_backend(BackendKind kind, Physics physics);
/// Whether a GPU of the binary's GPU backend (CUDA or HIP) can be used; when not, *why says why.
bool cuda_device_available(std::string* why);

/// Device memory a GPU backend keeps free beyond the problem's own needs (context, launch
/// queues, library workspaces): short of it a run fails later in a less readable way.
inline constexpr std::size_t kGpuMemoryMarginBytes = std::size_t{256} << 20;

/// Memory of the GPU this process would run on (the device a backend opens).
struct GpuMemory {
  std::string name;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};
/// The GPU's memory, or empty when no GPU can be used (a build without a GPU backend,
/// no device).
std::optional<GpuMemory> cuda_device_memory();

/// The scan of a padded field's grid points in host memory (the CPU side of
/// Backend::scan_field).
FiniteScan scan_finite(const FieldLayout& l, const float* padded);

/// Copy a dense x-fastest grid into a padded field (ghosts zero) and back.
void pad_field(const FieldLayout& l, const float* dense, float* padded);
void unpad_field(const FieldLayout& l, const float* padded, float* dense);

} // namespace minimod
