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
#include <chrono>
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

/// The stagger of a pass's steps: step s works `skew` planes and rows behind step s - 1, and its
/// update of a plane `lead` planes and rows behind its work ahead of the update (the C-PML's
/// memory update, cpml_multi_step_pass_cpu). Minimod's layer and no layer: kHalo and none.
struct CpuPassSkew {
  int skew = kHalo;
  int lead = 0;
  /// The rows the last of `steps` steps lags the first by: the least rows of a band.
  int least(int steps) const { return (steps - 1) * skew + lead; }
};

/// Throws std::invalid_argument unless `steps` (1 to max_steps) and `band` (at least
/// skew.least(steps) rows) make a pass; `what` names the caller.
inline void cpu_pass_check(const char* what, int steps, int max_steps, int band,
                           CpuPassSkew skew = {}) {
  if (steps < 1 || steps > max_steps)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(steps) +
                                " steps; allowed 1 to " + std::to_string(max_steps));
  const int least = std::max(1, skew.least(steps));
  if (band < least)
    throw std::invalid_argument(std::string(what) + ": bands of " + std::to_string(band) +
                                " rows for " + std::to_string(steps) + " steps; at least " +
                                std::to_string(least));
}

/// Each thread's rate in the passes so far, in cost units (cpu_pass_over_pieces: a row's points,
/// layer points weighted) a second of its own work, by thread number; the pass measures and
/// updates them, and the next pass's bands follow them. On the 2-core virtual machine of
/// docs/perf one virtual CPU ran the same bands 1.2 to 1.3 times slower than the other, run
/// after run, whichever thread it held.
struct CpuPassRates {
  std::vector<double> rate; ///< empty or of another thread count: equal rates
};

/// The bands of a pass over rows [y0, y0 + row_cost.size()): band b is rows [edges[b],
/// edges[b + 1]), for thread b % threads. The threads take bands in turn and each band waits for
/// the band before it, so the bands a set of threads works on together move at the pace of the
/// slowest of them: the edges cut the rows' summed cost (row_cost[j - y0], any unit) into shares
/// in proportion to the rates of the bands' threads (`rates`, cpu_pass_over_pieces; equal where
/// null), in a number of bands that is a multiple of `threads` where each band can still have
/// `least` rows, and about `band` rows each. Every band has at least `least` rows (one band when
/// there are fewer rows).
inline std::vector<int> cpu_pass_bands(int y0, const std::vector<double>& row_cost, int band,
                                       int least, int threads,
                                       const CpuPassRates* rates = nullptr) {
  const int rows = static_cast<int>(row_cost.size());
  threads = std::max(threads, 1);
  least = std::max(least, 1);
  int n = (rows + std::max(band, 1) - 1) / std::max(band, 1);
  n = (n + threads - 1) / threads * threads;
  n = std::max(1, std::min(n, rows / least));
  // weight[b]: the rates of the threads of bands [0, b), summed.
  const bool rated =
      rates != nullptr && rates->rate.size() == static_cast<std::size_t>(threads) &&
      std::all_of(rates->rate.begin(), rates->rate.end(), [](double r) { return r > 0.0; });
  std::vector<double> weight(static_cast<std::size_t>(n) + 1, 0.0);
  for (int b = 0; b < n; ++b)
    weight[static_cast<std::size_t>(b) + 1] =
        weight[static_cast<std::size_t>(b)] +
        (rated ? rates->rate[static_cast<std::size_t>(b % threads)] : 1.0);
  std::vector<double> before(static_cast<std::size_t>(rows) + 1, 0.0); // cost of rows [0, j)
  for (int j = 0; j < rows; ++j)
    before[static_cast<std::size_t>(j) + 1] =
        before[static_cast<std::size_t>(j)] + row_cost[static_cast<std::size_t>(j)];
  const double total = before[static_cast<std::size_t>(rows)];
  std::vector<int> edges(static_cast<std::size_t>(n) + 1);
  edges[0] = 0;
  for (int b = 1; b < n; ++b) {
    int e = b * rows / n; // rows evenly, where the rows cost nothing
    if (total > 0.0) {
      const double share =
          total * weight[static_cast<std::size_t>(b)] / weight[static_cast<std::size_t>(n)];
      e = static_cast<int>(std::lower_bound(before.begin(), before.end(), share) - before.begin());
      if (e > 0 && share - before[static_cast<std::size_t>(e) - 1] <
                       before[static_cast<std::size_t>(e)] - share)
        --e; // the nearer edge
    }
    // Room for this band's rows before and for the remaining bands' after.
    edges[static_cast<std::size_t>(b)] =
        std::clamp(e, edges[static_cast<std::size_t>(b) - 1] + least, rows - (n - b) * least);
  }
  edges[static_cast<std::size_t>(n)] = rows;
  for (int& e : edges)
    e += y0;
  return edges;
}

