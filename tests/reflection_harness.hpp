#pragma once
/// Reflection by angle of one absorbing face (docs/physics-checks.md, "Absorbing layer by
/// angle"). A point source in a homogeneous medium at a fixed distance from the face under test
/// (the high x face), receivers at the same distance from it, offset along z so that the
/// specular reflection meets the face at 0, 30, 45, 60 and 70 degrees. The reference is the same
/// grid extended on that face far enough that nothing returns from it within the window; every
/// other face is the same in both runs, so the difference of the traces is the face's reflection
/// alone (within a window that holds the returns from the layer's inner edge and from its outer
/// face, which a receiver sees as from an image behind the outer face, at a steeper angle). It is
/// compared with the incident wave at the image distance (the direct wave of the reference, scaled
/// by 1/r, which is exact for the 3-D scalar wave).

#include "core/grid.hpp"
#include "kernels/cpml.hpp"

#include <array>
#include <string>
#include <vector>

namespace minimod {

/// The incidence angles of the measurement, degrees.
inline constexpr std::array<double, 5> kReflectionAngles = {0, 30, 45, 60, 70};

/// Reflection of the face in dB (20 log10 of the reflected over the incident peak), one per
/// kReflectionAngles entry.
using ReflectionRow = std::array<double, kReflectionAngles.size()>;

/// The measurement's set-up: spacing, velocity, Ricker peak, the distance of the source from the
/// face under test and the width of the layers on the other faces (the same in both runs).
struct ReflectionSetup {
  double h = 10.0;        ///< m
  double velocity = 2000; ///< m/s
  double peak = 16.0;     ///< Ricker peak frequency (Hz); fmax = 2.5 x peak: 5 points a wavelength
  int distance = 15;      ///< points from the source to the layer's inner edge
  int other_width = 10;   ///< layer width on the other five faces
};

/// The face's reflection for a layer of `type` and `width` points. `params` for a C-PML (its
/// alpha, when negative, defaults to pi fmax / 2.5 as in a survey).
ReflectionRow measure_reflection(BoundaryType type, int width, CpmlParams params = {-1, -1, -1, -1},
                                 const ReflectionSetup& setup = {});

/// The table of both formulations at `widths`: one line a formulation and width, a column an
/// angle (what `reflection_by_angle` prints and docs/physics-checks.md records).
std::string reflection_table(const std::vector<int>& widths, const ReflectionSetup& setup = {});

} // namespace minimod
