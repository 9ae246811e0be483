#pragma once
/// The schedule of the CPU multi-step pass (docs/kernels.md, "The CPU multi-step pass"), shared
/// by both equations: several steps in one pass over memory, the two time levels of each field in
/// place. Step s of the pass updates plane t - s kHalo at iteration t, in the band's rows shifted
/// back by s kHalo, so that it reads only points the step before has written and overwrites only
/// points whose old value no later step or band reads; the threads take bands in turn, each band
/// one iteration behind the band before it.

#include "core/field_layout.hpp"
#include "core/grid.hpp"
#include "kernels/cpu/cpu_sweep.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace minimod {

/// The multi-step pass: steps a pass at most.
inline constexpr int kCpuPassMaxSteps = 8;

/// Called by the pass's thread of a band right after step s of the pass has updated plane k of
/// rows [j0, j1), before any later step reads them: where the backend adds step s's source
/// samples, applies the free surface and samples receivers. Calls for different bands run
/// concurrently and touch only their own rows.
using CpuPassPlaneHook = std::function<void(int s, int j0, int j1, int k)>;

/// Waits until `done` reaches `target` (acquire): spins briefly, then yields the core, so that a
/// thread without a core of its own (more threads than cores) does not starve the one it waits
/// for.
inline void cpu_pass_wait(const std::atomic<int>& done, int target) {
  for (int spin = 0; done.load(std::memory_order_acquire) < target; ++spin) {
    if (spin < 256) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

/// Throws std::invalid_argument unless `steps` (1 to max_steps) and `band` (at least
/// (steps - 1) kHalo rows) make a pass; `what` names the caller.
inline void cpu_pass_check(const char* what, int steps, int max_steps, int band) {
  if (steps < 1 || steps > max_steps)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(steps) +
                                " steps; allowed 1 to " + std::to_string(max_steps));
  const int least = std::max(1, (steps - 1) * kHalo);
  if (band < least)
    throw std::invalid_argument(std::string(what) + ": bands of " + std::to_string(band) +
                                " rows for " + std::to_string(steps) + " steps; at least " +
                                std::to_string(least));
}

/// Runs the pass's schedule over the (y, z) box [y0, y1) x [z0, z1) in one parallel region:
/// rows(s, j0, j1, k) updates rows [j0, j1) of plane k by step s of the pass, then
/// after_plane(s, j0, j1, k) runs on the same thread, before any later step reads them.
template <class Rows, class AfterPlane>
void cpu_pass_schedule(int y0, int y1, int z0, int z1, int steps, int band, Rows&& rows,
                       AfterPlane&& after_plane) {
  if (y0 >= y1 || z0 >= z1) return;
  const int bands = (y1 - y0 + band - 1) / band;
  const int iterations = z1 - z0 + (steps - 1) * kHalo;
  std::unique_ptr<std::atomic<int>[]> done(new std::atomic<int>[static_cast<std::size_t>(bands)]);
  for (int b = 0; b < bands; ++b)
    done[b].store(0, std::memory_order_relaxed);
#pragma omp parallel
  {
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
    for (int b = me; b < bands; b += threads) {
      // The first band starts at y0 and the last ends at y1 for every step.
      const int a0 = y0 + b * band, a1 = std::min(a0 + band, y1);
      for (int it = 0; it < iterations; ++it) {
        // Band b - 1 must have done this iteration: the rows below a0 that this iteration's
        // steps read, and its reads of the rows [a0 - s kHalo, a0) that step s overwrites here.
        if (b > 0) cpu_pass_wait(done[b - 1], it + 1);
        for (int s = 0; s < steps; ++s) {
          const int k = z0 + it - s * kHalo;
          if (k < z0 || k >= z1) continue;
          const int j0 = b == 0 ? y0 : a0 - s * kHalo;
          const int j1 = b == bands - 1 ? y1 : a1 - s * kHalo;
          rows(s, j0, j1, k);
          after_plane(s, j0, j1, k);
        }
        done[b].store(it + 1, std::memory_order_release);
      }
    }
  }
}

/// The pass over the pieces of regions[0, count) (disjoint; together the whole step), either
/// equation: fields[s % 2] are the fields step s of the pass reads and writes (the two time
/// levels swapped between even and odd steps), and segment(fields[s % 2], piece, j, k) updates
/// row (j, k) of a piece, for every piece that holds the row, in x order. after_plane (may be
/// empty) as in cpu_pass_schedule. `what` names the caller in its errors: the step count or band
/// out of range (cpu_pass_check), or a C-PML, whose memory pass runs between steps.
template <class Fields, class Segment>
void cpu_pass_over_pieces(const char* what, const Fields (&fields)[2], const Region* regions,
                          int count, int steps, int band, Segment&& segment,
                          const CpuPassPlaneHook& after_plane) {
  cpu_pass_check(what, steps, kCpuPassMaxSteps, band);
  if (fields[0].cpml)
    throw std::invalid_argument(std::string(what) + ": the C-PML's memory pass runs between "
                                                    "steps; step it one step at a time");
  int y0, y1, z0, z1;
  if (!cpu_pieces_box(regions, count, y0, y1, z0, z1)) return;
  // The pieces that hold points, in x order: a row goes through them left to right.
  std::vector<const Region*> pieces;
  for (int n = 0; n < count; ++n)
    if (!regions[n].box.empty()) pieces.push_back(&regions[n]);
  std::sort(pieces.begin(), pieces.end(),
            [](const Region* a, const Region* b) { return a->box.x0 < b->box.x0; });
  cpu_pass_schedule(
      y0, y1, z0, z1, steps, band,
      [&](int s, int j0, int j1, int k) {
        for (int j = j0; j < j1; ++j)
          for (const Region* r : pieces) {
            const Box& b = r->box;
            if (j < b.y0 || j >= b.y1 || k < b.z0 || k >= b.z1) continue;
            segment(fields[s % 2], *r, j, k);
          }
      },
      [&](int s, int j0, int j1, int k) {
        if (after_plane) after_plane(s, j0, j1, k);
      });
}

} // namespace minimod
