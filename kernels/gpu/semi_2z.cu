/// Instantiations of the semi+2z variant of the semi-stencil family (semi_25d.cuh).

#include "kernels/gpu/semi_25d.cuh"

namespace minimod::gpu {

template class SemiKernel<SemiVariant::Fold2z, 32, 16>;
template class SemiKernel<SemiVariant::Fold2z, 32, 32>;
template class SemiKernel<SemiVariant::Fold2z, 64, 8>;

} // namespace minimod::gpu
