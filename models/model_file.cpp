#include "models/model_file.hpp"

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/memory_file.hpp"
#include "io/npy.hpp"
#include "io/text.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace minimod {

namespace {

namespace fs = std::filesystem;

std::string shape_text(const std::array<int, 3>& shape) {
  return std::to_string(shape[0]) + " x " + std::to_string(shape[1]) + " x " +
         std::to_string(shape[2]);
}

std::string triple_text(const std::array<double, 3>& values) {
  return format_number(values[0]) + ", " + format_number(values[1]) + ", " +
         format_number(values[2]);
}

bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first_byte = 0;
  std::memcpy(&first_byte, &one, 1);
  return first_byte == 1;
}

float narrow(double value) {
  if (value > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (value < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

std::size_t count_of(const std::array<int, 3>& shape) {
  return static_cast<std::size_t>(shape[0]) * static_cast<std::size_t>(shape[1]) *
         static_cast<std::size_t>(shape[2]);
}

/// Values stored with `fastest` (then `middle`, then the remaining axis) varying fastest, as
/// model axes 0 = x, 1 = y, 2 = z, rearranged to x fastest.
std::vector<float> to_x_fastest(std::vector<float> stored, const std::array<int, 3>& shape,
                                const std::array<int, 3>& axes_fastest_first) {
  if (axes_fastest_first == std::array<int, 3>{0, 1, 2}) return stored;
  std::array<std::size_t, 3> stride{};
  std::size_t step = 1;
  for (int a : axes_fastest_first) {
    stride[static_cast<std::size_t>(a)] = step;
    step *= static_cast<std::size_t>(shape[static_cast<std::size_t>(a)]);
  }
  std::vector<float> out(stored.size());
  const auto nx = static_cast<std::size_t>(shape[0]), ny = static_cast<std::size_t>(shape[1]);
#pragma omp parallel for
  for (int k = 0; k < shape[2]; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    for (std::size_t j = 0; j < ny; ++j) {
      float* row = out.data() + nx * (j + ny * kk);
      const float* base = stored.data() + j * stride[1] + kk * stride[2];
      for (std::size_t i = 0; i < nx; ++i)
        row[i] = base[i * stride[0]];
    }
  }
  return out;
}

/// The model axes (0 = x, 1 = y, 2 = z) of a C-order array's three dimensions, slowest first.
std::array<int, 3> array_axes(AxisOrder order) {
  return order == AxisOrder::Xyz ? std::array<int, 3>{2, 1, 0} : std::array<int, 3>{0, 1, 2};
}

/// The model shape (nx, ny, nz) of an array of dimensions `dims` (slowest first in C order).
template <typename Dim>
std::array<int, 3> model_shape(const std::array<Dim, 3>& dims, AxisOrder order,
                               const std::string& key, const std::string& path) {
  const std::array<int, 3> axes = array_axes(order);
  std::array<int, 3> shape{};
  for (std::size_t d = 0; d < 3; ++d) {
    if (dims[d] > static_cast<Dim>(std::numeric_limits<int>::max())) {
      throw InputError(key + ": " + path + " (dimension " + std::to_string(d) + " of " +
                       std::to_string(dims[d]) + " points) is not allowed: at most " +
                       std::to_string(std::numeric_limits<int>::max()) + " points per axis");
    }
    shape[static_cast<std::size_t>(axes[d])] = static_cast<int>(dims[d]);
  }
  return shape;
}

std::string order_text(AxisOrder order) {
  return order == AxisOrder::Xyz ? "order xyz: array [z][y][x]" : "order zyx: array [x][y][z]";
}

/// Array index text "[a][b][c]" of model point (i, j, k).
std::string element_text(AxisOrder order, int i, int j, int k) {
  const std::array<int, 3> ijk{i, j, k};
  const std::array<int, 3> axes = array_axes(order);
  std::string text;
  for (int a : axes)
    text += "[" + std::to_string(ijk[static_cast<std::size_t>(a)]) + "]";
  return text;
}

void check_shape(const ModelVolume& model, const ModelFileOptions& options) {
  if (options.shape && *options.shape != model.shape) {
    throw InputError(model.key + ": " + model.path + " (a " + shape_text(model.shape) +
                     " model, nx x ny x nz, " + model.description +
                     ") is not allowed: the model.shape given, " + shape_text(*options.shape) +
                     " (leave model.shape out for this format, or correct it)");
  }
}

// ---- raw ---------------------------------------------------------------------------------------

std::string raw_description(AxisOrder order) {
  return "raw little-endian float32, " +
         std::string(order == AxisOrder::Xyz ? "x fastest (order xyz)" : "z fastest (order zyx)");
}

std::string npy_description(const NpyHeader& header, AxisOrder order) {
  return "npy " + header.descr + " (" + std::to_string(header.shape[0]) + ", " +
         std::to_string(header.shape[1]) + ", " + std::to_string(header.shape[2]) + ") " +
         (header.fortran_order ? "Fortran" : "C") + " order, " + order_text(order);
}

ModelVolume read_raw(const std::string& path, AxisOrder order, const std::string& key,
                     const ModelFileOptions& options) {
  if (!options.shape) throw std::logic_error("read_model_volume: raw model without a shape");
  ModelVolume model;
  model.shape = *options.shape;
  model.path = path;
  model.key = key;
  model.description = raw_description(order);
  const std::size_t count = count_of(model.shape);
  const std::uintmax_t expected = static_cast<std::uintmax_t>(count) * sizeof(float);
  std::error_code ec;
  const std::uintmax_t actual = fs::file_size(path, ec);
  if (ec || actual != expected) {
    throw InputError(key + ": " + path + " (" +
                     (ec ? std::string("size unknown") : std::to_string(actual) + " bytes") +
                     ") is not allowed: exactly " + std::to_string(expected) +
                     " bytes = " + shape_text(model.shape) + " little-endian float32 values");
  }
  require_host_memory(2.0 * static_cast<double>(expected),
                      "reading " + path + " (" + shape_text(model.shape) + " float32 values)");
  std::vector<float> stored(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(stored.data()), static_cast<std::streamsize>(expected));
  if (!in || static_cast<std::uintmax_t>(in.gcount()) != expected) {
    throw InputError(key + ": " + path + ": read failed after " + std::to_string(in.gcount()) +
                     " of " + std::to_string(expected) + " bytes");
  }
  if (!host_is_little_endian()) {
    for (float& v : stored) {
      unsigned char bytes[4];
      std::memcpy(bytes, &v, 4);
      std::reverse(bytes, bytes + 4);
      std::memcpy(&v, bytes, 4);
    }
  }
  const bool z_fastest = order == AxisOrder::Zyx;
  model.values =
      to_x_fastest(std::move(stored), model.shape,
                   z_fastest ? std::array<int, 3>{2, 1, 0} : std::array<int, 3>{0, 1, 2});
  const std::array<int, 3> shape = model.shape;
  model.locate = [shape, z_fastest, path](int i, int j, int k) {
    const auto nx = static_cast<std::uint64_t>(shape[0]), ny = static_cast<std::uint64_t>(shape[1]),
               nz = static_cast<std::uint64_t>(shape[2]);
    const auto ui = static_cast<std::uint64_t>(i), uj = static_cast<std::uint64_t>(j),
               uk = static_cast<std::uint64_t>(k);
    const std::uint64_t index = z_fastest ? uk + nz * (uj + ny * ui) : ui + nx * (uj + ny * uk);
    return "byte offset " + std::to_string(index * sizeof(float)) + " of " + path;
  };
  return model;
}

// ---- npy ---------------------------------------------------------------------------------------

ModelVolume read_npy_model(const std::string& path, AxisOrder order, const std::string& key,
                           const ModelFileOptions& options) {
  NpyArray array = read_npy(path, key);
  const NpyHeader header = array.header;
  ModelVolume model;
  model.path = path;
  model.key = key;
  model.shape = model_shape(header.shape, order, key, path);
  model.description = npy_description(header, order);
  check_shape(model, options);

  // Storage order: C order has the array's last dimension fastest, Fortran order its first.
  const std::array<int, 3> axes = array_axes(order);
  const std::array<int, 3> fastest_first =
      header.fortran_order ? axes : std::array<int, 3>{axes[2], axes[1], axes[0]};
  model.values = to_x_fastest(std::move(array.values), model.shape, fastest_first);

  const std::array<int, 3> shape = model.shape;
  model.locate = [shape, fastest_first, header, order, path](int i, int j, int k) {
    const std::array<std::uint64_t, 3> ijk{static_cast<std::uint64_t>(i),
                                           static_cast<std::uint64_t>(j),
                                           static_cast<std::uint64_t>(k)};
    std::uint64_t index = 0;
    for (int n = 2; n >= 0; --n) {
      const auto a = static_cast<std::size_t>(fastest_first[static_cast<std::size_t>(n)]);
      index = index * static_cast<std::uint64_t>(shape[a]) + ijk[a];
    }
    return "element " + element_text(order, i, j, k) + ", byte offset " +
           std::to_string(header.data_offset +
                          index * static_cast<std::uint64_t>(header.element_bytes)) +
           " of " + path;
  };
  return model;
}

// ---- HDF5 --------------------------------------------------------------------------------------

/// Owns one HDF5 id.
class Hdf5Id {
public:
  using Closer = herr_t (*)(hid_t);
  Hdf5Id(hid_t id, Closer closer) : m_id(id), m_closer(closer) {}
  Hdf5Id(const Hdf5Id&) = delete;
  Hdf5Id& operator=(const Hdf5Id&) = delete;
  ~Hdf5Id() {
    if (m_id >= 0) m_closer(m_id);
  }
  hid_t get() const { return m_id; }
  bool valid() const { return m_id >= 0; }

private:
  hid_t m_id;
  Closer m_closer;
};

/// Silences HDF5's automatic error printing while it lives (we report errors ourselves), and
/// restores what was set before, also when an exception leaves the scope.
class QuietHdf5 {
public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &m_func, &m_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;
  ~QuietHdf5() {
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, m_func, m_data);
  }

private:
  H5E_auto2_t m_func = nullptr;
  void* m_data = nullptr;
};

struct DatasetList {
  std::vector<std::string> names;
};

herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t* info, void* client) {
  auto* list = static_cast<DatasetList*>(client);
  if (info == nullptr || info->type != H5L_TYPE_HARD) return 0;
  const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
  if (object >= 0) {
    if (H5Iget_type(object) == H5I_DATASET) list->names.push_back(std::string("/") + name);
    H5Oclose(object);
  }
  return 0;
}

std::vector<std::string> list_datasets(hid_t file) {
  DatasetList list;
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &list);
  return list.names;
}

