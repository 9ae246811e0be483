#pragma once
/// The gmem_3d_f4 family: gmem_3d (Sai et al. 2022, section 5.1) with 16-byte vector loads along x.
/// Each thread updates a quad of 4 consecutive x points. Its u operands are float4 loads only: the
/// quads left of, at and right of its own (x - 4 .. x + 7, every x neighbour of the 4 points) and
/// the quads 1..4 rows and planes away along y and z; v, vp2dt2 (and phi, eta in the layer) are
/// float4 as well. One LDG.128 replaces four LDG.32, so a thread issues 21 loads for 4 points where
/// gmem_3d issues 108.
///
/// Quads are aligned on 16 bytes in memory, not on the region's first x: the quad grid of a region
/// starts at the last 4-float boundary at or before its x0 (the inner region's x0 is 128-byte
/// aligned by the layout, so there it starts at x0). A quad that straddles either end of the box
/// computes every lane but writes only the lanes inside the box, with scalar stores; full quads
/// store float4. Thus any box works, the layer slabs (x0 = 0 or nx - n) included.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/half_kernels.cuh"
#include "kernels/gpu/launch_limits.hpp"
#include "kernels/gpu/tiled_kernel.hpp"
#include "kernels/kernel.hpp"
#include "kernels/stencil_K.hpp"

#include <cstdint>
#include <string>

