#include "solver/validate.hpp"

#include "core/errors.hpp"
#include "core/field_layout.hpp"
#include "io/limits.hpp"
#include "kernels/backend.hpp"
#include "kernels/selection.hpp"
#include "kernels/tti_problem.hpp"
#include "models/velocity.hpp"
#include "solver/decomposition.hpp"
#include "solver/equation.hpp"
#include "solver/plan.hpp"
#include "solver/simulation.hpp"
#include "solver/survey_run.hpp"
#include "solver/tti_run.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

namespace minimod {

namespace {

/// The estimated stepping time of the whole survey on `kind`, from the measured throughput.
std::string estimate_text(const Survey& s, const Plan& plan, BackendKind kind) {
  const bool cpu = kind == BackendKind::Cpu;
  const SteppingEstimate e = estimate_stepping(s, plan.grid, plan.steps, !cpu, cpu_threads());
  const double shots = static_cast<double>(std::max<std::size_t>(1, s.shots.size()));
  char rate_text[32];
  std::snprintf(rate_text, sizeof rate_text, "%.3g", e.points_per_second / 1e9);
  return "estimate    about " + duration_text(e.seconds) + " of time stepping (" +
         std::to_string(static_cast<long long>(shots)) + " shot(s) x " +
         std::to_string(plan.steps) + " steps x " + std::to_string(plan.grid.points()) +
         " points at " + rate_text + " Gpoints/s: " + e.basis +
         ", in docs/perf); an estimate, not a measurement\n";
}

/// The host memory `run` needs against what this host has, and the warning when it does not fit.
std::string host_memory_text(double needed, bool cpu) {
  std::ostringstream out;
  out << "host memory " << format_bytes(needed) << " on the "
      << (cpu ? "CPU backend (fields included)" : "host");
  if (const auto host = host_memory_available()) {
    const bool fits = needed <= static_cast<double>(host->bytes);
    out << ", " << format_bytes(static_cast<double>(host->bytes)) << " available here ("
        << host->source << "): " << (fits ? "fits this host" : "does NOT fit this host") << "\n";
    if (!fits) {
      out << "warning: `run` on this host stops with exit 3 (out of host memory) before any "
             "work; run it on a host with more memory\n";
    }
  } else {
    out << " (the memory available here is unknown)\n";
  }
  return out.str();
}

/// The kernels, checked as the run chooses them (Simulation's constructor): the command line's
/// spec wins; the survey's is dropped when `auto` falls back to the CPU; `auto` is timed later.
void check_kernels(const Survey& s, const ValidateOptions& options, BackendChoice choice,
                   BackendKind kind, Physics physics, const Grid& grid, const LayerWidths& layer) {
  std::string spec = options.kernel, what = "--kernel";
  if (spec.empty() && s.kernel) {
    spec = *s.kernel;
    what = s.kernel_loc.where();
    if (kind == BackendKind::Cpu && choice == BackendChoice::Auto) spec.clear();
  }
  if (is_auto_kernel_spec(spec)) spec.clear();
  resolve_kernels(spec, kind, physics, make_regions(grid, layer),
                  make_field_layout(grid.nx, grid.ny, grid.nz, layer.x_lo), what);
}

/// The device memory of each rank's subdomain exactly as `run` checks it against
/// --max-device-memory before allocating: Problem::device_bytes of the problem the rank builds
/// for shot 0 (the whole grid's problem, cut to the subdomain with its taps). Builds the model and
/// the whole grid's problem on the host, as each rank of the run does.
std::vector<std::size_t> rank_device_bytes(const Survey& s, const Split& split, int steps) {
  const std::shared_ptr<Equation> equation = make_equation(s);
  equation->build_model(s);
  const Survey first = survey_for_shot(s, 0);
  const Plan plan = equation->make_plan(first, steps);
  require_host_memory(plan.host_bytes - equation->model_bytes(),
                      "the whole grid's problem (validate's device memory of each rank)");
  const std::unique_ptr<Problem> global = equation->build_problem(first, plan);
  std::vector<std::size_t> bytes;
  if (split_ranks(split) == 1) {
    bytes.push_back(global->device_bytes());
    return bytes;
  }
  for (int r = 0; r < split_ranks(split); ++r)
    bytes.push_back(cut_problem(*global, split, r)->device_bytes());
  return bytes;
}

/// The split of each shot's grid, as `run` makes it: each rank's subgrid, neighbours, halo and
/// device memory (the whole grid's scaled by the padded points, an estimate; with a cap, the
/// exact figure `run` checks, rank_device_bytes). A cap that a rank's figure exceeds is refused
/// (InputError, with the numbers), as `run` refuses it.
std::string describe_decomposition(const Survey& s, const Grid& grid, double whole_device_bytes,
                                   int fields, bool edges, const ValidateOptions& o) {
  std::optional<Split> override;
  if (!o.decompose.empty()) override = parse_split(o.decompose, "--decompose");
  const Split split = run_split(s, grid, override, "--decompose", o.ranks);
  const std::size_t cap = o.max_device_memory.empty()
                              ? 0
                              : parse_memory_size(o.max_device_memory, "--max-device-memory");
  const std::vector<std::size_t> exact =
      cap > 0 ? rank_device_bytes(s, split, o.steps) : std::vector<std::size_t>{};
  const FieldLayout whole = make_field_layout(grid.nx, grid.ny, grid.nz, 0);
  std::ostringstream out;
  const int ranks = split_ranks(split);
  double most = 0;
  if (ranks == 1) {
    out << "decomposition none: one rank models a shot on the whole grid\n";
    most = exact.empty() ? whole_device_bytes : static_cast<double>(exact.front());
  } else {
    out << "decomposition " << split_text(split) << ": " << ranks
        << " ranks a shot, one subdomain (and one GPU) each; run under mpirun -np N, N a multiple "
           "of "
        << ranks << "\n";
    static const char* kFace[6] = {"x-", "x+", "y-", "y+", "z-", "z+"};
    std::size_t halo_most = 0, halo_all = 0;
    for (int r = 0; r < ranks; ++r) {
      const SubdomainBox b = subdomain_box(grid, split, r);
      const FieldLayout l = make_field_layout(b.size[0], b.size[1], b.size[2], 0);
      const double bytes = exact.empty() ? whole_device_bytes * static_cast<double>(l.size) /
                                               static_cast<double>(whole.size)
                                         : static_cast<double>(exact[static_cast<std::size_t>(r)]);
      const std::size_t halo = 4 * halo_floats_per_step(grid, split, r, fields, edges);
      most = std::max(most, bytes);
      halo_most = std::max(halo_most, halo);
      halo_all += halo;
      if (r >= 64) continue;
      std::string faces;
      const auto n = subdomain_neighbours(split, r);
      for (int f = 0; f < 6; ++f)
        if (n[static_cast<std::size_t>(f)])
          faces += std::string(faces.empty() ? "" : " ") + kFace[f];
      out << "  rank " << r << ": [" << b.offset[0] << ", " << b.offset[0] + b.size[0] << ") x ["
          << b.offset[1] << ", " << b.offset[1] + b.size[1] << ") x [" << b.offset[2] << ", "
          << b.offset[2] + b.size[2] << "), " << b.size[0] << " x " << b.size[1] << " x "
          << b.size[2] << " points; halo " << kHalo << " planes toward " << faces << ", "
          << format_bytes(static_cast<double>(halo)) << " sent a step; device memory "
          << (exact.empty() ? "about " : "") << format_bytes(bytes) << "\n";
    }
    if (ranks > 64) out << "  (" << ranks - 64 << " more ranks)\n";
    out << "halo        " << format_bytes(static_cast<double>(halo_most))
        << " a step sent by a rank at most (as much received), "
        << format_bytes(static_cast<double>(halo_all)) << " a step by all ranks of a shot"
        << (edges ? " (faces, edges and corners: TTI's mixed derivatives)" : " (faces)") << "\n";
    out << "memory      " << (exact.empty() ? "about " : "") << format_bytes(most)
        << " of device memory a rank (a GPU) at most, about " << format_bytes(whole_device_bytes)
        << " for the whole grid on one\n";
  }
  if (cap > 0) {
    // The largest rank's figure against the cap, as `run` compares them (Simulation).
    const auto largest = std::max_element(exact.begin(), exact.end()) - exact.begin();
    const std::size_t needed = exact[static_cast<std::size_t>(largest)];
    if (needed > cap) {
      const SubdomainBox b = subdomain_box(grid, split, static_cast<int>(largest));
      throw InputError(
          "--max-device-memory: " + format_bytes(static_cast<double>(cap)) + ": " +
          (ranks > 1 ? "rank " + std::to_string(largest) + "'s subdomain (split " +
                           split_text(split) + ") of "
                     : std::string("the ")) +
          std::to_string(b.size[0]) + " x " + std::to_string(b.size[1]) + " x " +
          std::to_string(b.size[2]) + " points needs " + format_bytes(static_cast<double>(needed)) +
          " of device memory (as `run` computes it before allocating, and refuses); allowed: a "
          "cap of at least that, or the grid split over more ranks (--decompose, mpirun -np N)");
    }
    out << "cap         --max-device-memory " << format_bytes(static_cast<double>(cap))
        << ": fits (" << format_bytes(static_cast<double>(needed))
        << " a rank at most, as `run` computes it)\n";
  }
  return out.str();
}

/// Bytes a padded point of the acoustic fields and medium takes on the device at `precision`:
/// float32 holds u, v and (c dt)^2 (4 B each), float16 u^n, u^{n+1}, the step d and the medium's
/// code (2 B each); Minimod's layer adds phi (4 B; 2 B at float16) and eta (4 B at both).
double acoustic_bytes_per_point(Precision precision, bool minimod_layer) {
  const bool half = precision == Precision::Float16;
  return (half ? 8.0 : 12.0) + (minimod_layer ? (half ? 2.0 : 4.0) + 4.0 : 0.0);
}

/// The run's precision, and the points float16 fits in the memory of float32's fields.
std::string precision_text(const Survey& s, bool minimod_layer) {
  const double b32 = acoustic_bytes_per_point(Precision::Float32, minimod_layer);
  const double b16 = acoustic_bytes_per_point(Precision::Float16, minimod_layer);
  char ratio[16];
  std::snprintf(ratio, sizeof ratio, "%.2f", b32 / b16);
  const std::string layer = minimod_layer ? ", phi 2 B and eta 4 B in Minimod's layer" : "";
  std::ostringstream out;
  if (s.precision == Precision::Float16) {
    out << "precision   float16 (" << s.precision_loc.where()
        << "): 16-bit storage, float32 arithmetic; fields and medium " << b16
        << " B a point against float32's " << b32 << " (u^n, u^{n+1}, their step and the "
        << "medium's code, 2 B each" << layer << "): " << ratio
        << " times the points in the same memory\n";
  } else {
    out << "precision   float32; fields and medium " << b32 << " B a point (precision: float16 "
        << "would store " << b16 << ": " << ratio << " times the points in the same memory)\n";
  }
  return out.str();
}

} // namespace

std::string validate_survey(const Survey& survey, const ValidateOptions& options) {
  Survey s = survey;
  if (!options.precision.empty()) apply_precision_option(s, options.precision, "--precision");
  check_precision_support(s);
  const Grid grid = make_grid(s.grid);
  const BackendChoice choice = parse_backend_choice(options.backend, "--backend");
  // Every shot's receivers inside the grid (receivers that move with the source), as run checks.
  for (int shot = 0; shot < static_cast<int>(s.shots.size()); ++shot)
    check_shot_receivers(s, shot);
  std::ostringstream out;
  if (s.physics == "tti") {
    const double arrays = s.anisotropy && s.anisotropy->phi ? 5 : 4;
    require_host_memory(arrays * 4.0 * static_cast<double>(grid.points()) +
                            model_host_bytes(s.model, grid),
                        "the TTI model (vp, epsilon, delta, theta" +
                            std::string(arrays > 4 ? ", phi" : "") + " on the grid)");
    const TtiModel model = build_tti_model(s, grid);
    const Survey first = survey_for_shot(s, 0);
    const TtiPlan tti = plan_tti(first, model, options.steps);
    // Trace sampling, output size and memory as `run` plans them (tti_run_plan).
    const Plan plan = tti_run_plan(first, model, tti);
    const BackendKind kind = resolve_backend_choice(choice, {});
    check_kernels(s, options, choice, kind, Physics::Tti, grid, tti.layer);
    out << describe_tti_plan(s, model, tti);
    out << "precision   float32 (16-bit storage is acoustic only)\n";
    out << "receivers   " << s.receivers.size() << ", " << plan.trace_samples
        << " samples at dt_out " << plan.dt_out << " s\n";
    out << "output      " << s.output.file << ", about "
        << format_bytes(static_cast<double>(plan.output_bytes)) << "\n";
    const bool cpu = kind == BackendKind::Cpu;
    out << host_memory_text(plan.host_bytes + (cpu ? static_cast<double>(plan.device_bytes) : 0),
                            cpu);
    out << estimate_text(s, plan, kind);
    const FieldLayout whole = make_field_layout(grid.nx, grid.ny, grid.nz, 0);
    const double bytes = static_cast<double>(tti_array_bytes(
        whole.size, s.anisotropy && s.anisotropy->phi, tti.layer.any(), tti.layer.any()));
    out << describe_decomposition(s, grid, bytes, 2, true, options);
    return out.str();
  }
  const Survey first = survey_for_shot(s, 0);
  Plan plan;
  std::string notice; // a model file resampled onto the grid says so
  if (const auto range = model_range(s.model, grid)) {
    plan = make_plan(first, VelocityRange{range->first, range->second}, options.steps);
  } else {
    // The model as `run` builds it (a GPU array model stays on its GPU).
    const std::shared_ptr<Equation> equation = make_equation(s);
    equation->build_model(s);
    notice = equation->model_notice();
    // The plan carries the notice of raw and .npy files (read from the header, as `run` does).
    if (!model_file_notice(s.model, grid).empty()) notice.clear();
    plan = equation->make_plan(first, options.steps);
  }
  const BackendKind kind = resolve_backend_choice(choice, {});
  check_kernels(s, options, choice, kind, Physics::Acoustic, grid, plan.layer);

  // The plan counts float32 fields; a float16 run holds 16-bit ones (and, on the host, the
  // medium's codes beside its decoded values).
  const bool minimod_layer = plan.layer.any() && s.boundary.type != BoundaryType::Cpml;
  if (s.precision == Precision::Float16) {
    const double points =
        static_cast<double>(make_field_layout(grid.nx, grid.ny, grid.nz, plan.layer.x_lo).size);
    const double saved = points * (acoustic_bytes_per_point(Precision::Float32, minimod_layer) -
                                   acoustic_bytes_per_point(Precision::Float16, minimod_layer));
    plan.device_bytes = static_cast<std::size_t>(static_cast<double>(plan.device_bytes) - saved);
    plan.host_bytes += 2.0 * points;
  }
  if (!notice.empty()) out << "note: " << notice << "\n";
  out << describe_plan(s, plan);
  out << precision_text(s, minimod_layer);
  if (!options.shots.empty()) {
    // The shots `run --shots` would model, and whether they leave the snapshots out.
    const int shots = static_cast<int>(s.shots.size());
    const std::vector<int> chosen = parse_shot_selection(options.shots, shots, "--shots");
    out << "selection   --shots " << shot_selection_text(chosen) << ": " << chosen.size() << " of "
        << shots << " shots\n";
    const std::string warning = snapshot_selection_warning(s, plan, chosen);
    if (!warning.empty()) out << "warning: " << warning << "\n";
  }
  const bool cpu = kind == BackendKind::Cpu;
  out << host_memory_text(plan.host_bytes + (cpu ? static_cast<double>(plan.device_bytes) : 0.0),
                          cpu);
  if (!cpu) {
    if (const auto gpu = cuda_device_memory()) {
      // With the margin the GPU backend keeps free when it allocates.
      const double device = static_cast<double>(plan.device_bytes);
      const bool fits = device + static_cast<double>(kGpuMemoryMarginBytes) <=
                        static_cast<double>(gpu->free_bytes);
      out << "GPU memory  " << format_bytes(device) << " on " << gpu->name << ", "
          << format_bytes(static_cast<double>(gpu->free_bytes)) << " free of "
          << format_bytes(static_cast<double>(gpu->total_bytes)) << ": "
          << (fits ? "fits this GPU" : "does NOT fit this GPU") << "\n";
      if (!fits) {
        out << "warning: `run` on this GPU stops with exit 3 (out of device memory) before any "
               "work; use a GPU with more memory, or --backend cpu\n";
      }
    }
  }
  out << "backend     " << backend_name(kind) << " (what `run --backend " << options.backend
      << "` uses here)\n";
  out << estimate_text(s, plan, kind);
  out << describe_decomposition(s, grid, static_cast<double>(plan.device_bytes), 1, false, options);
  return out.str();
}

} // namespace minimod