std::string names_text(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string text;
  const std::size_t shown = std::min<std::size_t>(names.size(), 10);
  for (std::size_t n = 0; n < shown; ++n)
    text += (n ? ", " : "") + names[n];
  if (shown < names.size()) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

ModelVolume read_hdf5_model(const std::string& path, const std::string& dataset_path,
                            AxisOrder order, const std::string& key,
                            const ModelFileOptions& options) {
  const QuietHdf5 quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw InputError(key + ": " + path +
                     " (not an HDF5 file) is not allowed: an HDF5 file holding a 3-D float32 or "
                     "float64 dataset");
  }
  const Hdf5Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    throw InputError(key + ": " + path +
                     " (cannot be opened by HDF5) is not allowed: a readable "
                     "HDF5 file");
  }
  std::string name = dataset_path;
  if (name.empty()) {
    const std::vector<std::string> names = list_datasets(file.get());
    if (names.size() != 1) {
      throw InputError(key + ": " + path + " (" + std::to_string(names.size()) +
                       " datasets: " + names_text(names) +
                       ") is not allowed without model.dataset: name the dataset to read");
    }
    name = names.front();
  }
  if (name.front() != '/') name = "/" + name;
  const Hdf5Id dataset(H5Lexists(file.get(), name.c_str(), H5P_DEFAULT) > 0
                           ? H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT)
                           : H5I_INVALID_HID,
                       H5Dclose);
  if (!dataset.valid()) {
    throw InputError(key + ": " + path + " (no dataset " + name +
                     "; the datasets there: " + names_text(list_datasets(file.get())) +
                     ") is not allowed: model.dataset naming a dataset of the file");
  }
  const Hdf5Id type(H5Dget_type(dataset.get()), H5Tclose);
  const Hdf5Id space(H5Dget_space(dataset.get()), H5Sclose);
  if (!type.valid() || !space.valid()) {
    throw InputError(key + ": " + path + " (dataset " + name +
                     ": its type or shape cannot be read) is not allowed: a readable dataset");
  }
  const std::size_t element_bytes = H5Tget_size(type.get());
  if (H5Tget_class(type.get()) != H5T_FLOAT || (element_bytes != 4 && element_bytes != 8)) {
    const H5T_class_t type_class = H5Tget_class(type.get());
    const std::string what = type_class == H5T_INTEGER ? "integer"
                             : type_class == H5T_FLOAT ? "float"
                                                       : "non-numeric";
    throw InputError(key + ": " + path + " (dataset " + name + " holds " +
                     std::to_string(element_bytes) + "-byte " + what +
                     " values) is not allowed: float32 or float64 values");
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank != 3) {
    throw InputError(key + ": " + path + " (dataset " + name + " has " + std::to_string(rank) +
                     " dimensions) is not allowed: a 3-D dataset");
  }
  std::array<hsize_t, 3> dims{};
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  ModelVolume model;
  model.path = path;
  model.key = key;
  model.shape = model_shape(dims, order, key, path);
  model.description = "HDF5 dataset " + name + " (" + std::to_string(dims[0]) + ", " +
                      std::to_string(dims[1]) + ", " + std::to_string(dims[2]) + ") " +
                      (element_bytes == 4 ? "float32" : "float64") + ", " + order_text(order);
  check_shape(model, options);
  if (dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {
    throw InputError(key + ": " + path + " (dataset " + name +
                     " is empty) is not allowed: a non-empty 3-D dataset");
  }
  // Each dimension fits an int (model_shape), so the product of two fits 64 bits.
  if (static_cast<double>(dims[0]) * static_cast<double>(dims[1]) * static_cast<double>(dims[2]) >
      static_cast<double>(kMaxGridPoints)) {
    throw InputError(key + ": " + path + " (dataset " + name + " of " + model.description +
                     ") is not allowed: at most " + std::to_string(kMaxGridPoints) +
                     " points (a damaged shape?)");
  }
  const double values_count = static_cast<double>(count_of(model.shape));
  // A filter (compression) this HDF5 library lacks: name it, rather than fail inside the read.
  const Hdf5Id plist(H5Dget_create_plist(dataset.get()), H5Pclose);
  if (plist.valid()) {
    const int filters = H5Pget_nfilters(plist.get());
    for (int f = 0; f < filters; ++f) {
      unsigned int flags = 0, config = 0;
      std::size_t values = 0;
      char filter_name[256] = {0};
      const H5Z_filter_t id = H5Pget_filter2(plist.get(), static_cast<unsigned>(f), &flags, &values,
                                             nullptr, sizeof filter_name, filter_name, &config);
      if (id >= 0 && H5Zfilter_avail(id) <= 0) {
        throw InputError(key + ": " + path + " (dataset " + name + " is compressed with filter " +
                         std::to_string(id) + " '" + filter_name +
                         "', which this HDF5 library does not have) is not allowed: a dataset "
                         "without that filter (rewrite it uncompressed or with gzip, e.g. h5repack "
                         "-f NONE), or install the filter plugin and set HDF5_PLUGIN_PATH");
      }
    }
    // Contiguous storage smaller than the shape needs: the shape or the file is damaged.
    const hsize_t storage = H5Dget_storage_size(dataset.get());
    if (H5Pget_layout(plist.get()) == H5D_CONTIGUOUS && storage > 0 &&
        static_cast<double>(storage) < values_count * static_cast<double>(element_bytes)) {
      throw InputError(key + ": " + path + " (dataset " + name + ": " + std::to_string(storage) +
                       " bytes stored for a shape of " + format_number(values_count) +
                       " values of " + std::to_string(element_bytes) +
                       " bytes) is not allowed: a dataset whose data matches its shape (a damaged "
                       "file?)");
    }
  }
  require_host_memory(
      values_count * 4.0 * 2 + (element_bytes == 8 ? 8.0 * values_count / dims[0] : 0.0),
      "reading " + path + " (dataset " + name + ", " + format_number(values_count) + " values)");

  std::vector<float> stored(count_of(model.shape));
  herr_t status = 0;
  if (element_bytes == 4) {
    status = H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, stored.data());
  } else {
    // One slowest-axis slab at a time, narrowed here: a float64 model never needs twice its size
    // in memory, and out-of-range values become infinities rather than HDF5's clipped ones.
    const std::size_t slab = static_cast<std::size_t>(dims[1] * dims[2]);
    std::vector<double> buffer(slab);
    const std::array<hsize_t, 3> count{1, dims[1], dims[2]};
    const Hdf5Id memory(H5Screate_simple(3, count.data(), nullptr), H5Sclose);
    for (hsize_t d = 0; d < dims[0] && status >= 0; ++d) {
      const std::array<hsize_t, 3> start{d, 0, 0};
      status = H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                                   nullptr);
      if (status >= 0) {
        status = H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, memory.get(), space.get(), H5P_DEFAULT,
                         buffer.data());
      }
      float* out = stored.data() + static_cast<std::size_t>(d) * slab;
      for (std::size_t e = 0; e < slab && status >= 0; ++e)
        out[e] = narrow(buffer[e]);
    }
  }
  if (status < 0) {
    throw InputError(key + ": " + path + " (dataset " + name +
                     ": HDF5 read failed; a damaged file?) is not allowed: a readable dataset");
  }
  const std::array<int, 3> axes = array_axes(order);
  model.values = to_x_fastest(std::move(stored), model.shape, {axes[2], axes[1], axes[0]});
  model.locate = [order, name, path](int i, int j, int k) {
    return "element " + element_text(order, i, j, k) + " of dataset " + name + " in " + path;
  };
  return model;
}

