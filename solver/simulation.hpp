#pragma once
/// One run of a survey, for either equation (solver/equation.hpp): plan, problem, backend and
/// kernels, the time loop, traces and snapshots. Used by the survey driver (solver/survey_run.cpp)
/// and by the physics tests.

#include "io/h5_output.hpp"
#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "solver/equation.hpp"
#include "solver/finite_watch.hpp"
#include "solver/plan.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace minimod {

/// Which backend to run on.
enum class BackendChoice { Auto, Cpu, Cuda, Hip };

/// Parse "auto" / "cpu" / "cuda" / "hip"; throws InputError naming `what` otherwise.
BackendChoice parse_backend_choice(const std::string& text, const std::string& what);

/// The backend a choice means on this machine: `auto` is the binary's GPU backend (kGpuBackend)
/// when a GPU is usable, else the CPU,
/// and then `notice` (may be empty) hears "no GPU found: <fallback> (<why>)", `fallback` saying
/// what runs instead and `why` the technical reason. `cuda` or `hip` in a binary built with the
/// other GPU backend (or none) throws RuntimeFailure naming the backend it has.
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
  /// > 0: the most device memory (bytes) the problem of this process may need
  /// (Problem::device_bytes: the subdomain's in a decomposed run); more is refused (InputError)
  /// before anything is allocated.
  std::size_t max_device_bytes = 0;
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

/// How a split grid's halos travel between ranks: not at all (a grid that is not split), CPU
/// buffers over MPI, GPU buffers staged through pinned host memory and MPI, GPU buffers handed to
/// a CUDA-aware MPI, or GPU to GPU peer copies between the ranks of one node.
enum class HaloTransport : int { None = 0, Host, Staged, MpiDevice, Peer };

/// The name the run summary gives a HaloTransport: none, host, staged, mpi-device, peer.
inline const char* halo_transport_name(HaloTransport t) {
  switch (t) {
  case HaloTransport::Host:
    return "host";
  case HaloTransport::Staged:
    return "staged";
  case HaloTransport::MpiDevice:
    return "mpi-device";
  case HaloTransport::Peer:
    return "peer";
  case HaloTransport::None:
    break;
  }
  return "none";
}

/// What a run on one subdomain of a decomposed grid plugs into the time loop (Simulation). The
/// loop calls it at fixed points of every step, and every field, trace and snapshot it hands out
/// passes through it; a run of the whole grid has none. Every rank of a shot calls the same
/// functions in the same order (collective where the implementation needs it).
class DomainHooks {
public:
  virtual ~DomainHooks() = default;
  /// After backend.update(StepPart::Shell) of step n: start exchanging the shells of
  /// backend.halo_fields() with the neighbours (on a GPU, ordered after backend.stream()'s work).
  virtual void start_exchange(Backend& backend, int n) = 0;
  /// After backend.update(StepPart::Interior) of step n, before finish_step(n): wait until the
  /// neighbours' points are in the ghost planes of backend.halo_fields().
  virtual void finish_exchange(Backend& backend, int n) = 0;
  /// The scan of a field of the run's grid from this subdomain's (Backend::scan_field: dense
  /// indices of the problem's grid): dense indices of the run's grid, the same on every rank.
  virtual FiniteScan reduce_scan(const FiniteScan& local) = 0;
  /// The run's grid's dense field from this subdomain's (the problem's grid, x fastest): true and
  /// `global` filled on the rank that writes, false elsewhere.
  virtual bool gather_field(const std::vector<float>& local, std::vector<float>& global) = 0;
  /// The shot's traces [the survey's receivers][steps + 1] from this subdomain's (its problem's
  /// receivers): true and `global` filled on the rank that writes, false elsewhere.
  virtual bool gather_traces(const std::vector<float>& local, std::vector<float>& global) = 0;
  /// Milliseconds spent in the halo exchange (start_exchange and finish_exchange: packing,
  /// waiting, unpacking) since reset_halo_ms.
  virtual double halo_ms() const { return 0; }
  virtual void reset_halo_ms() {}
  /// How the halos travel between this rank and its neighbours, once the first exchange has set
  /// them up.
  virtual HaloTransport halo_transport() const { return HaloTransport::None; }
  /// Before the run of shot `shot` (the survey's number), on every rank of the shot together.
  virtual void begin_shot(int shot) { (void)shot; }
  /// This rank failed during the shot with `error`: tell the other ranks of the shot, which would
  /// otherwise wait for this one, and drop what this rank has in flight. Returns the error as the
  /// shot reports it.
  virtual std::string abandon_shot(const std::string& error) { return error; }
};

