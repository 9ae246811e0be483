#pragma once
/// An HDF5 file of the output layout (docs/output.md): the final output, and the part files a run
/// keeps in `<output>.parts/` (io/parts_store.hpp). Written under a temporary name beside the
/// final one; commit() syncs it to disk and renames it, so a file under its final name is always
/// complete, even after a crash. Destroying an uncommitted file removes the temporary.

#include "core/errors.hpp"
#include "io/survey.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minimod {

/// Root attributes: provenance of the run.
struct OutputMeta {
  std::string program_version;
  std::string git_commit;
  std::string survey_text;
  std::string survey_path;
  std::string physics;     ///< "acoustic"
  std::string backend;     ///< "cpu" / "cuda"
  std::string device_name; ///< GPU name or CPU model
  std::array<std::string, 7>
      region_kernels; ///< kernel of inner, top, bottom, front, back, left, right
  std::array<int, 3> grid_shape{};
  std::array<double, 3> grid_spacing{};
  std::array<double, 3> grid_origin{};
  std::array<int, 6> layer_widths{}; ///< x_lo, x_hi, y_lo, y_hi, z_lo, z_hi
  double dt = 0;
  int steps = 0;
  /// Of a final output (0 / empty in part files): the survey's shot count, the shots the run was
  /// asked for (`--shots`; every shot without it), and the run's fingerprint as JSON (what decides
  /// the samples: program, survey text, input files, --steps/--backend/--kernel), which `merge`
  /// compares.
  int survey_shots = 0;
  std::vector<int> shots_selected;
  std::string run_fingerprint;
};

/// One shot gather.
struct ShotGather {
  int shot = 0;
  std::vector<Vec3> source_positions; ///< metres (one per source fired together)
  std::vector<Vec3> receiver_positions;
  double dt_out = 0;         ///< sample interval of the traces (s)
  int samples = 0;           ///< samples per trace; sample k at time k * dt_out
  std::vector<float> traces; ///< [receivers][samples]
  /// The source wavelet of each source, as the solver sampled it (the survey's wavelet times its
  /// amplitude, before the injection's scaling): [sources][wavelet_samples], sample n at time
  /// n * wavelet_dt. Empty (wavelet_samples 0) in a file of a version that did not store it.
  std::vector<float> wavelet;
  int wavelet_samples = 0;
  double wavelet_dt = 0;
};

/// Geometry of the snapshot dataset (after sub-volume and decimation).
struct SnapshotGeometry {
  std::array<int, 3> shape{};      ///< nx, ny, nz of one snapshot
  std::array<double, 3> origin{};  ///< metres of its first point
  std::array<double, 3> spacing{}; ///< metres between kept points
  int expected_count = 0;          ///< number of snapshots the run will write (for chunk sizing)
};

/// One property of the medium as /model stores it.
struct ModelProperty {
  std::string name;          ///< dataset name: "vp", "epsilon", "delta", "theta", "phi"
  std::string units;         ///< "m/s", "1" (dimensionless) or "rad"
  std::vector<float> values; ///< x fastest, StoredModel::shape points
};

/// The medium a run used, decimated for the output: /model/<name> [nz, ny, nx] float32.
struct StoredModel {
  std::array<int, 3> shape{};             ///< nx, ny, nz of the kept points
  std::array<double, 3> origin{};         ///< m, x y z of the first kept point (the grid's origin)
  std::array<double, 3> spacing{};        ///< m between kept points: grid spacing x decimation
  std::array<int, 3> decimation{1, 1, 1}; ///< stride along x, y, z: every k-th grid point kept
  std::array<int, 3> grid_shape{};        ///< nx, ny, nz of the grid the values come from
  std::vector<ModelProperty> properties;
  bool empty() const { return properties.empty(); }
};

/// At most this many points are kept along each axis of /model (at most 256^3 points, 64 MiB).
constexpr int kModelMaxAxisPoints = 256;

/// The geometry of /model for a grid of `shape` points (nx, ny, nz): along each axis the stride
/// ceil(n / 256), keeping grid points 0, k, 2k, ... (so the first grid point is always kept and at
/// most 256 points remain).
StoredModel model_geometry(const std::array<int, 3>& shape, const std::array<double, 3>& origin,
                           const std::array<double, 3>& spacing);
/// The x-fastest grid indices of the points `model` keeps, in the order its values are stored.
std::vector<std::int64_t> model_kept_points(const StoredModel& model);
/// Add a property given at the kept points only (model_kept_points' order) to `model`.
void add_kept_model_property(StoredModel& model, const std::string& name, const std::string& units,
                             std::vector<float> kept_values);
/// Add a property given on the whole grid (x fastest) to `model`, decimated as its geometry says.
void add_model_property(StoredModel& model, const std::string& name, const std::string& units,
                        const std::vector<float>& grid_values);

/// How an output file is written.
struct OutputOptions {
  /// commit() writes the XDMF sidecar `<final_path without extension>.xmf`, after the file got
  /// its name, when the file holds snapshots or a model (off for part files, which no reader
  /// opens).
  bool xdmf_sidecar = true;
};

