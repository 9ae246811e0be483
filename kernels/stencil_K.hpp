#pragma once
/// Per-point math of the acoustic isotropic update (docs/physics.md sections 2 and 3), shared by
/// the CPU reference and every GPU kernel so that all of them compute the same function.
///
/// Where a product is added to a sum, the functions say so with fmaf (one rounding): the CPU
/// builds compile with -ffp-contract=off, so these are the only fused operations there and every
/// CPU path (AVX-512 intrinsics, omp simd loops, scalar code) gets the same bits; the GPU
/// compilers fuse by themselves besides (docs/kernels.md, "Fused multiply-adds").

#include "core/grid.hpp"
#include "core/host_device.hpp"

#include <cmath>
#include <cstdint>

namespace minimod {

/// Unit-spacing weights of the 8th-order second derivative: c0, c1..c4.
inline constexpr double kLaplacianWeights[kHalo + 1] = {-205.0 / 72.0, 8.0 / 5.0, -1.0 / 5.0,
                                                        8.0 / 315.0, -1.0 / 560.0};

/// Stencil coefficients scaled by the grid spacing. Passed to kernels by value (kernel parameters
/// live in the constant bank on NVIDIA and AMD GPUs, so every warp reads them broadcast).
struct StencilCoefs {
  float cx[kHalo + 1]; ///< c_m / dx^2 (index 0 unused by the star sum; see c0)
  float cy[kHalo + 1]; ///< c_m / dy^2
  float cz[kHalo + 1]; ///< c_m / dz^2
  float c0;            ///< c_0 (1/dx^2 + 1/dy^2 + 1/dz^2): the centre weight
  float px, py, pz;    ///< 1 / (4 h^2) per axis, for the layer's phi update
};

/// Coefficients for a grid's spacing.
inline StencilCoefs make_stencil_coefs(const Grid& g) {
  StencilCoefs c{};
  const double ix = 1.0 / (g.dx * g.dx), iy = 1.0 / (g.dy * g.dy), iz = 1.0 / (g.dz * g.dz);
  for (int m = 0; m <= kHalo; ++m) {
    c.cx[m] = static_cast<float>(kLaplacianWeights[m] * ix);
    c.cy[m] = static_cast<float>(kLaplacianWeights[m] * iy);
    c.cz[m] = static_cast<float>(kLaplacianWeights[m] * iz);
  }
  c.c0 = static_cast<float>(kLaplacianWeights[0] * (ix + iy + iz));
  c.px = static_cast<float>(0.25 * ix);
  c.py = static_cast<float>(0.25 * iy);
  c.pz = static_cast<float>(0.25 * iz);
  return c;
}

/// 25-point Laplacian at linear index p; sy and sz are the strides of y and z in floats. Each
/// pair's weighted sum is added with one rounding: lap = fma(c_m, u(+m) + u(-m), lap), for m = 1..4
/// along x, y and z in turn.
MINIMOD_HD float laplacian_25(const float* __restrict__ u, std::int64_t p, std::int64_t sy,
                              std::int64_t sz, const StencilCoefs& c) {
  float lap = c.c0 * u[p];
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m) {
    lap = fmaf(c.cx[m], u[p + m] + u[p - m], lap);
    lap = fmaf(c.cy[m], u[p + m * sy] + u[p - m * sy], lap);
    lap = fmaf(c.cz[m], u[p + m * sz] + u[p - m * sz], lap);
  }
  return lap;
}

/// Inner-region update from the Laplacian: returns u^{n+1} given u^n, u^{n-1} and (c dt)^2,
/// (2 u - v) + vp2dt2 lap with the product fused.
MINIMOD_HD float inner_update(float u, float v, float vp2dt2, float lap) {
  return fmaf(vp2dt2, lap, 2.0f * u - v);
}

/// Absorbing-layer update (Minimod's PML). Returns u^{n+1}; writes phi^{n+1} to *phi_next.
/// deta_du is sum over axes of (eta(+1) - eta(-1)) (u(+1) - u(-1)) / (4 h^2).
///   u^{n+1} = ((2 + 2 eta - eta^2) u - v + vp2dt2 (lap + phi)) / (1 + 2 eta),
///   phi^{n+1} = (phi - deta_du) / (1 + eta),
/// the three products that are added to something fused.
MINIMOD_HD float layer_update(float u, float v, float vp2dt2, float lap, float phi, float eta,
                              float deta_du, float* phi_next) {
  const float a = fmaf(-eta, eta, 2.0f + 2.0f * eta);
  const float next = fmaf(vp2dt2, lap + phi, fmaf(a, u, -v)) / (1.0f + 2.0f * eta);
  *phi_next = (phi - deta_du) / (1.0f + eta);
  return next;
}

/// The eta-gradient term of the phi update from the three axes' differences of eta (de*) and of
/// u (du*): de_x du_x px + de_y du_y py + de_z du_z pz, the y and z terms added with fmaf.
MINIMOD_HD float eta_gradient_sum(float dex, float dux, float dey, float duy, float dez, float duz,
                                  const StencilCoefs& c) {
  return fmaf(dez * duz, c.pz, fmaf(dey * duy, c.py, dex * dux * c.px));
}

/// The eta-gradient term of the phi update at linear index p.
MINIMOD_HD float eta_gradient_term(const float* __restrict__ u, const float* __restrict__ eta,
                                   std::int64_t p, std::int64_t sy, std::int64_t sz,
                                   const StencilCoefs& c) {
  return eta_gradient_sum(eta[p + 1] - eta[p - 1], u[p + 1] - u[p - 1], eta[p + sy] - eta[p - sy],
                          u[p + sy] - u[p - sy], eta[p + sz] - eta[p - sz], u[p + sz] - u[p - sz],
                          c);
}

} // namespace minimod
