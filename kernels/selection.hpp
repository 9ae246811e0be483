#pragma once
/// Choosing a kernel for each of the seven regions from a kernel spec (`--kernel` or the survey's
/// `kernel:`). Grammar (docs/kernels.md):
///   SPEC  := NAME | ITEM (',' ITEM)*
///   ITEM  := KEY '=' NAME            KEY := inner | pml | top | bottom | front | back | left |
///   right
/// A bare NAME sets the inner kernel and, when that kernel also handles absorbing layers, the layer
/// kernels; otherwise the layers keep the default pair's layer kernel. `pml` sets all six slabs;
/// later items override earlier ones. Regions a spec does not name keep the default pair
/// (default_kernel_spec).

#include "core/grid.hpp"
#include "kernels/kernel.hpp"

#include <array>
#include <string>

namespace minimod {

/// Kernel for each region, in RegionId order.
using RegionKernels = std::array<const StencilKernel*, kRegionCount>;

/// The baseline kernel of a backend ("cpu", "gmem_3d"): it runs every region of every grid, and is
/// what the benchmark's inner-only entries put on the layers.
const char* default_kernel_name(BackendKind backend);

/// What an empty spec means: the fastest pair measured for the backend and physics ("cpu" on the
/// CPU; on CUDA the pair `--kernel auto` chose on the H100, docs/kernels.md).
std::string default_kernel_spec(BackendKind backend, Physics physics);

/// The kernel a region gets instead when the default's kernel cannot run it (no tensor copies on
/// an older GPU, a limit on an unusual grid): semi+b+a_32x8 for CUDA TTI, otherwise the baseline.
/// Where the fallback cannot run the region either, the baseline runs it.
const char* default_fallback_name(BackendKind backend, Physics physics);

/// Resolve `spec` (empty: the default) for a backend and physics and check every kernel can run
/// its region (`can_run`). Throws InputError starting with `what` (e.g. "--kernel") that names the
/// spec and lists the kernels that exist.
RegionKernels resolve_kernels(const std::string& spec, BackendKind backend, Physics physics,
                              const std::array<Region, kRegionCount>& regions,
                              const FieldLayout& layout, const std::string& what);

} // namespace minimod
