#pragma once
/// The equation as a parameter of the run. The survey driver, the shot farm (MPI included) and the
/// time loop (solver/survey_run.cpp, solver/simulation.cpp) are written once; what belongs to one
/// equation sits behind Equation: its model and how /model stores it, its plan (stable dt, layer),
/// its host problem (the medium in the padded layout) and each shot's taps. The backends take the
/// problem (kernels/backend.hpp) and step the equation's fields with its region kernels.

#include "io/h5_output.hpp"
#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "solver/plan.hpp"

#include <memory>
#include <string>
#include <vector>

namespace minimod {

/// One equation's side of a run.
class Equation {
public:
  virtual ~Equation() = default;
  /// Which equation.
  virtual Physics physics() const = 0;
  /// Build the survey's model on its grid, checked (InputError naming the survey's keys): what the
  /// process that reads the input files does (a run of one process, or MPI rank 0).
  virtual void build_model(const Survey& survey) = 0;
  /// Whether the model lies in GPU memory (a GPU array handed over by the Python module): only
  /// a GPU backend can build the medium from it.
  virtual bool model_on_device() const { return false; }
  /// The model's dense arrays (x fastest, one value a grid point; an optional one may be empty):
  /// what MPI rank 0 broadcasts and the other ranks receive into, resizing them.
  virtual std::vector<std::vector<float>*> model_arrays() = 0;
  /// Bytes of host memory the model holds.
  virtual double model_bytes() const = 0;
  /// What placing a model file on the grid did (resampling); empty when its points are the grid's.
  virtual std::string model_notice() const = 0;
  /// The plan of `shot` (survey_for_shot): dt, steps and layer of this equation, trace and
  /// snapshot sampling, memory, warnings. InputError for what the survey and model make invalid.
  virtual Plan make_plan(const Survey& shot, int steps_override) const = 0;
  /// The host problem of `shot` on `plan`'s grid: the medium, the taps and the source samples.
  virtual std::unique_ptr<Problem> build_problem(const Survey& shot, const Plan& plan) const = 0;
  /// Replace the taps and source samples of `problem` with those of another shot.
  virtual void set_shot(const Survey& shot, const Plan& plan, Problem& problem) const = 0;
  /// Free the host arrays of the medium that a GPU backend holds on the device after setup (and
  /// that set_shot does not read).
  virtual void release_host_medium(Problem& problem) const = 0;
  /// The medium as the output's /model stores it.
  virtual StoredModel stored_model(const Grid& grid) const = 0;
};

/// The equation of `survey.physics`, without a model yet.
std::unique_ptr<Equation> make_equation(const Survey& survey);
/// The acoustic equation on a dense velocity model already built (x fastest).
std::unique_ptr<Equation> make_acoustic_equation(std::vector<float> velocity);
/// The TTI equation (solver/tti_run.cpp), without a model yet.
std::unique_ptr<Equation> make_tti_equation();

} // namespace minimod