/// A prepared run.
class Simulation {
public:
  /// Build everything up to the first step of `survey` (one shot, survey_for_shot) on the model
  /// `equation` holds: plan, problem, backend, kernels. Checks input (InputError), allocates on
  /// the device (RuntimeFailure). `notice` receives one-line messages (backend fallback, autotune)
  /// and may be empty.
  Simulation(const Survey& survey, std::shared_ptr<const Equation> equation,
             const SimulationOptions& options, std::function<void(const std::string&)> notice = {});
  /// An acoustic run on the dense velocity model `velocity` (x fastest); InputError when the
  /// survey's physics is not acoustic.
  Simulation(const Survey& survey, std::vector<float> velocity, const SimulationOptions& options,
             std::function<void(const std::string&)> notice = {});

  Simulation(const Simulation&) = delete; ///< the backend points into m_problem
  Simulation& operator=(const Simulation&) = delete;

  const Plan& plan() const { return m_plan; }
  Physics physics() const { return m_equation->physics(); }
  const Problem& problem() const { return *m_problem; }
  Backend& backend() { return *m_backend; }
  /// Kernel name of each region (RegionId order; "-" for an empty region).
  std::array<std::string, kRegionCount> kernel_names() const;
  /// Milliseconds the constructor spent on the host problem (plan, medium, eta, taps) and on the
  /// device (creating the backend, allocating, uploading; autotuning when asked).
  double problem_ms() const { return m_problem_ms; }
  double device_ms() const { return m_device_ms; }

  /// Make this run one subdomain's of a decomposed grid: `hooks` joins its time loop, traces and
  /// fields. The problem (Equation::build_problem) must then be that subdomain's.
  void set_domain_hooks(std::unique_ptr<DomainHooks> hooks) { m_hooks = std::move(hooks); }
  /// Work for the host between two steps, once the step is enqueued: rank 0 of a run over MPI
  /// answers the other ranks there (a request for a shot, a gather handed over) within a step
  /// rather than at the next progress call. It must be cheap when there is nothing to do; its
  /// time counts in the step's (rank 0's stepping includes writing the gathers it receives).
  void set_between_steps(std::function<void()> work) { m_between_steps = std::move(work); }
  /// The hooks set_domain_hooks gave; null for a run of the whole grid.
  DomainHooks* domain_hooks() { return m_hooks.get(); }

  /// Switch to another shot of the same survey (`survey_for_shot`): new source and receiver taps
  /// and samples on the same grid, model and kernels; the fields and traces restart at zero.
  void load_shot(const Survey& shot);

  /// Advance from step n to n + 1: the shell, the halo exchange started, the interior, the
  /// exchange waited for, then sources, swap, free surface and receivers (Backend::finish_step).
  void step(int n);

  /// Run every step. `progress(steps_done)` is called every few steps; snapshots of the first
  /// field are appended to `output` when it is not null. Throws Interrupted between steps once
  /// SIGINT or SIGTERM has arrived (solver/interrupt.hpp), and RuntimeFailure when a field or a
  /// snapshot holds a NaN or an Inf (solver/finite_watch.hpp: every field is scanned every few
  /// steps and after the last one).
  LoopTiming run(const std::function<void(int)>& progress, OutputFile* output) {
    return run(progress, output, output != nullptr);
  }
  /// As above; `snapshots` says whether the plan's snapshots are taken. In a decomposed run every
  /// rank of the shot takes them (their gather is collective) and the one that writes passes
  /// `output`; the others pass null.
  LoopTiming run(const std::function<void(int)>& progress, OutputFile* output, bool snapshots);

  /// Traces at every step: [receivers][steps + 1], sample n at t = n dt. RuntimeFailure when a
  /// sample is not finite.
  std::vector<float> raw_traces();
  /// Traces resampled to the plan's dt_out: [receivers][trace_samples]. RuntimeFailure when a
  /// sample, before or after resampling, is not finite.
  std::vector<float> output_traces();
  /// The current field `field` (wavefield_names order: u; p, q), dense, x fastest, on the run's
  /// grid (empty on a rank of a decomposed run that does not write).
  std::vector<float> field(int field = 0);
  /// The first field after the last step (field(0)).
  std::vector<float> wavefield() { return field(0); }

private:
  /// The traces of the run's receivers (through the hooks); false on a rank that does not write.
  bool gather_traces(std::vector<float>& traces);

  Survey m_survey;
  std::shared_ptr<const Equation> m_equation;
  double m_problem_ms = 0, m_device_ms = 0;
  Plan m_plan;
  std::unique_ptr<Problem> m_problem;
  std::unique_ptr<Backend> m_backend;
  RegionKernels m_kernels{};
  std::unique_ptr<DomainHooks> m_hooks;
  std::function<void()> m_between_steps;
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