namespace minimod::gpu {

/// Grid points per thread along x (one float4).
inline constexpr int kQuad = 4;

/// The 4 floats at p (16-byte aligned) through the read-only path.
__device__ __forceinline__ float4 load_quad_ro(const float* __restrict__ ptr, std::int64_t p) {
  return __ldg(reinterpret_cast<const float4*>(ptr + p));
}

/// The 4 floats at p (16-byte aligned) of a field that the kernel also writes.
__device__ __forceinline__ float4 load_quad_rw(const float* ptr, std::int64_t p) {
  return *reinterpret_cast<const float4*>(ptr + p);
}

/// Lane `l` of a quad; `l` must be a compile-time constant after unrolling (keeps registers).
__device__ __forceinline__ float quad_lane(const float4& q, int l) {
  return l == 0 ? q.x : (l == 1 ? q.y : (l == 2 ? q.z : q.w));
}

/// Write lanes [lo, hi) of `q` to ptr[p + lane]: all four with one 16-byte store when the quad lies
/// inside the box, else scalar stores of the lanes inside (the others belong to other regions or
/// to the ghost and padding).
__device__ __forceinline__ void store_quad(float* ptr, std::int64_t p, const float4& q, int lo,
                                           int hi) {
  if (lo <= 0 && hi >= kQuad) {
    *reinterpret_cast<float4*>(ptr + p) = q;
    return;
  }
  MINIMOD_UNROLL
  for (int l = 0; l < kQuad; ++l)
    if (l >= lo && l < hi) ptr[p + l] = quad_lane(q, l);
}

/// log2 of a power of two.
constexpr int log2_of(int n) {
  return n <= 1 ? 0 : 1 + log2_of(n / 2);
}

/// Quads of a box's x range: first x of the quad grid and number of quads. The quad grid is
/// aligned on the padded row (row starts are 128-byte aligned), not on the box.
struct QuadSpan {
  int x0 = 0;
  long long count = 0;
};

/// The quad grid of box `b` in `layout`.
inline QuadSpan quad_span(const Box& b, const FieldLayout& layout) {
  // Padded-row positions are >= 0 (x >= -x_offset), so plain division rounds down.
  const long long first = static_cast<long long>(b.x0 + layout.x_offset) / kQuad * kQuad;
  const long long end = ceil_div(static_cast<long long>(b.x1) + layout.x_offset, kQuad) * kQuad;
  QuadSpan s;
  s.x0 = static_cast<int>(first - layout.x_offset);
  s.count = (end - first) / kQuad;
  return s;
}

/// Reshape of a block of `dx` threads along x for a region `quads` quads wide: 0 for regions at
/// least dx quads wide, else the largest s with dx >> s >= quads (one block row covers the width).
inline int quad_x_shift(int dx, long long quads) {
  int shift = 0;
  while ((dx >> (shift + 1)) >= quads && (dx >> (shift + 1)) >= 1)
    ++shift;
  return shift;
}

/// The first point of the quad a thread updates: x of its first lane, y and z.
struct QuadPoint {
  int i0, j, k;
};

/// The quad of this thread in `box`, for blocks of Dx x Dy x Dz threads whose xy threads are
/// reshaped to (Dx >> x_shift) x (Dy << x_shift) (quad_x_shift); `quad_x0` is the first x of the
/// box's quad grid (quad_span). The point may lie past the box's end: callers test it.
template <int Dx, int Dy, int Dz>
__device__ __forceinline__ QuadPoint quad_point(const Box& box, int quad_x0, int x_shift) {
  const int xy = static_cast<int>(threadIdx.x) + Dx * static_cast<int>(threadIdx.y);
  const int tx = xy & ((Dx >> x_shift) - 1);
  const int ty = xy >> (log2_of(Dx) - x_shift);
  QuadPoint q;
  q.i0 = quad_x0 + kQuad * (static_cast<int>(blockIdx.x) * (Dx >> x_shift) + tx);
  q.j = box.y0 + static_cast<int>(blockIdx.y) * (Dy << x_shift) + ty;
  q.k = box.z0 + static_cast<int>(blockIdx.z) * Dz + static_cast<int>(threadIdx.z);
  return q;
}

/// Whether every field pointer of `f` is 16-byte aligned (null ones count as aligned).
inline bool quad_aligned(const IsoFields& f) {
  const auto bits = reinterpret_cast<std::uintptr_t>(f.u) | reinterpret_cast<std::uintptr_t>(f.v) |
                    reinterpret_cast<std::uintptr_t>(f.vp2dt2) |
                    reinterpret_cast<std::uintptr_t>(f.phi) |
                    reinterpret_cast<std::uintptr_t>(f.eta);
  return (bits % (kQuad * sizeof(float))) == 0;
}

/// One step of the update on the points of `box` (absolute grid coordinates), 4 x points per
/// thread. `quad_x0` is the first x of the quad grid: the last x <= box.x0 whose padded-row
/// position is a multiple of 4. `x_shift` reshapes the block's xy threads to
/// (Dx >> x_shift) x (Dy << x_shift), so that a region only a few quads wide (the left and right
/// layer slabs) does not leave most threads of a wide block idle.
/// \tparam Dx threads per block along x (the block covers 4 Dx points along x)
/// \tparam Dy threads (and points) per block along y
/// \tparam Dz threads (and points) per block along z
/// \tparam Kind RegionKind::Inner: plain update (phi, eta unused and may be null);
///              RegionKind::Layer: Minimod's PML update, also writes phi
/// \tparam Table the layer reads eta from `table` (its rows, the same bits) instead of `eta`
template <int Dx, int Dy, int Dz, RegionKind Kind, bool Table = false>
__global__ void MINIMOD_LAUNCH_BOUNDS(Dx* Dy* Dz)
    gmem_3d_f4_kernel(const float* __restrict__ u, float* __restrict__ v,
                      const float* __restrict__ vp2dt2, float* __restrict__ phi,
                      const float* __restrict__ eta, const EtaTableView table,
                      const FieldLayout layout, const StencilCoefs coefs, const Box box,
                      const int quad_x0, const int x_shift) {
  const QuadPoint q = quad_point<Dx, Dy, Dz>(box, quad_x0, x_shift);
  const int i0 = q.i0, j = q.j, k = q.k;
  if (i0 >= box.x1 || j >= box.y1 || k >= box.z1) return;
  // Lanes [lo, hi) of this quad lie inside the box.
  const int lo = box.x0 - i0;
  const int hi = box.x1 - i0;

  const std::int64_t p = layout.index(i0, j, k);
  const std::int64_t sy = layout.pitch;
  const std::int64_t sz = layout.plane;

  const float4 u_c = load_quad_ro(u, p);
  // In the inner region the point's own operands come first, so that their loads are in flight
  // during the star sum; the layer loads them after it, which keeps it under 64 registers.
  float4 v_c, vp2dt2_c;
  if constexpr (Kind == RegionKind::Inner) {
    v_c = load_quad_rw(v, p);
    vp2dt2_c = load_quad_ro(vp2dt2, p);
  }

  // u(i0 - 4 .. i0 + 7): every x neighbour of the quad's points, from three aligned quads.
  float ux[3 * kQuad];
  {
    const float4 left = load_quad_ro(u, p - kQuad);
    const float4 right = load_quad_ro(u, p + kQuad);
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l) {
      ux[l] = quad_lane(left, l);
      ux[kQuad + l] = quad_lane(u_c, l);
      ux[2 * kQuad + l] = quad_lane(right, l);
    }
  }

