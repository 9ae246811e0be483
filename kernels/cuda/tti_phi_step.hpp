#pragma once
/// The GPU pass of the layer's phi step (tti_phi_step, kernels/tti_K.hpp): after a step's region
/// kernels have read phi^n, phi^{n+1} at the driven points of a layer box.

#include "kernels/tti_K.hpp"
#include "solver/grid.hpp"

namespace minimod::gpu {

/// Launch the phi step over every point of box `b` on `stream` (a gpuStream_t; null: the default
/// stream) and check the launch. Points that are not driven are left alone. Throws
/// std::invalid_argument when the box needs a larger grid than one launch holds.
void launch_tti_phi_step(const TtiFields& f, const FieldLayout& layout, const TtiCoefs& coefs,
                         const Box& b, void* stream);

} // namespace minimod::gpu
