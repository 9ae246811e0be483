/// OutputFile on the HDF5 C API. Every HDF5 id lives in an owning handle so that an exception
/// half-way through a write never leaks an id that would keep the file open.

#include "io/h5_output.hpp"

#include "core/errors.hpp"
#include "io/durable_file.hpp"

#include <hdf5.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace minimod {

namespace {

namespace fs = std::filesystem;

/// Largest chunk of the snapshot dataset: big enough for efficient I/O, small enough that a
/// reader pulling one slice does not have to decompress or read a whole huge volume.
constexpr hsize_t kMaxChunkBytes = 4u << 20;
/// Largest chunk (in elements) of the 1-D step and time datasets.
constexpr hsize_t kMaxCoordChunk = 4096;
constexpr int kFormatVersion = 1;
constexpr const char* kFormatName = "minimod-gpu-output";

/// Owns one HDF5 id and closes it with the matching H5?close.
class H5Handle {
public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : m_id(id), m_closer(closer) {}
  H5Handle(H5Handle&& other) noexcept { *this = std::move(other); }
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      m_id = std::exchange(other.m_id, H5I_INVALID_HID);
      m_closer = other.m_closer;
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  ~H5Handle() { reset(); }

  hid_t get() const { return m_id; }
  bool valid() const { return m_id >= 0; }
  /// Close now; returns false when HDF5 reported a failure (so commit() can report it).
  bool reset() {
    bool ok = true;
    if (m_id >= 0 && m_closer != nullptr) ok = m_closer(m_id) >= 0;
    m_id = H5I_INVALID_HID;
    return ok;
  }

private:
  hid_t m_id = H5I_INVALID_HID;
  Closer m_closer = nullptr;
};

/// Collects the innermost description on the HDF5 error stack: it usually names the real cause
/// ("No such file or directory", "name already exists") where the outer ones only repeat the call.
herr_t innermost_error(unsigned /*n*/, const H5E_error2_t* err, void* client) {
  auto* text = static_cast<std::string*>(client);
  if (err != nullptr && err->desc != nullptr && err->desc[0] != '\0') *text = err->desc;
  return 0;
}

std::string hdf5_error_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost_error, &detail);
  H5Eclear2(H5E_DEFAULT);
  // A failed system call is described as "file write failed: time = ..., filename = ..., errno =
  // 28, error message = 'No space left on device', buf = ...": keep what happened and why.
  const std::string marker = "error message = '";
  const auto at = detail.find(marker);
  if (at != std::string::npos) {
    const auto end = detail.find('\'', at + marker.size());
    const auto colon = detail.find(':');
    detail = (colon != std::string::npos && colon < at ? detail.substr(0, colon) + ": " : "") +
             detail.substr(at + marker.size(), end - at - marker.size());
  }
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  return detail;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string shot_group_name(int shot) {
  char name[32];
  std::snprintf(name, sizeof name, "/shots/%04d", shot);
  return name;
}

/// The attribute holding the CRC-32 of a group's content, as 8 hexadecimal digits.
constexpr const char* kChecksumAttribute = "content_crc32";

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

/// A running CRC-32 over raw bytes (the host is little-endian, as every file type written here).
class Crc32 {
public:
  void add(const void* data, std::size_t bytes) {
    if (bytes > 0) m_crc = crc32_z(m_crc, static_cast<const Bytef*>(data), bytes);
  }
  template <typename T> void add_value(const T& value) { add(&value, sizeof value); }
  template <typename T> void add_values(const std::vector<T>& values) {
    add(values.data(), values.size() * sizeof(T));
  }
  std::uint32_t value() const { return static_cast<std::uint32_t>(m_crc); }

private:
  uLong m_crc = crc32_z(0L, Z_NULL, 0);
};

} // namespace

std::uint32_t gather_checksum(const ShotGather& gather) {
  Crc32 crc;
  crc.add_value(gather.samples);
  crc.add_value(gather.dt_out);
  crc.add_values(gather.traces);
  crc.add_values(gather.receiver_positions);
  crc.add_values(gather.source_positions);
  if (gather.wavelet_samples > 0) { // written only then (write_shot)
    crc.add_value(gather.wavelet_samples);
    crc.add_value(gather.wavelet_dt);
    crc.add_values(gather.wavelet);
  }
  return crc.value();
}

struct OutputFile::Impl {
  std::string final_path;
  std::string temp_path;
  H5Handle file;
  H5Handle shots;
  H5Handle snapshots;
  H5Handle wavefield;
  H5Handle step;
  H5Handle time;
  H5Handle shot_numbers; ///< /snapshots/shot
  SnapshotGeometry geometry;
  hsize_t snapshot_count = 0;
  std::vector<std::pair<int, double>> snapshot_times; ///< step and time of each snapshot (XDMF)
  Crc32 snapshot_crc; ///< of every snapshot's step, time and values, in order (content_crc32)
  std::vector<int> snapshot_shots; ///< the shot of each snapshot (XDMF)
  int snapshot_shot = 0;           ///< the shot of the snapshots appended next
  StoredModel model_geometry;      ///< /model as written (its values dropped), for the XDMF sidecar
  bool closed = false;
  bool committed = false;
  bool xdmf_sidecar = true;

  ~Impl() { discard(); }

  /// Throw OutputError naming the operation, the file and HDF5's own reason.
  [[noreturn]] void fail(const std::string& operation) const {
    std::string message = "HDF5: cannot " + operation + " in '" + temp_path + "'";
    const std::string detail = hdf5_error_detail();
    if (!detail.empty()) message += ": " + detail;
    throw OutputError(message);
  }

  /// Wrap a freshly returned id, or fail when HDF5 returned an error.
  H5Handle own(hid_t id, H5Handle::Closer closer, const std::string& operation) const {
    if (id < 0) fail(operation);
    return H5Handle(id, closer);
  }

  void check(herr_t status, const std::string& operation) const {
    if (status < 0) fail(operation);
  }

  void require_open(const char* what) const {
    if (closed) throw std::logic_error(std::string("OutputFile::") + what + " after commit()");
  }

  // ---- attributes ------------------------------------------------------------------------------