  // eta's rows (padded x = 0) at (j, k) and its four y/z neighbours: of the array, or of the
  // table (a few MB, which stays in L2, where the array costs 4 bytes a point from DRAM).
  const int xp = i0 + layout.x_offset;
  const float* eta_row = nullptr;
  int yc = 0, zc = 0; // the table's classes of j and k
  auto table_row = [&](int y_class, int z_class) {
    return table.rows +
           static_cast<std::int64_t>(y_class * table.z_values + z_class) * layout.pitch;
  };
  if constexpr (Kind == RegionKind::Layer) {
    if constexpr (Table) {
      yc = __ldg(table.y_class + j + 1);
      zc = __ldg(table.z_class + k + 1);
      eta_row = table_row(yc, zc);
    } else {
      eta_row = eta + (p - xp);
    }
  }

  // The eta-gradient term of the layer first, while few registers are live (eta_gradient_term's
  // expression and order, lane by lane).
  float deta_du[kQuad];
  if constexpr (Kind == RegionKind::Layer) {
    const float *eta_yp, *eta_ym, *eta_zp, *eta_zm;
    if constexpr (Table) {
      eta_yp = table_row(__ldg(table.y_class + j + 2), zc);
      eta_ym = table_row(__ldg(table.y_class + j), zc);
      eta_zp = table_row(yc, __ldg(table.z_class + k + 2));
      eta_zm = table_row(yc, __ldg(table.z_class + k));
    } else {
      eta_yp = eta_row + sy;
      eta_ym = eta_row - sy;
      eta_zp = eta_row + sz;
      eta_zm = eta_row - sz;
    }
    // eta(i0 - 1 .. i0 + 4); the two outer ones are scalars (their quads would be 3/4 unused).
    const float4 eta_c = load_quad_ro(eta_row, xp);
    float ex[kQuad + 2];
    ex[0] = __ldg(eta_row + xp - 1);
    ex[kQuad + 1] = __ldg(eta_row + xp + kQuad);
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      ex[l + 1] = quad_lane(eta_c, l);
    const float4 eyp = load_quad_ro(eta_yp, xp), eym = load_quad_ro(eta_ym, xp);
    const float4 ezp = load_quad_ro(eta_zp, xp), ezm = load_quad_ro(eta_zm, xp);
    // Loaded again for the star sum: the compiler keeps one load of each.
    const float4 uyp = load_quad_ro(u, p + sy), uym = load_quad_ro(u, p - sy);
    const float4 uzp = load_quad_ro(u, p + sz), uzm = load_quad_ro(u, p - sz);
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      deta_du[l] = (ex[l + 2] - ex[l]) * (ux[kQuad + l + 1] - ux[kQuad + l - 1]) * coefs.px +
                   (quad_lane(eyp, l) - quad_lane(eym, l)) *
                       (quad_lane(uyp, l) - quad_lane(uym, l)) * coefs.py +
                   (quad_lane(ezp, l) - quad_lane(ezm, l)) *
                       (quad_lane(uzp, l) - quad_lane(uzm, l)) * coefs.pz;
  }