/// Runs the pass's schedule over the (y, z) box [y0, y1) x [z0, z1) in one parallel region, in
/// the bands `edges` (cpu_pass_bands; edges.front() is y0 and edges.back() y1), steps
/// `skew.skew` planes and rows apart: at iteration t, for s = 0, 1, ..., ahead(s, j0, j1, k)
/// works on rows [j0, j1) of plane k = z0 + t - s skew (the band's rows shifted back by s skew),
/// then rows(s, j0', j1', k') updates plane k' = k - lead of the band's rows shifted back by
/// s skew + lead, and after_plane(s, j0', j1', k') runs on the same thread, before any later step
/// reads them. With a skew of kHalo and no lead, step s reads only points step s - 1 has written
/// and overwrites only points no later step or band reads; `ahead` (work that a step's update
/// reads lead planes and rows ahead, and that reads the step before's results lead planes and
/// rows ahead of itself) needs a skew of 2 lead.
/// When `work` is not null it gets each thread's seconds in its bands, waits left out, by thread
/// number (sized to the team).
template <class Ahead, class Rows, class AfterPlane>
void cpu_pass_schedule_ahead(const std::vector<int>& edges, int z0, int z1, int steps,
                             CpuPassSkew skew, Ahead&& ahead, Rows&& rows, AfterPlane&& after_plane,
                             std::vector<double>* work = nullptr) {
  const int bands = static_cast<int>(edges.size()) - 1;
  if (bands < 1 || edges.front() >= edges.back() || z0 >= z1) return;
  using Clock = std::chrono::steady_clock;
  const int y0 = edges.front(), y1 = edges.back();
  const int iterations = z1 - z0 + skew.least(steps);
  std::unique_ptr<std::atomic<int>[]> done(new std::atomic<int>[static_cast<std::size_t>(bands)]);
  for (int b = 0; b < bands; ++b)
    done[b].store(0, std::memory_order_relaxed);
#pragma omp parallel
  {
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
    if (work != nullptr) {
#pragma omp single
      work->assign(static_cast<std::size_t>(threads), 0.0);
    }
    const Clock::time_point start = Clock::now();
    Clock::duration waited{};
    for (int b = me; b < bands; b += threads) {
      // The first band starts at y0 and the last ends at y1 for every step.
      const int a0 = edges[static_cast<std::size_t>(b)],
                a1 = edges[static_cast<std::size_t>(b) + 1];
      for (int it = 0; it < iterations; ++it) {
        // Band b - 1 must have done this iteration: the rows below a0 that this iteration's
        // steps read, and its reads of the rows [a0 - s skew - lead, a0) that step s overwrites
        // here.
        if (b > 0 && done[b - 1].load(std::memory_order_acquire) < it + 1) {
          const Clock::time_point before = Clock::now();
          cpu_pass_wait(done[b - 1], it + 1);
          waited += Clock::now() - before;
        }
        for (int s = 0; s < steps; ++s) {
          const int back = s * skew.skew;
          const int ka = z0 + it - back;
          if (skew.lead > 0 && ka >= z0 && ka < z1)
            ahead(s, b == 0 ? y0 : a0 - back, b == bands - 1 ? y1 : a1 - back, ka);
          const int k = ka - skew.lead;
          if (k < z0 || k >= z1) continue;
          const int j0 = b == 0 ? y0 : a0 - back - skew.lead;
          const int j1 = b == bands - 1 ? y1 : a1 - back - skew.lead;
          rows(s, j0, j1, k);
          after_plane(s, j0, j1, k);
        }
        done[b].store(it + 1, std::memory_order_release);
      }
    }
    if (work != nullptr)
      (*work)[static_cast<std::size_t>(me)] =
          std::chrono::duration<double>(Clock::now() - start - waited).count();
  }
}

/// The schedule of cpu_pass_schedule_ahead with a skew of kHalo and nothing ahead.
template <class Rows, class AfterPlane>
void cpu_pass_schedule(const std::vector<int>& edges, int z0, int z1, int steps, Rows&& rows,
                       AfterPlane&& after_plane, std::vector<double>* work = nullptr) {
  cpu_pass_schedule_ahead(
      edges, z0, z1, steps, CpuPassSkew{}, [](int, int, int, int) {}, rows, after_plane, work);
}