// ---- SEG-Y -------------------------------------------------------------------------------------

ModelVolume read_segy_model(const std::string& path, const std::string& key,
                            const ModelFileOptions& options) {
  SegyCube cube = read_segy_cube(path, key, options.segy);
  ModelVolume model;
  model.path = path;
  model.key = key;
  model.shape = cube.shape;
  const bool feet = cube.measurement_system == 2;
  for (std::size_t a = 0; a < 3; ++a) {
    if (cube.spacing[a]) model.file_spacing[a] = *cube.spacing[a] * (feet ? 0.3048 : 1.0);
  }
  model.description =
      "SEG-Y " + std::to_string(cube.shape[1]) + " inlines (y) x " + std::to_string(cube.shape[0]) +
      " crosslines (x) x " + std::to_string(cube.shape[2]) + " samples (z), format " +
      std::to_string(cube.format) + (cube.format == 1 ? " IBM float" : " IEEE float") +
      (cube.little_endian ? ", little-endian" : "") +
      (cube.revision >= 2 ? ", revision " + std::to_string(cube.revision) : "") +
      (cube.inline_sorted ? ", inline sorted" : ", crossline sorted") +
      (feet ? ", feet converted to metres" : "");
  check_shape(model, options);
  model.values = std::move(cube.values);
  auto inlines = std::make_shared<std::vector<int>>(std::move(cube.inlines));
  auto crosslines = std::make_shared<std::vector<int>>(std::move(cube.crosslines));
  auto traces = std::make_shared<std::vector<int>>(std::move(cube.trace_index));
  const int nx = cube.shape[0];
  model.locate = [inlines, crosslines, traces, nx, path](int i, int j, int k) {
    const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
    return "inline " + std::to_string((*inlines)[uj]) + ", crossline " +
           std::to_string((*crosslines)[ui]) + ", sample " + std::to_string(k) + " (trace " +
           std::to_string((*traces)[ui + static_cast<std::size_t>(nx) * uj]) + ") of " + path;
  };
  return model;
}

} // namespace