  /// Write (or replace) an attribute of `object`; set_attribute may overwrite earlier values.
  void write_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t mem_type,
                       const H5Handle& space, const void* value) const {
    const std::string operation = "write attribute '" + name + "'";
    const htri_t exists = H5Aexists(object, name.c_str());
    check(exists, operation);
    if (exists > 0) check(H5Adelete(object, name.c_str()), operation);
    H5Handle attribute =
        own(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
            H5Aclose, operation);
    check(H5Awrite(attribute.get(), mem_type, value), operation);
  }

  /// Variable-length UTF-8 scalar string: h5py reads it as str (a fixed-length one comes back as
  /// bytes), h5dump prints it, and the text lives in the global heap, so a long survey never meets
  /// the 64 KiB limit of an attribute stored in the object header.
  void write_string(hid_t object, const std::string& name, const std::string& value) const {
    const std::string operation = "write attribute '" + name + "'";
    H5Handle type = own(H5Tcopy(H5T_C_S1), H5Tclose, operation);
    check(H5Tset_size(type.get(), H5T_VARIABLE), operation);
    check(H5Tset_cset(type.get(), H5T_CSET_UTF8), operation);
    H5Handle space = own(H5Screate(H5S_SCALAR), H5Sclose, operation);
    const char* text = value.c_str();
    write_attribute(object, name, type.get(), type.get(), space, &text);
  }

  void write_double(hid_t object, const std::string& name, double value) const {
    H5Handle space = own(H5Screate(H5S_SCALAR), H5Sclose, "write attribute '" + name + "'");
    write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space, &value);
  }

  void write_int(hid_t object, const std::string& name, int value) const {
    H5Handle space = own(H5Screate(H5S_SCALAR), H5Sclose, "write attribute '" + name + "'");
    write_attribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, space, &value);
  }

  template <std::size_t N>
  void write_doubles(hid_t object, const std::string& name,
                     const std::array<double, N>& value) const {
    const hsize_t dims[1] = {N};
    H5Handle space =
        own(H5Screate_simple(1, dims, nullptr), H5Sclose, "write attribute '" + name + "'");
    write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, space, value.data());
  }

  void write_int_list(hid_t object, const std::string& name, const std::vector<int>& value) const {
    const hsize_t dims[1] = {value.size()};
    H5Handle space =
        own(H5Screate_simple(1, dims, nullptr), H5Sclose, "write attribute '" + name + "'");
    write_attribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, space, value.data());
  }

  template <std::size_t N>
  void write_ints(hid_t object, const std::string& name, const std::array<int, N>& value) const {
    const hsize_t dims[1] = {N};
    H5Handle space =
        own(H5Screate_simple(1, dims, nullptr), H5Sclose, "write attribute '" + name + "'");
    write_attribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, space, value.data());
  }

  // ---- datasets --------------------------------------------------------------------------------

  /// Create a fixed-size dataset and write all of it (nothing to write when it is empty).
  H5Handle write_dataset(hid_t parent, const std::string& name, int rank, const hsize_t* dims,
                         hid_t file_type, hid_t mem_type, const void* data) const {
    const std::string operation = "write dataset '" + name + "'";
    H5Handle space = own(H5Screate_simple(rank, dims, nullptr), H5Sclose, operation);
    H5Handle dataset = own(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose, operation);
    hsize_t count = 1;
    for (int axis = 0; axis < rank; ++axis)
      count *= dims[axis];
    // H5Dwrite rejects a null buffer even for an empty selection, and an empty vector may give one.
    if (count > 0) {
      check(H5Dwrite(dataset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), operation);
    }
    return dataset;
  }

  /// Create an extensible dataset whose first axis starts at 0 and grows by append.
  H5Handle create_extensible(hid_t parent, const std::string& name, int rank, const hsize_t* dims,
                             const hsize_t* chunk, hid_t file_type) const {
    const std::string operation = "create dataset '" + name + "'";
    hsize_t start[4] = {0, 0, 0, 0};
    hsize_t max_dims[4] = {H5S_UNLIMITED, 0, 0, 0};
    for (int axis = 1; axis < rank; ++axis)
      start[axis] = max_dims[axis] = dims[axis];
    H5Handle space = own(H5Screate_simple(rank, start, max_dims), H5Sclose, operation);
    H5Handle create = own(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, operation);
    check(H5Pset_chunk(create.get(), rank, chunk), operation);
    return own(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT, create.get(),
                          H5P_DEFAULT),
               H5Dclose, operation);
  }

  /// Grow `dataset` to `new_rows` along axis 0 and write `data` into row `new_rows - 1`.
  void append_row(const H5Handle& dataset, const std::string& name, int rank,
                  const hsize_t* row_dims, hsize_t new_rows, hid_t mem_type,
                  const void* data) const {
    const std::string operation = "append to dataset '" + name + "'";
    hsize_t extent[4] = {new_rows, 0, 0, 0};
    hsize_t offset[4] = {new_rows - 1, 0, 0, 0};
    hsize_t count[4] = {1, 0, 0, 0};
    for (int axis = 1; axis < rank; ++axis)
      extent[axis] = count[axis] = row_dims[axis];
    check(H5Dset_extent(dataset.get(), extent), operation);
    H5Handle file_space = own(H5Dget_space(dataset.get()), H5Sclose, operation);
    check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset, nullptr, count, nullptr),
          operation);
    H5Handle mem_space = own(H5Screate_simple(rank, count, nullptr), H5Sclose, operation);
    check(H5Dwrite(dataset.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data),
          operation);
  }

  // ---- closing ---------------------------------------------------------------------------------

  /// Close every handle, the file last; returns false when any close failed.
  bool close_all() {
    bool ok = true;
    for (H5Handle* handle : {&shot_numbers, &time, &step, &wavefield, &snapshots, &shots, &file}) {
      ok = handle->reset() && ok;
    }
    closed = true;
    return ok;
  }

  /// Failed or abandoned run: close and remove the temporary so nothing half-written remains.
  /// A close that fails (a full disk) leaves the file in HDF5's list of open files with dirty
  /// metadata; the program turns off HDF5's exit handler (main), so nothing flushes it again.
  void discard() noexcept {
    if (committed) return;
    close_all();
    H5Eclear2(H5E_DEFAULT);
    if (!temp_path.empty()) {
      std::error_code ignored;
      fs::remove(temp_path, ignored);
    }
  }
};

OutputFile::OutputFile(const std::string& final_path, const OutputMeta& meta)
    : OutputFile(final_path, meta, OutputOptions{}) {}

