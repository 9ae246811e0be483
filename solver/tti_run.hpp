#pragma once
/// `physics: tti` surveys: the model from the survey, the plan, and the shots on the CPU reference
/// solver (solver/tti.hpp) into the same output as an acoustic run. GPU kernels for TTI are not
/// written yet; `--backend cuda` is refused with that reason.

#include "io/survey.hpp"
#include "solver/survey_run.hpp"
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

/// Run every shot of a TTI survey (one process, CPU reference).
SurveyRunReport run_tti_survey(const Survey& survey, const SurveyRunOptions& options);

} // namespace minimod
