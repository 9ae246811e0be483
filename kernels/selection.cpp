#include "kernels/selection.hpp"

#include "core/errors.hpp"

#include <sstream>

namespace minimod {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string joined_names(BackendKind backend, Physics physics) {
  std::string out;
  for (const auto& n : kernel_registry().names(backend, physics)) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out.empty() ? "(none)" : out;
}

const StencilKernel* lookup(const std::string& name, BackendKind backend, Physics physics,
                            const std::string& what, const std::string& spec) {
  const StencilKernel* k = kernel_registry().find(name, backend, physics);
  if (k) return k;
  const BackendKind other = backend == BackendKind::Cpu ? kGpuBackend : BackendKind::Cpu;
  std::string hint;
  if (kernel_registry().find(name, other, physics)) {
    hint = std::string(" (it is a ") + backend_name(other) + " kernel: choose --backend " +
           backend_name(other) + ")";
  }
  throw InputError(what + ": '" + spec + "': no " + physics_name(physics) + " kernel named '" +
                   name + "' for backend " + backend_name(backend) + hint + "; allowed: " +
                   joined_names(backend, physics) + " (or a family name for its default tile)");
}

} // namespace

const char* default_kernel_name(BackendKind backend) {
  return backend == BackendKind::Cpu ? "cpu" : "gmem_3d";
}

std::string default_kernel_spec(BackendKind backend, Physics physics) {
  if (backend == BackendKind::Cpu) return "cpu";
  // HIP: tiles of whole 64-lane wavefronts, chosen from the seeds' MI100 measurements (Sai et al.
  // 2022, Table 3; docs/kernels.md, "HIP"): st_reg_shft_32x32 47.0 ms (the fastest 2.5D tile
  // without double buffering, 32x16: 49.2) inside and smem_u_32x4x4 44.9 ms, the fastest 3D
  // tile, on the layer slabs, whose thin boxes suit 3D tiles. TTI (the seeds measured no AMD
  // GPU): semi+2z_32x8, the fastest family on the H100 that needs neither cp.async nor the tensor
  // copies (900^3: 16.35 ms a step without azimuth, 18.12 with; semi+b_32x8 16.65 and 19.23).
  if (backend == BackendKind::Hip)
    return physics == Physics::Acoustic ? "inner=st_reg_shft_25d_32x32,pml=smem_3d_32x4x4"
                                        : "semi+2z_32x8";
  // The pair `--kernel auto` chose on the H100 at 1000^3 (docs/perf/README.md): 7.51 ms a step
  // against gmem_3d's 11.1. Other GPUs may prefer another pair: `--kernel auto`.
  if (physics == Physics::Acoustic) return "inner=st_reg_shft_25d_32x16,pml=gmem_3d_f4_32x4x4";
  // TTI: semi+b+tma_32x4 inside and semi+b+tma_32x8 on the layers: on the H100 at 900^3 the
  // fastest without azimuth, the seeds' problem (12.09 ms a step against 12.16 for
  // semi+b+tma_32x6 everywhere, 12.19 for semi+b+tma_32x4 and 12.36 for semi+b+a_32x16 on the
  // layers), and within about 0.2% of the fastest with azimuth (15.34 against 15.33 with
  // semi+b+a_32x16 on the layers; docs/kernels.md, "TTI", and docs/perf/README.md). semi+b+tma
  // needs the Hopper tensor copies: where they cannot run, the regions fall back to semi+b+a_32x8,
  // and a build without them defaults to it everywhere.
  const std::string fallback = default_fallback_name(backend, physics);
  if (kernel_registry().find("semi+b+tma_32x4", backend, physics) != nullptr)
    return "inner=semi+b+tma_32x4,pml=semi+b+tma_32x8";
  return fallback;
}

const char* default_fallback_name(BackendKind backend, Physics physics) {
  if (physics == Physics::Tti && backend == BackendKind::Cuda) return "semi+b+a_32x8";
  if (physics == Physics::Tti && backend == BackendKind::Hip) return "semi+2z_32x8";
  return default_kernel_name(backend);
}

