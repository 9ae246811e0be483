#pragma once
/// `minimod-gpu bench` (docs/benchmark.md): the seeds' benchmark problem built in code, every
/// chosen kernel timed on it against the memory floor measured in the same process, a table on
/// the terminal and one JSON record per kernel.

#include "core/grid.hpp"
#include "kernels/backend.hpp"
#include "kernels/gpu_probe.hpp"
#include "kernels/kernel.hpp"
#include "kernels/tti_problem.hpp"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace minimod {

/// The command-line values of `bench`, as CLI11 fills them (checked by bench_options).
struct BenchArgs {
  std::string kernel = "all"; ///< all | auto | LIST (see split_kernel_list)
  int grid = 0;               ///< N for an N^3 grid (0: not given)
  std::string shape;          ///< NXxNYxNZ (empty: not given)
  int steps = 100;            ///< timed steps per repeat
  int warmup = 10;            ///< untimed steps before each kernel's repeats
  int repeats = 3;            ///< timed repeats per kernel (the median counts)
  std::string physics = "acoustic";
  bool no_azimuth = false;           ///< tti: azimuth 0 (no axis_y array)
  std::string json;                  ///< JSON output file (empty: none)
  std::string backend = "gpu";       ///< gpu (the binary's GPU backend) | cuda | hip | cpu
  int layer = -1;                    ///< absorbing layer points on every face (-1: the seeds' 27)
  std::string boundary = "minimod";  ///< minimod | cpml (the layer's formulation)
  std::string precision = "float32"; ///< float32 | float16 | both (core/precision.hpp)
};

/// Checked options of a benchmark.
struct BenchOptions {
  std::vector<std::string> kernels{"all"}; ///< items: all, auto, a kernel name or a full spec
  std::array<int, 3> shape{1000, 1000, 1000};
  int steps = 100;
  int warmup = 10;
  int repeats = 3;
  Physics physics = Physics::Acoustic;
  bool tti_azimuth = true; ///< tti: a medium with azimuth (axis_y stored and read)
  std::string json_path;
  BackendKind backend = kGpuBackend;
  /// Absorbing layer points on every face; negative: the seeds' layer (ntaper vmax / fmax / h).
  int layer = -1;
  /// The absorbing layer's formulation (acoustic only: the TTI equation has Minimod's alone).
  BoundaryType boundary = BoundaryType::Minimod;
  /// Options of `auto` items (the cache path among them; empty: autotune_cache_path()).
  std::string autotune_cache;
  /// The precisions timed, in order (--precision both: float32, then float16 on the same
  /// problem and steps, each float16 record compared with the float32 record of its item).
  std::vector<Precision> precisions{Precision::Float32};
};

/// Add the `bench` subcommand and its options to `app`, filling `args`.
CLI::App* add_bench_subcommand(CLI::App& app, BenchArgs& args);

/// Check `args`; throws InputError naming the option, the value and what is allowed.
BenchOptions bench_options(const BenchArgs& args);

/// "1000x800x600" -> {1000, 800, 600}; throws InputError (naming `what`) otherwise.
std::array<int, 3> parse_shape(const std::string& text, const std::string& what);

/// Split a --kernel value into items. Items are separated by ';', or by ',' when the value holds
/// no '=' (so "gmem_3d,smem_3d" is two kernels while "inner=smem_3d,pml=gmem_3d;gmem_3d" is a
/// full spec and a kernel). Blank items are dropped.
std::vector<std::string> split_kernel_list(const std::string& text);

/// How far a float16 record's results are from the float32 record of the same item, after the
/// timed steps from zero fields: ||x16 - x32|| / ||x32|| (L2 over every value; NaN where x32 is
/// zero or was not measured).
struct PrecisionDifference {
  double field_rel_l2 = 0;  ///< the final wavefield (fetch_field), at the grid points
  double traces_rel_l2 = 0; ///< the receiver traces (fetch_traces)
};

/// One benchmarked configuration.
struct BenchRecord {
  std::string spec;                              ///< the item (kernel name, spec, or "auto")
  Precision precision = Precision::Float32;      ///< how the fields and the medium were stored
  std::string status = "ok";                     ///< ok | refused | failed
  std::string reason;                            ///< why refused or failed
  std::vector<std::string> notes;                ///< fallbacks and choices made for this record
  std::array<std::string, kRegionCount> kernels; ///< kernel of each region ("-": empty region)
  int pass_steps = 1;                            ///< most steps the backend takes a pass
  std::vector<double> ms_all;                    ///< ms per step of each repeat
  double ms = 0;                                 ///< median of ms_all
  double gpts_per_s = 0;                         ///< grid points per second / 1e9
  double effective_gbps = 0;                     ///< 16 B per point / time
  double percent_of_floor = 0;                   ///< floor ms / ms * 100
  /// Bytes a step must move per point at this precision; 0: the report's bytes_per_point.
  double bytes_per_point = 0;
  /// --precision both, float16 records: the difference from the float32 record of the item.
  std::optional<PrecisionDifference> float32_difference;
};

/// Everything a benchmark measured.
struct BenchReport {
  std::string device;  ///< GPU name (or CPU model)
  std::string backend; ///< "cuda" / "hip" / "cpu"
  std::string physics; ///< "acoustic"
  Grid grid;
  LayerWidths layer;
  /// The layer's formulation, as the problem has it (meaningless where `layer` has no face).
  BoundaryType boundary = BoundaryType::Minimod;
  double dt = 0;
  int steps = 0, warmup = 0, repeats = 0;
  MemoryFloor floor; ///< as measured
  /// Bytes a step must move per point at least: 16 for the acoustic step, the TTI floor of
  /// docs/tti.md averaged over the inner and layer points for TTI.
  double bytes_per_point = kAcousticBytesPerPoint;
  double floor_ms = 0; ///< bytes_per_point x grid points at the measured stream bandwidth
  std::string date;    ///< ISO UTC, when the benchmark started
  std::vector<BenchRecord> records;
  /// Whether any record failed (a runtime error while it ran).
  bool any_failed() const;
};

/// Run the benchmark; `log` (may be empty) gets progress lines, `on_record` (may be empty) the
/// report so far after each record (cmd_bench rewrites the JSON then, so that an interrupted run
/// keeps what it measured). Throws InputError for bad kernel names or grids, RuntimeFailure for
/// device errors (out of memory included) before the first kernel; a runtime error while one
/// kernel runs is recorded (status failed) and the next runs.
BenchReport run_bench(const BenchOptions& options,
                      const std::function<void(const std::string&)>& log,
                      const std::function<void(const BenchReport&)>& on_record = {});

/// The table printed on the terminal.
std::string bench_table(const BenchReport& report);

/// The JSON document: {"records": [...]} with one self-contained record per configuration, its
/// fields in a fixed order (docs/benchmark.md). Measurements a record lacks (those of a refused or
/// failed kernel) are null, as is a non-finite value, JSON having no NaN or Inf; bytes that are not
/// UTF-8 become U+FFFD.
std::string bench_json(const BenchReport& report);

/// `minimod-gpu bench`: run, print the table, write the JSON. Returns the exit code.
int cmd_bench(const BenchArgs& args);

} // namespace minimod
