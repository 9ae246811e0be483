#include "solver/tti_run.hpp"

#include "io/errors.hpp"
#include "io/h5_output.hpp"
#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "kernels/tti_backend.hpp"
#include "models/velocity.hpp"
#include "solver/finite_watch.hpp"
#include "solver/interrupt.hpp"
#include "solver/plan.hpp"
#include "solver/simulation.hpp"
#include "solver/wavelet.hpp"
#include "version.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <sstream>

namespace minimod {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr double kPi = 3.14159265358979323846;

SurveyRunReport run_tti_shots(const Survey& survey, const SurveyRunOptions& options,
                              BackendKind kind, const std::string& spec, const std::string& what,
                              PartsStore& store, const SegyTarget& segy);

/// Where the time loop appends shot 0's snapshots: the snapshot part of the run's parts folder.
struct SnapshotSink {
  OutputFile* file = nullptr;
  void append_snapshot(int step, double time, const std::vector<float>& data) {
    file->append_snapshot(step, time, data);
  }
};

/// Highest frequency of the survey: boundary.fmax, else the highest of every shot's sources.
double survey_fmax(const Survey& s) {
  if (s.boundary.fmax) return *s.boundary.fmax;
  double fmax = 0;
  for (const auto& shot : s.shots) {
    for (const auto& src : shot.sources) {
      fmax = std::max(fmax, wavelet_fmax(src.wavelet, src.wavelet.loc.where() + ".file"));
    }
  }
  return fmax;
}

} // namespace

TtiModel build_tti_model(const Survey& s, const Grid& g) {
  if (!s.anisotropy) throw InputError(s.path + ": anisotropy: missing for physics: tti");
  const AnisotropySpec& a = *s.anisotropy;
  const double angle = a.degrees ? kPi / 180.0 : 1.0;
  TtiModel m;
  m.vp = build_velocity(s.model, g, &m.notice);
  m.epsilon = build_property(a.epsilon, g);
  m.delta = build_property(a.delta, g);
  m.theta = build_property(a.theta, g, angle);
  if (a.phi) m.phi = build_property(*a.phi, g, angle);
  validate_tti_model(g, m, a.loc.where());
  return m;
}

TtiPlan plan_tti(const Survey& s, const TtiModel& m, int steps_override) {
  TtiPlanOptions o;
  o.steps = steps_override > 0 ? steps_override : (s.time.steps ? *s.time.steps : 0);
  o.duration = s.time.duration;
  o.cfl = s.time.cfl;
  o.dt = s.time.dt;
  o.vmax = s.model.vmax;
  o.layer_width = s.boundary.width;
  o.ntaper = s.boundary.ntaper;
  o.fmax = survey_fmax(s);
  TtiPlan p = make_tti_plan(make_grid(s.grid), m, o);
  // The survey checks of the acoustic plan, on the TTI layer and time axis.
  const auto [vmin, vmax] = std::minmax_element(m.vp.begin(), m.vp.end());
  if (!m.notice.empty()) p.warnings.push_back(m.notice);
  check_survey_traps(s, {p.grid, p.layer, *vmin, *vmax, o.fmax, p.steps * p.dt}, p.warnings);
  return p;
}

