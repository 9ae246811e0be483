#include "solver/simulation.hpp"

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "kernels/autotune.hpp"
#include "solver/finite_watch.hpp"
#include "solver/interrupt.hpp"
#include "solver/wavelet.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <utility>

namespace minimod {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

} // namespace

BackendChoice parse_backend_choice(const std::string& text, const std::string& what) {
  if (text == "auto") return BackendChoice::Auto;
  if (text == "cpu") return BackendChoice::Cpu;
  if (text == "cuda") return BackendChoice::Cuda;
  if (text == "hip") return BackendChoice::Hip;
  throw InputError(what + ": '" + text + "' is not a backend; allowed: auto, cpu, cuda, hip");
}

std::vector<float> extract_snapshot(const std::vector<float>& dense, const Grid& g, const Box& box,
                                    int d, const SnapshotGeometry& sg) {
  std::vector<float> out(static_cast<std::size_t>(sg.shape[0]) * sg.shape[1] * sg.shape[2]);
  std::size_t n = 0;
  for (int k = box.z0; k < box.z1; k += d) {
    for (int j = box.y0; j < box.y1; j += d) {
      const std::size_t row = (static_cast<std::size_t>(k) * g.ny + j) * g.nx;
      for (int i = box.x0; i < box.x1; i += d)
        out[n++] = dense[row + i];
    }
  }
  return out;
}

FieldStats field_stats(const std::vector<float>& f) {
  FieldStats s;
  if (f.empty()) return s;
  double lo = f[0], hi = f[0], sum2 = 0;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) reduction(+ : sum2)
  for (std::size_t n = 0; n < f.size(); ++n) {
    lo = std::min(lo, static_cast<double>(f[n]));
    hi = std::max(hi, static_cast<double>(f[n]));
    sum2 += static_cast<double>(f[n]) * f[n];
  }
  s.min = lo;
  s.max = hi;
  s.rms = std::sqrt(sum2 / static_cast<double>(f.size()));
  return s;
}

namespace {

/// The acoustic equation on `velocity`, for a survey of physics: acoustic.
std::shared_ptr<const Equation> acoustic_equation(const Survey& survey,
                                                  std::vector<float> velocity) {
  if (survey.physics != "acoustic") {
    throw InputError("physics: '" + survey.physics +
                     "' needs its model from the survey; a velocity model serves physics: "
                     "acoustic only");
  }
  return make_acoustic_equation(std::move(velocity));
}

} // namespace

Simulation::Simulation(const Survey& survey, std::vector<float> velocity,
                       const SimulationOptions& options,
                       std::function<void(const std::string&)> notice)
    : Simulation(survey, acoustic_equation(survey, std::move(velocity)), options,
                 std::move(notice)) {}

Simulation::Simulation(const Survey& survey, std::shared_ptr<const Equation> equation,
                       const SimulationOptions& options,
                       std::function<void(const std::string&)> notice)
    : m_survey(survey), m_equation(std::move(equation)) {
  const Physics physics = m_equation->physics();
  const BackendKind kind = resolve_backend_choice(
      options.backend, notice,
      physics == Physics::Tti ? "running the TTI CPU reference" : "running on the CPU backend");
  // The backend (on CUDA: the device context, streams and events, a good part of a GPU run's
  // start-up) is created while the host builds the problem; setup needs both.
  std::future<std::unique_ptr<Backend>> backend =
      std::async(std::launch::async, [kind, physics] { return make_backend(kind, physics); });
  if (m_equation->model_on_device() && kind != BackendKind::Cuda && kind != BackendKind::Hip) {
    throw InputError("model.file: a GPU array is not allowed on the " +
                     std::string(backend_name(kind)) +
                     " backend: it reads its model in host memory; allowed: a host array, or a "
                     "GPU backend");
  }
  const auto t0 = std::chrono::steady_clock::now();
  m_plan = m_equation->make_plan(m_survey, options.steps_override);
  // The figure validate prints, less the model (already held): stop before any allocation.
  require_host_memory(m_plan.host_bytes - m_equation->model_bytes() +
                          (kind == BackendKind::Cpu ? static_cast<double>(m_plan.device_bytes) : 0),
                      "the run (host problem and traces" +
                          std::string(kind == BackendKind::Cpu ? ", and the fields of the CPU "
                                                                 "backend)"
                                                               : ")"));
  m_problem = m_equation->build_problem(m_survey, m_plan);
  if (options.max_device_bytes > 0 && m_problem->device_bytes() > options.max_device_bytes) {
    const bool split = m_problem->subdomain.has_neighbour();
    throw InputError(
        "--max-device-memory: " + format_bytes(static_cast<double>(options.max_device_bytes)) +
        ": " + (split ? "this rank's subdomain of " : "the ") + std::to_string(m_problem->grid.nx) +
        " x " + std::to_string(m_problem->grid.ny) + " x " + std::to_string(m_problem->grid.nz) +
        " points needs " + format_bytes(static_cast<double>(m_problem->device_bytes())) +
        " of device memory; allowed: a cap of at least that, or the grid split over "
        "more ranks (--decompose, mpirun -np N)");
  }
  const auto t1 = std::chrono::steady_clock::now();
  m_problem_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();

  std::string spec = options.kernel_spec, what = "--kernel";
  if (spec.empty() && m_survey.kernel) {
    spec = *m_survey.kernel;
    what = m_survey.kernel_loc.where();
    // A survey written for the GPU still runs on the CPU fallback.
    if (kind == BackendKind::Cpu && options.backend == BackendChoice::Auto) spec.clear();
  }
  // "auto": on the CPU backend its one kernel; on a GPU, timed on this grid (kernels/autotune).
  const bool tune = is_auto_kernel_spec(spec);
  if (tune) spec.clear();
  // The backend first: a build without CUDA, or no GPU, is a runtime failure that says so, not
  // an unknown kernel name.
  m_backend = backend.get();
  m_kernels = resolve_kernels(spec, kind, physics, m_problem->regions, m_problem->layout, what);
  m_backend->setup(*m_problem, m_kernels);
  // What the device holds now need not stay on the host too (tens of GB for a large TTI model).
  if (kind != BackendKind::Cpu) m_equation->release_host_medium(*m_problem);
  if (tune && kind != BackendKind::Cpu) {
    m_kernels =
        autotune_kernels(*m_backend, *m_problem, physics, AutotuneOptions{}, notice).kernels;
  }
  m_device_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
}

