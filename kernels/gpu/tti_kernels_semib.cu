/// Registration of semi+b, the semi-stencil kernels that prefetch the next plane into registers
/// (tti_kernel_class.cuh says why they have a file of their own).

#include "kernels/gpu/tti_kernel_class.cuh"

namespace minimod::gpu {

void register_tti_semib_kernels(KernelRegistry& registry) {
  add<TtiMethod::SemiB, 32, 8, 1>(registry, true);
  add<TtiMethod::SemiB, 32, 16, 1>(registry);
  add<TtiMethod::SemiB, 16, 16, 1>(registry);
}

} // namespace minimod::gpu
