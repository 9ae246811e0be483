#pragma once
/// The CPU reference kernels `cpu` of each physics, registered together by register_cpu_kernels
/// (kernels/kernel.hpp): the acoustic one in kernels/cpu/cpu_kernel.cpp, the TTI one here.

#include "kernels/kernel.hpp"

namespace minimod {

/// Register the TTI kernel `cpu` (kernels/cpu/cpu_tti_kernel.cpp).
void register_cpu_tti_kernels(KernelRegistry& registry);

} // namespace minimod
