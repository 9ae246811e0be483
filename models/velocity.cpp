#include "models/velocity.hpp"

#include "io/memory_file.hpp"

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/text.hpp"
#include "models/model_file.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace minimod {

namespace {

namespace fs = std::filesystem;

/// The model's location with another key: the parser records lines per section, not per field.
SourceLoc with_key(const SourceLoc& loc, const std::string& key) {
  return SourceLoc{loc.file, loc.line, key};
}

bool valid_velocity(float v) {
  return std::isfinite(v) && v > 0;
}

void check_velocity(double v, const SourceLoc& loc) {
  if (!valid_velocity(static_cast<float>(v))) {
    throw InputError(loc.where() + ": " + format_number(v) +
                     " is not allowed: a finite velocity > 0 (m/s)");
  }
}

/// Velocity at each depth index k, for the models that vary with depth only.
std::vector<float> depth_profile(const ModelSpec& spec, const Grid& grid) {
  std::vector<float> profile(static_cast<std::size_t>(grid.nz));
  switch (spec.kind) {
  case ModelSpec::Kind::Constant:
    check_velocity(spec.velocity, with_key(spec.loc, "model.velocity"));
    std::fill(profile.begin(), profile.end(), static_cast<float>(spec.velocity));
    break;
  case ModelSpec::Kind::Layered:
    if (spec.layers.empty()) {
      throw InputError(with_key(spec.loc, "model.layers").where() +
                       ": (empty) is not allowed: at least one layer");
    }
    for (std::size_t n = 0; n < spec.layers.size(); ++n) {
      check_velocity(spec.layers[n].velocity,
                     with_key(spec.loc, "model.layers[" + std::to_string(n) + "].velocity"));
    }
    for (int k = 0; k < grid.nz; ++k) {
      const double z = grid.oz + k * grid.dz;
      // The last layer whose top is at or above z; points above the first top take the first.
      std::size_t layer = 0;
      while (layer + 1 < spec.layers.size() && spec.layers[layer + 1].top <= z)
        ++layer;
      profile[static_cast<std::size_t>(k)] = static_cast<float>(spec.layers[layer].velocity);
    }
    break;
  case ModelSpec::Kind::Gradient:
    for (int k = 0; k < grid.nz; ++k) {
      const double z = grid.oz + k * grid.dz;
      const double v = spec.v0 + spec.gradient * (z - spec.z0);
      if (!valid_velocity(static_cast<float>(v))) {
        throw InputError(with_key(spec.loc, "model.gradient").where() + ": " +
                         format_number(spec.gradient) +
                         " is not allowed: a gradient that keeps v0 + gradient*(z - z0) > 0 in "
                         "the grid; it gives " +
                         format_number(v) + " m/s at z = " + format_number(z) +
                         " m (k = " + std::to_string(k) + ")");
      }
      profile[static_cast<std::size_t>(k)] = static_cast<float>(v);
    }
    break;
  case ModelSpec::Kind::File:
    break;
  }
  return profile;
}

std::string grid_text(const Grid& grid) {
  return std::to_string(grid.nx) + " x " + std::to_string(grid.ny) + " x " +
         std::to_string(grid.nz);
}

} // namespace

double model_host_bytes(const ModelSpec& spec, const Grid& grid) {
  double bytes = 4.0 * static_cast<double>(grid.points());
  if (spec.kind == ModelSpec::Kind::File) {
    // The file's values are held while they are placed on the grid (twice while reordered).
    std::error_code ec;
    const std::uintmax_t file = fs::file_size(spec.file, ec);
    if (!ec) bytes += 2.0 * static_cast<double>(file);
  }
  return bytes;
}

std::optional<std::pair<double, double>> model_range(const ModelSpec& spec, const Grid& grid) {
  if (spec.kind == ModelSpec::Kind::File) return std::nullopt;
  const std::vector<float> profile = depth_profile(spec, grid);
  const auto [lo, hi] = std::minmax_element(profile.begin(), profile.end());
  return std::make_pair(static_cast<double>(*lo), static_cast<double>(*hi));
}

