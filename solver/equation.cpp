#include "solver/equation.hpp"

#include "core/errors.hpp"
#include "models/velocity.hpp"
#include "solver/problem.hpp"

#include <utility>

namespace minimod {
namespace {

/// The isotropic acoustic equation: a velocity model, the acoustic plan and problem.
class AcousticEquation final : public Equation {
public:
  AcousticEquation() = default;
  explicit AcousticEquation(std::vector<float> velocity) : m_velocity(std::move(velocity)) {}

  Physics physics() const override { return Physics::Acoustic; }

  void build_model(const Survey& survey) override {
    m_velocity = build_velocity(survey.model, make_grid(survey.grid), &m_notice);
  }
  std::vector<std::vector<float>*> model_arrays() override { return {&m_velocity}; }
  double model_bytes() const override { return 4.0 * static_cast<double>(m_velocity.size()); }
  std::string model_notice() const override { return m_notice; }

  Plan make_plan(const Survey& shot, int steps_override) const override {
    return minimod::make_plan(shot, m_velocity, steps_override);
  }

  std::unique_ptr<Problem> build_problem(const Survey& shot, const Plan& plan) const override {
    return std::make_unique<AcousticProblem>(build_acoustic_problem(shot, plan, m_velocity));
  }

  void set_shot(const Survey& shot, const Plan& plan, Problem& problem) const override {
    set_shot_taps(shot, plan, m_velocity, as_acoustic(problem));
  }

  // The acoustic problem keeps its medium: it is small next to TTI's, and tests read it.
  void release_host_medium(Problem&) const override {}

  StoredModel stored_model(const Grid& grid) const override {
    StoredModel model = model_geometry({grid.nx, grid.ny, grid.nz}, {grid.ox, grid.oy, grid.oz},
                                       {grid.dx, grid.dy, grid.dz});
    add_model_property(model, "vp", "m/s", m_velocity);
    return model;
  }

private:
  static AcousticProblem& as_acoustic(Problem& p) {
    if (p.physics() != Physics::Acoustic)
      throw std::logic_error("acoustic equation: a problem of another equation");
    return static_cast<AcousticProblem&>(p);
  }

  std::vector<float> m_velocity;
  std::string m_notice;
};

} // namespace

std::unique_ptr<Equation> make_equation(const Survey& survey) {
  if (survey.physics == "tti") return make_tti_equation();
  if (survey.physics == "acoustic") return std::make_unique<AcousticEquation>();
  throw InputError("physics: '" + survey.physics + "' is not supported; allowed: acoustic, tti");
}

std::unique_ptr<Equation> make_acoustic_equation(std::vector<float> velocity) {
  return std::make_unique<AcousticEquation>(std::move(velocity));
}

} // namespace minimod
