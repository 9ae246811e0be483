#include "solver/validate.hpp"

#include "io/errors.hpp"
#include "io/limits.hpp"
#include "kernels/field_layout.hpp"
#include "kernels/selection.hpp"
#include "models/velocity.hpp"
#include "solver/plan.hpp"
#include "solver/simulation.hpp"
#include "solver/tti_run.hpp"

#include <sstream>

namespace minimod {

std::string validate_survey(const Survey& s, const ValidateOptions& options) {
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
    out << describe_tti_plan(s, model, plan_tti(s, model, options.steps));
    return out.str();
  }
  const Survey first = survey_for_shot(s, 0);
  Plan plan;
  if (const auto range = model_range(s.model, grid)) {
    plan = make_plan(first, VelocityRange{range->first, range->second}, options.steps);
  } else {
    const std::vector<float> velocity = build_velocity(s.model, grid);
    plan = make_plan(first, velocity, options.steps);
  }
  // The kernels, chosen as the run chooses them (Simulation's constructor): the command line's
  // spec wins; the survey's is dropped when `auto` falls back to the CPU; `auto` is timed later.
  const BackendKind kind = resolve_backend_choice(choice, {});
  std::string spec = options.kernel, what = "--kernel";
  if (spec.empty() && s.kernel) {
    spec = *s.kernel;
    what = s.kernel_loc.where();
    if (kind == BackendKind::Cpu && choice == BackendChoice::Auto) spec.clear();
  }
  if (is_auto_kernel_spec(spec)) spec.clear();
  resolve_kernels(spec, kind, Physics::Acoustic, make_regions(grid, plan.layer),
                  make_field_layout(grid.nx, grid.ny, grid.nz, plan.layer.x_lo), what);

  out << describe_plan(s, plan);
  const bool cpu = kind == BackendKind::Cpu;
  const double needed = plan.host_bytes + (cpu ? static_cast<double>(plan.device_bytes) : 0.0);
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
  out << "backend     " << backend_name(kind) << " (what `run --backend " << options.backend
      << "` uses here)\n";
  return out.str();
}

} // namespace minimod
