/// Instantiations of the st_reg_shft_25d tiles (device code in streaming_25d_kernels.cuh), one
/// file per family so that the families compile in parallel.

#include "kernels/gpu/streaming_25d_kernels.cuh"

namespace minimod::gpu {

template class Streaming25dTileKernel<Stream25d::RegShift, 32, 16>;
template class Streaming25dTileKernel<Stream25d::RegShift, 32, 32>;
template class Streaming25dTileKernel<Stream25d::RegShift, 32, 8>;
template class Streaming25dTileKernel<Stream25d::RegShift, 64, 8>;
template class Streaming25dTileKernel<Stream25d::RegShift, 16, 16>;

void launch_cpml_z_slab(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
                        const Box& box, gpuStream_t stream) {
  if (box.empty()) return;
  // H200, 1000^3, widths 27 / 10: 32x8 at 4 blocks an SM 7.966 / 6.303 ms a step; 32x16 at 2
  // blocks 8.030 / 6.334, at 3 (spilling) 8.097 / 6.387; 64x8 at 2 7.985 / 6.314.
  st25d::launch_cpml_z_tile<32, 8, 4>(f, layout, coefs, box, stream);
}

} // namespace minimod::gpu