const char* model_format_name(ModelFormat format) {
  switch (format) {
  case ModelFormat::Raw:
    return "raw";
  case ModelFormat::Hdf5:
    return "hdf5";
  case ModelFormat::Segy:
    return "segy";
  case ModelFormat::Npy:
    return "npy";
  }
  return "unknown";
}

std::optional<ModelFormat> parse_model_format(const std::string& name) {
  for (ModelFormat format :
       {ModelFormat::Raw, ModelFormat::Hdf5, ModelFormat::Segy, ModelFormat::Npy}) {
    if (name == model_format_name(format)) return format;
  }
  return std::nullopt;
}

ModelVolume read_model_volume(ModelFormat format, const std::string& path,
                              const std::string& dataset, AxisOrder order, const std::string& key,
                              const ModelFileOptions& options) {
  if (const auto file = find_memory_file(path); file && file->device) {
    throw InputError(key + ": " + path + " (" + file->device->owner +
                     ") is not allowed here: a GPU array is read on its GPU only, as the velocity "
                     "model of an acoustic run on the cuda backend in one process; allowed: a "
                     "host array or a file");
  }
  if (!input_file_exists(path)) { // on disk, or an array in memory (io/memory_file.hpp)
    throw InputError(key + ": " + path + " is not allowed: an existing " +
                     model_format_name(format) + " model file (not found)");
  }
  switch (format) {
  case ModelFormat::Raw:
    return read_raw(path, order, key, options);
  case ModelFormat::Npy:
    return read_npy_model(path, order, key, options);
  case ModelFormat::Hdf5:
    return read_hdf5_model(path, dataset, order, key, options);
  case ModelFormat::Segy:
    return read_segy_model(path, key, options);
  }
  throw std::logic_error("read_model_volume: unknown format");
}

