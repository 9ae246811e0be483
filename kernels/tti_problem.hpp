#pragma once
/// A TTI run's data in host memory (TtiProblem: what solver/tti.cpp builds from a model), stepped
/// by either backend (kernels/backend.hpp), and what its size and floor are.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/tti_K.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace minimod {

/// The TTI medium of a problem, every array in the padded layout (docs/tti.md, "Medium layout and
/// the TTI floor"). Sources drive p, receivers sample p (the first field).
struct TtiProblem final : Problem {
  Physics physics() const override { return Physics::Tti; }
  /// tti_device_bytes with tti_needs_phi: scans the layer.
  std::size_t device_bytes() const override;

  TtiCoefs coefs{};
  std::vector<float> vp2dt2;
  std::vector<std::uint32_t> aniso;   ///< 2 delta, 2 (epsilon - delta): binary16 pairs (tti_K.hpp)
  std::vector<std::uint32_t> axis_xz; ///< n_x, n_z: fixed-point pairs (tti_K.hpp)
  std::vector<std::int16_t> axis_y;   ///< n_y, fixed point; empty: no azimuth
  std::vector<float> eta;             ///< empty: no absorbing layer
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

} // namespace minimod
