#pragma once
/// Per-point math of the acoustic isotropic update (docs/physics.md sections 2 and 3), shared by
/// the CPU reference and every GPU kernel so that all of them compute the same function.

#include "core/grid.hpp"
#include "core/host_device.hpp"

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

/// 25-point Laplacian at linear index p; sy and sz are the strides of y and z in floats.
MINIMOD_HD float laplacian_25(const float* __restrict__ u, std::int64_t p, std::int64_t sy,
                              std::int64_t sz, const StencilCoefs& c) {
  float lap = c.c0 * u[p];
  MINIMOD_UNROLL
  for (int m = 1; m <= kHalo; ++m) {
    lap += c.cx[m] * (u[p + m] + u[p - m]);
    lap += c.cy[m] * (u[p + m * sy] + u[p - m * sy]);
    lap += c.cz[m] * (u[p + m * sz] + u[p - m * sz]);
  }
  return lap;
}

/// Inner-region update from the Laplacian: returns u^{n+1} given u^n, u^{n-1} and (c dt)^2.
MINIMOD_HD float inner_update(float u, float v, float vp2dt2, float lap) {
  return 2.0f * u - v + vp2dt2 * lap;
}

/// Absorbing-layer update (Minimod's PML). Returns u^{n+1}; writes phi^{n+1} to *phi_next.
/// deta_du is sum over axes of (eta(+1) - eta(-1)) (u(+1) - u(-1)) / (4 h^2).
MINIMOD_HD float layer_update(float u, float v, float vp2dt2, float lap, float phi, float eta,
                              float deta_du, float* phi_next) {
  const float next =
      ((2.0f + 2.0f * eta - eta * eta) * u - v + vp2dt2 * (lap + phi)) / (1.0f + 2.0f * eta);
  *phi_next = (phi - deta_du) / (1.0f + eta);
  return next;
}

/// The eta-gradient term of the phi update at linear index p.
MINIMOD_HD float eta_gradient_term(const float* __restrict__ u, const float* __restrict__ eta,
                                   std::int64_t p, std::int64_t sy, std::int64_t sz,
                                   const StencilCoefs& c) {
  return (eta[p + 1] - eta[p - 1]) * (u[p + 1] - u[p - 1]) * c.px +
         (eta[p + sy] - eta[p - sy]) * (u[p + sy] - u[p - sy]) * c.py +
         (eta[p + sz] - eta[p - sz]) * (u[p + sz] - u[p - sz]) * c.pz;
}

} // namespace minimod