ModelGeometry model_geometry(const ModelVolume& model,
                             const std::optional<std::array<double, 3>>& spacing,
                             const std::optional<Vec3>& origin, const Grid& grid,
                             const std::string& spacing_key) {
  static const char* const kAxis[3] = {"x", "y", "z"};
  ModelGeometry geometry;
  std::array<std::string, 3> from;
  for (int a = 0; a < 3; ++a) {
    const auto ua = static_cast<std::size_t>(a);
    if (spacing) {
      geometry.spacing[ua] = (*spacing)[ua];
      from[ua] = "model.spacing";
    } else if (model.file_spacing[ua]) {
      geometry.spacing[ua] = *model.file_spacing[ua];
      from[ua] = "the file's headers";
    } else if (model.shape[ua] == grid.extent(a)) {
      geometry.spacing[ua] = grid.spacing(a);
      from[ua] = "the grid";
    } else {
      throw InputError(spacing_key + ": missing: the model (" + model.path + ") has " +
                       std::to_string(model.shape[ua]) + " points along " + kAxis[a] +
                       " where the grid has " + std::to_string(grid.extent(a)) +
                       ", and the file gives no spacing: give model.spacing [dx, dy, dz] in "
                       "metres");
    }
    if (!(geometry.spacing[ua] > 0) || !std::isfinite(geometry.spacing[ua])) {
      throw InputError(spacing_key + ": " + format_number(geometry.spacing[ua]) + " (" + kAxis[a] +
                       " spacing from " + from[ua] + ") is not allowed: a spacing > 0 (metres)");
    }
    geometry.origin[ua] = origin ? (*origin)[ua] : grid.origin(a);
  }
  if (from[0] == from[1] && from[1] == from[2]) {
    geometry.spacing_from = from[0];
  } else {
    geometry.spacing_from = "x from " + from[0] + ", y from " + from[1] + ", z from " + from[2];
  }
  return geometry;
}

