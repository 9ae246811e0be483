#include "kernels/selection.hpp"

#include "io/errors.hpp"

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
  const BackendKind other = backend == BackendKind::Cpu ? BackendKind::Cuda : BackendKind::Cpu;
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

RegionKernels resolve_kernels(const std::string& spec_in, BackendKind backend, Physics physics,
                              const std::array<Region, kRegionCount>& regions,
                              const FieldLayout& layout, const std::string& what) {
  const std::string spec = trim(spec_in).empty() ? default_kernel_name(backend) : trim(spec_in);
  RegionKernels chosen{};
  const StencilKernel* fallback =
      lookup(default_kernel_name(backend), backend, physics, what, spec);
  chosen.fill(fallback);

  if (spec.find('=') == std::string::npos) {
    const StencilKernel* k = lookup(spec, backend, physics, what, spec);
    for (int r = 0; r < kRegionCount; ++r) {
      if (k->handles(region_kind(static_cast<RegionId>(r)))) chosen[r] = k;
    }
    if (!k->handles(RegionKind::Inner)) {
      throw InputError(what + ": '" + spec + "': " + k->name() +
                       " has no inner-region update; use pml=" + k->name() + " for the layers");
    }
  } else {
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
  for (int r = 0; r < kRegionCount; ++r) {
    if (regions[r].box.empty()) continue;
    const std::string why = chosen[r]->can_run(regions[r], layout);
    if (!why.empty()) {
      throw InputError(what + ": '" + spec + "': kernel " + chosen[r]->name() +
                       " cannot run region " + region_name(regions[r].id) + ": " + why);
    }
  }
  return chosen;
}

} // namespace minimod