BackendKind resolve_backend_choice(BackendChoice choice,
                                   const std::function<void(const std::string&)>& notice,
                                   const std::string& fallback) {
  switch (choice) {
  case BackendChoice::Cpu:
    return BackendKind::Cpu;
  case BackendChoice::Cuda:
  case BackendChoice::Hip: {
    const BackendKind want = choice == BackendChoice::Cuda ? BackendKind::Cuda : BackendKind::Hip;
#if defined(MINIMOD_HAVE_GPU)
    if (want != kGpuBackend)
      throw RuntimeFailure(std::string("--backend ") + backend_name(want) +
                           ": this minimod-gpu was built with the " + backend_name(kGpuBackend) +
                           " backend (one GPU backend a binary); use --backend " +
                           backend_name(kGpuBackend) + ", auto or cpu");
#else
    // make_backend says how to build one; a CPU-only binary still parses the name.
#endif
    return want;
  }
  case BackendChoice::Auto:
    break;
  }
  std::string why;
  if (cuda_device_available(&why)) return kGpuBackend;
  // Plain words first; the technical reason (a CUDA error name) only after them.
  if (notice) notice("no GPU found: " + fallback + " (" + why + ")");
  return BackendKind::Cpu;
}

bool is_auto_kernel_spec(const std::string& spec) {
  const auto b = spec.find_first_not_of(" \t");
  const auto e = spec.find_last_not_of(" \t");
  return b != std::string::npos && spec.substr(b, e - b + 1) == "auto";
}

void Simulation::load_shot(const Survey& shot) {
  m_survey = shot;
  m_equation->set_shot(m_survey, m_plan, *m_problem);
  m_backend->set_taps(*m_problem);
}

std::array<std::string, kRegionCount> Simulation::kernel_names() const {
  std::array<std::string, kRegionCount> names;
  for (int r = 0; r < kRegionCount; ++r) {
    names[r] = m_problem->regions[r].box.empty() ? "-" : m_kernels[r]->name();
  }
  return names;
}

void Simulation::step(int n) {
  m_backend->update(StepPart::Shell);
  if (m_hooks) m_hooks->start_exchange(*m_backend, n);
  m_backend->update(StepPart::Interior);
  if (m_hooks) m_hooks->finish_exchange(*m_backend, n);
  m_backend->finish_step(n);
}