OutputFile::OutputFile(const std::string& final_path, const OutputMeta& meta,
                       const OutputOptions& options)
    : m_impl(std::make_unique<Impl>()) {
  Impl& impl = *m_impl;
  impl.final_path = final_path;
  impl.temp_path = temp_name(final_path);
  impl.xdmf_sidecar = options.xdmf_sidecar;

  // We report HDF5 failures as exceptions; its own stack dump on stderr would only be noise.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);

  const fs::path parent = fs::path(final_path).parent_path();
  if (!parent.empty()) {
    std::error_code error;
    fs::create_directories(parent, error);
    if (error) {
      impl.temp_path.clear(); // nothing was created, so there is nothing for discard() to remove
      throw OutputError("cannot create folder '" + parent.string() + "' for output file '" +
                        final_path + "': " + error.message());
    }
  }

  H5Handle access = impl.own(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "create file");
  // Strong close: closing the file also closes anything still open in it, so a forgotten id can
  // never keep the temporary open past commit() or the destructor.
  impl.check(H5Pset_fclose_degree(access.get(), H5F_CLOSE_STRONG), "create file");
  hid_t file_id = H5Fcreate(impl.temp_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
  if (file_id < 0) {
    // H5Fcreate may fail before creating anything; only remove a temp we might have made.
    const std::string detail = hdf5_error_detail();
    const std::string temp = impl.temp_path;
    std::error_code ignored;
    if (!fs::exists(temp, ignored)) impl.temp_path.clear();
    throw OutputError("HDF5: cannot create file '" + temp + "' for output '" + final_path + "'" +
                      (detail.empty() ? "" : ": " + detail));
  }
  impl.file = H5Handle(file_id, H5Fclose);

  const hid_t root = impl.file.get();
  impl.write_string(root, "format", kFormatName);
  impl.write_int(root, "format_version", kFormatVersion);
  impl.write_string(root, "program_version", meta.program_version);
  impl.write_string(root, "git_commit", meta.git_commit);
  impl.write_string(root, "survey", meta.survey_text);
  impl.write_string(root, "survey_path", meta.survey_path);
  impl.write_string(root, "physics", meta.physics);
  impl.write_string(root, "backend", meta.backend);
  impl.write_string(root, "device_name", meta.device_name);
  static const char* const kRegionNames[7] = {"inner", "top",  "bottom", "front",
                                              "back",  "left", "right"};
  for (std::size_t region = 0; region < meta.region_kernels.size(); ++region) {
    impl.write_string(root, std::string("kernel_") + kRegionNames[region],
                      meta.region_kernels[region]);
  }
  impl.write_ints(root, "grid_shape", meta.grid_shape);
  impl.write_doubles(root, "grid_spacing", meta.grid_spacing);
  impl.write_string(root, "grid_spacing_units", "m");
  impl.write_doubles(root, "grid_origin", meta.grid_origin);
  impl.write_string(root, "grid_origin_units", "m");
  impl.write_ints(root, "layer_widths", meta.layer_widths);
  impl.write_double(root, "dt", meta.dt);
  impl.write_string(root, "dt_units", "s");
  impl.write_int(root, "steps", meta.steps);
  impl.write_string(root, "created", utc_now_iso8601());
  if (meta.survey_shots > 0) {
    impl.write_int(root, "survey_shots", meta.survey_shots);
    impl.write_int_list(root, "shots_selected", meta.shots_selected);
    impl.write_string(root, "run_fingerprint", meta.run_fingerprint);
  }

  // Created up front so every file has /shots, even one from a run that fired no shot yet.
  impl.shots = impl.own(H5Gcreate2(root, "shots", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                        "create group '/shots'");
}

OutputFile::~OutputFile() = default;

void OutputFile::write_shot(const ShotGather& gather) {
  Impl& impl = *m_impl;
  impl.require_open("write_shot");
  const std::size_t receivers = gather.receiver_positions.size();
  if (gather.shot < 0 || gather.samples < 0) {
    throw std::invalid_argument("write_shot: negative shot or sample count");
  }
  if (gather.traces.size() != receivers * static_cast<std::size_t>(gather.samples)) {
    throw std::invalid_argument("write_shot: shot " + std::to_string(gather.shot) + " has " +
                                std::to_string(gather.traces.size()) + " trace samples, expected " +
                                std::to_string(receivers) + " receivers x " +
                                std::to_string(gather.samples) + " samples");
  }

  const std::string name = shot_group_name(gather.shot);
  H5Handle group =
      impl.own(H5Gcreate2(impl.file.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Gclose, "create group '" + name + "'");

  const hsize_t trace_dims[2] = {receivers, static_cast<hsize_t>(gather.samples)};
  H5Handle traces = impl.write_dataset(group.get(), "traces", 2, trace_dims, H5T_IEEE_F32LE,
                                       H5T_NATIVE_FLOAT, gather.traces.data());
  impl.write_string(traces.get(), "units", "pressure (arbitrary)");
  impl.write_double(traces.get(), "dt", gather.dt_out);
  impl.write_string(traces.get(), "dt_units", "s");
  impl.write_double(traces.get(), "t0", 0.0);

  // Vec3 is std::array<double, 3>: a vector of them is contiguous [n][3] doubles.
  const hsize_t receiver_dims[2] = {receivers, 3};
  H5Handle receiver_set =
      impl.write_dataset(group.get(), "receiver_positions", 2, receiver_dims, H5T_IEEE_F64LE,
                         H5T_NATIVE_DOUBLE, gather.receiver_positions.data());
  impl.write_string(receiver_set.get(), "units", "m");
  const hsize_t source_dims[2] = {gather.source_positions.size(), 3};
  H5Handle source_set =
      impl.write_dataset(group.get(), "source_positions", 2, source_dims, H5T_IEEE_F64LE,
                         H5T_NATIVE_DOUBLE, gather.source_positions.data());
  impl.write_string(source_set.get(), "units", "m");
  if (gather.wavelet_samples > 0) {
    if (gather.wavelet.size() !=
        gather.source_positions.size() * static_cast<std::size_t>(gather.wavelet_samples)) {
      throw std::invalid_argument("write_shot: shot " + std::to_string(gather.shot) +
                                  " has a wavelet of " + std::to_string(gather.wavelet.size()) +
                                  " samples, not one per source");
    }
    const hsize_t wavelet_dims[2] = {gather.source_positions.size(),
                                     static_cast<hsize_t>(gather.wavelet_samples)};
    H5Handle wavelet = impl.write_dataset(group.get(), "wavelet", 2, wavelet_dims, H5T_IEEE_F32LE,
                                          H5T_NATIVE_FLOAT, gather.wavelet.data());
    impl.write_string(wavelet.get(), "units", "source amplitude (the survey's wavelet)");
    impl.write_double(wavelet.get(), "dt", gather.wavelet_dt);
    impl.write_string(wavelet.get(), "dt_units", "s");
    impl.write_double(wavelet.get(), "t0", 0.0);
  }

  impl.write_double(group.get(), "dt_out", gather.dt_out);
  impl.write_int(group.get(), "samples", gather.samples);
  impl.write_int(group.get(), "receivers", static_cast<int>(receivers));
  impl.write_int(group.get(), "shot", gather.shot);
  impl.write_string(group.get(), kChecksumAttribute, hex32(gather_checksum(gather)));
}

void OutputFile::begin_snapshots(const SnapshotGeometry& geometry) {
  Impl& impl = *m_impl;
  impl.require_open("begin_snapshots");
  if (impl.snapshots.valid()) {
    // Another shot's snapshots: the same datasets, so they must have the same points.
    if (geometry.shape != impl.geometry.shape || geometry.origin != impl.geometry.origin ||
        geometry.spacing != impl.geometry.spacing) {
      throw std::logic_error("OutputFile::begin_snapshots: a second geometry");
    }
    return;
  }
  const auto [nx, ny, nz] = geometry.shape;
  if (nx < 1 || ny < 1 || nz < 1) {
    throw std::invalid_argument(
        "begin_snapshots: snapshot shape must be at least 1 point per axis");
  }
  impl.geometry = geometry;

  impl.snapshots =
      impl.own(H5Gcreate2(impl.file.get(), "snapshots", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Gclose, "create group '/snapshots'");
  const hid_t group = impl.snapshots.get();

  // One snapshot per chunk so appending writes whole chunks; above kMaxChunkBytes split along z
  // (then y) so a reader slicing one depth does not pull the whole volume.
  const hsize_t plane_bytes = static_cast<hsize_t>(nx) * ny * sizeof(float);
  hsize_t chunk_z = std::clamp<hsize_t>(kMaxChunkBytes / plane_bytes, 1, nz);
  hsize_t chunk_y = ny;
  if (plane_bytes > kMaxChunkBytes) {
    chunk_z = 1;
    chunk_y = std::clamp<hsize_t>(kMaxChunkBytes / (static_cast<hsize_t>(nx) * sizeof(float)), 1,
                                  static_cast<hsize_t>(ny));
  }
  const hsize_t dims[4] = {0, static_cast<hsize_t>(nz), static_cast<hsize_t>(ny),
                           static_cast<hsize_t>(nx)};
  const hsize_t chunk[4] = {1, chunk_z, chunk_y, static_cast<hsize_t>(nx)};
  impl.wavefield = impl.create_extensible(group, "wavefield", 4, dims, chunk, H5T_IEEE_F32LE);
  impl.write_string(impl.wavefield.get(), "units", "pressure (arbitrary)");

  const hsize_t coord_dims[1] = {0};
  const hsize_t coord_chunk[1] = {std::clamp<hsize_t>(
      static_cast<hsize_t>(std::max(geometry.expected_count, 1)), 1, kMaxCoordChunk)};
  impl.step = impl.create_extensible(group, "step", 1, coord_dims, coord_chunk, H5T_STD_I32LE);
  impl.time = impl.create_extensible(group, "time", 1, coord_dims, coord_chunk, H5T_IEEE_F64LE);
  impl.write_string(impl.time.get(), "units", "s");
  impl.shot_numbers =
      impl.create_extensible(group, "shot", 1, coord_dims, coord_chunk, H5T_STD_I32LE);

  impl.write_doubles(group, "origin", geometry.origin);
  impl.write_string(group, "origin_units", "m");
  impl.write_doubles(group, "spacing", geometry.spacing);
  impl.write_string(group, "spacing_units", "m");
  impl.write_ints(group, "shape", geometry.shape);
  impl.write_string(group, "axis_order", "[n, z, y, x]");
}

void OutputFile::append_snapshot(int step, double time, const std::vector<float>& data) {
  Impl& impl = *m_impl;
  impl.require_open("append_snapshot");
  if (!impl.wavefield.valid()) {
    throw std::logic_error("OutputFile::append_snapshot called before begin_snapshots");
  }
  const auto [nx, ny, nz] = impl.geometry.shape;
  const std::size_t expected = static_cast<std::size_t>(nx) * ny * nz;
  if (data.size() != expected) {
    throw std::invalid_argument("append_snapshot: " + std::to_string(data.size()) +
                                " values, expected " + std::to_string(expected));
  }
  const hsize_t rows = impl.snapshot_count + 1;
  const hsize_t volume[4] = {1, static_cast<hsize_t>(nz), static_cast<hsize_t>(ny),
                             static_cast<hsize_t>(nx)};
  const hsize_t scalar[1] = {1};
  impl.append_row(impl.wavefield, "/snapshots/wavefield", 4, volume, rows, H5T_NATIVE_FLOAT,
                  data.data());
  impl.append_row(impl.step, "/snapshots/step", 1, scalar, rows, H5T_NATIVE_INT, &step);
  impl.append_row(impl.time, "/snapshots/time", 1, scalar, rows, H5T_NATIVE_DOUBLE, &time);
  impl.append_row(impl.shot_numbers, "/snapshots/shot", 1, scalar, rows, H5T_NATIVE_INT,
                  &impl.snapshot_shot);
  impl.snapshot_count = rows;
  impl.snapshot_times.emplace_back(step, time);
  impl.snapshot_crc.add_value(step);
  impl.snapshot_crc.add_value(time);
  impl.snapshot_crc.add_values(data);
  impl.snapshot_shots.push_back(impl.snapshot_shot);
}

void OutputFile::set_snapshot_shot(int shot) {
  m_impl->snapshot_shot = shot;
}

/// `text` as XML character data or attribute value: & < > " ' as entities (a file name may hold
/// any of them).
static std::string xml_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// The XDMF sidecar: the model (when stored) as one uniform grid with an attribute per property,
/// and the snapshots (when any) as a temporal collection. Coordinates are those of the HDF5 file:
/// z is depth, positive down, as the grid names say.
static std::string xdmf_sidecar(const std::string& h5_file, const SnapshotGeometry& g,
                                const std::vector<std::pair<int, double>>& times,
                                const std::vector<int>& shots, const StoredModel& model) {
  const std::string h5_name = xml_escaped(h5_file);
  char buf[256];
  std::string x = "<?xml version=\"1.0\" ?>\n<!-- minimod-gpu output: open this file in "
                  "ParaView (Xdmf3 reader). z is depth, positive down: set the view up to "
                  "(0, 0, -1) to see depth increase downwards -->\n<Xdmf Version=\"3.0\">\n "
                  "<Domain>\n";
  if (!model.empty()) {
    const std::string mdims = std::to_string(model.shape[2]) + " " +
                              std::to_string(model.shape[1]) + " " + std::to_string(model.shape[0]);
    x += "  <Grid Name=\"model (z is depth, positive down)\" GridType=\"Uniform\">\n";
    x += "   <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" + mdims + "\"/>\n";
    std::snprintf(buf, sizeof buf, "%.9g %.9g %.9g", model.origin[2], model.origin[1],
                  model.origin[0]);
    x += "   <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n    <DataItem Format=\"XML\" "
         "Dimensions=\"3\">" +
         std::string(buf) + "</DataItem>\n";
    std::snprintf(buf, sizeof buf, "%.9g %.9g %.9g", model.spacing[2], model.spacing[1],
                  model.spacing[0]);
    x += "    <DataItem Format=\"XML\" Dimensions=\"3\">" + std::string(buf) +
         "</DataItem>\n   </Geometry>\n";
    for (const ModelProperty& p : model.properties) {
      x += "   <Attribute Name=\"" + p.name + " (" + p.units +
           ")\" AttributeType=\"Scalar\" Center=\"Node\">\n"
           "    <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"4\" Dimensions=\"" +
           mdims + "\">" + h5_name + ":/model/" + p.name + "</DataItem>\n   </Attribute>\n";
    }
    x += "  </Grid>\n";
  }
  if (times.empty()) return x + " </Domain>\n</Xdmf>\n";
  const int nx = g.shape[0], ny = g.shape[1], nz = g.shape[2];
  const std::string dims = std::to_string(nz) + " " + std::to_string(ny) + " " + std::to_string(nx);
  // One temporal collection a shot: the snapshots of several shots share the datasets.
  const bool many = std::any_of(shots.begin(), shots.end(), [&](int s) { return s != shots[0]; });
  for (std::size_t n = 0; n < times.size(); ++n) {
    if (n == 0 || shots[n] != shots[n - 1]) {
      if (n > 0) x += "  </Grid>\n";
      x += "  <Grid Name=\"wavefield" +
           (many ? " of shot " + std::to_string(shots[n]) : std::string()) +
           " (z is depth, positive down)\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
    }
    std::snprintf(buf, sizeof buf, "%.9g", times[n].second);
    x += "   <Grid Name=\"step_" + std::to_string(times[n].first) +
         "\" GridType=\"Uniform\">\n    <Time Value=\"" + buf + "\"/>\n";
    x += "    <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" + dims + "\"/>\n";
    std::snprintf(buf, sizeof buf, "%.9g %.9g %.9g", g.origin[2], g.origin[1], g.origin[0]);
    x += "    <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n     <DataItem Format=\"XML\" "
         "Dimensions=\"3\">" +
         std::string(buf) + "</DataItem>\n";
    std::snprintf(buf, sizeof buf, "%.9g %.9g %.9g", g.spacing[2], g.spacing[1], g.spacing[0]);
    x += "     <DataItem Format=\"XML\" Dimensions=\"3\">" + std::string(buf) +
         "</DataItem>\n    </Geometry>\n";
    x += "    <Attribute Name=\"pressure\" AttributeType=\"Scalar\" Center=\"Node\">\n"
         "     <DataItem ItemType=\"HyperSlab\" Dimensions=\"" +
         dims +
         "\">\n"
         "      <DataItem Dimensions=\"3 4\" Format=\"XML\">" +
         std::to_string(n) + " 0 0 0 1 1 1 1 1 " + dims +
         "</DataItem>\n"
         "      <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"4\" Dimensions=\"" +
         std::to_string(times.size()) + " " + dims + "\">" + h5_name +
         ":/snapshots/wavefield</DataItem>\n     </DataItem>\n    </Attribute>\n   </Grid>\n";
  }
  x += "  </Grid>\n </Domain>\n</Xdmf>\n";
  return x;
}

StoredModel model_geometry(const std::array<int, 3>& shape, const std::array<double, 3>& origin,
                           const std::array<double, 3>& spacing) {
  StoredModel m;
  m.origin = origin;
  m.grid_shape = shape;
  for (int a = 0; a < 3; ++a) {
    const int n = std::max(shape[a], 1);
    m.decimation[a] = (n + kModelMaxAxisPoints - 1) / kModelMaxAxisPoints;
    m.shape[a] = (n + m.decimation[a] - 1) / m.decimation[a];
    m.spacing[a] = spacing[a] * m.decimation[a];
  }
  return m;
}

std::vector<std::int64_t> model_kept_points(const StoredModel& model) {
  const int nx = model.grid_shape[0], ny = model.grid_shape[1];
  const auto [kx, ky, kz] = model.decimation;
  const auto [mx, my, mz] = model.shape;
  std::vector<std::int64_t> points;
  points.reserve(static_cast<std::size_t>(mx) * my * mz);
  for (int k = 0; k < mz; ++k)
    for (int j = 0; j < my; ++j)
      for (int i = 0; i < mx; ++i)
        points.push_back(
            (static_cast<std::int64_t>(k) * kz * ny + static_cast<std::int64_t>(j) * ky) * nx +
            static_cast<std::int64_t>(i) * kx);
  return points;
}

void add_kept_model_property(StoredModel& model, const std::string& name, const std::string& units,
                             std::vector<float> kept_values) {
  const auto [mx, my, mz] = model.shape;
  if (kept_values.size() != static_cast<std::size_t>(mx) * my * mz) {
    throw std::logic_error("add_kept_model_property: " + name + " has " +
                           std::to_string(kept_values.size()) + " values, not the kept points'");
  }
  ModelProperty p;
  p.name = name;
  p.units = units;
  p.values = std::move(kept_values);
  model.properties.push_back(std::move(p));
}

void add_model_property(StoredModel& model, const std::string& name, const std::string& units,
                        const std::vector<float>& grid_values) {
  const auto [nx, ny, nz] = model.grid_shape;
  if (grid_values.size() != static_cast<std::size_t>(nx) * ny * nz) {
    throw std::logic_error("add_model_property: " + name + " has " +
                           std::to_string(grid_values.size()) + " values, not the grid's");
  }
  const std::vector<std::int64_t> points = model_kept_points(model);
  std::vector<float> kept(points.size());
  for (std::size_t n = 0; n < points.size(); ++n)
    kept[n] = grid_values[static_cast<std::size_t>(points[n])];
  add_kept_model_property(model, name, units, std::move(kept));
}

void OutputFile::write_model(const StoredModel& model) {
  Impl& impl = *m_impl;
  impl.require_open("write_model");
  if (model.empty()) return;
  const hid_t root = impl.file.get();
  H5Handle group = impl.own(H5Gcreate2(root, "model", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                            H5Gclose, "create group '/model'");
  impl.write_ints(group.get(), "decimation", model.decimation);
  impl.write_string(group.get(), "axis_order", "[z, y, x]");
  const hsize_t dims[3] = {static_cast<hsize_t>(model.shape[2]),
                           static_cast<hsize_t>(model.shape[1]),
                           static_cast<hsize_t>(model.shape[0])};
  for (const ModelProperty& p : model.properties) {
    H5Handle d = impl.write_dataset(group.get(), p.name, 3, dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT,
                                    p.values.data());
    impl.write_string(d.get(), "units", p.units);
    impl.write_doubles(d.get(), "origin", model.origin);
    impl.write_string(d.get(), "origin_units", "m");
    impl.write_doubles(d.get(), "spacing", model.spacing);
    impl.write_string(d.get(), "spacing_units", "m");
    impl.write_ints(d.get(), "decimation", model.decimation);
  }
  impl.model_geometry = model;
  for (ModelProperty& p : impl.model_geometry.properties)
    std::vector<float>().swap(p.values);
}

void OutputFile::set_attribute(const std::string& name, const std::string& value) {
  m_impl->require_open("set_attribute");
  m_impl->write_string(m_impl->file.get(), name, value);
}

void OutputFile::set_attribute(const std::string& name, double value) {
  m_impl->require_open("set_attribute");
  m_impl->write_double(m_impl->file.get(), name, value);
}

std::string OutputFile::xdmf_sidecar_text(const std::string& h5_name) const {
  if (m_impl->snapshot_times.empty() && m_impl->model_geometry.empty()) return "";
  return xdmf_sidecar(h5_name, m_impl->geometry, m_impl->snapshot_times, m_impl->snapshot_shots,
                      m_impl->model_geometry);
}

void OutputFile::commit() {
  Impl& impl = *m_impl;
  impl.require_open("commit");
  if (impl.snapshots.valid()) {
    impl.write_string(impl.snapshots.get(), kChecksumAttribute, hex32(impl.snapshot_crc.value()));
  }
  impl.check(H5Fflush(impl.file.get(), H5F_SCOPE_LOCAL), "flush file");
  if (!impl.close_all()) impl.fail("close file");
  // On disk before it gets its final name: after a crash the name holds all of it or nothing.
  fsync_file(impl.temp_path);
  rename_durably(impl.temp_path, impl.final_path); // replaces an existing final file
  impl.committed = true;
  // The XDMF sidecar names the final file, so it follows it (written atomically as well): a
  // commit that fails before the rename leaves an older sidecar as it was.
  if (impl.xdmf_sidecar && (!impl.snapshot_times.empty() || !impl.model_geometry.empty())) {
    const fs::path final_path(impl.final_path);
    write_file_durably(fs::path(final_path).replace_extension(".xmf").string(),
                       xdmf_sidecar(final_path.filename().string(), impl.geometry,
                                    impl.snapshot_times, impl.snapshot_shots, impl.model_geometry));
  }
}

namespace {

/// An HDF5 file opened read-only for copying or reading back, closed (strongly) at scope end.
H5Handle open_readonly(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!access.valid() || H5Pset_fclose_degree(access.get(), H5F_CLOSE_STRONG) < 0) {
    throw OutputError("HDF5: cannot open '" + path + "': " + hdf5_error_detail());
  }
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get());
  if (id < 0) throw OutputError("HDF5: cannot open '" + path + "': " + hdf5_error_detail());
  return H5Handle(id, H5Fclose);
}

/// Reading helpers that name `path` in their errors.
struct Reader {
  std::string path;

  [[noreturn]] void fail(const std::string& what) const {
    const std::string detail = hdf5_error_detail();
    throw OutputError("HDF5: cannot read " + what + " of '" + path + "'" +
                      (detail.empty() ? "" : ": " + detail));
  }
  H5Handle own(hid_t id, H5Handle::Closer closer, const std::string& what) const {
    if (id < 0) fail(what);
    return H5Handle(id, closer);
  }
  void attribute(hid_t object, const char* name, hid_t type, void* out) const {
    H5Handle a = own(H5Aopen(object, name, H5P_DEFAULT), H5Aclose, std::string("'") + name + "'");
    if (H5Aread(a.get(), type, out) < 0) fail(std::string("'") + name + "'");
  }
  /// A variable-length string attribute of `object`.
  std::string text(hid_t object, const std::string& name) const {
    H5Handle a =
        own(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, "attribute '" + name + "'");
    H5Handle type = own(H5Aget_type(a.get()), H5Tclose, "attribute '" + name + "'");
    char* value = nullptr;
    if (H5Aread(a.get(), type.get(), &value) < 0) fail("attribute '" + name + "'");
    std::string result = value ? value : "";
    H5free_memory(value);
    return result;
  }
  /// The CRC-32 recorded in `object`'s content_crc32 attribute; "" when it has none.
  std::string recorded_checksum(hid_t object) const {
    const htri_t exists = H5Aexists(object, kChecksumAttribute);
    if (exists < 0) fail(std::string("attribute '") + kChecksumAttribute + "'");
    return exists > 0 ? text(object, kChecksumAttribute) : std::string();
  }
  /// Dimensions of a dataset (rank up to 4).
  std::vector<hsize_t> dims(hid_t dataset, const std::string& name) const {
    H5Handle space = own(H5Dget_space(dataset), H5Sclose, name);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 4) fail(name);
    std::vector<hsize_t> d(static_cast<std::size_t>(rank));
    if (H5Sget_simple_extent_dims(space.get(), d.data(), nullptr) < 0) fail(name);
    return d;
  }
  template <typename T>
  std::vector<T> dataset(hid_t parent, const std::string& name, hid_t type,
                         std::vector<hsize_t>* shape = nullptr) const {
    H5Handle d = own(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, "'" + name + "'");
    const std::vector<hsize_t> extent = dims(d.get(), name);
    std::size_t count = 1;
    for (const hsize_t n : extent)
      count *= static_cast<std::size_t>(n);
    std::vector<T> values(count);
    if (count > 0 && H5Dread(d.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
      fail("'" + name + "'");
    }
    if (shape != nullptr) *shape = extent;
    return values;
  }
};

/// "is damaged: ..." when a recorded checksum differs from the content's; "" when it matches.
std::string checksum_mismatch(const std::string& recorded, std::uint32_t actual) {
  if (recorded == hex32(actual)) return "";
  return "is damaged: the CRC-32 of its content is " + hex32(actual) + ", but " + recorded +
         " was recorded when it was written (a byte changed on disk or in a copy)";
}

/// A gather read back, and the checksum it records ("" when it records none).
struct CheckedGather {
  ShotGather gather;
  std::string recorded;
};

CheckedGather read_checked_gather(const std::string& path, int shot);

/// Read /snapshots of `path` one snapshot at a time (every one, for the checksum): `begin` gets the
/// geometry (with the count of `only`'s, or of all), `each` every snapshot of shot `only` (of
/// every shot without it) in order; neither is called for a file without `only`'s snapshots. Throws
/// OutputError when it cannot be read, DamagedDataError when it records a CRC-32 its content does
/// not have. Returns whether it records one.
bool read_snapshots(const std::string& path, std::optional<int> only,
                    const std::function<void(const SnapshotGeometry&)>& begin,
                    const std::function<void(int, double, int, const std::vector<float>&)>& each);

} // namespace

// The copies read and write through this writer rather than H5Ocopy: HDF5 1.10's H5Ocopy
// crashes (H5T_close_real) when a write fails half-way, e.g. on a full disk.

void OutputFile::copy_shot_from(const std::string& source, int shot) {
  m_impl->require_open("copy_shot_from");
  write_shot(read_shot_gather(source, shot));
}

void OutputFile::copy_snapshots_from(const std::string& source, std::optional<int> only) {
  Impl& impl = *m_impl;
  impl.require_open("copy_snapshots_from");
  read_snapshots(
      source, only,
      [&](const SnapshotGeometry& geometry) {
        if (impl.snapshots.valid() &&
            (geometry.shape != impl.geometry.shape || geometry.origin != impl.geometry.origin ||
             geometry.spacing != impl.geometry.spacing)) {
          throw OutputError("'" + source +
                            "': '/snapshots' (its points are not those of the "
                            "snapshots copied before) cannot be read");
        }
        begin_snapshots(geometry);
      },
      [this](int step, double time, int shot, const std::vector<float>& volume) {
        set_snapshot_shot(shot);
        append_snapshot(step, time, volume);
      });
}

namespace {

bool read_snapshots(const std::string& path, std::optional<int> only,
                    const std::function<void(const SnapshotGeometry&)>& begin,
                    const std::function<void(int, double, int, const std::vector<float>&)>& each) {
  H5Handle from = open_readonly(path);
  const Reader read{path};
  H5Handle group =
      read.own(H5Gopen2(from.get(), "snapshots", H5P_DEFAULT), H5Gclose, "group '/snapshots'");
  SnapshotGeometry geometry;
  read.attribute(group.get(), "shape", H5T_NATIVE_INT, geometry.shape.data());
  read.attribute(group.get(), "origin", H5T_NATIVE_DOUBLE, geometry.origin.data());
  read.attribute(group.get(), "spacing", H5T_NATIVE_DOUBLE, geometry.spacing.data());
  const std::string recorded = read.recorded_checksum(group.get());
  const auto steps = read.dataset<int>(group.get(), "step", H5T_NATIVE_INT);
  const auto times = read.dataset<double>(group.get(), "time", H5T_NATIVE_DOUBLE);
  if (steps.size() != times.size()) read.fail("'/snapshots/step' and '/snapshots/time'");
  // The shot of each snapshot; a file without /snapshots/shot holds shot 0's alone.
  std::vector<int> shots(steps.size(), 0);
  if (H5Lexists(group.get(), "shot", H5P_DEFAULT) > 0) {
    shots = read.dataset<int>(group.get(), "shot", H5T_NATIVE_INT);
    if (shots.size() != steps.size()) read.fail("'/snapshots/shot' and '/snapshots/step'");
  }
  const bool wanted = !only || std::find(shots.begin(), shots.end(), *only) != shots.end();
  geometry.expected_count = static_cast<int>(only ? std::count(shots.begin(), shots.end(), *only)
                                                  : static_cast<long>(steps.size()));

  // One snapshot at a time: memory stays one volume, whatever the count.
  H5Handle wavefield =
      read.own(H5Dopen2(group.get(), "wavefield", H5P_DEFAULT), H5Dclose, "'/snapshots/wavefield'");
  const std::vector<hsize_t> dims = read.dims(wavefield.get(), "'/snapshots/wavefield'");
  const auto [nx, ny, nz] = geometry.shape;
  if (nx < 1 || ny < 1 || nz < 1 || dims.size() != 4 || dims[0] != steps.size() ||
      dims[1] != static_cast<hsize_t>(nz) || dims[2] != static_cast<hsize_t>(ny) ||
      dims[3] != static_cast<hsize_t>(nx)) {
    read.fail("'/snapshots/wavefield' (its shape does not match the attributes)");
  }
  if (begin && wanted) begin(geometry);
  std::vector<float> volume(static_cast<std::size_t>(nx) * ny * nz);
  const hsize_t count[4] = {1, dims[1], dims[2], dims[3]};
  H5Handle memory =
      read.own(H5Screate_simple(4, count, nullptr), H5Sclose, "'/snapshots/wavefield'");
  Crc32 crc;
  for (std::size_t n = 0; n < steps.size(); ++n) {
    const hsize_t offset[4] = {n, 0, 0, 0};
    H5Handle space = read.own(H5Dget_space(wavefield.get()), H5Sclose, "'/snapshots/wavefield'");
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, offset, nullptr, count, nullptr) < 0 ||
        H5Dread(wavefield.get(), H5T_NATIVE_FLOAT, memory.get(), space.get(), H5P_DEFAULT,
                volume.data()) < 0) {
      read.fail("snapshot " + std::to_string(n) + " of '/snapshots/wavefield'");
    }
    // Every snapshot is read for the checksum; `each` gets those of the shot asked for.
    crc.add_value(steps[n]);
    crc.add_value(times[n]);
    crc.add_values(volume);
    if (each && (!only || shots[n] == *only)) each(steps[n], times[n], shots[n], volume);
  }
  if (recorded.empty()) return false;
  const std::string damage = checksum_mismatch(recorded, crc.value());
  if (!damage.empty()) throw DamagedDataError("'" + path + "' /snapshots " + damage);
  return true;
}

} // namespace

namespace {

CheckedGather read_checked_gather(const std::string& path, int shot) {
  H5Handle file = open_readonly(path);
  const Reader read{path};
  const std::string name = shot_group_name(shot);
  H5Handle group =
      read.own(H5Gopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Gclose, "'" + name + "'");
  CheckedGather checked;
  checked.recorded = read.recorded_checksum(group.get());
  ShotGather& g = checked.gather;
  g.shot = shot;
  read.attribute(group.get(), "dt_out", H5T_NATIVE_DOUBLE, &g.dt_out);
  read.attribute(group.get(), "samples", H5T_NATIVE_INT, &g.samples);
  std::vector<hsize_t> shape;
  g.traces = read.dataset<float>(group.get(), "traces", H5T_NATIVE_FLOAT, &shape);
  auto positions = [&](const char* dataset) {
    std::vector<hsize_t> extent;
    const auto flat = read.dataset<double>(group.get(), dataset, H5T_NATIVE_DOUBLE, &extent);
    if (extent.size() != 2 || extent[1] != 3) read.fail(name + "/" + dataset);
    std::vector<Vec3> points(extent[0]);
    for (std::size_t n = 0; n < points.size(); ++n)
      points[n] = {flat[3 * n], flat[3 * n + 1], flat[3 * n + 2]};
    return points;
  };
  g.receiver_positions = positions("receiver_positions");
  g.source_positions = positions("source_positions");
  if (H5Lexists(group.get(), "wavelet", H5P_DEFAULT) > 0) {
    std::vector<hsize_t> extent;
    g.wavelet = read.dataset<float>(group.get(), "wavelet", H5T_NATIVE_FLOAT, &extent);
    if (extent.size() != 2 || extent[0] != g.source_positions.size()) read.fail(name + "/wavelet");
    g.wavelet_samples = static_cast<int>(extent[1]);
    H5Handle d =
        read.own(H5Dopen2(group.get(), "wavelet", H5P_DEFAULT), H5Dclose, name + "/wavelet");
    read.attribute(d.get(), "dt", H5T_NATIVE_DOUBLE, &g.wavelet_dt);
  }
  if (shape.size() != 2 || shape[0] != g.receiver_positions.size() ||
      shape[1] != static_cast<hsize_t>(g.samples)) {
    read.fail(name + "/traces (its shape does not match the receivers and samples)");
  }
  return checked;
}

} // namespace

ShotGather read_shot_gather(const std::string& path, int shot) {
  CheckedGather checked = read_checked_gather(path, shot);
  if (!checked.recorded.empty()) {
    const std::string damage = checksum_mismatch(checked.recorded, gather_checksum(checked.gather));
    if (!damage.empty())
      throw DamagedDataError("'" + path + "' " + shot_group_name(shot) + " " + damage);
  }
  return std::move(checked.gather);
}

std::string shot_damage(const std::string& path, int shot) {
  if (!h5_object_readable(path, shot_group_name(shot))) {
    return "cannot be read (truncated, or no HDF5 file holding " + shot_group_name(shot) + ")";
  }
  try {
    const CheckedGather checked = read_checked_gather(path, shot);
    if (checked.recorded.empty()) {
      return std::string("carries no checksum (attribute ") + kChecksumAttribute + " of " +
             shot_group_name(shot) + ")";
    }
    return checksum_mismatch(checked.recorded, gather_checksum(checked.gather));
  } catch (const OutputError& e) {
    return std::string("cannot be read: ") + e.what();
  }
}

std::string snapshots_damage(const std::string& path) {
  if (!h5_object_readable(path, "/snapshots")) {
    return "cannot be read (truncated, or no HDF5 file holding /snapshots)";
  }
  try {
    if (!read_snapshots(path, std::nullopt, {}, {})) {
      return std::string("carries no checksum (attribute ") + kChecksumAttribute +
             " of /snapshots)";
    }
    return "";
  } catch (const DamagedDataError& e) {
    const std::string what = e.what();
    return what.substr(what.find(" is damaged") + 1);
  } catch (const OutputError& e) {
    return std::string("cannot be read: ") + e.what();
  }
}

void read_backend_attributes(const std::string& path, OutputMeta& meta) {
  H5Handle file = open_readonly(path);
  const Reader read{path};
  auto text = [&](const std::string& name) {
    H5Handle a = read.own(H5Aopen(file.get(), name.c_str(), H5P_DEFAULT), H5Aclose,
                          "attribute '" + name + "'");
    H5Handle type = read.own(H5Aget_type(a.get()), H5Tclose, "attribute '" + name + "'");
    char* value = nullptr;
    if (H5Aread(a.get(), type.get(), &value) < 0) read.fail("attribute '" + name + "'");
    std::string result = value ? value : "";
    H5free_memory(value);
    return result;
  };
  static const char* const kRegionNames[7] = {"inner", "top",  "bottom", "front",
                                              "back",  "left", "right"};
  meta.backend = text("backend");
  meta.device_name = text("device_name");
  for (std::size_t region = 0; region < meta.region_kernels.size(); ++region)
    meta.region_kernels[region] = text(std::string("kernel_") + kRegionNames[region]);
}

namespace {

/// A variable-length string attribute of `object`.
std::string read_text_attribute(const Reader& read, hid_t object, const std::string& name) {
  return read.text(object, name);
}

/// A 1-D int attribute of `object`, whatever its length.
std::vector<int> read_int_list_attribute(const Reader& read, hid_t object,
                                         const std::string& name) {
  H5Handle a =
      read.own(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose, "attribute '" + name + "'");
  H5Handle space = read.own(H5Aget_space(a.get()), H5Sclose, "attribute '" + name + "'");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) read.fail("attribute '" + name + "'");
  std::vector<int> values(static_cast<std::size_t>(n));
  if (n > 0 && H5Aread(a.get(), H5T_NATIVE_INT, values.data()) < 0)
    read.fail("attribute '" + name + "'");
  return values;
}

} // namespace

