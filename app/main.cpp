/// minimod-gpu: the command line. One catch maps exceptions to the exit codes of core/errors.hpp.
#include "app/bench.hpp"
#include "app/plot.hpp"
#include "app/progress.hpp"
#include "core/errors.hpp"
#include "core/field_layout.hpp"
#include "io/durable_file.hpp"
#include "io/h5_output.hpp"
#include "io/parts_store.hpp"
#include "io/survey.hpp"
#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "models/velocity.hpp"
#include "solver/decomposition.hpp"
#include "solver/interrupt.hpp"
#include "solver/plan.hpp"
#include "solver/simulation.hpp"
#include "solver/survey_run.hpp"
#include "solver/validate.hpp"
#include "version.hpp"

#include <CLI/CLI.hpp>
#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <optional>

namespace minimod {
namespace {

/// The program's start (static initialisation, before main): the summary's `wall.program_ms`.
const std::chrono::steady_clock::time_point g_program_start = std::chrono::steady_clock::now();

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

/// The --summary file. Field order is kept (ordered_json) for people reading it. Doubles are
/// written with the fewest digits that read back exactly; a non-finite value (a wavefield that
/// blew up) is written as null, JSON having no NaN or Inf; bytes that are not UTF-8 (an output
/// path in another encoding) become U+FFFD rather than failing the run at its end.
std::string summary_json(const Survey& s, const RunReport& r, int steps,
                         const SurveyRunReport& survey) {
  using Json = nlohmann::ordered_json;
  const Plan& p = r.plan;
  Json j;
  j["program"] = "minimod-gpu";
  j["version"] = kProgramVersion;
  j["commit"] = kGitCommit;
  j["date"] = utc_now();
  Json layer = Json::array();
  for (int a = 0; a < 3; ++a) {
    layer.push_back(p.layer.on(a, false));
    layer.push_back(p.layer.on(a, true));
  }
  j["grid"] = {{"shape", {p.grid.nx, p.grid.ny, p.grid.nz}},
               {"spacing", {p.grid.dx, p.grid.dy, p.grid.dz}},
               {"layer", layer}};
  // The layer's formulation, and the one-face return its width was chosen for when the survey
  // gave a target (or a C-PML took the default one) instead of a width.
  j["boundary"] = {{"type", boundary_type_name(s.boundary.type)}};
  if (const std::optional<double> target = layer_target_db(s.boundary))
    j["boundary"]["reflection_db"] = *target;
  j["dt"] = p.dt;
  j["steps"] = steps;
  j["backend"] = r.backend;
  j["device"] = r.device;
  Json kernels = Json::object();
  for (int k = 0; k < kRegionCount; ++k)
    kernels[region_name(static_cast<RegionId>(k))] = r.kernels[k];
  j["kernels"] = kernels;
  j["ms_per_step_median"] = r.timing.median_step_ms;
  j["ms_total"] = r.timing.total_ms;
  j["mpoints_per_s"] = r.timing.mpoints_per_s;
  j["final_wavefield"] = {
      {"min", r.final_field.min}, {"max", r.final_field.max}, {"rms", r.final_field.rms}};
  j["output"] = r.output_file;
  // Per shot: setup (taps, field reset; a rank's first shot also the model upload), the time
  // loop, and output (traces back, resampling, writing), as `run` prints them.
  j["startup"] = {{"mpi_init_ms", survey.mpi_init_ms},
                  {"model_ms", survey.model_ms},
                  {"problem_ms", survey.problem_ms},
                  {"device_setup_ms", survey.device_ms}};
  // Where the wall time went: the program so far (from its start to this summary), the shots
  // (rank 0: from before its first shot to the last one recorded) and the output's assembly.
  j["wall"] = {{"program_ms", std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - g_program_start)
                                  .count()},
               {"farm_ms", survey.farm_ms},
               {"assemble_ms", survey.assemble_ms}};
  Json shots = Json::array();
  for (const ShotTiming& t : survey.shots)
    shots.push_back({{"shot", t.shot},
                     {"rank", t.rank},
                     {"setup_ms", t.setup_ms},
                     {"step_ms", t.step_ms},
                     {"output_ms", t.output_ms},
                     {"ranks", t.ranks},
                     {"halo_ms", t.halo_ms},
                     {"halo_transport", halo_transport_name(t.halo_transport)},
                     {"wait_ms", t.wait_ms},
                     {"overhead_percent",
                      t.step_ms > 0 ? 100.0 * (t.setup_ms + t.output_ms) / t.step_ms : 0.0}});
  j["shots"] = shots;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

/// Options of `validate`: those of `run` that decide what is accepted.
struct ValidateArgs {
  std::string path;
  ValidateOptions options;
};

int cmd_validate(const ValidateArgs& args) {
  std::cout << validate_survey(load_survey(args.path), args.options);
  std::cout << "ok: " << args.path << " is valid\n";
  return kExitOk;
}

/// Options of `run` beyond the survey.
struct RunArgs {
  std::string program = "minimod-gpu"; ///< argv[0], for the resume command
  std::string path, output, backend = "auto", kernel, summary, shots, decompose, max_device_memory;
  std::string precision; ///< --precision; empty: the survey's
  int steps = 0;
  bool quiet = false, resume = false;
};

/// `text` as one shell word: as is when it is plain, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./=:,+-@%", c) != nullptr;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (const char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The command that resumes this run: same survey, output and sample-changing options.
std::string resume_command(const RunArgs& args, const std::string& output) {
  std::string command = shell_word(args.program) + " run " + shell_word(args.path) + " -o " +
                        shell_word(output) + " --resume";
  if (args.steps > 0) command += " --steps " + std::to_string(args.steps);
  if (args.backend != "auto") command += " --backend " + shell_word(args.backend);
  if (!args.kernel.empty()) command += " --kernel " + shell_word(args.kernel);
  if (!args.precision.empty()) command += " --precision " + shell_word(args.precision);
  if (!args.shots.empty()) command += " --shots " + shell_word(args.shots);
  if (!args.decompose.empty()) command += " --decompose " + shell_word(args.decompose);
  if (!args.max_device_memory.empty())
    command += " --max-device-memory " + shell_word(args.max_device_memory);
  if (mpi_size() > 1) command = "mpirun -np " + std::to_string(mpi_size()) + " " + command;
  return command;
}

int cmd_run(const RunArgs& args) {
  install_interrupt_handlers(); // SIGINT/SIGTERM: complete shots kept, exit 128 + signal
  Survey s = load_survey(args.path);
  if (!args.precision.empty()) apply_precision_option(s, args.precision, "--precision");
  const bool root = mpi_rank() == 0;
  const bool quiet = args.quiet || !root; // only rank 0 talks, the others only about failures
  SurveyRunOptions options;
  options.simulation.backend = parse_backend_choice(args.backend, "--backend");
  options.simulation.kernel_spec = args.kernel;
  options.simulation.steps_override = args.steps;
  if (!args.decompose.empty()) options.decompose = parse_split(args.decompose, "--decompose");
  if (!args.max_device_memory.empty()) {
    options.simulation.max_device_bytes =
        parse_memory_size(args.max_device_memory, "--max-device-memory");
  }
  options.output = args.output.empty() ? s.output.file : args.output;
  options.summary = args.summary;
  options.output_given = !args.output.empty();
  options.backend_option = args.backend;
  options.resume = args.resume;
  options.resume_command = resume_command(args, options.output);
  if (!args.shots.empty()) {
    options.shots = parse_shot_selection(args.shots, static_cast<int>(s.shots.size()), "--shots");
  }
  const int survey_shots = static_cast<int>(s.shots.size());
  const int shots = static_cast<int>(selected_shots(s, options).size());
  // Printed even with --quiet: it is what the user needs to continue.
  options.on_parts_kept = [&](int complete, int total, const std::string& folder) {
    std::cerr << complete << " of " << total << " shots are complete and kept in '" << folder
              << "'; resume with: " << options.resume_command << "\n";
  };

  std::unique_ptr<Progress> progress;
  int steps_per_shot = 0;
  double points = 0;
  // Warnings, failures and the CPU fallback are printed even with --quiet: a run that silently
  // takes a hundred times longer on the CPU is a trap.
  options.hooks.notice = [&](const std::string& line) {
    if (!quiet || line.rfind("warning:", 0) == 0 || line.rfind("no GPU found", 0) == 0 ||
        line.find("failed") != std::string::npos) {
      std::cerr << line << "\n";
    }
  };
  options.hooks.on_plan = [&](const Plan& plan) {
    if (!quiet) {
      std::cerr << "minimod-gpu " << kProgramVersion << ": " << args.path << ", " << plan.grid.nx
                << "x" << plan.grid.ny << "x" << plan.grid.nz << ", " << shots << " shot"
                << (shots == 1 ? "" : "s");
      if (shots != survey_shots)
        std::cerr << " (--shots " << shot_selection_text(options.shots) << " of " << survey_shots
                  << ")";
      std::cerr << " of " << plan.steps << " steps of " << plan.dt << " s";
      if (mpi_size() > 1) std::cerr << " on " << mpi_size() << " MPI ranks";
      std::cerr << "\n";
    }
    steps_per_shot = plan.steps;
    points = static_cast<double>(plan.grid.points());
  };
  // Each shot gets its own progress line; in a survey of several shots it also shows the shot
  // number (as in /shots/NNNN), the shots done of the total and the survey's time left.
  std::optional<SurveyPosition> position;
  options.on_shot_start = [&](const ShotStart& start) {
    if (progress) progress->finish();
    progress.reset();
    if (shots > 1) {
      position =
          SurveyPosition{start.shot, start.done, start.total, start.left_after, start.mean_shot_s};
    }
  };
  options.hooks.on_progress = [&](int done) {
    if (!progress || done < 2) { // a new shot starts a new progress line
      if (progress) progress->finish();
      progress = std::make_unique<Progress>(steps_per_shot, points, quiet, stderr_is_terminal());
      if (position) progress->set_survey(*position);
    }
    progress->update(done);
    if (done == steps_per_shot) {
      progress->finish();
      progress.reset();
    }
  };

  const SurveyRunReport report = run_survey_shots(s, options);
  if (progress) progress->finish();
  if (!root) return kExitOk;

  const RunReport& r = report.last;
  if (!quiet) {
    if (!r.backend.empty()) {
      std::printf("backend     %s (%s)\n", r.backend.c_str(), r.device.c_str());
      std::printf("kernels     inner %s, layers %s/%s/%s/%s/%s/%s\n", r.kernels[0].c_str(),
                  r.kernels[1].c_str(), r.kernels[2].c_str(), r.kernels[3].c_str(),
                  r.kernels[4].c_str(), r.kernels[5].c_str(), r.kernels[6].c_str());
    }
    if (shots == 1 && !report.shots.empty()) {
      std::printf("time        %d steps in %.3f s, %.3f ms per step (median), %.1f Mpoints/s\n",
                  r.plan.steps, r.timing.total_ms * 1e-3, r.timing.median_step_ms,
                  r.timing.mpoints_per_s);
      std::printf("wavefield   min %.6g, max %.6g, rms %.6g\n", r.final_field.min,
                  r.final_field.max, r.final_field.rms);
    } else {
      double setup = 0, stepping = 0, out = 0, worst = 0, first_setup = 0;
      for (const auto& t : report.shots) {
        setup += t.setup_ms;
        stepping += t.step_ms;
        out += t.output_ms;
        if (t.step_ms > 0) worst = std::max(worst, 100.0 * (t.setup_ms + t.output_ms) / t.step_ms);
        first_setup = std::max(first_setup, t.setup_ms);
      }
      const double n = std::max<std::size_t>(1, report.shots.size());
      std::printf("shots       %zu modelled, %zu skipped (resume), %zu failed, on %d rank(s)\n",
                  report.shots.size(), report.skipped.size(), report.failed.size(), report.ranks);
      std::printf("per shot    stepping %.3f s, setup %.3f s, output %.3f s (means): overhead "
                  "%.2f%% of the stepping\n",
                  stepping / n * 1e-3, setup / n * 1e-3, out / n * 1e-3,
                  stepping > 0 ? 100.0 * (setup + out) / stepping : 0.0);
      std::printf("            worst shot %.2f%%; longest setup %.3f s (a rank's first shot "
                  "uploads the model)\n",
                  worst, first_setup * 1e-3);
      if (report.problem_ms + report.device_ms > 0) {
        // Steady state: the shots after the first, whose setup is taps and a field reset only.
        double later = 0, later_step = 0;
        for (std::size_t n = 1; n < report.shots.size(); ++n) {
          later += report.shots[n].setup_ms + report.shots[n].output_ms;
          later_step += report.shots[n].step_ms;
        }
        std::printf("            once: problem %.3f s, device setup %.3f s (backend, allocation, "
                    "upload); later shots' overhead %.2f%%\n",
                    report.problem_ms * 1e-3, report.device_ms * 1e-3,
                    later_step > 0 ? 100.0 * later / later_step : 0.0);
      }
      std::printf("model       built%s in %.3f s; whole run %.3f s\n",
                  report.ranks > 1 ? " and broadcast" : "", report.model_ms * 1e-3,
                  report.total_ms * 1e-3);
    }
    std::printf("output      %s\n", report.failed.empty()
                                        ? options.output.c_str()
                                        : (options.output + ".parts (incomplete)").c_str());
  }
  if (!report.failed.empty()) {
    std::string list;
    for (const auto& [shot, why] : report.failed) {
      std::cerr << "error: shot " << shot << " failed: " << why << "\n";
      list += (list.empty() ? "" : ", ") + std::to_string(shot);
    }
    std::cerr << "error: " << report.failed.size() << " shot(s) failed (" << list
              << "); fix the cause and rerun with --resume (the complete shots are kept)\n";
    return kExitRuntime;
  }
  if (!args.summary.empty())
    write_file_durably(args.summary, summary_json(s, r, r.plan.steps, report));
  return kExitOk;
}

/// `merge OUT IN...`: one output from outputs of disjoint shot sets of one survey run.
/// The survey's SEG-Y (output.segy) is written beside OUT, as `run -o OUT` would write it.
int cmd_merge(const std::string& output, const std::vector<std::string>& inputs) {
  std::vector<std::string> written;
  merge_outputs(output, inputs,
                [&](const OutputMeta& meta, const std::vector<std::pair<int, std::string>>& shots) {
                  auto renames = write_segy_files(merged_segy_target(meta, output), shots);
                  for (const auto& entry : renames)
                    written.push_back(entry.second);
                  return renames;
                });
  std::size_t shots = output_shot_numbers(output).size();
  std::cout << "merged " << inputs.size() << " files, " << shots << " shot"
            << (shots == 1 ? "" : "s") << ", into " << output;
  if (written.size() == 1) std::cout << " and " << written.front();
  if (written.size() > 1)
    std::cout << " and " << written.size() << " SEG-Y files (" << written.front() << ", ...)";
  std::cout << "\n";
  return kExitOk;
}

/// Empty when `k` can run on this machine; else why not. A GPU kernel is probed on the inner
/// region (or a layer slab) of a 128^3 grid with layers of 16 points: a kernel that cannot run
/// there (no tensor copies on this GPU) cannot run anywhere here.
std::string kernel_runs_here(const StencilKernel& k, bool gpu, const std::string& no_gpu) {
  if (k.backend() == BackendKind::Cpu) return "";
  if (!gpu || k.backend() != kGpuBackend) return no_gpu;
  Grid grid;
  grid.nx = grid.ny = grid.nz = 128;
  const LayerWidths layer{16, 16, 16, 16, 16, 16};
  const auto regions = make_regions(grid, layer);
  const Region& probe = k.handles(RegionKind::Inner) ? regions[0] : regions[1];
  return k.can_run(probe, make_field_layout(grid.nx, grid.ny, grid.nz, layer.x_lo));
}

int cmd_kernels() {
  std::string why;
  const bool gpu = cuda_device_available(&why);
  const std::string no_gpu = "no GPU here (" + why + ")";
  std::printf("%-28s %-12s %-7s %-9s %-12s %-5s %s\n", "name", "family", "backend", "physics",
              "regions", "here", "description");
  int here = 0, total = 0;
  std::vector<std::string> reasons;
  for (const StencilKernel* k : kernel_registry().all()) {
    const bool in = k->handles(RegionKind::Inner), layer = k->handles(RegionKind::Layer);
    const char* regions = in && layer ? "inner+layer" : (in ? "inner" : "layer");
    const std::string reason = kernel_runs_here(*k, gpu, no_gpu);
    ++total;
    if (reason.empty()) ++here;
    if (!reason.empty() && reason != no_gpu) reasons.push_back(k->name() + ": " + reason);
    std::printf("%-28s %-12s %-7s %-9s %-12s %-5s %s\n", k->name().c_str(), k->family().c_str(),
                backend_name(k->backend()), physics_name(k->physics()), regions,
                reason.empty() ? "yes" : "no", k->description().c_str());
  }
  std::printf("\n%d of %d kernels can run here", here, total);
  if (here < total && !gpu) std::printf("; the GPU kernels cannot: %s", no_gpu.c_str());
  std::printf("\n");
  for (const std::string& r : reasons)
    std::printf("  %s\n", r.c_str());
  return kExitOk;
}

} // namespace
} // namespace minimod

