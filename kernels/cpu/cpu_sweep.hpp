#pragma once
/// The CPU kernels' sweep over a list of region pieces (docs/kernels.md, "The CPU kernels"): one
/// OpenMP parallel region for the whole list, the (y, z) bounding box of the pieces cut into tiles
/// that threads take one at a time (dynamic schedule), and inside a tile the rows (j, k) in memory
/// order, each row going through every piece that holds it, in x order. So the x layer slabs, the
/// inner region and the other x slab of one row are updated one after another while the row's u
/// planes are in cache, whatever the pieces are: the seven regions of make_regions, the shell and
/// interior pieces of step_part_regions, or a subdomain's pieces with a layer on some faces only.
/// Pieces must be disjoint (every point is updated once); their order does not matter, since each
/// point reads the current fields only and writes its own point.

#include "core/grid.hpp"

#include <algorithm>
#include <climits>
#include <vector>

namespace minimod {

/// Rows of a tile along y and planes along z. A tile streams through its z planes; the 9 planes of
/// u (or p and q) a plane reads, (y + 8) rows each, stay in a core's L2 (docs/kernels.md).
struct CpuTile {
  int y = 32;
  int z = 64;
};

/// Pieces looked at per tile without a heap copy; more go through a per-thread list.
inline constexpr int kCpuTilePieces = 32;

/// The (y, z) bounding box [y0, y1) x [z0, z1) of the non-empty pieces of regions[0, count); false
/// (and an empty box) when every piece is empty.
inline bool cpu_pieces_box(const Region* regions, int count, int& y0, int& y1, int& z0, int& z1) {
  y0 = INT_MAX;
  y1 = INT_MIN;
  z0 = INT_MAX;
  z1 = INT_MIN;
  for (int n = 0; n < count; ++n) {
    const Box& b = regions[n].box;
    if (b.empty()) continue;
    y0 = std::min(y0, b.y0);
    y1 = std::max(y1, b.y1);
    z0 = std::min(z0, b.z0);
    z1 = std::max(z1, b.z1);
  }
  return y0 < y1 && z0 < z1;
}

/// Calls segment(region, j, k) for every row (j, k) of every non-empty piece of regions[0, count),
/// within one parallel region. segment updates the points x in [box.x0, box.x1) of row (j, k).
template <class Segment>
void cpu_sweep(const Region* regions, int count, CpuTile tile, Segment&& segment) {
  int y0, y1, z0, z1;
  if (!cpu_pieces_box(regions, count, y0, y1, z0, z1)) return;
  const int ty = std::max(tile.y, 1), tz = std::max(tile.z, 1);
  const int nty = (y1 - y0 + ty - 1) / ty, ntz = (z1 - z0 + tz - 1) / tz;
  const int tiles = nty * ntz;
#pragma omp parallel
  {
    int local[kCpuTilePieces];
    std::vector<int> spill; // only when a tile meets more than kCpuTilePieces pieces
#pragma omp for schedule(dynamic, 1) nowait
    for (int t = 0; t < tiles; ++t) {
      // y fastest: the threads work on neighbouring tiles of one z band, sharing halo rows in L3.
      const int j0 = y0 + (t % nty) * ty, j1 = std::min(j0 + ty, y1);
      const int k0 = z0 + (t / nty) * tz, k1 = std::min(k0 + tz, z1);
      int hits = 0;
      spill.clear();
      for (int n = 0; n < count; ++n) {
        const Box& b = regions[n].box;
        if (b.empty() || b.y1 <= j0 || b.y0 >= j1 || b.z1 <= k0 || b.z0 >= k1) continue;
        if (hits < kCpuTilePieces)
          local[hits] = n;
        else if (hits == kCpuTilePieces) {
          spill.assign(local, local + kCpuTilePieces);
          spill.push_back(n);
        } else {
          spill.push_back(n);
        }
        ++hits;
      }
      if (hits == 0) continue;
      int* list = hits <= kCpuTilePieces ? local : spill.data();
      // x order, so that a row is swept from left to right.
      std::sort(list, list + hits,
                [&](int a, int b) { return regions[a].box.x0 < regions[b].box.x0; });
      for (int k = k0; k < k1; ++k) {
        for (int j = j0; j < j1; ++j) {
          for (int h = 0; h < hits; ++h) {
            const Region& r = regions[list[h]];
            const Box& b = r.box;
            if (j < b.y0 || j >= b.y1 || k < b.z0 || k >= b.z1) continue;
            segment(r, j, k);
          }
        }
      }
    }
  }
}

} // namespace minimod
