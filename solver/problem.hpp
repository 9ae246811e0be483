#pragma once
/// Building the backend-neutral AcousticProblem from a survey, its plan and its model.

#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "solver/plan.hpp"

#include <vector>

namespace minimod {

/// Minimod's damping profile in the padded layout (docs/physics.md section 3): eta = sum over axes
/// of A (d/n)^2, A = dt 3 vmax ln(1000) / (2 n h), for grid points and one ghost point beyond each
/// face.
std::vector<float> build_eta(const Grid& grid, const LayerWidths& layer, const FieldLayout& layout,
                             double dt, double vmax);

/// (Re)build the source and receiver taps and the source samples of `survey` (one shot) in `p`.
void set_shot_taps(const Survey& survey, const Plan& plan, const std::vector<float>& velocity,
                   AcousticProblem& p);

/// The problem a backend runs: fields in the padded layout, taps and source samples.
AcousticProblem build_acoustic_problem(const Survey& survey, const Plan& plan,
                                       const std::vector<float>& velocity);

} // namespace minimod