StoredModel read_model(const std::string& path) {
  StoredModel model;
  if (!h5_object_readable(path, "/model")) return model;
  H5Handle file = open_readonly(path);
  const Reader read{path};
  H5Handle group = read.own(H5Gopen2(file.get(), "model", H5P_DEFAULT), H5Gclose, "'/model'");
  read.attribute(group.get(), "decimation", H5T_NATIVE_INT, model.decimation.data());
  for (const char* name : {"vp", "epsilon", "delta", "theta", "phi"}) {
    if (H5Lexists(group.get(), name, H5P_DEFAULT) <= 0) continue;
    ModelProperty p;
    p.name = name;
    std::vector<hsize_t> shape;
    p.values = read.dataset<float>(group.get(), name, H5T_NATIVE_FLOAT, &shape);
    if (shape.size() != 3) read.fail(std::string("'/model/") + name + "'");
    H5Handle d = read.own(H5Dopen2(group.get(), name, H5P_DEFAULT), H5Dclose, name);
    p.units = read_text_attribute(read, d.get(), "units");
    read.attribute(d.get(), "origin", H5T_NATIVE_DOUBLE, model.origin.data());
    read.attribute(d.get(), "spacing", H5T_NATIVE_DOUBLE, model.spacing.data());
    model.shape = {static_cast<int>(shape[2]), static_cast<int>(shape[1]),
                   static_cast<int>(shape[0])};
    model.properties.push_back(std::move(p));
  }
  H5Eclear2(H5E_DEFAULT);
  return model;
}

