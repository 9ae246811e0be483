#pragma once
/// One run of a survey: model, plan, problem, backend and kernels, the time loop, traces and
/// snapshots. Used by `minimod-gpu run` and by the physics tests.

#include "io/h5_output.hpp"
#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "solver/finite_watch.hpp"
#include "solver/plan.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace minimod {

/// Which backend to run on.
enum class BackendChoice { Auto, Cpu, Cuda };

/// Parse "auto" / "cpu" / "cuda"; throws InputError naming `what` otherwise.
BackendChoice parse_backend_choice(const std::string& text, const std::string& what);

/// The backend a choice means on this machine: `auto` is CUDA when a GPU is usable, else the CPU,
/// and then `notice` (may be empty) hears "no GPU found: <fallback> (<why>)", `fallback` saying
/// what runs instead and `why` the technical reason.
BackendKind resolve_backend_choice(BackendChoice choice,
                                   const std::function<void(const std::string&)>& notice,
                                   const std::string& fallback = "running on the CPU backend");

/// Whether a kernel spec is `auto` (surrounding blanks allowed): the kernels are then chosen by
/// timing on the GPU (kernels/autotune.hpp), or are `cpu` on the CPU backend.
bool is_auto_kernel_spec(const std::string& spec);

/// Options of a run that come from the command line rather than the survey.
struct SimulationOptions {
  BackendChoice backend = BackendChoice::Auto;
  std::string kernel_spec; ///< overrides the survey's `kernel:` when not empty; `auto` tunes
  int steps_override = 0;  ///< > 0 replaces the survey's time span
};

/// Timing of the time loop.
struct LoopTiming {
  double total_ms = 0;       ///< wall time of all steps (snapshots excluded)
  double median_step_ms = 0; ///< median over timed chunks of steps
  double mpoints_per_s = 0;  ///< grid points updated per second
};

/// Statistics of a field.
struct FieldStats {
  double min = 0, max = 0, rms = 0;
};
FieldStats field_stats(const std::vector<float>& field);

/// The snapshot of a dense x-fastest field: the grid points of `box`, every `decimate`-th along
/// each axis, laid out as `geometry.shape`.
std::vector<float> extract_snapshot(const std::vector<float>& dense, const Grid& grid,
                                    const Box& box, int decimate, const SnapshotGeometry& geometry);

/// A prepared run.
class Simulation {
public:
  /// Build everything up to the first step: checks input (InputError), allocates on the device
  /// (RuntimeFailure). `velocity` is the dense model; `notice` receives one-line messages (backend
  /// fallback) and may be empty.
  Simulation(const Survey& survey, std::vector<float> velocity, const SimulationOptions& options,
             std::function<void(const std::string&)> notice = {});

  Simulation(const Simulation&) = delete; ///< the backend points into m_problem
  Simulation& operator=(const Simulation&) = delete;

  const Plan& plan() const { return m_plan; }
  const AcousticProblem& problem() const { return m_problem; }
  Backend& backend() { return *m_backend; }
  /// Kernel name of each region (RegionId order; "-" for an empty region).
  std::array<std::string, kRegionCount> kernel_names() const;
  /// Milliseconds the constructor spent on the host problem (plan, vp2dt2, eta, taps) and on the
  /// device (creating the backend, allocating, uploading; autotuning when asked).
  double problem_ms() const { return m_problem_ms; }
  double device_ms() const { return m_device_ms; }

  /// Switch to another shot of the same survey (`survey_for_shot`): new source and receiver taps
  /// and samples on the same grid, model and kernels; the fields and traces restart at zero.
  void load_shot(const Survey& shot);

  /// Run every step. `progress(steps_done)` is called every few steps; snapshots are appended to
  /// `output` when it is not null. Throws Interrupted between steps once SIGINT or SIGTERM has
  /// arrived (solver/interrupt.hpp), and RuntimeFailure when the wavefield or a snapshot holds a
  /// NaN or an Inf (solver/finite_watch.hpp: the field is scanned every few steps and after the
  /// last one).
  LoopTiming run(const std::function<void(int)>& progress, OutputFile* output);

  /// Traces at every step: [receivers][steps + 1], sample n at t = n dt. RuntimeFailure when a
  /// sample is not finite.
  std::vector<float> raw_traces();
  /// Traces resampled to the plan's dt_out: [receivers][trace_samples]. RuntimeFailure when a
  /// sample, before or after resampling, is not finite.
  std::vector<float> output_traces();
  /// The wavefield after the last step, dense, x fastest.
  std::vector<float> wavefield();

private:
  Survey m_survey;
  std::vector<float> m_velocity;
  double m_problem_ms = 0, m_device_ms = 0;
  Plan m_plan;
  AcousticProblem m_problem;
  std::unique_ptr<Backend> m_backend;
  RegionKernels m_kernels{};
};

/// What a run reports (solver/survey_run.hpp fills it).
struct RunReport {
  Plan plan;
  std::string backend, device;
  std::array<std::string, kRegionCount> kernels;
  LoopTiming timing;
  FieldStats final_field;
  std::string output_file;
};
/// Callbacks of a run (run_survey_shots): the plan once made, progress in steps, one-line notices.
struct RunHooks {
  std::function<void(const Plan&)> on_plan;
  std::function<void(int)> on_progress;
  std::function<void(const std::string&)> notice;
};

} // namespace minimod
