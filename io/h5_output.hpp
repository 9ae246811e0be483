#pragma once
/// The HDF5 output file (layout in docs/output.md). Written under a temporary name beside the
/// final one and renamed by commit(); destroying an uncommitted file removes the temporary, so a
/// failed run leaves nothing that looks finished.

#include "io/survey.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
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
};

/// One shot gather.
struct ShotGather {
  int shot = 0;
  std::vector<Vec3> source_positions; ///< metres (one per source fired together)
  std::vector<Vec3> receiver_positions;
  double dt_out = 0;         ///< sample interval of the traces (s)
  int samples = 0;           ///< samples per trace; sample k at time k * dt_out
  std::vector<float> traces; ///< [receivers][samples]
};

/// Geometry of the snapshot dataset (after sub-volume and decimation).
struct SnapshotGeometry {
  std::array<int, 3> shape{};      ///< nx, ny, nz of one snapshot
  std::array<double, 3> origin{};  ///< metres of its first point
  std::array<double, 3> spacing{}; ///< metres between kept points
  int expected_count = 0;          ///< number of snapshots the run will write (for chunk sizing)
};

/// How an output file is opened.
struct OutputOptions {
  /// Write `<final_path>.partial` instead of `.tmp-<pid>`, flush after every shot and keep the
  /// partial file when the run fails, so that `--resume` can continue it. A partial file never
  /// looks finished: only commit() gives it the final name.
  bool resumable = false;
  /// Continue an existing `<final_path>.partial` written for the same survey text: complete shots
  /// are kept (complete_shots()), incomplete ones removed. Without one, start afresh.
  bool resume = false;
};

/// An output file being written.
class OutputFile {
public:
  /// Create `<final_path>.tmp-<pid>` (creating the parent folder) and write the root attributes.
  /// Throws OutputError when the file cannot be created.
  OutputFile(const std::string& final_path, const OutputMeta& meta);
  /// The same with options; resuming a partial file of another survey throws InputError.
  OutputFile(const std::string& final_path, const OutputMeta& meta, const OutputOptions& options);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Write /shots/<shot>/ with traces, coordinates and attributes.
  void write_shot(const ShotGather& gather);
  /// Create /snapshots/wavefield [0, nz, ny, nx] (chunked, extensible) and its coordinates.
  void begin_snapshots(const SnapshotGeometry& geometry);
  /// Append one snapshot: `data` is x fastest, geometry.shape[0]*[1]*[2] floats.
  void append_snapshot(int step, double time, const std::vector<float>& data);
  /// Add a root attribute after the fact (e.g. run time).
  void set_attribute(const std::string& name, const std::string& value);
  void set_attribute(const std::string& name, double value);
  /// Flush, close and rename to the final path. Throws OutputError on failure.
  void commit();
  /// The temporary path being written.
  const std::string& temp_path() const;
  /// Shots already complete in a resumed file (sorted), empty for a new file.
  const std::vector<int>& complete_shots() const;
  /// Whether a resumed file already holds the complete snapshots (they belong to shot 0).
  bool snapshots_complete() const;

private:
  /// Open an existing partial file for `resume`; false when there is none.
  bool resume_partial(const OutputMeta& meta);

  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace minimod
