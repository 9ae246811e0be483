#pragma once
/// Choosing a kernel for each of the seven regions from a kernel spec (`--kernel` or the survey's
/// `kernel:`). Grammar (docs/kernels.md):
///   SPEC  := NAME | ITEM (',' ITEM)*
///   ITEM  := KEY '=' NAME            KEY := inner | pml | top | bottom | front | back | left |
///   right
/// A bare NAME sets the inner kernel and, when that kernel also handles absorbing layers, the layer
/// kernels; otherwise the layers keep the backend's default. `pml` sets all six slabs; later items
/// override earlier ones.

#include "kernels/kernel.hpp"
#include "solver/grid.hpp"

#include <array>
#include <string>

namespace minimod {

/// Kernel for each region, in RegionId order.
using RegionKernels = std::array<const StencilKernel*, kRegionCount>;

/// The default kernel name of a backend ("cpu", "gmem_3d").
const char* default_kernel_name(BackendKind backend);

/// Resolve `spec` (empty: the default) for a backend and physics and check every kernel can run
/// its region (`can_run`). Throws InputError starting with `what` (e.g. "--kernel") that names the
/// spec and lists the kernels that exist.
RegionKernels resolve_kernels(const std::string& spec, BackendKind backend, Physics physics,
                              const std::array<Region, kRegionCount>& regions,
                              const FieldLayout& layout, const std::string& what);

} // namespace minimod