std::string describe_tti_plan(const Survey& s, const TtiModel& m, const TtiPlan& p) {
  std::ostringstream o;
  const Grid& g = p.grid;
  const auto [emin, emax] = std::minmax_element(m.epsilon.begin(), m.epsilon.end());
  const auto [dmin, dmax] = std::minmax_element(m.delta.begin(), m.delta.end());
  o << "survey      " << s.path << (s.name.empty() ? "" : " (" + s.name + ")") << "\n";
  o << "physics     tti (acoustic, tilted transversely isotropic), "
    << (tti_model_has_azimuth(m) ? "tilt and azimuth" : "tilt only (no azimuth array)") << "\n";
  o << "grid        " << g.nx << " x " << g.ny << " x " << g.nz << " points (" << g.points()
    << "), spacing " << g.dx << " x " << g.dy << " x " << g.dz << " m\n";
  o << "model       vmax " << p.vmax << " m/s, epsilon " << *emin << " .. " << *emax << ", delta "
    << *dmin << " .. " << *dmax << ", fastest P wave " << p.speed_max << " m/s\n";
  o << "time        dt " << p.dt << " s (TTI stability limit " << p.dt_limit
    << " s; the isotropic one would be " << p.dt_limit_iso << " s), " << p.steps << " steps\n";
  o << "layer       x " << p.layer.x_lo << "/" << p.layer.x_hi << ", y " << p.layer.y_lo << "/"
    << p.layer.y_hi << ", z " << p.layer.z_lo << "/" << p.layer.z_hi << " points\n";
  o << "shots       " << s.shots.size() << ", receivers " << s.receivers.size() << "\n";
  const FieldLayout l = make_field_layout(g.nx, g.ny, g.nz, p.layer.x_lo);
  const bool azimuth = tti_model_has_azimuth(m);
  const bool phi = tti_layer_has_elliptic_point(g, p.layer, m);
  const auto bytes = static_cast<double>(tti_array_bytes(l.size, azimuth, p.layer.any(), phi));
  const double arrays = bytes / (static_cast<double>(l.size) * 4.0); // 7 to 9.5
  o << "memory      " << format_bytes(bytes) << " (" << arrays
    << " padded float arrays: p, q and their previous steps, vp2dt2, the 16-bit anisotropy and "
       "axis"
    << (azimuth ? " with n_y" : "")
    << (!p.layer.any() ? ""
        : phi          ? ", eta and phi"
                       : ", eta (no phi: the layer is nowhere elliptic)")
    << ")\n";
  std::string why;
  o << "backend     ";
  if (cuda_device_available(&why)) {
    // What the default resolves to on this GPU (semi+b+tma needs the Hopper tensor copies).
    std::string kernels = default_kernel_spec(BackendKind::Cuda, Physics::Tti);
    try {
      const RegionKernels k = resolve_kernels("", BackendKind::Cuda, Physics::Tti,
                                              make_regions(g, p.layer), l, "--kernel");
      kernels = "inner " + k[0]->name();
      if (p.layer.any()) kernels += ", layers " + k[1]->name();
    } catch (const InputError&) {
      // The run reports it; the summary shows the spec.
    }
    o << "cuda (TTI kernels " << kernels << " unless --kernel says otherwise)";
  } else {
    o << "cpu reference (no GPU: " << why << ")";
  }
  o << "\n";
  for (const auto& w : p.warnings)
    o << "warning: " << w << "\n";
  return o.str();
}

SurveyRunReport run_tti_survey(const Survey& survey, const SurveyRunOptions& options) {
  if (mpi_size() > 1) {
    throw InputError("physics: tti runs in one process for now; allowed: without mpirun");
  }
  // The backend: the TTI CPU reference or the CUDA TTI kernels.
  const BackendKind kind = resolve_backend_choice(options.simulation.backend, options.hooks.notice,
                                                  "running the TTI CPU reference");
  std::string spec = options.simulation.kernel_spec, what = "--kernel";
  if (spec.empty() && survey.kernel) {
    spec = *survey.kernel;
    what = survey.kernel_loc.where();
    if (kind == BackendKind::Cpu && options.simulation.backend == BackendChoice::Auto) spec.clear();
  }
  if (is_auto_kernel_spec(spec)) {
    // No TTI autotuning yet: the default is the pair measured fastest (docs/kernels.md).
    if (kind == BackendKind::Cuda && options.hooks.notice)
      options.hooks.notice("--kernel auto: no TTI autotuning yet; using the measured default " +
                           default_kernel_spec(BackendKind::Cuda, Physics::Tti));
    spec.clear();
  }
  if (kind == BackendKind::Cpu && !spec.empty() && spec != "cpu") {
    throw InputError(what + ": '" + spec +
                     "' is not a TTI CPU kernel; allowed on the CPU: cpu (the TTI reference), or "
                     "--backend cuda for the TTI GPU kernels");
  }

  // Before any computation: output checks, the lock, the manifest (or the kept shots).
  const SegyTarget segy = segy_target(survey, options);
  const std::unique_ptr<PartsStore> store = open_parts(survey, options, segy);
  try {
    return run_tti_shots(survey, options, kind, spec, what, *store, segy);
  } catch (...) {
    abandon_parts(*store, survey, options);
    throw;
  }
}

