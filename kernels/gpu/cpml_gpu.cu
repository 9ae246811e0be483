#include "kernels/gpu/cpml_gpu.cuh"

#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_support.cuh"

#include <string>

namespace minimod::gpu {
namespace {

constexpr int kBx = 32, kBy = 4, kBz = 2;

/// psi of the slab (axis, face), whose box is [x0, x0 + nx) x ... (one thread a point).
__global__ void cpml_memory_kernel(const CpmlView v, int axis, int face,
                                   const float* __restrict__ u, const FieldLayout l, Box b) {
  const int i = b.x0 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = b.y0 + static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int k = b.z0 + static_cast<int>(blockIdx.z * blockDim.z + threadIdx.z);
  if (i >= b.x1 || j >= b.y1 || k >= b.z1) return;
  const std::int64_t stride = axis == 0 ? 1 : (axis == 1 ? l.pitch : l.plane);
  cpml_memory_point(v, axis, face, u, l.index(i, j, k), stride, i, j, k);
}

/// The C-PML layer update of box b (one thread a point).
__global__ void cpml_layer_kernel(const CpmlView v, const float* __restrict__ u,
                                  float* __restrict__ next, const float* __restrict__ vp2dt2,
                                  const FieldLayout l, const StencilCoefs c, Box b) {
  const int i = b.x0 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = b.y0 + static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int k = b.z0 + static_cast<int>(blockIdx.z * blockDim.z + threadIdx.z);
  if (i >= b.x1 || j >= b.y1 || k >= b.z1) return;
  const std::int64_t sy = l.pitch, sz = l.plane, p = l.index(i, j, k);
  float sum = cpml_axis_term(v, 0, u, p, 1, i, j, k, cpml_second_derivative(u, p, 1, c.cx));
  sum += cpml_axis_term(v, 1, u, p, sy, i, j, k, cpml_second_derivative(u, p, sy, c.cy));
  sum += cpml_axis_term(v, 2, u, p, sz, i, j, k, cpml_second_derivative(u, p, sz, c.cz));
  next[p] = inner_update(u[p], next[p], vp2dt2[p], sum);
}

dim3 grid_of(const Box& b, const dim3& block) {
  return dim3(static_cast<unsigned>((b.nx() + block.x - 1) / block.x),
              static_cast<unsigned>((b.ny() + block.y - 1) / block.y),
              static_cast<unsigned>((b.nz() + block.z - 1) / block.z));
}

} // namespace

void CpmlDevice::setup(const Grid& grid, const LayerWidths& layer, const CpmlProfile& profile,
                       gpuStream_t stream) {
  release();
  m_view = make_cpml_view(grid, layer, profile);
  const char* names[4] = {"C-PML a", "C-PML b", "C-PML 1/kappa", "C-PML d(1/kappa)"};
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<float>* arrays[4] = {&profile.a[axis], &profile.b[axis], &profile.ik[axis],
                                           &profile.dik[axis]};
    for (int n = 0; n < 4; ++n)
      m_profile[axis][n] = upload_new(*arrays[n], names[n], stream);
    m_view.a[axis] = m_profile[axis][0].as<const float>();
    m_view.b[axis] = m_profile[axis][1].as<const float>();
    m_view.ik[axis] = m_profile[axis][2].as<const float>();
    m_view.dik[axis] = m_profile[axis][3].as<const float>();
    for (int face = 0; face < 2; ++face) {
      const std::size_t psi = cpml_slab_points(grid, layer, axis, face == 1, kHalo);
      const std::size_t zeta = cpml_slab_points(grid, layer, axis, face == 1, 0);
      m_psi[axis][face] = psi ? DeviceBuffer(psi * sizeof(float), "C-PML psi") : DeviceBuffer();
      m_zeta[axis][face] = zeta ? DeviceBuffer(zeta * sizeof(float), "C-PML zeta") : DeviceBuffer();
      m_view.psi[axis][face] = m_psi[axis][face].as<float>();
      m_view.zeta[axis][face] = m_zeta[axis][face].as<float>();
    }
  }
  m_on = true;
  zero(stream);
  // The profile's host arrays may go once setup returns.
  MINIMOD_GPU_CHECK(gpuStreamSynchronize(stream));
}

void CpmlDevice::zero(gpuStream_t stream) {
  for (int axis = 0; axis < 3; ++axis)
    for (int face = 0; face < 2; ++face)
      for (DeviceBuffer* b : {&m_psi[axis][face], &m_zeta[axis][face]})
        if (!b->empty())
          MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b->as<void>(), 0, b->bytes(), stream),
                                 "zeroing " + std::to_string(b->bytes()) + " B of C-PML memory");
}

void CpmlDevice::release() {
  m_on = false;
  for (int axis = 0; axis < 3; ++axis) {
    for (auto& b : m_profile[axis])
      b = DeviceBuffer();
    for (int face = 0; face < 2; ++face) {
      m_psi[axis][face] = DeviceBuffer();
      m_zeta[axis][face] = DeviceBuffer();
    }
  }
  m_view = CpmlView{};
}

void CpmlDevice::memory_pass(const float* u, const FieldLayout& l, gpuStream_t stream) const {
  if (!m_on) return;
  const dim3 block(kBx, kBy, kBz);
  for (int axis = 0; axis < 3; ++axis) {
    for (int face = 0; face < 2; ++face) {
      const int w = face == 0 ? m_view.lo[axis] : m_view.hi[axis];
      if (w == 0) continue;
      Box b{0, m_view.n[0], 0, m_view.n[1], 0, m_view.n[2]};
      int* lo[3] = {&b.x0, &b.y0, &b.z0};
      int* hi[3] = {&b.x1, &b.y1, &b.z1};
      *lo[axis] = face == 0 ? 0 : m_view.n[axis] - w;
      *hi[axis] = *lo[axis] + w;
      const dim3 grid = grid_of(b, block);
      cpml_memory_kernel<<<grid, block, 0, stream>>>(m_view, axis, face, u, l, b);
      MINIMOD_GPU_CHECK_LAUNCH("cpml_memory_kernel", grid, block, 0);
    }
  }
}

void cpml_layer_update_gpu(const IsoFields& f, const FieldLayout& l, const StencilCoefs& c,
                           const Box& b, gpuStream_t stream) {
  if (b.empty()) return;
  const dim3 block(kBx, kBy, kBz);
  const dim3 grid = grid_of(b, block);
  cpml_layer_kernel<<<grid, block, 0, stream>>>(*f.cpml, f.u, f.v, f.vp2dt2, l, c, b);
  MINIMOD_GPU_CHECK_LAUNCH("cpml_layer_kernel", grid, block, 0);
}

} // namespace minimod::gpu
