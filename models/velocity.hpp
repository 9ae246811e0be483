#pragma once
/// Dense velocity models built from the survey's model section (docs/survey.md, "model").

#include "core/grid.hpp"
#include "io/survey.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minimod {

/// Velocity in m/s at every grid point, x fastest: index i + nx * (j + ny * k), nx*ny*nz values.
/// Throws InputError for a gradient that is not positive somewhere in the grid, and for a model
/// file that is missing, has the wrong size or holds a value that is not finite and > 0. A model
/// file with another geometry than the grid is resampled trilinearly; `notice` (when given)
/// receives what was done, and stays empty when the model's points are the grid's.
std::vector<float> build_velocity(const ModelSpec& spec, const Grid& grid,
                                  std::string* notice = nullptr);

/// Host memory build_velocity takes: the dense model, and for a file model its values as read.
double model_host_bytes(const ModelSpec& spec, const Grid& grid);

/// Smallest and largest velocity of a model that varies with depth only (constant, layered,
/// gradient), computed from one value per depth without building the dense model, with the same
/// checks as build_velocity; nullopt for a file model (its values must be read).
std::optional<std::pair<double, double>> model_range(const ModelSpec& spec, const Grid& grid);

/// A TTI parameter at every grid point (x fastest), `scale` times the survey's values (degrees to
/// radians for angles). Files must have the grid's shape; NaN or infinite values are InputErrors
/// naming the first (i, j, k).
std::vector<float> build_property(const PropertySpec& spec, const Grid& grid, double scale = 1);

/// Largest value of a velocity model, 0 for an empty one.
double model_vmax(const std::vector<float>& velocity);

/// Smallest value of a velocity model, 0 for an empty one.
double model_vmin(const std::vector<float>& velocity);

/// The notice of a raw or .npy model file placed on the grid (both geometries), from the file's
/// header alone: empty when the geometries match, for other models, and for HDF5 and SEG-Y
/// files (whose shape needs more than a header read). What the plan prints in `run`.
std::string model_file_notice(const ModelSpec& spec, const Grid& grid);

} // namespace minimod
