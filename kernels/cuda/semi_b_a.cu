/// Instantiations of the semi+b+a variant of the semi-stencil family (semi_25d.cuh): CUDA only
/// (cp.async, MINIMOD_GPU_CP_ASYNC).

#include "kernels/gpu/semi_25d.cuh"

#if MINIMOD_GPU_CP_ASYNC
namespace minimod::gpu {

template class SemiKernel<SemiVariant::Async, 32, 16>;
template class SemiKernel<SemiVariant::Async, 32, 32>;
template class SemiKernel<SemiVariant::Async, 64, 8>;

} // namespace minimod::gpu
#endif