namespace {

/// Overlay `spec` onto `chosen`: a bare NAME sets the inner region and, when it handles layers,
/// the six slabs; KEY=NAME items set their regions, later items overriding earlier ones.
void apply_spec(const std::string& spec, BackendKind backend, Physics physics,
                const std::string& what, RegionKernels& chosen) {
  if (spec.find('=') == std::string::npos) {
    const StencilKernel* k = lookup(spec, backend, physics, what, spec);
    for (int r = 0; r < kRegionCount; ++r) {
      if (k->handles(region_kind(static_cast<RegionId>(r)))) chosen[r] = k;
    }
    if (!k->handles(RegionKind::Inner)) {
      throw InputError(what + ": '" + spec + "': " + k->name() +
                       " has no inner-region update; use pml=" + k->name() + " for the layers");
    }
    return;
  }
  if (spec.back() == ',') {
    throw InputError(what + ": '" + spec +
                     "': trailing ','; the grammar is KEY=NAME[,KEY=NAME...]");
  }
  std::istringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw InputError(what + ": '" + spec + "': item '" + trim(item) +
                       "' is not KEY=NAME; allowed keys: inner, pml, top, bottom, front, back, "
                       "left, right");
    }
    const std::string key = trim(item.substr(0, eq)), name = trim(item.substr(eq + 1));
    const StencilKernel* k = lookup(name, backend, physics, what, spec);
    bool known = false;
    for (int r = 0; r < kRegionCount; ++r) {
      const auto id = static_cast<RegionId>(r);
      const bool match = key == region_name(id) || (key == "pml" && id != RegionId::Inner);
      if (match) {
        chosen[r] = k;
        known = true;
      }
    }
    if (!known) {
      throw InputError(what + ": '" + spec + "': unknown region '" + key +
                       "'; allowed keys: inner, pml, top, bottom, front, back, left, right");
    }
  }
}

} // namespace

RegionKernels resolve_kernels(const std::string& spec_in, BackendKind backend, Physics physics,
                              const std::array<Region, kRegionCount>& regions,
                              const FieldLayout& layout, const std::string& what) {
  // Start from the default pair; a region whose default kernel cannot run it (an older GPU, a
  // launch-grid or layout limit on an unusual grid) gets the fallback kernel instead, or where that
  // cannot either the baseline, since nobody asked for it.
  const std::string def = default_kernel_spec(backend, physics);
  const StencilKernel* baseline = lookup(default_kernel_name(backend), backend, physics, what, def);
  const StencilKernel* fallback =
      kernel_registry().find(default_fallback_name(backend, physics), backend, physics);
  RegionKernels chosen{};
  chosen.fill(baseline);
  apply_spec(def, backend, physics, what + " (default '" + def + "')", chosen);
  for (int r = 0; r < kRegionCount; ++r) {
    const Region& region = regions[r];
    if (region.box.empty() || chosen[r]->can_run(region, layout).empty()) continue;
    const bool fallback_runs = fallback != nullptr && fallback->handles(region.kind()) &&
                               fallback->can_run(region, layout).empty();
    chosen[r] = fallback_runs ? fallback : baseline;
  }
  const std::string spec = trim(spec_in);
  if (!spec.empty()) apply_spec(spec, backend, physics, what, chosen);
  const std::string& shown = spec.empty() ? def : spec;
  for (int r = 0; r < kRegionCount; ++r) {
    if (regions[r].box.empty()) continue;
    const std::string why = chosen[r]->can_run(regions[r], layout);
    if (!why.empty()) {
      throw InputError(what + ": '" + shown + "': kernel " + chosen[r]->name() +
                       " cannot run region " + region_name(regions[r].id) + ": " + why);
    }
  }
  return chosen;
}

} // namespace minimod