namespace {

/// The shots of a TTI survey, each written as a part of `store`; the output assembled at the end.
SurveyRunReport run_tti_shots(const Survey& survey, const SurveyRunOptions& options,
                              BackendKind kind, const std::string& spec, const std::string& what,
                              PartsStore& store, const SegyTarget& segy) {
  SurveyRunReport report;
  const auto start = Clock::now();
  auto t0 = Clock::now();
  const Grid grid = make_grid(survey.grid);
  const TtiModel model = build_tti_model(survey, grid);
  const TtiPlan plan = plan_tti(survey, model, options.simulation.steps_override);
  report.model_ms = ms_since(t0);
  // The medium as /model stores it; phi, when the survey gives none, is 0 everywhere.
  StoredModel stored = model_geometry({grid.nx, grid.ny, grid.nz}, {grid.ox, grid.oy, grid.oz},
                                      {grid.dx, grid.dy, grid.dz});
  add_model_property(stored, "vp", "m/s", model.vp);
  add_model_property(stored, "epsilon", "1", model.epsilon);
  add_model_property(stored, "delta", "1", model.delta);
  add_model_property(stored, "theta", "rad", model.theta);
  add_model_property(stored, "phi", "rad",
                     model.phi.empty() ? std::vector<float>(grid.points(), 0.0f) : model.phi);
  const std::vector<int> chosen = selected_shots(survey, options);
  for (const int s : chosen)
    survey_for_shot(survey, s);

  // Trace and snapshot sampling as for the acoustic plan, on the TTI time axis.
  Plan sampling = make_plan(survey, model.vp, 1);
  const double duration = plan.steps * plan.dt;
  const double dt_out = survey.output.dt_out ? *survey.output.dt_out : plan.dt;
  const int samples = static_cast<int>(std::floor(duration / dt_out + 1e-9)) + 1;
  check_segy_sampling(survey, segy, dt_out);
  const int every = survey.output.snapshot_every;
  SnapshotGeometry geometry = sampling.snapshot_geometry;
  geometry.expected_count = every > 0 ? plan.steps / every : 0;

  Plan shown = sampling; // what on_plan shows: the TTI grid, dt and steps
  shown.dt = plan.dt;
  shown.steps = plan.steps;
  shown.layer = plan.layer;
  if (options.hooks.on_plan) options.hooks.on_plan(shown);
  for (const auto& w : plan.warnings) {
    if (options.hooks.notice) options.hooks.notice("warning: " + w);
  }

  OutputMeta meta;
  meta.program_version = kProgramVersion;
  meta.git_commit = kGitCommit;
  meta.survey_text = survey.text;
  meta.survey_path = survey.path;
  meta.physics = "tti";
  // The medium once; each shot replaces the taps.
  TtiProblem problem = build_tti_problem(plan, model, {}, {}, survey.interpolation);
  std::unique_ptr<TtiBackend> gpu;
  std::array<std::string, kRegionCount> kernel_names;
  kernel_names.fill("cpu");
  if (kind == BackendKind::Cuda) {
    // The backend first: a build without CUDA, or no GPU, is a runtime failure that says so,
    // not an unknown kernel name.
    gpu = make_cuda_tti_backend();
    const RegionKernels kernels =
        resolve_kernels(spec, kind, Physics::Tti, problem.regions, problem.layout, what);
    gpu->setup(problem, kernels);
    for (int r = 0; r < kRegionCount; ++r)
      kernel_names[r] = problem.regions[r].box.empty() ? "-" : kernels[r]->name();
    // The host copy of the medium is no longer needed (a 900^3 model is ~10 GB of it), except
    // vp2dt2: set_tti_shot scales physical sources by it.
    for (auto* a : {&problem.aniso, &problem.axis_xz})
      std::vector<std::uint32_t>().swap(*a);
    std::vector<std::int16_t>().swap(problem.axis_y);
    std::vector<float>().swap(problem.eta);
  }
  // On the CPU one reference simulation owns the medium and serves every shot.
  std::unique_ptr<TtiSimulation> cpu;
  if (!gpu) cpu = std::make_unique<TtiSimulation>(plan, std::move(problem));
  meta.backend = backend_name(kind);
  meta.device_name = gpu ? gpu->device_name() : cpu_model_name();
  meta.region_kernels = kernel_names;
  meta.grid_shape = {grid.nx, grid.ny, grid.nz};
  meta.grid_spacing = {grid.dx, grid.dy, grid.dz};
  meta.grid_origin = {grid.ox, grid.oy, grid.oz};
  meta.layer_widths = {plan.layer.x_lo, plan.layer.x_hi, plan.layer.y_lo,
                       plan.layer.y_hi, plan.layer.z_lo, plan.layer.z_hi};
  meta.dt = plan.dt;
  meta.steps = plan.steps;
  const bool many = chosen.size() > 1;
  report.skipped = store.complete_shots();
  std::vector<int> todo;
  for (const int shot : chosen) {
    if (!store.shot_complete(shot)) todo.push_back(shot);
  }
  int done = static_cast<int>(report.skipped.size());
  double modelled_s = 0;

  // p of the current shot, dense (from the device when the GPU runs it).
  auto field_p = [&] {
    if (cpu) return cpu->wavefield_p();
    std::vector<float> dense;
    gpu->fetch_field(dense);
    return dense;
  };
  std::vector<float> raw;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const int shot = todo[i];
    throw_if_interrupted();
    if (many && options.hooks.notice) options.hooks.notice(shot_heading(shot, chosen));
    if (options.on_shot_start) {
      options.on_shot_start(ShotStart{
          shot, done, static_cast<int>(chosen.size()), static_cast<int>(todo.size() - i - 1),
          report.shots.empty() ? 0.0 : modelled_s / report.shots.size()});
    }
    const auto shot_t0 = Clock::now();
    ShotTiming timing;
    timing.shot = shot;
    t0 = Clock::now();
    const Survey s = survey_for_shot(survey, shot);
    std::vector<TtiSource> sources;
    for (const auto& src : s.sources) {
      sources.push_back(TtiSource{
          src.position,
          sample_wavelet(src.wavelet, plan.dt, plan.steps, src.wavelet.loc.where() + ".file"),
          src.injection});
    }
    std::vector<Vec3> receivers;
    for (const auto& r : s.receivers)
      receivers.push_back(r.position);
    if (gpu) {
      set_tti_shot(problem, sources, receivers, s.interpolation);
      gpu->set_taps(problem);
    } else {
      cpu->load_shot(sources, receivers, s.interpolation);
    }
    timing.setup_ms = ms_since(t0);

    t0 = Clock::now();
    const bool snapshots =
        shot == 0 && every > 0 && geometry.expected_count > 0 && !store.snapshots_complete();
    std::unique_ptr<OutputFile> snapshot_part;
    if (snapshots) {
      snapshot_part = store.begin_snapshots(meta);
      snapshot_part->begin_snapshots(geometry);
    }
    SnapshotSink out{snapshot_part.get()};
    const int chunk = std::max(1, plan.steps / 40);
    FiniteWatch watch(
        make_watch_setup(s, plan, (cpu ? cpu->problem() : problem).source_samples, true));
    for (int n = 0; n < plan.steps; ++n) {
      throw_if_interrupted();
      cpu ? cpu->step(n) : gpu->step(n);
      if (snapshots && (n + 1) % every == 0) {
        std::vector<float> snapshot = extract_snapshot(field_p(), grid, sampling.snapshot_box,
                                                       sampling.snapshot_decimate, geometry);
        require_finite_snapshot(snapshot, n + 1, (n + 1) * plan.dt, sampling.snapshot_box,
                                sampling.snapshot_decimate, geometry);
        out.append_snapshot(n + 1, (n + 1) * plan.dt, snapshot);
      }
      // The NaN/Inf watch (solver/finite_watch.hpp): scans of p and q every few steps.
      if (watch.due(n + 1)) {
        watch.check(n + 1, cpu ? cpu->scan_field(false) : gpu->scan_field(false), "p");
        watch.check(n + 1, cpu ? cpu->scan_field(true) : gpu->scan_field(true), "q");
      }
      if (options.hooks.on_progress && ((n + 1) % chunk == 0 || n + 1 == plan.steps)) {
        if (gpu) gpu->synchronize(); // so that the progress shows real time
        options.hooks.on_progress(n + 1);
      }
    }
    if (cpu) {
      raw = cpu->traces();
    } else {
      gpu->fetch_traces(raw);
    }
    timing.step_ms = ms_since(t0);

    t0 = Clock::now();
    ShotGather g;
    g.shot = shot;
    for (const auto& src : s.sources)
      g.source_positions.push_back(src.position);
    g.receiver_positions = receivers;
    g.dt_out = dt_out;
    g.samples = samples;
    g.traces = resample_finite_traces(raw, receivers.size(), plan.dt, dt_out, samples,
                                      "shot " + std::to_string(shot) + "'s traces");
    g.wavelet_dt = plan.dt;
    g.wavelet_samples = plan.steps;
    for (const TtiSource& src : sources)
      g.wavelet.insert(g.wavelet.end(), src.samples.begin(), src.samples.end());
    if (snapshot_part) snapshot_part->commit();
    store.write_shot(meta, g);
    ++done;
    if (many && options.hooks.notice) {
      options.hooks.notice("shot " + std::to_string(shot) + " done (" + std::to_string(done) + "/" +
                           std::to_string(chosen.size()) + " done)");
    }
    timing.output_ms = ms_since(t0);
    report.shots.push_back(timing);
    modelled_s += ms_since(shot_t0) * 1e-3;
    report.last.timing.total_ms = timing.step_ms;
    report.last.timing.median_step_ms = timing.step_ms / plan.steps;
    report.last.timing.mpoints_per_s =
        static_cast<double>(grid.points()) * plan.steps / (timing.step_ms * 1e-3) / 1e6;
  }
  // The last shot run leaves its final field in place: one copy, not one a shot.
  if (!report.shots.empty()) report.last.final_field = field_stats(field_p());
  report.last.plan = shown;
  report.last.backend = meta.backend;
  report.last.device = meta.device_name;
  report.last.kernels = meta.region_kernels;
  report.last.output_file = options.output;
  throw_if_interrupted();
  store.assemble(meta, chosen, segy, [&](OutputFile& out) {
    out.write_model(stored);
    out.set_attribute("run_ms_total", ms_since(start));
  });
  report.total_ms = ms_since(start);
  return report;
}

} // namespace

} // namespace minimod
