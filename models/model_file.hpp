#pragma once
/// Velocity models read from files (raw float32, HDF5, SEG-Y, NumPy .npy) and placed on the grid:
/// a model has its own shape, spacing and origin; resample_model interpolates it trilinearly onto
/// the grid's points when they differ, and copies it when they match.
///
/// Axes: a model is indexed (i, j, k) along x, y, z like the grid, and held x fastest. For raw,
/// HDF5 and .npy arrays `order` says what the array's axes are: AxisOrder::Xyz means x varies
/// fastest in C order, so the array is [z][y][x] (shape (nz, ny, nx), numpy's natural layout for
/// a model built as v[z, y, x]); AxisOrder::Zyx means z varies fastest, so the array is [x][y][z]
/// (shape (nx, ny, nz), the trace-by-trace seismic layout). A .npy file's fortran_order flag only
/// changes how those axes lie on disk. SEG-Y cubes take their axes from the headers (io/segy.hpp:
/// x along crosslines, y along inlines, z down the trace) and ignore `order`.

#include "core/grid.hpp"
#include "io/segy.hpp"
#include "io/survey.hpp"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace minimod {

/// File format of a velocity model (survey key model.format).
enum class ModelFormat {
  Raw,  ///< little-endian float32, no header; shape and order from the survey
  Hdf5, ///< a 3-D float32 or float64 dataset of an HDF5 file
  Segy, ///< a post-stack SEG-Y cube (needs a build with segyio)
  Npy,  ///< a 3-D float32 or float64 NumPy .npy array
};

/// "raw", "hdf5", "segy" or "npy".
const char* model_format_name(ModelFormat format);
/// The format of a name as model_format_name writes it; empty for anything else.
std::optional<ModelFormat> parse_model_format(const std::string& name);

/// What read_model_volume needs besides format, path, dataset, order and key.
struct ModelFileOptions {
  /// Raw: the shape [nx, ny, nz] of the data (required; the survey defaults it to the grid's).
  /// Other formats: the file's shape must equal it when given.
  std::optional<std::array<int, 3>> shape;
  SegyReadOptions segy; ///< where the inline and crossline numbers are
};

/// A velocity model as read from its file, before placement on the grid.
struct ModelVolume {
  std::array<int, 3> shape{}; ///< nx, ny, nz
  std::vector<float> values;  ///< x fastest: index i + nx * (j + ny * k)
  /// Spacing in metres where the file says (SEG-Y headers; feet converted); absent elsewhere.
  std::array<std::optional<double>, 3> file_spacing;
  std::string path;        ///< the file
  std::string key;         ///< what starts error messages: "survey.yaml:6: model.file"
  std::string description; ///< format and layout, e.g. "npy <f8 (nz, ny, nx) C order"
  /// Where model point (i, j, k) lies in the file, for messages: "byte offset 1412 of vp.bin",
  /// "inline 3, crossline 22, sample 4 (trace 17) of vp.sgy".
  std::function<std::string(int, int, int)> locate;
};

/// Read a model file. `dataset` is the HDF5 dataset path (may be empty when the file holds
/// exactly one dataset); `order` applies to raw, HDF5 and .npy arrays; `key`
/// ("survey.yaml:6: model.file") starts every error message. Values are not checked here
/// (resample_model does). Throws InputError for a missing or unreadable file, a wrong size,
/// type, rank or shape, and for SEG-Y in a build without segyio.
ModelVolume read_model_volume(ModelFormat format, const std::string& path,
                              const std::string& dataset, AxisOrder order, const std::string& key,
                              const ModelFileOptions& options = {});

/// Where a model lies: point (i, j, k) at origin + (i*dx, j*dy, k*dz), metres.
struct ModelGeometry {
  Vec3 origin{};
  std::array<double, 3> spacing{};
  std::string
      spacing_from; ///< "model.spacing", "the file's headers", "the grid" (per axis, joined)
};

/// The model's geometry: on each axis the spacing is the survey's `spacing` when given, else the
/// file's, else the grid's when the model has as many points as the grid along that axis; the
/// origin is the survey's `origin` when given, else the grid's. Throws InputError naming
/// `spacing_key` ("survey.yaml:6: model.spacing") when an axis has no spacing from any of them.
ModelGeometry model_geometry(const ModelVolume& model,
                             const std::optional<std::array<double, 3>>& spacing,
                             const std::optional<Vec3>& origin, const Grid& grid,
                             const std::string& spacing_key);

/// Throws InputError for the first value (x fastest) that is NaN, infinite, zero or negative,
/// naming its (i, j, k) in the model, where it lies in the file, and the value.
void check_model_values(const ModelVolume& model);

/// A model placed on the grid.
struct ResampledModel {
  std::vector<float> velocity; ///< grid.points() values, x fastest
  /// Empty when the model's points are the grid's; otherwise what was done: the geometries,
  /// trilinear interpolation, and how many grid points lie outside the model and were clamped.
  std::string notice;
};

/// Check the model's values (check_model_values), then place it on the grid: a copy (moved, no
/// second buffer) when shape, spacing and origin match the grid's, else trilinear interpolation at
/// every grid point. With `extend_edge`, grid points outside the model's extent take the value of
/// the nearest point of the model (clamping at the edges), and the notice says how many did. Pass
/// the volume with std::move to avoid a copy of a large model. Without `extend_edge`, a grid
/// reaching beyond the model is refused (InputError naming the model's extent and the grid's, and
/// the key model.extend).
ResampledModel resample_model(ModelVolume model, const ModelGeometry& geometry, const Grid& grid,
                              bool extend_edge = false);

/// What resample_model would say of placing `model` (its shape, path, key and description; the
/// values are not needed) on the grid: empty when the geometries match. Throws as resample_model
/// for grid points beyond the model without `extend_edge`.
std::string placement_notice(const ModelVolume& model, const ModelGeometry& geometry,
                             const Grid& grid, bool extend_edge);

/// The model's shape and description from the header alone, without the values: raw (the shape
/// in `options`) and .npy; nullopt for HDF5 and SEG-Y. Throws as read_model_volume.
std::optional<ModelVolume> read_model_header(ModelFormat format, const std::string& path,
                                             AxisOrder order, const std::string& key,
                                             const ModelFileOptions& options = {});

} // namespace minimod