/// An array read in the wrong axis order is the grid transposed: refuse what only the order
/// tells apart. A .npy or HDF5 array with as many points along x as along z reads as well either
/// way, so it needs model.order; an array whose shape is the grid's reversed (and no
/// model.spacing to resample it) was written in the other order.
static void check_axis_order(const ModelSpec& spec, ModelFormat format, const ModelVolume& volume,
                             const Grid& grid, const SourceLoc& loc) {
  if (format == ModelFormat::Segy) return;
  const std::array<int, 3>& n = volume.shape;
  const auto shape = [](int a, int b, int c) {
    return "(" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ")";
  };
  const std::string orders =
      "`order: xyz` (x fastest: the array is v[z, y, x], shape (nz, ny, nx) in C order) or "
      "`order: zyx` (z fastest: v[x, y, z], shape (nx, ny, nz) in C order, as Devito and most "
      "NumPy code hold a model)";
  if (!spec.order_given && (format == ModelFormat::Npy || format == ModelFormat::Hdf5) &&
      n[0] == n[2]) {
    throw InputError(
        loc.where() + ": the array " + spec.file + " (" + volume.description +
        ") has as many points along its first axis as along its last (" + std::to_string(n[0]) +
        "), so its shape does not tell x from z; allowed: give model.order: " + orders);
  }
  const std::array<int, 3> grid_shape{grid.nx, grid.ny, grid.nz};
  if (!spec.spacing && n != grid_shape && n[2] == grid.nx && n[1] == grid.ny && n[0] == grid.nz) {
    const bool xyz = spec.order == AxisOrder::Xyz;
    throw InputError(loc.where() + ": the array " + spec.file + " read with order " +
                     (xyz ? "xyz" : "zyx") + " has " + shape(n[0], n[1], n[2]) +
                     " points along x, y, z, the grid's " + shape(grid.nx, grid.ny, grid.nz) +
                     " reversed: it was written in the other axis order; allowed: model.order: " +
                     (xyz ? "zyx (the array is v[x, y, z], shape (nx, ny, nz) in C order, as "
                            "Devito and most NumPy code hold a model)"
                          : "xyz (the array is v[z, y, x], shape (nz, ny, nx) in C order)"));
  }
}

/// The reader's options of a model file spec.
static ModelFileOptions file_options(const ModelSpec& spec, ModelFormat format, const Grid& grid) {
  ModelFileOptions options;
  // A spec built in code may leave the raw shape unset: the grid's, as the parser defaults it.
  const bool shape_set = spec.file_shape != std::array<int, 3>{};
  if (format == ModelFormat::Raw) {
    options.shape = shape_set ? spec.file_shape : std::array<int, 3>{grid.nx, grid.ny, grid.nz};
  } else if (spec.file_shape_given) {
    options.shape = spec.file_shape;
  }
  options.segy.inline_byte = spec.segy_inline_byte;
  options.segy.crossline_byte = spec.segy_crossline_byte;
  return options;
}

std::string model_file_notice(const ModelSpec& spec, const Grid& grid) {
  if (spec.kind != ModelSpec::Kind::File) return "";
  if (const auto file = find_memory_file(spec.file); file && file->device)
    return ""; // not resampled
  const auto format = parse_model_format(spec.format);
  if (!format) return "";
  const SourceLoc loc =
      spec.file_loc.key.empty() ? with_key(spec.loc, "model.file") : spec.file_loc;
  const std::optional<ModelVolume> header = read_model_header(
      *format, spec.file, spec.order, loc.where(), file_options(spec, *format, grid));
  if (!header) return "";
  const SourceLoc spacing_loc =
      spec.spacing_loc.key.empty() ? with_key(spec.loc, "model.spacing") : spec.spacing_loc;
  const ModelGeometry geometry =
      model_geometry(*header, spec.spacing, spec.origin, grid, spacing_loc.where());
  return placement_notice(*header, geometry, grid, spec.extend_edge);
}

/// A model file of any format, placed on the grid (resampled when its geometry differs).
std::vector<float> read_any_model_file(const ModelSpec& spec, const Grid& grid,
                                       std::string* notice) {
  const SourceLoc loc =
      spec.file_loc.key.empty() ? with_key(spec.loc, "model.file") : spec.file_loc;
  const auto format = parse_model_format(spec.format);
  if (!format) {
    throw InputError(with_key(spec.loc, "model.format").where() + ": '" + spec.format +
                     "' is not allowed: raw, hdf5, segy or npy");
  }
  const ModelFileOptions options = file_options(spec, *format, grid);
  ModelVolume volume =
      read_model_volume(*format, spec.file, spec.dataset, spec.order, loc.where(), options);
  check_axis_order(spec, *format, volume, grid, loc);
  const SourceLoc spacing_loc =
      spec.spacing_loc.key.empty() ? with_key(spec.loc, "model.spacing") : spec.spacing_loc;
  const ModelGeometry geometry =
      model_geometry(volume, spec.spacing, spec.origin, grid, spacing_loc.where());
  ResampledModel placed = resample_model(std::move(volume), geometry, grid, spec.extend_edge);
  if (notice) *notice = placed.notice;
  return std::move(placed.velocity);
}

