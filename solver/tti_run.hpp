#pragma once
/// `physics: tti` surveys: the model from the survey, the plan, what `validate` prints, and the TTI
/// Equation (make_tti_equation, solver/equation.hpp) through which the one survey driver runs them.

#include "io/survey.hpp"
#include "solver/plan.hpp"
#include "solver/tti.hpp"

#include <string>

namespace minimod {

/// vp from `model:` and the anisotropy parameters of `anisotropy:` (angles in radians), checked
/// (epsilon >= delta everywhere, angles in range) with errors naming the survey section.
TtiModel build_tti_model(const Survey& survey, const Grid& grid);

/// The TTI plan of a survey: stable dt of the 73-point operator, steps, layer widths.
TtiPlan plan_tti(const Survey& survey, const TtiModel& model, int steps_override = 0);

/// What `minimod-gpu validate` prints for a TTI survey.
std::string describe_tti_plan(const Survey& survey, const TtiModel& model, const TtiPlan& plan);

/// The run's Plan of a TTI plan: dt, steps, layer and stability of `tti`, trace and snapshot
/// sampling as the acoustic plan makes them on that time axis, and the TTI memory.
Plan tti_run_plan(const Survey& shot, const TtiModel& model, const TtiPlan& tti);

} // namespace minimod
