#pragma once
/// Spreading a point source over grid points and sampling the wavefield at a point, with weights
/// that sum to one (physics.md section 4).

#include "io/survey.hpp"
#include "solver/grid.hpp"

#include <vector>

namespace minimod {

/// One grid point and its weight.
struct GridTap {
  int i = 0, j = 0, k = 0;
  double weight = 0;
};

/// Trilinear taps (up to 8; zero-weight taps dropped) of a position in metres inside the grid.
/// A position on a grid point gives one tap of weight 1. Throws std::out_of_range outside the grid.
std::vector<GridTap> trilinear_taps(const Grid& grid, const Vec3& position);

} // namespace minimod
