#pragma once
/// `--kernel auto` (docs/benchmark.md): time the registered kernels for a few steps on the actual
/// grid and device, pick the fastest for the inner region and the fastest for the six layer
/// slabs, and remember the choice in a JSON cache so that the next run with the same device, grid
/// shape, layer widths and physics starts at once.

#include "kernels/backend.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace minimod {

/// What a cached choice is valid for.
struct AutotuneKey {
  std::string device;               ///< device name (the GPU's, as the runtime reports it)
  std::string physics = "acoustic"; ///< physics name
  std::array<int, 3> shape{};       ///< nx, ny, nz
  std::array<int, 6> layer{};       ///< x_lo, x_hi, y_lo, y_hi, z_lo, z_hi
  /// One line naming every field, e.g. "NVIDIA H100|acoustic|1000x1000x1000|27,27,27,27,27,27".
  std::string text() const;
  bool operator==(const AutotuneKey& o) const {
    return device == o.device && physics == o.physics && shape == o.shape && layer == o.layer;
  }
};

/// The key of a problem run on a device.
AutotuneKey autotune_key(const std::string& device, Physics physics, const Problem& p);

/// One cached choice.
struct AutotuneEntry {
  AutotuneKey key;
  std::string inner;                   ///< kernel of the inner region
  std::string layer;                   ///< kernel of the six slabs ("" when the grid has none)
  double ms_per_step = 0;              ///< full step with this choice, when it was made
  std::vector<std::string> candidates; ///< kernels it was chosen among (stale when they change)
  std::string date;                    ///< ISO UTC time of the choice
  std::string commit;                  ///< git commit of the program that chose
};

/// The cache file: $MINIMOD_AUTOTUNE_CACHE when set, else $XDG_CACHE_HOME/minimod-gpu/
/// autotune.json, else $HOME/.cache/minimod-gpu/autotune.json; empty when none is set.
std::string autotune_cache_path();

/// The entry for `key` in the cache at `path`; nullopt when the file or the entry is missing. A
/// damaged file (not JSON, or a field missing or of the wrong type) is treated as empty (it is
/// only a cache): *problem then says why, if given, naming the path and the field.
std::optional<AutotuneEntry> read_autotune_cache(const std::string& path, const AutotuneKey& key,
                                                 std::string* problem = nullptr);

/// Store `entry` at `path`, replacing an entry with the same key and keeping the others, through
/// a temporary name; creates the folder. Throws OutputError when the file cannot be written.
void write_autotune_cache(const std::string& path, const AutotuneEntry& entry);

/// How the tuning measures.
struct AutotuneOptions {
  int warmup_steps = 5;   ///< untimed steps before each candidate's timing
  int timed_steps = 20;   ///< steps per timed repeat (raised on small grids, see autotune.cpp)
  int repeats = 3;        ///< timed repeats; the median counts
  bool use_cache = true;  ///< read and write the cache
  std::string cache_path; ///< empty: autotune_cache_path()
};

/// What autotune_kernels chose.
struct AutotuneResult {
  RegionKernels kernels{}; ///< kernel of each region (RegionId order)
  std::string spec;        ///< the same as a kernel spec: "inner=NAME,pml=NAME"
  double ms_per_step = 0;  ///< full step with the choice (from the cache when cached)
  bool from_cache = false; ///< the choice came from the cache
  std::string cache_path;  ///< the cache used ("" when none)
  /// Milliseconds per full step of each candidate tried (empty when cached).
  std::vector<std::pair<std::string, double>> inner_ms, layer_ms;
};

/// Choose a kernel for each region of `p` on `backend`, which must already be set up with `p`.
/// Inner candidates (every registered region kernel of the backend and physics that can run the
/// inner region) are timed with the layers on the backend's default kernel; then layer candidates
/// (those that can run all six slabs) with the chosen inner kernel. On the CPU backend every region
/// gets `cpu` and nothing is timed. Leaves the backend reset with the chosen kernels set. `notice`
/// (may be empty) receives one line per decision ("auto: cached choice ...").
AutotuneResult autotune_kernels(Backend& backend, const Problem& p, Physics physics,
                                const AutotuneOptions& options,
                                const std::function<void(const std::string&)>& notice);

} // namespace minimod
