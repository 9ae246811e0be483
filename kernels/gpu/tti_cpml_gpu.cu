#include "kernels/gpu/tti_cpml_gpu.cuh"

#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_support.cuh"

#include <string>

namespace minimod::gpu {
namespace {

constexpr int kBx = 32, kBy = 4, kBz = 2;

/// The TTI C-PML layer update of box b (one thread a point).
template <bool kAzimuth>
__global__ void tti_cpml_layer_kernel(const TtiFields f, const TtiCpmlView v, const FieldLayout l,
                                      const TtiCoefs c, Box b) {
  const int i = b.x0 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = b.y0 + static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int k = b.z0 + static_cast<int>(blockIdx.z * blockDim.z + threadIdx.z);
  if (i >= b.x1 || j >= b.y1 || k >= b.z1) return;
  tti_cpml_update_point<kAzimuth>(f, v, l.index(i, j, k), l.pitch, l.plane, c, i, j, k);
}

} // namespace

void TtiCpmlDevice::setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile,
                          gpuStream_t stream) {
  release();
  m_p.setup(grid, layer, profile, stream);
  m_q.setup(grid, layer, profile, stream);
  m_view.p = m_p.view();
  m_view.q = m_q.view();
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const std::size_t n = cpml_slab_points(grid, layer, axis, face == 1, 0);
      m_mix[axis][face] =
          n ? DeviceBuffer(n * kTtiCpmlMix * sizeof(float), "TTI C-PML mixed memory")
            : DeviceBuffer();
      m_view.mix[axis][face] = m_mix[axis][face].as<float>();
      m_view.slab[axis][face] = static_cast<std::int64_t>(n);
    }
  }
  m_on = true;
  zero(stream);
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(stream));
}

void TtiCpmlDevice::zero(gpuStream_t stream) {
  if (!m_on) return;
  m_p.zero(stream);
  m_q.zero(stream);
  for (int axis = 0; axis < 3; ++axis)
    for (int face = 0; face < 2; ++face) {
      DeviceBuffer& b = m_mix[axis][face];
      if (!b.empty())
        MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b.as<void>(), 0, b.bytes(), stream),
                               "zeroing " + std::to_string(b.bytes()) +
                                   " B of TTI C-PML mixed memory");
    }
}

void TtiCpmlDevice::release() {
  m_on = false;
  m_p.release();
  m_q.release();
  for (auto& axis : m_mix)
    for (auto& face : axis)
      face = DeviceBuffer();
  m_view = TtiCpmlView{};
}

void TtiCpmlDevice::memory_pass(const float* p, const float* q, const FieldLayout& layout,
                                gpuStream_t stream) const {
  if (!m_on) return;
  m_p.memory_pass(p, layout, stream);
  m_q.memory_pass(q, layout, stream);
}

void tti_cpml_layer_update_gpu(const TtiFields& f, const FieldLayout& l, const TtiCoefs& c,
                               const Box& b, gpuStream_t stream) {
  if (b.empty()) return;
  const dim3 block(kBx, kBy, kBz);
  const dim3 grid(static_cast<unsigned>((b.nx() + kBx - 1) / kBx),
                  static_cast<unsigned>((b.ny() + kBy - 1) / kBy),
                  static_cast<unsigned>((b.nz() + kBz - 1) / kBz));
  if (f.axis_y) {
    tti_cpml_layer_kernel<true><<<grid, block, 0, stream>>>(f, *f.cpml, l, c, b);
    MINIMOD_GPU_CHECK_LAUNCH("tti_cpml_layer_kernel<azimuth>", grid, block, 0);
  } else {
    tti_cpml_layer_kernel<false><<<grid, block, 0, stream>>>(f, *f.cpml, l, c, b);
    MINIMOD_GPU_CHECK_LAUNCH("tti_cpml_layer_kernel", grid, block, 0);
  }
}

} // namespace minimod::gpu
