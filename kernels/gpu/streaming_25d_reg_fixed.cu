/// Instantiations of the st_reg_fixed_25d tiles (device code in streaming_25d_kernels.cuh), one
/// file per family so that the families compile in parallel.

#include "kernels/gpu/streaming_25d_kernels.cuh"

namespace minimod::gpu {

template class Streaming25dTileKernel<Stream25d::RegFixed, 32, 16>;
template class Streaming25dTileKernel<Stream25d::RegFixed, 32, 32>;
template class Streaming25dTileKernel<Stream25d::RegFixed, 32, 8>;
template class Streaming25dTileKernel<Stream25d::RegFixed, 64, 8>;
template class Streaming25dTileKernel<Stream25d::RegFixed, 16, 16>;

} // namespace minimod::gpu