std::vector<float> build_velocity(const ModelSpec& spec, const Grid& grid, std::string* notice) {
  if (notice) notice->clear();
  // The first large allocation of a run: refuse it with the sizes rather than fail inside it.
  require_host_memory(model_host_bytes(spec, grid),
                      "the velocity model (" + grid_text(grid) + " float32 values" +
                          (spec.kind == ModelSpec::Kind::File ? ", and the file's values" : "") +
                          ")");
  if (spec.kind == ModelSpec::Kind::File) return read_any_model_file(spec, grid, notice);

  const std::vector<float> profile = depth_profile(spec, grid);
  std::vector<float> velocity(grid.points());
  const std::size_t plane = static_cast<std::size_t>(grid.nx) * static_cast<std::size_t>(grid.ny);
#pragma omp parallel for
  for (int k = 0; k < grid.nz; ++k) {
    const auto begin = velocity.begin() + static_cast<std::ptrdiff_t>(plane * k);
    std::fill(begin, begin + static_cast<std::ptrdiff_t>(plane),
              profile[static_cast<std::size_t>(k)]);
  }
  return velocity;
}

std::vector<float> build_property(const PropertySpec& spec, const Grid& grid, double scale) {
  const std::size_t plane = static_cast<std::size_t>(grid.nx) * static_cast<std::size_t>(grid.ny);
  require_host_memory(4.0 * static_cast<double>(grid.points()) *
                          (spec.kind == PropertySpec::Kind::File ? 2 : 1),
                      spec.loc.key + " on the grid (" + grid_text(grid) + " float32 values)");
  std::vector<float> out(grid.points());
  if (spec.kind == PropertySpec::Kind::File) {
    const auto format = parse_model_format(spec.format);
    ModelFileOptions options;
    options.shape = std::array<int, 3>{grid.nx, grid.ny, grid.nz};
    ModelVolume v = read_model_volume(*format, spec.file, spec.dataset,
                                      spec.order_zyx ? AxisOrder::Zyx : AxisOrder::Xyz,
                                      spec.loc.where(), options);
    if (v.shape != std::array<int, 3>{grid.nx, grid.ny, grid.nz}) {
      throw InputError(spec.loc.where() + ": the file holds " + std::to_string(v.shape[0]) + " x " +
                       std::to_string(v.shape[1]) + " x " + std::to_string(v.shape[2]) +
                       " values; allowed: the grid's shape " + std::to_string(grid.nx) + " x " +
                       std::to_string(grid.ny) + " x " + std::to_string(grid.nz));
    }
    for (std::size_t n = 0; n < out.size(); ++n) {
      if (!std::isfinite(v.values[n])) {
        const std::size_t i = n % grid.nx, j = (n / grid.nx) % grid.ny, k = n / plane;
        throw InputError(spec.loc.where() + ": " + format_number(v.values[n]) +
                         " at (i, j, k) = (" + std::to_string(i) + ", " + std::to_string(j) + ", " +
                         std::to_string(k) + ") is not allowed: finite values");
      }
      if (spec.abs_max && !(std::abs(v.values[n]) <= *spec.abs_max)) {
        const std::size_t i = n % grid.nx, j = (n / grid.nx) % grid.ny, k = n / plane;
        throw InputError(spec.loc.where() + ": " + format_number(v.values[n]) + " " + spec.unit +
                         " at (i, j, k) = (" + std::to_string(i) + ", " + std::to_string(j) + ", " +
                         std::to_string(k) + ") of " + spec.file +
                         " is not allowed: |value| <= " + format_number(*spec.abs_max) + " " +
                         spec.unit + " (anisotropy.angle_unit: " + spec.unit + ")");
      }
      out[n] = static_cast<float>(v.values[n] * scale);
    }
    return out;
  }
  for (int k = 0; k < grid.nz; ++k) {
    const double z = grid.oz + k * grid.dz;
    double value = spec.value;
    if (spec.kind == PropertySpec::Kind::Layered) {
      value = spec.layers.front().second;
      for (const auto& [top, v] : spec.layers) {
        if (top <= z) value = v;
      }
    } else if (spec.kind == PropertySpec::Kind::Gradient) {
      value = spec.value0 + spec.gradient * (z - spec.z0);
    }
    std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(plane * k), plane,
                static_cast<float>(value * scale));
  }
  return out;
}

double model_vmax(const std::vector<float>& velocity) {
  if (velocity.empty()) return 0;
  float largest = velocity.front();
  const auto n = static_cast<std::ptrdiff_t>(velocity.size());
#pragma omp parallel for reduction(max : largest)
  for (std::ptrdiff_t idx = 0; idx < n; ++idx) {
    largest = std::max(largest, velocity[static_cast<std::size_t>(idx)]);
  }
  return largest;
}

double model_vmin(const std::vector<float>& velocity) {
  if (velocity.empty()) return 0;
  float smallest = velocity.front();
  const auto n = static_cast<std::ptrdiff_t>(velocity.size());
#pragma omp parallel for reduction(min : smallest)
  for (std::ptrdiff_t idx = 0; idx < n; ++idx) {
    smallest = std::min(smallest, velocity[static_cast<std::size_t>(idx)]);
  }
  return smallest;
}

} // namespace minimod