OutputMeta read_output_meta(const std::string& path) {
  H5Handle file = open_readonly(path);
  const Reader read{path};
  const hid_t root = file.get();
  OutputMeta meta;
  read_backend_attributes(path, meta);
  meta.program_version = read_text_attribute(read, root, "program_version");
  meta.git_commit = read_text_attribute(read, root, "git_commit");
  meta.survey_text = read_text_attribute(read, root, "survey");
  meta.survey_path = read_text_attribute(read, root, "survey_path");
  meta.physics = read_text_attribute(read, root, "physics");
  read.attribute(root, "grid_shape", H5T_NATIVE_INT, meta.grid_shape.data());
  read.attribute(root, "grid_spacing", H5T_NATIVE_DOUBLE, meta.grid_spacing.data());
  read.attribute(root, "grid_origin", H5T_NATIVE_DOUBLE, meta.grid_origin.data());
  read.attribute(root, "layer_widths", H5T_NATIVE_INT, meta.layer_widths.data());
  read.attribute(root, "dt", H5T_NATIVE_DOUBLE, &meta.dt);
  read.attribute(root, "steps", H5T_NATIVE_INT, &meta.steps);
  if (H5Aexists(root, "survey_shots") > 0) {
    read.attribute(root, "survey_shots", H5T_NATIVE_INT, &meta.survey_shots);
    meta.shots_selected = read_int_list_attribute(read, root, "shots_selected");
    meta.run_fingerprint = read_text_attribute(read, root, "run_fingerprint");
  }
  H5Eclear2(H5E_DEFAULT);
  return meta;
}