/// The pass over the pieces of regions[0, count) (disjoint; together the whole step), either
/// equation, in the schedule of cpu_pass_schedule_ahead with `skew`: fields[s % 2] are the fields
/// step s of the pass reads and writes (the two time levels swapped between even and odd steps),
/// ahead(fields[s % 2], s, j0, j1, k) the work of step s ahead of its update (nothing without a
/// lead), and segment(fields[s % 2], piece, j, k) updates row (j, k) of a piece, for every piece
/// that holds the row, in x order. after_plane (may be empty) as in cpu_pass_schedule. The bands
/// are about `band` rows (cpu_pass_bands), balanced by each row's points, a layer piece's point
/// counting `layer_weight` inner points (the caller's measured cost of its layer update against
/// its inner one). `what` names the caller in its errors: the step count or band out of range
/// (cpu_pass_check).
template <class Fields, class Ahead, class Segment>
void cpu_pass_over_pieces_ahead(const char* what, const Fields (&fields)[2], const Region* regions,
                                int count, int steps, int band, double layer_weight,
                                CpuPassSkew skew, Ahead&& ahead, Segment&& segment,
                                const CpuPassPlaneHook& after_plane, CpuPassRates* rates) {
  cpu_pass_check(what, steps, kCpuPassMaxSteps, band, skew);
  int y0, y1, z0, z1;
  if (!cpu_pieces_box(regions, count, y0, y1, z0, z1)) return;
  // The pieces that hold points, in x order: a row goes through them left to right.
  std::vector<const Region*> pieces;
  for (int n = 0; n < count; ++n)
    if (!regions[n].box.empty()) pieces.push_back(&regions[n]);
  std::sort(pieces.begin(), pieces.end(),
            [](const Region* a, const Region* b) { return a->box.x0 < b->box.x0; });
  // A row's cost: its points, a layer point counting layer_weight inner points.
  std::vector<double> row_cost(static_cast<std::size_t>(y1 - y0), 0.0);
  for (const Region* r : pieces) {
    const Box& b = r->box;
    const double points = static_cast<double>(b.x1 - b.x0) * (b.z1 - b.z0) *
                          (r->kind() == RegionKind::Inner ? 1.0 : layer_weight);
    for (int j = b.y0; j < b.y1; ++j)
      row_cost[static_cast<std::size_t>(j - y0)] += points;
  }
  const int threads = omp_get_max_threads();
  const std::vector<int> edges =
      cpu_pass_bands(y0, row_cost, band, skew.least(steps), threads, rates);
  std::vector<double> work;
  cpu_pass_schedule_ahead(
      edges, z0, z1, steps, skew,
      [&](int s, int j0, int j1, int k) { ahead(fields[s % 2], s, j0, j1, k); },
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
      },
      rates != nullptr ? &work : nullptr);
  if (rates == nullptr || work.size() != static_cast<std::size_t>(threads)) return;
  // Each thread's cost a second in this pass, averaged with the passes before.
  std::vector<double> cost(work.size(), 0.0);
  for (std::size_t b = 0; b + 1 < edges.size(); ++b)
    for (int j = edges[b]; j < edges[b + 1]; ++j)
      cost[b % work.size()] += row_cost[static_cast<std::size_t>(j - y0)];
  if (rates->rate.size() != work.size()) rates->rate.assign(work.size(), 0.0);
  for (std::size_t t = 0; t < work.size(); ++t) {
    if (cost[t] <= 0.0 || work[t] <= 0.0) continue; // no band: the rate stays
    const double now = cost[t] / work[t];
    double& r = rates->rate[t];
    r = r > 0.0 ? 0.5 * (r + now) : now;
  }
}

/// cpu_pass_over_pieces_ahead with a skew of kHalo and nothing ahead; `what` names the caller in
/// its errors, also for a C-PML (fields[0].cpml), whose memory update this pass has no place for.
template <class Fields, class Segment>
void cpu_pass_over_pieces(const char* what, const Fields (&fields)[2], const Region* regions,
                          int count, int steps, int band, double layer_weight, Segment&& segment,
                          const CpuPassPlaneHook& after_plane, CpuPassRates* rates) {
  if (fields[0].cpml)
    throw std::invalid_argument(std::string(what) + ": the C-PML's memory pass runs between "
                                                    "steps; step it one step at a time");
  cpu_pass_over_pieces_ahead(
      what, fields, regions, count, steps, band, layer_weight, CpuPassSkew{},
      [](const Fields&, int, int, int, int) {}, segment, after_plane, rates);
}

} // namespace minimod
