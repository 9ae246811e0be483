#pragma once
/// Reverse-time migration of one shot (docs/physics.md, "Imaging"): the source wavefield forward,
/// the receiver wavefield backward from the time-reversed traces, and their zero-lag
/// cross-correlation with source illumination, on any backend and kernels of the acoustic
/// equation.
///
/// The backward run is the discrete adjoint of the forward run's sampling, stepped by the same
/// kernels. With D = (c dt)^2, the forward step u^{n+1} = 2u^n - u^{n-1} + D L u^n + B s_n and
/// the sampling d_n = R u^n have the adjoint lambda^m = R^T e_m + 2 lambda^{m+1} - lambda^{m+2}
/// + L D lambda^{m+1}; nu^k = D lambda^{N+1-k} then obeys the forward step itself,
/// nu^{j+1} = 2 nu^j - nu^{j-1} + D L nu^j + D R^T e_{N-j}: a forward run whose sources are the
/// receivers' taps with weights w D(x) and whose samples are the traces reversed. Its "receivers"
/// at the sources' taps with weights B / D give B^T lambda, the adjoint of the modelling
/// (adjoint_samples), which the dot-product test checks (tests/test_rtm.cpp). Exact for the grid's
/// own boundary (the zero ghost) and the free surface; an absorbing layer is not self-adjoint, and
/// RTM needs only its absorption.

#include "kernels/backend.hpp"
#include "kernels/selection.hpp"

#include <vector>

namespace minimod {

/// The backward run of `p` (acoustic, float32) for traces `traces` ([receivers][steps + 1], as
/// Backend::fetch_traces gives them): the same grid, medium, layer and time axis; its sources
/// are p's receivers (each tap's weight times (c dt)^2 there), sample j of receiver r being
/// traces[r][steps - j]; its receivers are p's sources (each tap's weight over (c dt)^2 there).
/// Throws std::invalid_argument for traces of another shape or a source tap where (c dt)^2 is 0.
AcousticProblem backward_problem(const AcousticProblem& p, const std::vector<float>& traces);

/// The adjoint of the modelling F: source samples -> traces, applied to `traces`: F^T traces as
/// [sources][steps] samples, from the traces of a backward run ([p's sources][steps + 1]):
/// sample n is backward trace sample steps - n.
std::vector<float> adjoint_samples(const AcousticProblem& p,
                                   const std::vector<float>& backward_traces);

/// What the migration of one shot gives, dense on the problem's grid (x fastest).
struct ShotImage {
  std::vector<double> image;        ///< sum over imaging times of u^m lambda^m
  std::vector<double> illumination; ///< sum over imaging times of (u^m)^2
  int imaging_times = 0;            ///< how many times m entered the sums
};

/// Migrate one shot: `p` is the shot's problem on the migration model (its sources and receivers),
/// `traces` its recorded traces ([receivers][steps + 1]). The forward run keeps u^m for every m
/// that is a multiple of `stride` (1 <= stride; m = 1 .. steps) on the host; the backward run
/// correlates its lambda^m with them. `backend` is set up here (for p, then for its backward
/// problem) with `kernels`.
ShotImage migrate_shot(Backend& backend, const RegionKernels& kernels, const AcousticProblem& p,
                       const std::vector<float>& traces, int stride);

/// The source-normalised image: image / (illumination + epsilon max(illumination)), 0 where both
/// vanish.
std::vector<float> normalised_image(const ShotImage& s, double epsilon = 1e-3);

} // namespace minimod
