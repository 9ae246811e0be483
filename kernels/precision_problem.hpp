#pragma once
/// An acoustic problem made a float16 one (core/precision.hpp): the medium coded in 16 bits and
/// the field scale of its sources, what build_acoustic_problem and set_shot_taps do for a survey of
/// `precision: float16` and what tests do to a problem they build by hand.

#include "kernels/backend.hpp"

namespace minimod {

/// The field scale of `p`'s sources: half_field_scale of the largest |weight x sample| over its
/// source taps and steps (1 without sources).
float source_field_scale(const Problem& p);

/// A float16 run's medium: (c dt)^2 of p's grid points as 16-bit codes between its least and
/// greatest value (vp2dt2_code, padded layout, zero ghosts; medium_code), and vp2dt2 their decoded
/// values, which the CPU backend reads and a GPU decodes to the same floats. Throws
/// std::invalid_argument for a problem without vp2dt2 (a model in GPU memory).
void code_medium(AcousticProblem& p);

/// Make `p` (acoustic, float32, its vp2dt2 in the padded layout) a float16 problem: precision
/// Float16, code_medium, and field_scale from its sources.
void make_float16(AcousticProblem& p);

} // namespace minimod