void check_model_values(const ModelVolume& model) {
  const auto n = static_cast<std::ptrdiff_t>(model.values.size());
  std::ptrdiff_t first_bad = n;
#pragma omp parallel for reduction(min : first_bad)
  for (std::ptrdiff_t idx = 0; idx < n; ++idx) {
    const float v = model.values[static_cast<std::size_t>(idx)];
    if (!(std::isfinite(v) && v > 0) && idx < first_bad) first_bad = idx;
  }
  if (first_bad == n) return;
  const auto idx = static_cast<std::size_t>(first_bad);
  const auto nx = static_cast<std::size_t>(model.shape[0]),
             ny = static_cast<std::size_t>(model.shape[1]);
  const int i = static_cast<int>(idx % nx);
  const int j = static_cast<int>((idx / nx) % ny);
  const int k = static_cast<int>(idx / (nx * ny));
  const std::string where = model.locate ? model.locate(i, j, k) : model.path;
  throw InputError(model.key + ": " + format_number(model.values[idx]) + " at (i, j, k) = (" +
                   std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) +
                   ") of the model (" + where +
                   ") is not allowed: velocities finite and > 0 (m/s)");
}

namespace {

/// Interpolation along one axis for every grid index: value = (1 - w) * v[lo] + w * v[lo + 1].
struct AxisWeights {
  std::vector<std::size_t> lo, hi;
  std::vector<double> w;
  int below = 0, above = 0; ///< grid points before / past the model's extent
};

AxisWeights axis_weights(int grid_n, double grid_origin, double grid_h, int model_n,
                         double model_origin, double model_h) {
  // A grid point within a millionth of a model spacing of a model point takes that point's value
  // exactly, so a grid that coincides with the model (or a subset of it) copies values.
  const double snap = 1e-6;
  AxisWeights axis;
  axis.lo.resize(static_cast<std::size_t>(grid_n));
  axis.hi.resize(static_cast<std::size_t>(grid_n));
  axis.w.resize(static_cast<std::size_t>(grid_n));
  const double last = model_n - 1;
  for (int t = 0; t < grid_n; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    const double u = (grid_origin + t * grid_h - model_origin) / model_h;
    double base = 0, w = 0;
    if (u < -snap) {
      ++axis.below;
    } else if (u > last + snap) {
      ++axis.above;
      base = last;
    } else {
      base = std::floor(u);
      w = u - base;
      if (w > 1 - snap) {
        base += 1;
        w = 0;
      } else if (w < snap) {
        w = 0;
      }
      base = std::clamp(base, 0.0, last);
    }
    const auto lo = static_cast<std::size_t>(base);
    axis.lo[ut] = lo;
    axis.hi[ut] = std::min(lo + 1, static_cast<std::size_t>(model_n - 1));
    axis.w[ut] = w;
  }
  return axis;
}

bool same_geometry(const ModelVolume& model, const ModelGeometry& geometry, const Grid& grid) {
  for (int a = 0; a < 3; ++a) {
    const auto ua = static_cast<std::size_t>(a);
    const double h = grid.spacing(a);
    if (model.shape[ua] != grid.extent(a)) return false;
    if (std::abs(geometry.spacing[ua] - h) > 1e-9 * h) return false;
    if (std::abs(geometry.origin[ua] - grid.origin(a)) > 1e-6 * h) return false;
  }
  return true;
}

/// What placing `model` on the grid does (both geometries, and the grid points beyond the
/// model); throws InputError for grid points beyond it without `extend_edge`.
std::string placement_text(const ModelVolume& model, const ModelGeometry& geometry,
                           const Grid& grid, const std::array<AxisWeights, 3>& axes,
                           bool extend_edge) {
  const std::array<double, 3> grid_spacing{grid.dx, grid.dy, grid.dz};
  const std::array<double, 3> grid_origin{grid.ox, grid.oy, grid.oz};
  std::string notice = model.key + ": model " + model.path + " (" + model.description + ") of " +
                       shape_text(model.shape) + " points, spacing " +
                       triple_text(geometry.spacing) + " m (from " + geometry.spacing_from +
                       "), origin " + triple_text(geometry.origin) +
                       " m, resampled trilinearly onto the grid's " +
                       shape_text({grid.nx, grid.ny, grid.nz}) + " points, spacing " +
                       triple_text(grid_spacing) + " m, origin " + triple_text(grid_origin) + " m";
  std::size_t inside = 1;
  std::string clamped_axes;
  static const char* const kAxis[3] = {"x", "y", "z"};
  for (std::size_t a = 0; a < 3; ++a) {
    const AxisWeights& axis = axes[a];
    inside *= static_cast<std::size_t>(grid.extent(static_cast<int>(a)) - axis.below - axis.above);
    if (axis.below + axis.above > 0) {
      const double lo = geometry.origin[a];
      const double hi = lo + (model.shape[a] - 1) * geometry.spacing[a];
      std::string sides;
      if (axis.below > 0) {
        sides += std::to_string(axis.below) + " grid points below " + format_number(lo) + " m";
      }
      if (axis.above > 0) {
        sides += std::string(sides.empty() ? "" : ", ") + std::to_string(axis.above) +
                 " grid points above " + format_number(hi) + " m";
      }
      clamped_axes += std::string(clamped_axes.empty() ? "" : "; ") + kAxis[a] + ": " + sides;
    }
  }
  const std::size_t outside = grid.points() - inside;
  if (outside > 0 && !extend_edge) {
    std::string model_extent, grid_extent;
    for (std::size_t a = 0; a < 3; ++a) {
      const double lo = geometry.origin[a];
      const double hi = lo + (model.shape[a] - 1) * geometry.spacing[a];
      const int ia = static_cast<int>(a);
      const double glo = grid.origin(ia);
      const double ghi = glo + (grid.extent(ia) - 1) * grid.spacing(ia);
      const std::string sep = a == 0 ? "" : ", ";
      model_extent += sep + kAxis[a] + " [" + format_number(lo) + ", " + format_number(hi) + "]";
      grid_extent += sep + kAxis[a] + " [" + format_number(glo) + ", " + format_number(ghi) + "]";
    }
    throw InputError(model.key + ": model " + model.path + " covers " + model_extent +
                     " m, the grid " + grid_extent + " m: " + std::to_string(outside) + " of " +
                     std::to_string(grid.points()) + " grid points lie outside the model (" +
                     clamped_axes +
                     "); allowed: a model that covers the grid, or model.extend: edge to give "
                     "them the model's nearest edge value");
  }
  if (outside > 0) {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f",
                  100.0 * static_cast<double>(outside) / static_cast<double>(grid.points()));
    notice += "; " + std::to_string(outside) + " of " + std::to_string(grid.points()) +
              " grid points (" + percent +
              "%) lie outside the model and take its nearest edge value (" + clamped_axes + ")";
  }
  return notice;
}

