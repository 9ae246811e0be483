#include "kernels/kernel.hpp"

#include <stdexcept>

#include <mutex>

namespace minimod {

const char* backend_name(BackendKind b) {
  switch (b) {
  case BackendKind::Cpu:
    return "cpu";
  case BackendKind::Cuda:
    return "cuda";
  case BackendKind::Hip:
    return "hip";
  }
  return "unknown";
}
const char* physics_name(Physics p) {
  return p == Physics::Acoustic ? "acoustic" : "tti";
}

std::string StencilKernel::can_run(const Region& region, const FieldLayout& layout) const {
  if (!handles(region.kind())) {
    return name() + " does not implement the " +
           std::string(region.kind() == RegionKind::Inner ? "inner" : "absorbing-layer") +
           " update needed by region " + region_name(region.id);
  }
  const Box& b = region.box;
  if (!b.empty() && (b.x0 < 0 || b.y0 < 0 || b.z0 < 0 || b.x1 > layout.nx || b.y1 > layout.ny ||
                     b.z1 > layout.nz)) {
    return std::string("region ") + region_name(region.id) + " lies outside the field";
  }
  return {};
}

void StencilKernel::launch_regions(const IsoFields& f, const FieldLayout& layout,
                                   const StencilCoefs& coefs, const Region* regions, int count,
                                   void* stream) const {
  for (int r = 0; r < count; ++r)
    launch(f, layout, coefs, regions[r], stream);
}

void StencilKernel::launch_tti(const TtiFields&, const FieldLayout&, const TtiCoefs&, const Region&,
                               void*) const {
  throw std::logic_error(name() + " is a " + physics_name(physics()) +
                         " kernel: it has no TTI update");
}

void StencilKernel::launch16(const IsoFields16&, const FieldLayout&, const StencilCoefs&,
                             const Region&, void*) const {
  throw std::logic_error(name() + " has no float16 form");
}

void StencilKernel::launch_tti_regions(const TtiFields& f, const FieldLayout& layout,
                                       const TtiCoefs& coefs, const Region* regions, int count,
                                       void* stream) const {
  for (int r = 0; r < count; ++r)
    launch_tti(f, layout, coefs, regions[r], stream);
}

void KernelRegistry::add(std::unique_ptr<StencilKernel> kernel, bool family_default) {
  m_entries.push_back(Entry{std::move(kernel), family_default});
}

const StencilKernel* KernelRegistry::find(const std::string& name, BackendKind backend,
                                          Physics physics) const {
  for (const auto& e : m_entries) {
    const auto& k = *e.kernel;
    if (k.backend() == backend && k.physics() == physics && k.name() == name) return &k;
  }
  for (const auto& e : m_entries) {
    const auto& k = *e.kernel;
    if (e.family_default && k.backend() == backend && k.physics() == physics &&
        k.family() == name) {
      return &k;
    }
  }
  return nullptr;
}

std::vector<const StencilKernel*> KernelRegistry::all() const {
  std::vector<const StencilKernel*> out;
  out.reserve(m_entries.size());
  for (const auto& e : m_entries)
    out.push_back(e.kernel.get());
  return out;
}

std::vector<std::string> KernelRegistry::names(BackendKind backend, Physics physics) const {
  std::vector<std::string> out;
  for (const auto& e : m_entries) {
    if (e.kernel->backend() == backend && e.kernel->physics() == physics) {
      out.push_back(e.kernel->name());
    }
  }
  return out;
}

KernelRegistry& kernel_registry() {
  static KernelRegistry registry;
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_kernels(registry);
#if defined(MINIMOD_HAVE_GPU)
    register_cuda_kernels(registry);
#endif
  });
  return registry;
}

} // namespace minimod