namespace {

/// Print the error that stops this rank: under MPI, an error the ranks agreed on is printed by rank
/// 0 alone (minimod::mpi_join_input_agreement).
void print_error(const std::string& line) {
  if (minimod::mpi_prints_error()) std::cerr << line << "\n";
}

/// The program; main wraps it in MPI's start and end.
int run_main(int argc, char** argv) {
  using namespace minimod;
  CLI::App app{"minimod-gpu: acoustic seismic forward modelling on GPUs"};
  app.set_version_flag("--version", std::string(kProgramVersion) + " (" + kGitCommit + ")");
  app.require_subcommand(1);

  RunArgs run_args;
  if (argc > 0 && argv[0] != nullptr) run_args.program = argv[0];
  std::string &survey_path = run_args.path, &output = run_args.output, &backend = run_args.backend,
              &kernel = run_args.kernel, &summary = run_args.summary;
  int& steps = run_args.steps;
  bool& quiet = run_args.quiet;
  auto* run = app.add_subcommand("run", "Model a survey and write traces and snapshots to HDF5");
  run->add_option("survey", survey_path, "Survey YAML file")->required();
  run->add_option("-o,--output", output, "Output HDF5 file (default: the survey's output.file)");
  run->add_flag(
      "--resume", run_args.resume,
      "Continue the interrupted run whose complete shots are kept in OUT.parts (same survey, "
      "input files, --steps, --backend, --kernel and --precision), modelling only the missing "
      "shots");
  run->add_option("--backend", backend,
                  "cpu, cuda, hip or auto (the GPU backend this binary was built with when a GPU "
                  "is present)")
      ->capture_default_str();
  run->add_option("--kernel", kernel,
                  "Kernel spec: NAME or inner=NAME,pml=NAME,... (see `minimod-gpu kernels`), "
                  "or auto (timed on this grid and GPU, cached)");
  run->add_option("--precision", run_args.precision,
                  "float32 or float16: how the run stores its wavefields and medium (float16: "
                  "16-bit storage, float32 arithmetic; acoustic only), overriding the survey's "
                  "precision");
  run->add_option("--steps", steps, "Run this many steps instead of the survey's time span")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  run->add_option("--summary", summary, "Write a JSON summary of the run to this file");
  run->add_option("--shots", run_args.shots,
                  "Model only these shots (0-based shot numbers, as in /shots/NNNN): e.g. 10-19 "
                  "or 0,3,5-7; join the outputs of such runs with `merge`");
  run->add_flag("-q,--quiet", quiet, "No progress or summary on the terminal");
  run->add_option("--decompose", run_args.decompose,
                  "Split each shot's grid into PXxPYxPZ subdomains, one MPI rank each (e.g. "
                  "2x1x2 under mpirun -np 4): overrides the survey's decomposition and "
                  "ranks_per_shot");
  run->add_option("--max-device-memory", run_args.max_device_memory,
                  "Refuse a run whose problem (a rank's subdomain when split) needs more device "
                  "memory than this, e.g. 20GB or 512MiB");

  ValidateArgs validate_args;
  auto* validate = app.add_subcommand("validate", "Check a survey and print the plan");
  validate->add_option("survey", validate_args.path, "Survey YAML file")->required();
  validate->add_option("--backend", validate_args.options.backend, "As for run")
      ->capture_default_str();
  validate->add_option("--kernel", validate_args.options.kernel, "As for run");
  validate->add_option("--precision", validate_args.options.precision, "As for run");
  validate->add_option("--steps", validate_args.options.steps, "As for run")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  validate->add_option("--decompose", validate_args.options.decompose, "As for run");
  validate->add_option("--max-device-memory", validate_args.options.max_device_memory,
                       "As for run");
  validate->add_option("--shots", validate_args.options.shots, "As for run");
  validate
      ->add_option("--ranks", validate_args.options.ranks,
                   "MPI ranks of the run, for a split chosen by `decomposition: auto` "
                   "(default 1)")
      ->check(CLI::Range(1, 1 << 20));

  std::string merge_output;
  std::vector<std::string> merge_inputs;
  auto* merge = app.add_subcommand(
      "merge", "Join the outputs of runs of one survey with disjoint --shots into one file (and "
               "its SEG-Y, when the survey writes SEG-Y)");
  merge->add_option("output", merge_output, "Merged HDF5 file to write")->required();
  merge->add_option("inputs", merge_inputs, "HDF5 outputs of `run --shots` (two or more)")
      ->required()
      ->expected(2, std::numeric_limits<int>::max());

  auto* kernels = app.add_subcommand("kernels", "List the registered kernels");

  BenchArgs bench_args;
  auto* bench = add_bench_subcommand(app, bench_args);

  PlotOptions plot_options;
  int plot_shot = 0, plot_snapshot = 0;
  std::string plot_colormap = "auto";
  auto* plot =
      app.add_subcommand("plot", "Draw a PNG quicklook of a shot gather, a snapshot or the model");
  plot->add_option("file", plot_options.input, "HDF5 output file of `run`")->required();
  auto* plot_shot_opt = plot->add_option(
      "--shot", plot_shot,
      "Shot number to draw as a gather (default: the first); with --snapshot, the shot whose "
      "snapshot (default: the first with snapshots)");
  auto* plot_snapshot_opt = plot->add_option(
      "--snapshot", plot_snapshot,
      "Snapshot index among the shot's snapshots, negative from the end (default: the first "
      "shot's gather)");
  std::string plot_slice;
  auto* plot_slice_opt = plot->add_option(
      "--slice", plot_slice,
      "One plane of the snapshot or model instead of the x-z and x-y slices: x, y or z (normal to "
      "that axis, through the source) or AXIS=INDEX (a point index along the axis, e.g. z=10)");
  plot->add_option("-o,--output", plot_options.output,
                   "PNG file (default: FILE_shotK.png, FILE_snapN.png or FILE_model.png)");
  plot->add_option("--colormap", plot_colormap,
                   "grey, seismic or viridis (default: grey, seismic, viridis for the model)");
  plot->add_option("--clip", plot_options.clip_percentile,
                   "Clip at this percentile of |amplitude|, in (0, 100]")
      ->capture_default_str();
  std::string plot_gain = "none";
  plot->add_option("--gain", plot_gain, "Gather gain: none, t2, agc or agc:WINDOW_S (0.25 s)");
  plot->add_flag("--wiggle", plot_options.wiggle, "Gather as wiggles, positive lobes filled");
  plot->add_flag("--model", plot_options.model, "Slices of the velocity model (/model/vp)")
      ->excludes(plot_shot_opt)
      ->excludes(plot_snapshot_opt);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {
      // Every rank has the same command line: rank 0 prints the error, every rank exits with 2.
      try {
        mpi_join_input_agreement(std::make_exception_ptr(InputError(e.what())));
      } catch (const InputError&) {
      }
      if (!mpi_prints_error()) return kExitBadInput;
    }
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }

