/// The float16 point update (kernels/gpu/half_kernels.cuh): one thread a point, every operand a
/// load of its own (the neighbours' mostly L1 and L2 hits), for the layer regions of a float16 run
/// and the inner pieces of gmem_3d_f4.

#include "kernels/gpu/half_kernels.cuh"

#include <stdexcept>

namespace minimod::gpu {
namespace {

constexpr int kPointX = 32, kPointY = 4, kPointZ = 4;

/// eta at (i, j, k) from its table (EtaTableView), the bits of the padded array.
__device__ __forceinline__ float eta_of_table(const EtaTableView& t, const FieldLayout& l, int i,
                                              int j, int k) {
  const int row = __ldg(t.y_class + j + 1) * t.z_values + __ldg(t.z_class + k + 1);
  return __ldg(t.rows + static_cast<std::int64_t>(row) * l.pitch + l.x_offset + i);
}

/// The float16 update of the point (i, j, k) of `box`; Kind Layer is Minimod's layer, eta from
/// its table where Table, from the padded array otherwise.
template <RegionKind Kind, bool Table>
__global__ void MINIMOD_LAUNCH_BOUNDS(kPointX* kPointY* kPointZ)
    half_point_kernel(const IsoFields16 f, const FieldLayout l, const StencilCoefs c, const Box b) {
  const int i = b.x0 + static_cast<int>(blockIdx.x * kPointX + threadIdx.x);
  const int j = b.y0 + static_cast<int>(blockIdx.y * kPointY + threadIdx.y);
  const int k = b.z0 + static_cast<int>(blockIdx.z * kPointZ + threadIdx.z);
  if (i >= b.x1 || j >= b.y1 || k >= b.z1) return;
  const std::int64_t sy = l.pitch, sz = l.plane;
  const std::int64_t p = l.index(i, j, k);
  const auto u = [&](std::int64_t q) { return load_half_ro(f.u, q); };
  const float centre = u(p);
  // laplacian_25's terms in its order.
  float lap = c.c0 * centre;
#pragma unroll
  for (int m = 1; m <= kHalo; ++m) {
    lap = fmaf(c.cx[m], u(p + m) + u(p - m), lap);
    lap = fmaf(c.cy[m], u(p + m * sy) + u(p - m * sy), lap);
    lap = fmaf(c.cz[m], u(p + m * sz) + u(p - m * sz), lap);
  }
  const float step = half_bits_to_float(f.d[p]);
  const float medium = f.code.decode(__ldg(f.vp2dt2 + p));
  float next;
  if constexpr (Kind == RegionKind::Inner) {
    next = inner_update(centre, centre - step, medium, lap);
  } else {
    float e, exm, exp, eym, eyp, ezm, ezp;
    if constexpr (Table) {
      e = eta_of_table(f.eta_table, l, i, j, k);
      exm = eta_of_table(f.eta_table, l, i - 1, j, k);
      exp = eta_of_table(f.eta_table, l, i + 1, j, k);
      eym = eta_of_table(f.eta_table, l, i, j - 1, k);
      eyp = eta_of_table(f.eta_table, l, i, j + 1, k);
      ezm = eta_of_table(f.eta_table, l, i, j, k - 1);
      ezp = eta_of_table(f.eta_table, l, i, j, k + 1);
    } else {
      e = __ldg(f.eta + p);
      exm = __ldg(f.eta + p - 1);
      exp = __ldg(f.eta + p + 1);
      eym = __ldg(f.eta + p - sy);
      eyp = __ldg(f.eta + p + sy);
      ezm = __ldg(f.eta + p - sz);
      ezp = __ldg(f.eta + p + sz);
    }
    const float deta_du =
        eta_gradient_sum(exp - exm, u(p + 1) - u(p - 1), eyp - eym, u(p + sy) - u(p - sy),
                         ezp - ezm, u(p + sz) - u(p - sz), c);
    float phi_next;
    next = layer_update(centre, centre - step, medium, lap, half_bits_to_float(f.phi[p]), e,
                        deta_du, &phi_next);
    f.phi[p] = float_to_half_bits(phi_next);
  }
  f.u_next[p] = float_to_half_bits(next);
  f.d[p] = float_to_half_bits(next - centre);
}

} // namespace

void launch_half_points(const IsoFields16& f, const FieldLayout& layout, const StencilCoefs& coefs,
                        const Region& region, gpuStream_t stream, const std::string& name) {
  const Box& b = region.box;
  if (b.empty()) return;
  if (f.u == nullptr || f.u_next == nullptr || f.d == nullptr || f.vp2dt2 == nullptr)
    throw std::invalid_argument(name + ": a float16 update needs u, u next, d and the medium");
  const dim3 block(kPointX, kPointY, kPointZ);
  const dim3 grid(static_cast<unsigned>((b.nx() + kPointX - 1) / kPointX),
                  static_cast<unsigned>((b.ny() + kPointY - 1) / kPointY),
                  static_cast<unsigned>((b.nz() + kPointZ - 1) / kPointZ));
  if (region.kind() == RegionKind::Inner) {
    half_point_kernel<RegionKind::Inner, false><<<grid, block, 0, stream>>>(f, layout, coefs, b);
  } else {
    if (f.phi == nullptr || (f.eta == nullptr && f.eta_table.rows == nullptr))
      throw std::invalid_argument(name + ": a float16 layer region needs phi and eta");
    if (f.eta_table.rows != nullptr)
      half_point_kernel<RegionKind::Layer, true><<<grid, block, 0, stream>>>(f, layout, coefs, b);
    else
      half_point_kernel<RegionKind::Layer, false><<<grid, block, 0, stream>>>(f, layout, coefs, b);
  }
  MINIMOD_GPU_CHECK_LAUNCH(name.c_str(), grid, block, 0);
}

} // namespace minimod::gpu