std::array<AxisWeights, 3> all_axis_weights(const ModelVolume& model, const ModelGeometry& geometry,
                                            const Grid& grid) {
  std::array<AxisWeights, 3> axes;
  for (int a = 0; a < 3; ++a) {
    const auto ua = static_cast<std::size_t>(a);
    axes[ua] = axis_weights(grid.extent(a), grid.origin(a), grid.spacing(a), model.shape[ua],
                            geometry.origin[ua], geometry.spacing[ua]);
  }
  return axes;
}

} // namespace

std::string placement_notice(const ModelVolume& model, const ModelGeometry& geometry,
                             const Grid& grid, bool extend_edge) {
  if (same_geometry(model, geometry, grid)) return "";
  return placement_text(model, geometry, grid, all_axis_weights(model, geometry, grid),
                        extend_edge);
}

std::optional<ModelVolume> read_model_header(ModelFormat format, const std::string& path,
                                             AxisOrder order, const std::string& key,
                                             const ModelFileOptions& options) {
  ModelVolume model;
  model.path = path;
  model.key = key;
  if (format == ModelFormat::Raw && options.shape) {
    model.shape = *options.shape;
    model.description = raw_description(order);
    return model;
  }
  if (format == ModelFormat::Npy) {
    const NpyHeader header = read_npy_header(path, key);
    model.shape = model_shape(header.shape, order, key, path);
    model.description = npy_description(header, order);
    return model;
  }
  return std::nullopt;
}

