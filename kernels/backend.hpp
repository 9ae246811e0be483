#pragma once
/// The interface between the solver and a compute backend (CPU or CUDA). The solver prepares an
/// AcousticProblem in host memory; the backend owns the fields and advances them one step at a
/// time with the kernel chosen for each region.

#include "kernels/field_layout.hpp"
#include "kernels/finite_scan.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"
#include "solver/grid.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// Point taps grouped by owner (a source or a receiver) in compressed-row form: the taps of owner
/// r are [begin[r], begin[r+1]); each tap is a padded-field index and a weight.
struct TapTable {
  std::vector<std::int64_t> begin; ///< size owners + 1
  std::vector<std::int64_t> index; ///< FieldLayout::index of each tap
  std::vector<float> weight;       ///< weight of each tap
  std::size_t owners() const { return begin.empty() ? 0 : begin.size() - 1; }
};

/// Everything a backend needs for an isotropic acoustic run, in host memory.
struct AcousticProblem {
  Grid grid;
  LayerWidths layer;
  std::array<Region, kRegionCount> regions;
  FieldLayout layout;
  StencilCoefs coefs{};
  double dt = 0;
  int steps = 0;
  std::vector<float> vp2dt2; ///< (c dt)^2 in the padded layout, zero ghosts
  std::vector<float> eta;    ///< damping in the padded layout (one ghost ring set); empty: no layer
  /// Pressure-free top face: after each step u(k = 0) = 0 and the ghost planes mirror
  /// u(-k) = -u(k) (physics.md section 3).
  bool free_surface = false;
  /// Source taps; injection after the update of step n adds weight * samples[s * steps + n].
  TapTable sources;
  std::vector<float> source_samples; ///< [sources][steps]
  /// Receiver taps; trace sample n is sum(weight * u^n).
  TapTable receivers;
};

/// Bytes of device memory an AcousticProblem needs (fields, taps, traces).
std::size_t acoustic_device_bytes(const AcousticProblem& p);

/// A compute backend.
class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu" or "cuda".
  virtual BackendKind kind() const = 0;
  /// The processor the backend runs on (GPU name, or the CPU model).
  virtual std::string device_name() const = 0;
  /// Allocate and upload the problem; u = v = phi = 0. `kernels[r]` updates region r. Throws
  /// std::runtime_error (out of memory included: how much was needed and free) on failure.
  virtual void setup(const AcousticProblem& problem,
                     const std::array<const StencilKernel*, kRegionCount>& kernels) = 0;
  /// Replace the source and receiver taps and the source samples with `problem`'s (same grid,
  /// fields and kernels: the next shot of a survey); the traces restart at zero. Call reset()
  /// as well to restart the fields.
  virtual void set_taps(const AcousticProblem& problem) = 0;
  /// Advance from step n to n+1: every region, then source injection of step n, then the pointer
  /// swap, then receiver sampling into trace sample n+1.
  virtual void step(int n) = 0;
  /// Start copying the current wavefield u^n to the host (asynchronous where the backend can).
  virtual void snapshot_begin() = 0;
  /// Wait for the copy started by snapshot_begin and return it dense, x fastest, nx*ny*nz floats.
  virtual void snapshot_end(std::vector<float>& dense) = 0;
  /// Wait for all queued work.
  virtual void synchronize() = 0;
  /// Receiver traces so far: [receivers][steps + 1], sample n at time n*dt (sample 0 is zero).
  virtual void fetch_traces(std::vector<float>& traces) = 0;
  /// Scan u^n's grid points (the ghosts excluded) for NaN and Inf (kernels/finite_scan.hpp): one
  /// read of the field, after the queued steps. The time loops call it every few steps.
  virtual FiniteScan scan_wavefield() = 0;
  /// Current wavefield u^n, dense, x fastest (synchronous).
  void fetch_wavefield(std::vector<float>& dense) {
    snapshot_begin();
    snapshot_end(dense);
  }

  // ---- Benchmarking and kernel choice (app/bench.cpp, kernels/autotune.cpp) ----

  /// Zero u, v, phi and the traces (vp2dt2, eta and the taps stay), so that stepping can start
  /// again from step 0 of the same problem. Waits for queued work.
  virtual void reset() = 0;
  /// Replace the kernel of each region without reallocating anything; the same checks as setup
  /// (every non-empty region gets a kernel of this backend that can run it). Waits for queued
  /// work, so that no step in flight uses the old kernels.
  virtual void set_kernels(const std::array<const StencilKernel*, kRegionCount>& kernels) = 0;
  /// Run `count` steps, step(first_step) to step(first_step + count - 1) with each index taken
  /// modulo the problem's step count (so that a short problem can be timed for longer), and
  /// return their elapsed time in milliseconds: from device events around the steps on a GPU
  /// backend, from steady_clock on the CPU. Waits for the steps to finish.
  virtual double time_steps(int first_step, int count) = 0;
};

/// The host's CPU model from /proc/cpuinfo, or "CPU".
std::string cpu_model_name();

/// The OpenMP CPU backend (always available).
std::unique_ptr<Backend> make_cpu_backend();
/// The CUDA backend; throws std::runtime_error when the binary has no CUDA or no GPU is usable.
std::unique_ptr<Backend> make_cuda_backend();
/// Whether a CUDA GPU can be used; when not, *why says why.
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
/// The GPU's memory, or empty when no GPU can be used (a build without CUDA, no device).
std::optional<GpuMemory> cuda_device_memory();

/// The scan of a padded field's grid points in host memory (the CPU side of
/// Backend::scan_wavefield).
FiniteScan scan_finite(const FieldLayout& l, const float* padded);

/// Copy a dense x-fastest grid into a padded field (ghosts zero) and back.
void pad_field(const FieldLayout& l, const float* dense, float* padded);
void unpad_field(const FieldLayout& l, const float* padded, float* dense);

} // namespace minimod
