#pragma once
/// `minimod-gpu validate`: every check `run` makes before its first step, through the same
/// functions, without building what does not fit in memory.

#include "io/survey.hpp"

#include <string>

namespace minimod {

/// The options of `run` that decide what it accepts.
struct ValidateOptions {
  std::string backend = "auto";  ///< auto, cpu or cuda (--backend)
  std::string kernel;            ///< kernel spec (--kernel); empty: the survey's
  int steps = 0;                 ///< > 0: --steps
  std::string decompose;         ///< --decompose PXxPYxPZ; empty: the survey's decomposition
  std::string max_device_memory; ///< --max-device-memory; empty: no cap
  int ranks = 1;                 ///< MPI ranks of the run (for `decomposition: auto`)
  std::string shots;             ///< --shots; empty: every shot
  std::string precision;         ///< --precision; empty: the survey's
};

/// Checks `survey` as `run` with `options` would before its first step and returns the plan as
/// `validate` prints it, with the host memory the run needs and whether it fits this host.
/// A model that varies with depth only is planned from one value per depth; a file model is read
/// (exit 3 first, as for `run`, when it does not fit the host). Throws InputError for bad input
/// and RuntimeFailure when a model that must be read does not fit.
std::string validate_survey(const Survey& survey, const ValidateOptions& options);

} // namespace minimod