std::vector<int> output_shot_numbers(const std::string& path) {
  H5Handle file = open_readonly(path);
  const Reader read{path};
  H5Handle group = read.own(H5Gopen2(file.get(), "shots", H5P_DEFAULT), H5Gclose, "'/shots'");
  std::vector<int> shots;
  H5G_info_t info;
  if (H5Gget_info(group.get(), &info) < 0) read.fail("the groups of '/shots'");
  for (hsize_t n = 0; n < info.nlinks; ++n) {
    char name[64] = {};
    if (H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, n, name, sizeof name,
                           H5P_DEFAULT) < 0) {
      read.fail("the groups of '/shots'");
    }
    char* end = nullptr;
    const long shot = std::strtol(name, &end, 10);
    if (end != name && *end == '\0' && shot >= 0) shots.push_back(static_cast<int>(shot));
  }
  std::sort(shots.begin(), shots.end());
  return shots;
}

namespace {

template <typename T, std::size_t N> std::string list_text(const std::array<T, N>& values) {
  std::string text;
  for (const T& v : values) {
    if (!text.empty()) text += " ";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", static_cast<double>(v));
    text += buffer;
  }
  return text;
}

/// The first line where two texts differ, 1-based.
int first_differing_line(const std::string& a, const std::string& b) {
  int line = 1;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) return line;
    if (a[i] == '\n') ++line;
  }
  return line;
}

} // namespace