/// An output file being written.
class OutputFile {
public:
  /// Create `<final_path>.tmp-<pid>` (creating the parent folder) and write the root attributes.
  /// Throws OutputError when the file cannot be created.
  OutputFile(const std::string& final_path, const OutputMeta& meta);
  /// The same with options.
  OutputFile(const std::string& final_path, const OutputMeta& meta, const OutputOptions& options);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Write /shots/<shot>/ with traces, coordinates and attributes.
  void write_shot(const ShotGather& gather);
  /// Create /snapshots/wavefield [0, nz, ny, nx] (chunked, extensible) and its coordinates. Called
  /// again (another shot's snapshots, appended to the same datasets) it requires the same geometry.
  void begin_snapshots(const SnapshotGeometry& geometry);
  /// Append one snapshot: `data` is x fastest, geometry.shape[0]*[1]*[2] floats.
  void append_snapshot(int step, double time, const std::vector<float>& data);
  /// The shot whose snapshots append_snapshot adds from now on (/snapshots/shot; default 0).
  void set_snapshot_shot(int shot);
  /// Write /model with one dataset per property of `model` (docs/output.md); nothing when empty.
  void write_model(const StoredModel& model);
  /// Add a root attribute after the fact (e.g. run time).
  void set_attribute(const std::string& name, const std::string& value);
  void set_attribute(const std::string& name, double value);
  /// Copy /shots/<shot> of the complete file `source` (a shot part) into this file.
  void copy_shot_from(const std::string& source, int shot);
  /// Copy /snapshots of the complete file `source` into this file (for the XDMF sidecar too),
  /// after the snapshots copied or written before (the same points), each with its shot; with
  /// `only`, the snapshots of that shot alone (none: nothing is copied).
  void copy_snapshots_from(const std::string& source, std::optional<int> only = std::nullopt);
  /// The XDMF sidecar of the file as it stands, naming `h5_name` ("" when it has no snapshots).
  std::string xdmf_sidecar_text(const std::string& h5_name) const;
  /// Write the XDMF sidecar (when enabled and the file holds snapshots), flush, close, sync to
  /// disk, rename to the final path and sync its folder. Throws OutputError on failure.
  void commit();
  /// The temporary path being written.
  const std::string& temp_path() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

/// Data that reads back but differs from what was written: its content's CRC-32 is not the one
/// recorded with it (a flipped bit on disk, a bad copy). A runtime failure: the data is not used.
class DamagedDataError : public RuntimeFailure {
public:
  using RuntimeFailure::RuntimeFailure;
};

/// The CRC-32 (zlib) write_shot records in /shots/<shot>'s attribute `content_crc32`: of the sample
/// count, dt_out, the traces, the receiver and source positions and, when stored, the wavelet's
/// sample count, dt and samples, each as the file stores them (little-endian).
std::uint32_t gather_checksum(const ShotGather& gather);

/// Read /shots/<shot> of the file at `path` back (the inverse of write_shot). Throws OutputError
/// when the file or the group cannot be read, DamagedDataError when the group records a
/// `content_crc32` that its content does not have.
ShotGather read_shot_gather(const std::string& path, int shot);

/// Why /shots/<shot> of `path` cannot be used: "" when it reads back whole and carries the CRC-32
/// of its content; otherwise the reason ("cannot be read: ...", "carries no checksum", "is
/// damaged: ...").
std::string shot_damage(const std::string& path, int shot);
/// The same for /snapshots of `path` (every snapshot is read).
std::string snapshots_damage(const std::string& path);

/// Read /model of the file at `path` back (empty when the file has none). Throws OutputError.
StoredModel read_model(const std::string& path);

/// Fill `meta`'s backend, device_name and region_kernels from the root attributes of the file at
/// `path` (a part written with them). Throws OutputError when they cannot be read.
void read_backend_attributes(const std::string& path, OutputMeta& meta);

/// The root attributes of an output file written by this version (OutputMeta's fields; the backend
/// and device those of the file). Throws OutputError when the file or an attribute cannot be read.
OutputMeta read_output_meta(const std::string& path);
/// The shot numbers of the /shots groups of `path`, sorted. Throws OutputError.
std::vector<int> output_shot_numbers(const std::string& path);

/// `merge`: join outputs of disjoint shot sets of one survey into `output` (written under a
/// temporary name and renamed; with the XDMF sidecar when one input holds snapshots). Throws
/// InputError, naming the files and what differs, when an input is not an output of this
/// program, when inputs differ in their run fingerprint, physics, grid, dt or steps, when two
/// inputs hold the same shot, or when `output` is one of the inputs; nothing is written then.
/// `extras`, when given, writes further files of the merged output (its SEG-Y): it is called once
/// the merged file is complete, before it gets its name, with that file's root attributes and each
/// shot with the input holding it, writes its files under temporary names and returns them as
/// (temporary, final) pairs; they are renamed after the merged file, and removed when anything
/// fails.
using MergeExtras = std::function<std::vector<std::pair<std::string, std::string>>(
    const OutputMeta&, const std::vector<std::pair<int, std::string>>&)>;
void merge_outputs(const std::string& output, const std::vector<std::string>& inputs,
                   const MergeExtras& extras = {});

/// Whether `path` is an HDF5 file that opens and holds the group `object` ("/shots/0003").
bool h5_object_readable(const std::string& path, const std::string& object);

/// "0-3,7" for {0,1,2,3,7}: a set of shot numbers as `run --shots` takes it ("" for none).
std::string shot_selection_text(const std::vector<int>& shots);

} // namespace minimod