  // The star sum in laplacian_25's order (centre, then per distance x, y, z), lane by lane.
  float lap[kQuad];
  MINIMOD_UNROLL
  for (int l = 0; l < kQuad; ++l)
    lap[l] = coefs.c0 * ux[kQuad + l];
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m) {
    const float4 yp = load_quad_ro(u, p + m * sy);
    const float4 ym = load_quad_ro(u, p - m * sy);
    const float4 zp = load_quad_ro(u, p + m * sz);
    const float4 zm = load_quad_ro(u, p - m * sz);
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l) {
      lap[l] += coefs.cx[m] * (ux[kQuad + l + m] + ux[kQuad + l - m]);
      lap[l] += coefs.cy[m] * (quad_lane(yp, l) + quad_lane(ym, l));
      lap[l] += coefs.cz[m] * (quad_lane(zp, l) + quad_lane(zm, l));
    }
  }

  float out[kQuad];
  if constexpr (Kind == RegionKind::Inner) {
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      out[l] = inner_update(quad_lane(u_c, l), quad_lane(v_c, l), quad_lane(vp2dt2_c, l), lap[l]);
  } else {
    v_c = load_quad_rw(v, p);
    vp2dt2_c = load_quad_ro(vp2dt2, p);
    const float4 phi_c = load_quad_rw(phi, p);
    const float4 eta_c = load_quad_ro(eta_row, xp);
    float phi_next[kQuad];
    MINIMOD_UNROLL
    for (int l = 0; l < kQuad; ++l)
      out[l] = layer_update(quad_lane(u_c, l), quad_lane(v_c, l), quad_lane(vp2dt2_c, l), lap[l],
                            quad_lane(phi_c, l), quad_lane(eta_c, l), deta_du[l], &phi_next[l]);
    store_quad(phi, p, make_float4(phi_next[0], phi_next[1], phi_next[2], phi_next[3]), lo, hi);
  }
  store_quad(v, p, make_float4(out[0], out[1], out[2], out[3]), lo, hi);
}

/// The registry entry of one gmem_3d_f4 tile: `gmem_3d_f4_<Dx>x<Dy>x<Dz>`, both region kinds.
/// \tparam Dx threads per block along x (4 Dx grid points)
/// \tparam Dy threads per block along y
/// \tparam Dz threads per block along z
template <int Dx, int Dy, int Dz> class Gmem3dF4Kernel final : public TiledCudaKernel {
public:
  static_assert(Dx > 0 && Dy > 0 && Dz > 0, "tile extents must be positive");
  static_assert(Dx * Dy * Dz <= 1024, "a thread block holds at most 1024 threads");
  static_assert((Dx & (Dx - 1)) == 0,
                "Dx must be a power of two (the block is reshaped by shifts)");

  /// Threads per block.
  static constexpr int kThreads = Dx * Dy * Dz;

  Gmem3dF4Kernel() : TiledCudaKernel("gmem_3d_f4", Dx, Dy, Dz, true, true) {}
  std::string description() const override;
  /// Its C-PML layer regions run the shared C-PML layer kernel (kernels/gpu/cpml_gpu.cuh).
  bool handles_cpml() const override { return true; }
  /// Its layer update reads eta's table where the backend has one, the 3D array only otherwise.
  bool reads_eta_array() const override { return false; }
  /// Also the float4 layout conditions; the block grid covers quads, reshaped for narrow slabs.
  std::string can_run(const Region& region, const FieldLayout& layout) const override;
  void launch(const IsoFields& f, const FieldLayout& layout, const StencilCoefs& coefs,
              const Region& region, void* stream) const override;
  /// Its float16 form is the float16 point update (kernels/gpu/half_kernels.cuh), both kinds.
  bool handles_precision(Precision) const override { return true; }
  void launch16(const IsoFields16& f, const FieldLayout& layout, const StencilCoefs& coefs,
                const Region& region, void* stream) const override {
    launch_half_points(f, layout, coefs, region, static_cast<gpuStream_t>(stream),
                       name() + "<float16>");
  }
};

/// Add every gmem_3d_f4 tile to `registry`, the best measured one as the family default.
void register_gmem_3d_f4_kernels(KernelRegistry& registry);

} // namespace minimod::gpu
