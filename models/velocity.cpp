#include "models/velocity.hpp"

#include "io/errors.hpp"

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

std::string format_number(double value) {
  char text[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

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

bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first_byte = 0;
  std::memcpy(&first_byte, &one, 1);
  return first_byte == 1;
}

/// Reads a raw little-endian float32 model and returns it x fastest.
std::vector<float> read_model_file(const ModelSpec& spec, const Grid& grid) {
  const SourceLoc loc =
      spec.file_loc.key.empty() ? with_key(spec.loc, "model.file") : spec.file_loc;
  const std::array<int, 3> grid_shape{grid.nx, grid.ny, grid.nz};
  const std::array<int, 3> shape =
      spec.file_shape == std::array<int, 3>{} ? grid_shape : spec.file_shape;
  const std::string shape_text = std::to_string(shape[0]) + " x " + std::to_string(shape[1]) +
                                 " x " + std::to_string(shape[2]);
  if (shape != grid_shape) {
    throw InputError(with_key(spec.loc, "model.shape").where() + ": " + shape_text +
                     " is not allowed: the grid's shape " + std::to_string(grid.nx) + " x " +
                     std::to_string(grid.ny) + " x " + std::to_string(grid.nz) +
                     " (no resampling yet)");
  }

  std::error_code ec;
  if (!fs::is_regular_file(spec.file, ec)) {
    throw InputError(loc.where() + ": " + spec.file +
                     " is not allowed: an existing file of raw float32 velocities (not found)");
  }
  const std::size_t count = grid.points();
  const std::uintmax_t expected = static_cast<std::uintmax_t>(count) * sizeof(float);
  const std::uintmax_t actual = fs::file_size(spec.file, ec);
  if (ec || actual != expected) {
    throw InputError(loc.where() + ": " + spec.file + " (" +
                     (ec ? std::string("size unknown") : std::to_string(actual) + " bytes") +
                     ") is not allowed: exactly " + std::to_string(expected) +
                     " bytes = " + shape_text + " little-endian float32 values");
  }

  std::vector<float> values(count);
  std::ifstream in(spec.file, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(expected));
  if (!in || static_cast<std::uintmax_t>(in.gcount()) != expected) {
    throw InputError(loc.where() + ": " + spec.file + ": read failed after " +
                     std::to_string(in.gcount()) + " of " + std::to_string(expected) + " bytes");
  }
  if (!host_is_little_endian()) {
    for (float& v : values) {
      unsigned char bytes[4];
      std::memcpy(bytes, &v, 4);
      std::swap(bytes[0], bytes[3]);
      std::swap(bytes[1], bytes[2]);
      std::memcpy(&v, bytes, 4);
    }
  }

  const bool z_fastest = spec.order == AxisOrder::Zyx;
  const auto n = static_cast<std::ptrdiff_t>(count);
  std::ptrdiff_t first_bad = n;
#pragma omp parallel for reduction(min : first_bad)
  for (std::ptrdiff_t idx = 0; idx < n; ++idx) {
    if (!valid_velocity(values[static_cast<std::size_t>(idx)]) && idx < first_bad) first_bad = idx;
  }
  if (first_bad < n) {
    const auto idx = static_cast<std::size_t>(first_bad);
    const auto nx = static_cast<std::size_t>(grid.nx), ny = static_cast<std::size_t>(grid.ny),
               nz = static_cast<std::size_t>(grid.nz);
    const std::size_t i = z_fastest ? idx / (nz * ny) : idx % nx;
    const std::size_t j = z_fastest ? (idx / nz) % ny : (idx / nx) % ny;
    const std::size_t k = z_fastest ? idx % nz : idx / (nx * ny);
    throw InputError(loc.where() + ": " + format_number(values[idx]) + " at (i, j, k) = (" +
                     std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) +
                     ") (byte offset " + std::to_string(idx * sizeof(float)) + " of " + spec.file +
                     ") is not allowed: velocities finite and > 0 (m/s)");
  }
  if (!z_fastest) return values;

  std::vector<float> x_fastest(count);
  const auto nx = static_cast<std::size_t>(grid.nx), ny = static_cast<std::size_t>(grid.ny),
             nz = static_cast<std::size_t>(grid.nz);
#pragma omp parallel for
  for (int j = 0; j < grid.ny; ++j) {
    const auto jj = static_cast<std::size_t>(j);
    for (std::size_t i = 0; i < nx; ++i) {
      const float* column = values.data() + nz * (jj + ny * i);
      for (std::size_t k = 0; k < nz; ++k)
        x_fastest[i + nx * (jj + ny * k)] = column[k];
    }
  }
  return x_fastest;
}

} // namespace

std::vector<float> build_velocity(const ModelSpec& spec, const Grid& grid) {
  if (spec.kind == ModelSpec::Kind::File) return read_model_file(spec, grid);

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
