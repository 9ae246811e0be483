#pragma once
/// Spreading a point source over grid points and sampling the wavefield at a point, with weights
/// that sum to one (docs/physics.md section 4).

#include "core/grid.hpp"
#include "io/survey.hpp"

#include <vector>

namespace minimod {

/// One grid point and its weight.
struct GridTap {
  int i = 0, j = 0, k = 0;
  double weight = 0;
};

/// Radius (grid points per side) and Kaiser shape of the windowed sinc (Hicks 2002, table 2 for a
/// usable band up to half the Nyquist wavenumber at radius 4).
inline constexpr int kSincRadius = 4;
inline constexpr double kSincBeta = 6.31;

/// Kaiser-windowed sinc taps (Hicks 2002): separable, `radius` points on each side along each axis,
/// each axis' weights normalised to sum to one; a coordinate on a node gives that node alone. Taps
/// beyond the grid fall on the zero ghost and are dropped. With `free_surface`, taps above z = 0
/// are mirrored with opposite sign (the antisymmetric image of the pressure-free surface).
/// Throws std::out_of_range outside the grid.
std::vector<GridTap> sinc_taps(const Grid& grid, const Vec3& position, bool free_surface = false,
                               int radius = kSincRadius, double beta = kSincBeta);

/// Taps of either kind.
std::vector<GridTap> point_taps(const Grid& grid, const Vec3& position, Interpolation kind,
                                bool free_surface = false);

/// Trilinear taps (up to 8; zero-weight taps dropped) of a position in metres inside the grid.
/// A position on a grid point gives one tap of weight 1. Throws std::out_of_range outside the grid.
std::vector<GridTap> trilinear_taps(const Grid& grid, const Vec3& position);

} // namespace minimod