ResampledModel resample_model(ModelVolume model, const ModelGeometry& geometry, const Grid& grid,
                              bool extend_edge) {
  check_model_values(model);
  ResampledModel result;
  if (same_geometry(model, geometry, grid)) {
    result.velocity = std::move(model.values);
    return result;
  }

  const std::array<AxisWeights, 3> axes = all_axis_weights(model, geometry, grid);
  const auto mx = static_cast<std::size_t>(model.shape[0]),
             my = static_cast<std::size_t>(model.shape[1]);
  const auto gx = static_cast<std::size_t>(grid.nx), gy = static_cast<std::size_t>(grid.ny);
  result.velocity.resize(grid.points());
  const float* v = model.values.data();
  const AxisWeights& ax = axes[0];
  const AxisWeights& ay = axes[1];
  const AxisWeights& az = axes[2];
#pragma omp parallel for
  for (int k = 0; k < grid.nz; ++k) {
    const auto uk = static_cast<std::size_t>(k);
    const double wz = az.w[uk];
    const std::size_t z0 = mx * my * az.lo[uk], z1 = mx * my * az.hi[uk];
    for (std::size_t j = 0; j < gy; ++j) {
      const double wy = ay.w[j];
      const std::size_t y0 = mx * ay.lo[j], y1 = mx * ay.hi[j];
      float* row = result.velocity.data() + gx * (j + gy * uk);
      for (std::size_t i = 0; i < gx; ++i) {
        const double wx = ax.w[i];
        const std::size_t x0 = ax.lo[i], x1 = ax.hi[i];
        const double c00 = (1 - wx) * v[x0 + y0 + z0] + wx * v[x1 + y0 + z0];
        const double c10 = (1 - wx) * v[x0 + y1 + z0] + wx * v[x1 + y1 + z0];
        const double c01 = (1 - wx) * v[x0 + y0 + z1] + wx * v[x1 + y0 + z1];
        const double c11 = (1 - wx) * v[x0 + y1 + z1] + wx * v[x1 + y1 + z1];
        const double c0 = (1 - wy) * c00 + wy * c10;
        const double c1 = (1 - wy) * c01 + wy * c11;
        row[i] = static_cast<float>((1 - wz) * c0 + wz * c1);
      }
    }
  }

  result.notice = placement_text(model, geometry, grid, axes, extend_edge);
  return result;
}

} // namespace minimod