  auto dispatch = [&] {
    if (*run) return cmd_run(run_args);
    if (*plot) {
      if (*plot_shot_opt) plot_options.shot = plot_shot;
      if (*plot_snapshot_opt) plot_options.snapshot = plot_snapshot;
      if (*plot_slice_opt) plot_options.slice = parse_slice(plot_slice, "--slice");
      plot_options.colormap = parse_colormap(plot_colormap, "--colormap");
      plot_options.gain = parse_gain(plot_gain, "--gain");
      return plot_command(plot_options);
    }
    if (*validate) return cmd_validate(validate_args);
    if (*merge) return cmd_merge(merge_output, merge_inputs);
    if (*kernels) return cmd_kernels();
    if (*bench) return cmd_bench(bench_args);
    return static_cast<int>(kExitInternal);
  };
  try {
    try {
      const int code = dispatch();
      // Under MPI, the commands other than run agree at their end (run did before any work).
      mpi_join_input_agreement(nullptr);
      return code;
    } catch (const Interrupted&) {
      throw;
    } catch (...) {
      // Stopped before the ranks agreed on the input (the survey, say): join them there.
      mpi_join_input_agreement(std::current_exception());
      throw;
    }
  } catch (const Interrupted& e) {
    if (!mpi_stopped_together() || mpi_rank() == 0)
      std::cerr << "error: " << e.what() << "; stopped\n";
    return 128 + e.signal(); // as a shell reports a process ended by that signal
  } catch (const InputError& e) {
    print_error(std::string("error: ") + e.what());
    return kExitBadInput;
  } catch (const RuntimeFailure& e) {
    print_error(std::string("error: ") + e.what());
    return kExitRuntime;
  } catch (const OutputError& e) {
    print_error(std::string("error: ") + e.what());
    return kExitOutput;
  } catch (const std::bad_alloc&) {
    // The memory checks before each large allocation should leave this unreachable.
    print_error("error: out of host memory (an allocation failed); run on a host with more "
                "memory, or make the grid smaller");
    return kExitRuntime;
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
  return kExitInternal;
}

} // namespace

int main(int argc, char** argv) {
  // Every HDF5 file is closed explicitly. HDF5's own exit handler would flush again a file whose
  // close failed (a full disk) and crash in it: turn it off, before any other HDF5 call.
  H5dont_atexit();
  minimod::mpi_begin(&argc, &argv);
  const int code = run_main(argc, argv);
  // A rank that stops on an error while others wait for it would hang the job: stop them all. An
  // error every rank agreed on stops each by itself.
  if (code != minimod::kExitOk && minimod::mpi_size() > 1 && !minimod::mpi_failure_agreed() &&
      !minimod::mpi_stopped_together())
    minimod::mpi_abort(code);
  minimod::mpi_end();
  return code;
}