LoopTiming Simulation::run(const std::function<void(int)>& progress, OutputFile* output,
                           bool snapshots) {
  const int steps = m_plan.steps;
  const int chunk = std::max(1, steps / 40);
  const int every = snapshots ? m_plan.snapshot_every : 0;
  if (output && every > 0 && m_plan.snapshot_count > 0)
    output->begin_snapshots(m_plan.snapshot_geometry);

  std::vector<double> chunk_ms;
  double snapshot_ms = 0;
  std::vector<float> dense, global;
  int pending = -1; // step of a snapshot whose copy is in flight
  auto finish_snapshot = [&] {
    const auto t0 = Clock::now();
    m_backend->snapshot_end(dense);
    const bool gathered = !m_hooks || m_hooks->gather_field(dense, global);
    if (gathered && output) {
      std::vector<float> snapshot =
          extract_snapshot(m_hooks ? global : dense, m_plan.grid, m_plan.snapshot_box,
                           m_plan.snapshot_decimate, m_plan.snapshot_geometry);
      require_finite_snapshot(snapshot, pending, pending * m_plan.dt, m_plan.snapshot_box,
                              m_plan.snapshot_decimate, m_plan.snapshot_geometry);
      output->append_snapshot(pending, pending * m_plan.dt, snapshot);
    }
    pending = -1;
    snapshot_ms += ms_since(t0);
  };

  // The NaN/Inf watch (solver/finite_watch.hpp): a scan of every field every few steps, timed
  // with them.
  FiniteWatch watch(
      make_watch_setup(m_survey, m_plan, m_problem->source_samples, physics() == Physics::Tti));
  const std::vector<std::string> fields = wavefield_names(physics());
  m_backend->synchronize();
  const auto start = Clock::now();
  auto chunk_start = start;
  double chunk_snapshot_ms = 0;
  int chunk_first = 0; // the first step of the chunk being timed
  // Steps a pass where the backend advances several in one pass over memory (the CPU backend's
  // multi-step pass, docs/kernels.md): a pass ends where the loop has work after a step (a
  // snapshot, a scan), so those see the same fields as after single steps. A chunk of the
  // timing ends at the first pass end at or after its size.
  auto pass_from = [&](int n) {
    // Asked each time: a backend may settle on single steps after its first passes.
    const int pass_most = m_hooks ? 1 : m_backend->pass_steps();
    int count = 1;
    while (count < pass_most && n + count < steps) {
      const int done = n + count; // steps done after the pass so far
      if ((every > 0 && done % every == 0) || watch.due(done)) break;
      ++count;
    }
    return count;
  };
  for (int n = 0; n < steps; ++n) {
    throw_if_interrupted();
    const int pass = pass_from(n);
    if (pass > 1) {
      m_backend->step_pass(n, pass);
      n += pass - 1;
    } else {
      step(n);
    }
    if (m_between_steps) m_between_steps();
    if (pending >= 0) finish_snapshot(); // the copy overlapped this step
    if (every > 0 && (n + 1) % every == 0) {
      const auto t0 = Clock::now();
      m_backend->snapshot_begin(0);
      pending = n + 1;
      snapshot_ms += ms_since(t0);
    }
    if (watch.due(n + 1)) {
      for (int f = 0; f < static_cast<int>(fields.size()); ++f) {
        const FiniteScan scan = m_backend->scan_field(f);
        watch.check(n + 1, m_hooks ? m_hooks->reduce_scan(scan) : scan,
                    fields[static_cast<std::size_t>(f)]);
      }
    }
    if (n + 1 - chunk_first >= chunk || n + 1 == steps) {
      m_backend->synchronize();
      const double ms = ms_since(chunk_start) - (snapshot_ms - chunk_snapshot_ms);
      chunk_ms.push_back(ms / (n + 1 - chunk_first));
      chunk_first = n + 1;
      chunk_snapshot_ms = snapshot_ms;
      if (progress) progress(n + 1);
      chunk_start = Clock::now();
    }
  }
  if (pending >= 0) finish_snapshot();
  m_backend->synchronize();

  LoopTiming t;
  t.total_ms = ms_since(start) - snapshot_ms;
  std::sort(chunk_ms.begin(), chunk_ms.end());
  t.median_step_ms = chunk_ms.empty() ? 0 : chunk_ms[chunk_ms.size() / 2];
  t.mpoints_per_s =
      t.total_ms > 0 ? static_cast<double>(m_plan.grid.points()) * steps / (t.total_ms * 1e-3) / 1e6
                     : 0;
  return t;
}

bool Simulation::gather_traces(std::vector<float>& traces) {
  if (!m_hooks) {
    m_backend->fetch_traces(traces);
    return true;
  }
  std::vector<float> local;
  m_backend->fetch_traces(local);
  return m_hooks->gather_traces(local, traces);
}

std::vector<float> Simulation::raw_traces() {
  std::vector<float> t;
  if (gather_traces(t)) {
    require_finite_traces(t, t.size() / (static_cast<std::size_t>(m_plan.steps) + 1), m_plan.dt,
                          "the traces");
  }
  return t;
}

std::vector<float> Simulation::output_traces() {
  std::vector<float> raw;
  if (!gather_traces(raw)) return {};
  return resample_finite_traces(raw, raw.size() / (static_cast<std::size_t>(m_plan.steps) + 1),
                                m_plan.dt, m_plan.dt_out, m_plan.trace_samples, "the traces");
}

std::vector<float> Simulation::field(int field) {
  std::vector<float> dense;
  m_backend->fetch_field(field, dense);
  if (!m_hooks) return dense;
  std::vector<float> global;
  return m_hooks->gather_field(dense, global) ? global : std::vector<float>{};
}

} // namespace minimod
