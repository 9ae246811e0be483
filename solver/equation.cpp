#include "solver/equation.hpp"

#include "core/errors.hpp"
#include "io/memory_file.hpp"
#include "io/text.hpp"
#include "kernels/device_array.hpp"
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
    m_device_file.reset();
    if (const auto file = device_model_file(survey)) {
      check_device_model(survey, *file->device);
      m_device_file = file;
      m_velocity.clear();
      m_notice.clear();
      return;
    }
    m_velocity = build_velocity(survey.model, make_grid(survey.grid), &m_notice);
  }
  bool model_on_device() const override { return m_device_file != nullptr; }
  std::vector<std::vector<float>*> model_arrays() override {
    if (m_device_file) {
      throw InputError("model.file: " + m_device_file->device->owner +
                       " is not allowed in a run over MPI ranks: a GPU array serves one "
                       "process; allowed: a host array or a file");
    }
    return {&m_velocity};
  }
  double model_bytes() const override { return 4.0 * static_cast<double>(m_velocity.size()); }
  std::string model_notice() const override { return m_notice; }

  Plan make_plan(const Survey& shot, int steps_override) const override {
    if (m_device_file) {
      const DeviceArray& d = *m_device_file->device;
      return minimod::make_plan(shot, VelocityRange{d.vmin, d.vmax}, steps_override);
    }
    return minimod::make_plan(shot, m_velocity, steps_override);
  }

  std::unique_ptr<Problem> build_problem(const Survey& shot, const Plan& plan) const override {
    if (m_device_file) {
      return std::make_unique<AcousticProblem>(
          build_acoustic_problem(shot, plan, *m_device_file->device));
    }
    return std::make_unique<AcousticProblem>(build_acoustic_problem(shot, plan, m_velocity));
  }

  void set_shot(const Survey& shot, const Plan& plan, Problem& problem) const override {
    if (m_device_file) {
      set_shot_taps(shot, plan, *m_device_file->device, as_acoustic(problem));
    } else {
      set_shot_taps(shot, plan, m_velocity, as_acoustic(problem));
    }
  }

  // The acoustic problem keeps its medium: it is small next to TTI's, and tests read it.
  void release_host_medium(Problem&) const override {}

  StoredModel stored_model(const Grid& grid) const override {
    StoredModel model = model_geometry({grid.nx, grid.ny, grid.nz}, {grid.ox, grid.oy, grid.oz},
                                       {grid.dx, grid.dy, grid.dz});
    if (m_device_file) {
      // The kept points only (at most 256^3), gathered on the device.
      add_kept_model_property(
          model, "vp", "m/s",
          device_array_values(*m_device_file->device, model_kept_points(model)));
    } else {
      add_model_property(model, "vp", "m/s", m_velocity);
    }
    return model;
  }

private:
  static AcousticProblem& as_acoustic(Problem& p) {
    if (p.physics() != Physics::Acoustic)
      throw std::logic_error("acoustic equation: a problem of another equation");
    return static_cast<AcousticProblem&>(p);
  }

  /// The survey's model file when it is a GPU array (io/memory_file.hpp), else null.
  static std::shared_ptr<const MemoryFile> device_model_file(const Survey& survey) {
    if (survey.model.kind != ModelSpec::Kind::File) return nullptr;
    auto file = find_memory_file(survey.model.file);
    return file && file->device ? file : nullptr;
  }

  /// What build_velocity checks of a model file, for one on a GPU (found by its scan): the
  /// grid's shape (a GPU array is not resampled) and values finite and > 0.
  static void check_device_model(const Survey& survey, const DeviceArray& d) {
    const Grid g = make_grid(survey.grid);
    SourceLoc loc = survey.model.file_loc;
    if (loc.key.empty()) {
      loc = survey.model.loc;
      loc.key = "model.file";
    }
    const std::string key = loc.where();
    const auto text = [](const std::array<int, 3>& n) {
      return std::to_string(n[0]) + " x " + std::to_string(n[1]) + " x " + std::to_string(n[2]);
    };
    if (d.shape != std::array<int, 3>{g.nx, g.ny, g.nz} || survey.model.spacing ||
        survey.model.origin) {
      throw InputError(key + ": " + d.owner + " (" + text(d.shape) +
                       " points, nx x ny x nz) is not allowed: a GPU array model has the grid's " +
                       text({g.nx, g.ny, g.nz}) +
                       " points and no model.spacing or model.origin (it is not resampled; "
                       "resample it, or pass a host array)");
    }
    // The values the survey was made with: an array written since would run with a plan (dt,
    // layer) made for other values.
    DeviceArray now = d;
    scan_device_array(now);
    if (now.checksum != d.checksum) {
      throw InputError(key + ": " + d.owner +
                       " changed after the survey was made (its values' checksum differs); "
                       "allowed: make the Survey again after changing the array");
    }
    if (d.first_bad >= 0) {
      const auto idx = static_cast<std::uint64_t>(d.first_bad);
      const int i = static_cast<int>(idx % static_cast<std::uint64_t>(g.nx));
      const int j = static_cast<int>((idx / static_cast<std::uint64_t>(g.nx)) %
                                     static_cast<std::uint64_t>(g.ny));
      const int k = static_cast<int>(
          idx / (static_cast<std::uint64_t>(g.nx) * static_cast<std::uint64_t>(g.ny)));
      throw InputError(key + ": " + format_number(d.bad_value) + " at (i, j, k) = (" +
                       std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) +
                       ") of the model (" + d.element(i, j, k) +
                       ") is not allowed: velocities finite and > 0 (m/s)");
    }
  }

  std::vector<float> m_velocity;
  std::string m_notice;
  std::shared_ptr<const MemoryFile> m_device_file; ///< the GPU array model, when it is one
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
