#pragma once
/// A TTI run's data in host memory (TtiProblem: what solver/tti.cpp builds from a model) and the
/// GPU side that advances it (TtiBackend, implemented by kernels/cuda/tti_backend.cu). The CPU
/// reference, TtiSimulation, steps the same TtiProblem on the host.

#include "kernels/backend.hpp"
#include "kernels/field_layout.hpp"
#include "kernels/kernel.hpp"
#include "kernels/tti_K.hpp"
#include "solver/grid.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minimod {

/// Everything a TTI run needs, in host memory, every array in the padded layout (docs/tti.md,
/// "Medium layout and the TTI floor").
struct TtiProblem {
  Grid grid;
  LayerWidths layer;
  std::array<Region, kRegionCount> regions;
  FieldLayout layout;
  TtiCoefs coefs{};
  double dt = 0;
  int steps = 0;
  std::vector<float> vp2dt2;
  std::vector<std::uint32_t> aniso;   ///< 2 delta, 2 (epsilon - delta): binary16 pairs (tti_K.hpp)
  std::vector<std::uint32_t> axis_xz; ///< n_x, n_z: fixed-point pairs (tti_K.hpp)
  std::vector<std::int16_t> axis_y;   ///< n_y, fixed point; empty: no azimuth
  std::vector<float> eta;             ///< empty: no absorbing layer
  /// Source taps into p (physical scaling folded into the weights); injection after the update of
  /// step n adds weight * source_samples[s * steps + n].
  TapTable sources;
  std::vector<float> source_samples; ///< [sources][steps]
  TapTable receivers;                ///< trace sample n is sum(weight * p^n)
  bool has_azimuth() const { return !axis_y.empty(); }
};

/// The host pointers to a problem's medium, in TtiFields: vp2dt2, the pairs, axis_y and eta (null
/// where the problem has none). The caller sets the fields (p, q and their next steps) and phi_p.
TtiFields tti_medium_fields(const TtiProblem& p);

/// Bytes of the padded arrays of a TTI problem of `padded_points` points a field (FieldLayout
/// size): p, q and their previous steps, the medium (vp2dt2 and the 16-bit pairs, n_y with
/// `azimuth`), eta with a `layer`, and phi_p with `phi` (tti_needs_phi).
std::size_t tti_array_bytes(std::int64_t padded_points, bool azimuth, bool layer, bool phi);

/// Layer points of a problem where the layer drives phi_p (tti_layer_driven: the medium is
/// elliptic there).
std::int64_t tti_driven_layer_points(const TtiProblem& p);

/// Whether a run of the problem needs the phi_p array: some layer point is driven. Elsewhere phi_p
/// stays zero and is never read, so an anelliptic layer needs none (a full array less).
bool tti_needs_phi(const TtiProblem& p);

/// The TTI floor of a problem (docs/tti.md, "Medium layout and the TTI floor"): the bytes a point a
/// step that a kernel must move at least, averaged over the grid's points. 36 a point (38 with
/// azimuth), 4 more for eta at a layer point, and 8 more for phi_p (read and written) at a layer
/// point where the medium is elliptic (tti_layer_driven: elsewhere phi stays zero unread).
double tti_floor_bytes_per_point(const TtiProblem& p);

/// Bytes of device memory a TtiProblem needs: its arrays (tti_array_bytes), taps, samples and
/// traces; `phi` is tti_needs_phi(p), for a caller that has it already (the scan walks the layer).
std::size_t tti_device_bytes(const TtiProblem& p, bool phi);
/// The same, scanning the layer for phi.
std::size_t tti_device_bytes(const TtiProblem& p);

/// Advances a TtiProblem on a GPU with one kernel per region (kernels of Physics::Tti).
class TtiBackend {
public:
  virtual ~TtiBackend() = default;
  /// The GPU's name.
  virtual std::string device_name() const = 0;
  /// Allocate and upload; p = q = phi = 0. Throws RuntimeFailure when the GPU lacks the memory
  /// (how much is needed and free) and std::invalid_argument for a malformed problem.
  virtual void setup(const TtiProblem& problem,
                     const std::array<const StencilKernel*, kRegionCount>& kernels) = 0;
  /// Replace the taps and source samples with `problem`'s (the next shot: same grid, medium and
  /// step count), and zero the fields and traces.
  virtual void set_taps(const TtiProblem& problem) = 0;
  /// Advance from step n to n + 1: every region, injection of step n into p, the swap, receiver
  /// sample n + 1.
  virtual void step(int n) = 0;
  /// Wait for the queued steps.
  virtual void synchronize() = 0;
  /// Zero the fields, phi and the traces (the medium and taps stay).
  virtual void reset() = 0;
  /// Replace the region kernels (the checks of setup).
  virtual void set_kernels(const std::array<const StencilKernel*, kRegionCount>& kernels) = 0;
  /// Run `count` steps from first_step (indices modulo the step count) and return their time in
  /// milliseconds from device events.
  virtual double time_steps(int first_step, int count) = 0;
  /// Receiver traces: [receivers][steps + 1].
  virtual void fetch_traces(std::vector<float>& traces) = 0;
  /// p^n (q^n with `q`), dense, x fastest.
  virtual void fetch_field(std::vector<float>& dense, bool q = false) = 0;
  /// Scan p^n's (q^n's with `q`) grid points, the ghosts excluded, for NaN and Inf
  /// (kernels/finite_scan.hpp): one read of the field, after the queued steps.
  virtual FiniteScan scan_field(bool q = false) = 0;
};

/// The CUDA TTI backend; throws RuntimeFailure when the binary has no CUDA or no GPU is usable.
std::unique_ptr<TtiBackend> make_cuda_tti_backend();

} // namespace minimod