void merge_outputs(const std::string& output, const std::vector<std::string>& inputs,
                   const MergeExtras& extras) {
  if (inputs.size() < 2)
    throw InputError("merge: " + std::to_string(inputs.size()) +
                     " input file(s); allowed: two or more outputs of `run --shots`");
  std::error_code ec;
  struct Input {
    std::string path;
    OutputMeta meta;
    std::vector<int> shots;
    bool snapshots = false;
  };
  std::vector<Input> in;
  for (const std::string& path : inputs) {
    if (fs::exists(output, ec) && fs::equivalent(output, path, ec)) {
      throw InputError("merge: the output '" + output + "' is also an input; allowed: a new " +
                       "file name (the merged file replaces the output only when complete)");
    }
    Input i;
    i.path = path;
    try {
      i.meta = read_output_meta(path);
      i.shots = output_shot_numbers(path);
      i.snapshots = h5_object_readable(path, "/snapshots");
    } catch (const OutputError& e) {
      throw InputError("merge: '" + path + "' is not a readable output of minimod-gpu (" +
                       e.what() + ")");
    }
    if (i.meta.run_fingerprint.empty()) {
      throw InputError("merge: '" + path +
                       "' records no run fingerprint (attribute 'run_fingerprint'); allowed: "
                       "outputs of `run` of this version");
    }
    in.push_back(std::move(i));
  }
  const Input& first = in.front();
  for (std::size_t k = 1; k < in.size(); ++k) {
    const Input& other = in[k];
    std::vector<std::string> diffs;
    const OutputMeta &a = first.meta, &b = other.meta;
    if (a.survey_text != b.survey_text) {
      diffs.push_back("the survey text (from line " +
                      std::to_string(first_differing_line(a.survey_text, b.survey_text)) + ")");
    }
    if (a.physics != b.physics) diffs.push_back("physics: " + a.physics + " vs " + b.physics);
    if (a.grid_shape != b.grid_shape)
      diffs.push_back("grid_shape: " + list_text(a.grid_shape) + " vs " + list_text(b.grid_shape));
    if (a.grid_spacing != b.grid_spacing)
      diffs.push_back("grid_spacing: " + list_text(a.grid_spacing) + " vs " +
                      list_text(b.grid_spacing));
    if (a.grid_origin != b.grid_origin)
      diffs.push_back("grid_origin: " + list_text(a.grid_origin) + " vs " +
                      list_text(b.grid_origin));
    if (a.layer_widths != b.layer_widths)
      diffs.push_back("layer_widths: " + list_text(a.layer_widths) + " vs " +
                      list_text(b.layer_widths));
    if (a.dt != b.dt)
      diffs.push_back("dt: " + list_text(std::array<double, 1>{a.dt}) + " vs " +
                      list_text(std::array<double, 1>{b.dt}));
    if (a.steps != b.steps)
      diffs.push_back("steps: " + std::to_string(a.steps) + " vs " + std::to_string(b.steps));
    if (a.survey_shots != b.survey_shots)
      diffs.push_back("survey_shots: " + std::to_string(a.survey_shots) + " vs " +
                      std::to_string(b.survey_shots));
    if (diffs.empty() && a.run_fingerprint != b.run_fingerprint) {
      diffs.push_back("run_fingerprint (program version, input files, or --steps/--backend/"
                      "--kernel): " +
                      a.run_fingerprint + " vs " + b.run_fingerprint);
    }
    if (!diffs.empty()) {
      std::string listed;
      for (const auto& d : diffs)
        listed += "\n  - " + d;
      throw InputError("merge: '" + other.path + "' is not of the same survey run as '" +
                       first.path + "'; nothing was written. Differences:" + listed +
                       "\nallowed: outputs of one survey run with the same inputs and options, "
                       "split by --shots");
    }
  }
  std::vector<std::pair<int, std::size_t>> owner; // shot -> input
  for (std::size_t k = 0; k < in.size(); ++k) {
    for (const int shot : in[k].shots)
      owner.emplace_back(shot, k);
  }
  std::sort(owner.begin(), owner.end());
  for (std::size_t n = 1; n < owner.size(); ++n) {
    if (owner[n].first == owner[n - 1].first) {
      throw InputError("merge: shot " + std::to_string(owner[n].first) + " is in both '" +
                       in[owner[n - 1].second].path + "' and '" + in[owner[n].second].path +
                       "'; nothing was written; allowed: outputs of disjoint shot sets");
    }
  }
  OutputMeta meta = first.meta;
  meta.shots_selected.clear();
  for (const auto& [shot, k] : owner)
    meta.shots_selected.push_back(shot);
  OutputFile out(output, meta);
  std::string merged_from;
  for (const Input& i : in) {
    merged_from += (merged_from.empty() ? "" : "\n") + i.path + ": shots " +
                   (i.shots.empty() ? std::string("none") : shot_selection_text(i.shots)) + " (" +
                   i.meta.backend + ", " + i.meta.device_name + ")";
  }
  out.set_attribute("merged_from", merged_from);
  try {
    for (const auto& [shot, k] : owner)
      out.copy_shot_from(in[k].path, shot);
    out.write_model(read_model(first.path)); // every input holds the same model
    // The snapshots, shot after shot, each from the input that modelled the shot.
    for (const auto& [shot, k] : owner) {
      if (in[k].snapshots) out.copy_snapshots_from(in[k].path, shot);
    }
  } catch (const DamagedDataError& e) {
    throw InputError(std::string("merge: ") + e.what() +
                     "; nothing was written; allowed: undamaged outputs (model the shots of the "
                     "damaged one again with `run --shots`)");
  }
  std::vector<std::pair<std::string, std::string>> renames; // temporary -> final
  try {
    if (extras) {
      std::vector<std::pair<int, std::string>> sources;
      for (const auto& [shot, k] : owner)
        sources.emplace_back(shot, in[k].path);
      renames = extras(meta, sources);
    }
    out.commit();
    for (const auto& [from, to] : renames)
      rename_durably(from, to);
  } catch (...) {
    for (const auto& entry : renames)
      fs::remove(entry.first, ec);
    throw;
  }
}

bool h5_object_readable(const std::string& path, const std::string& object) {
  try {
    H5Handle file = open_readonly(path);
    const bool ok = H5Lexists(file.get(), object.c_str(), H5P_DEFAULT) > 0 &&
                    H5Oexists_by_name(file.get(), object.c_str(), H5P_DEFAULT) > 0;
    H5Eclear2(H5E_DEFAULT);
    return ok;
  } catch (const OutputError&) {
    return false;
  }
}

const std::string& OutputFile::temp_path() const {
  return m_impl->temp_path;
}

std::string shot_selection_text(const std::vector<int>& shots) {
  std::string text;
  for (std::size_t i = 0; i < shots.size();) {
    std::size_t j = i;
    while (j + 1 < shots.size() && shots[j + 1] == shots[j] + 1)
      ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(shots[i]);
    if (j > i) text += "-" + std::to_string(shots[j]);
    i = j + 1;
  }
  return text;
}

} // namespace minimod
