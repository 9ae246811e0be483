#pragma once
/// The CPU backend's float16 step (core/precision.hpp; docs/physics.md, "16-bit storage"). The
/// fields stay in float arrays that hold binary16 values only (every value stored is rounded by
/// round_to_half), so that the `cpu` kernel steps them unchanged and the GPU's 16-bit arrays hold
/// the same values:
/// - before the kernel, v = u - d at the points of the pieces updated (u^{n-1}, which the kernel
///   reads as v and overwrites with u^{n+1});
/// - after it, d = round_to_half(v - u) (v = U, u^{n+1} in float32), v = round_to_half(v) and,
///   in the layer pieces, phi = round_to_half(phi).
/// The rounding loops use the F16C conversions where the build has them (_mm256_cvtps_ph with
/// round to nearest even, then _mm256_cvtph_ps: the bits of round_to_half for every value but
/// NaN, whose payload they keep where round_to_half gives the canonical quiet NaN).

#include "core/field_layout.hpp"
#include "core/grid.hpp"

#include <cstdint>

namespace minimod {

/// x[0, n) rounded to the nearest binary16 values, in place.
void round_to_half_cpu(float* x, std::int64_t n);

/// v = u - d at the points of the pieces regions[0, count) (one OpenMP parallel region).
void half_previous_step(const float* u, const float* d, float* v, const FieldLayout& layout,
                        const Region* regions, int count);

/// At the points of the pieces regions[0, count), after their update wrote U into v:
/// d = round_to_half(v - u), then v = round_to_half(v); phi = round_to_half(phi) in the layer
/// pieces where phi is not null.
void half_store_step(const float* u, float* v, float* d, float* phi, const FieldLayout& layout,
                     const Region* regions, int count);

} // namespace minimod
