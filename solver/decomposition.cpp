#include "solver/decomposition.hpp"

#if defined(MINIMOD_HAVE_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h> // MPIX_Query_cuda_support (Open MPI)
#endif

#include "core/errors.hpp"
#include "kernels/halo_exchange.hpp"
#include "kernels/tti_problem.hpp"
#include "solver/interrupt.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace minimod {

Split parse_split(const std::string& text, const std::string& what) {
  Split s{};
  std::size_t at = 0;
  for (int a = 0; a < 3; ++a) {
    std::size_t end = a < 2 ? text.find('x', at) : text.size();
    const std::string digits = end == std::string::npos ? std::string() : text.substr(at, end - at);
    const bool ok =
        !digits.empty() && digits.size() <= 6 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        std::stoi(digits) > 0;
    if (!ok) {
      throw InputError(what + ": '" + text +
                       "' is not a split; allowed: PXxPYxPZ, three positive integers, e.g. 2x1x2");
    }
    s[static_cast<std::size_t>(a)] = std::stoi(digits);
    at = end + 1;
  }
  return s;
}

std::size_t parse_memory_size(const std::string& text, const std::string& what) {
  const std::string allowed = "; allowed: a positive size with a unit, e.g. 20GB, 512MiB (B, KB, "
                              "MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB: powers of 1024)";
  std::size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  const std::string number = text.substr(0, end), unit = text.substr(end);
  static const std::pair<const char*, double> kUnits[] = {
      {"B", 1.0},         {"KB", 1e3},           {"MB", 1e6},
      {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
      {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  double scale = 0;
  for (const auto& [name, factor] : kUnits)
    if (unit == name) scale = factor;
  double value = 0;
  try {
    std::size_t used = 0;
    value = number.empty() ? 0 : std::stod(number, &used);
    if (used != number.size()) value = 0;
  } catch (const std::exception&) {
    value = 0;
  }
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes > 1e18)
    throw InputError(what + ": '" + text + "' is not a size" + allowed);
  return static_cast<std::size_t>(bytes);
}

namespace {

/// The split that `what` chose, checked against the survey's precision: a float16 run has no
/// halo exchange of its 16-bit fields, so it models a shot on one whole grid.
Split whole_grid_at_float16(const Survey& survey, const Split& split, const std::string& what) {
  if (survey.precision == Precision::Float16 && split_ranks(split) > 1) {
    throw InputError(survey.precision_loc.where() + ": float16 is not allowed with " + what +
                     " splitting the grid " + split_text(split) +
                     ": 16-bit storage runs a shot on one whole grid (no halo exchange of 16-bit "
                     "fields); allowed: float32, or a grid that is not split");
  }
  return split;
}

} // namespace

Split run_split(const Survey& survey, const Grid& grid, const std::optional<Split>& override,
                const std::string& override_what, int world_ranks) {
  if (override) {
    check_split(grid, *override, override_what);
    return whole_grid_at_float16(survey, *override, override_what);
  }
  const std::string key = survey.decomposition_loc.where();
  if (survey.decomposition && (*survey.decomposition)[0] > 0) {
    check_split(grid, *survey.decomposition, key);
    return whole_grid_at_float16(survey, *survey.decomposition, key);
  }
  if (survey.decomposition) {
    const int ranks = survey.ranks_per_shot > 0 ? survey.ranks_per_shot : world_ranks;
    return whole_grid_at_float16(survey, ranks > 1 ? auto_split(grid, ranks, key) : Split{1, 1, 1},
                                 key);
  }
  if (survey.ranks_per_shot > 1) {
    const std::string what = survey.ranks_per_shot_loc.where();
    return whole_grid_at_float16(survey, auto_split(grid, survey.ranks_per_shot, what), what);
  }
  return Split{1, 1, 1};
}

std::string split_text(const Split& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

std::array<int, 3> split_coords(const Split& s, int rank) {
  return {rank % s[0], (rank / s[0]) % s[1], rank / (s[0] * s[1])};
}

namespace {

/// Offset and size of piece c of n points cut into p.
std::pair<int, int> piece(int n, int p, int c) {
  const int base = n / p, extra = n % p;
  return {c * base + std::min(c, extra), base + (c < extra ? 1 : 0)};
}

int rank_of(const Split& s, const std::array<int, 3>& c) {
  return c[0] + s[0] * (c[1] + s[1] * c[2]);
}

} // namespace

SubdomainBox subdomain_box(const Grid& g, const Split& s, int rank) {
  const auto c = split_coords(s, rank);
  SubdomainBox b;
  for (int a = 0; a < 3; ++a) {
    const auto [o, n] = piece(g.extent(a), s[static_cast<std::size_t>(a)], c[a]);
    b.offset[static_cast<std::size_t>(a)] = o;
    b.size[static_cast<std::size_t>(a)] = n;
  }
  return b;
}

std::array<bool, 6> subdomain_neighbours(const Split& s, int rank) {
  const auto c = split_coords(s, rank);
  std::array<bool, 6> n{};
  for (int a = 0; a < 3; ++a) {
    n[static_cast<std::size_t>(2 * a)] = c[a] > 0;
    n[static_cast<std::size_t>(2 * a + 1)] = c[a] + 1 < s[static_cast<std::size_t>(a)];
  }
  return n;
}

void check_split(const Grid& g, const Split& s, const std::string& what) {
  static const char* axis[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    const int p = s[static_cast<std::size_t>(a)], n = g.extent(a);
    if (p < 1) {
      throw InputError(what + ": " + split_text(s) + ": " + axis[a] +
                       " is cut into no pieces; allowed: positive counts");
    }
    if (p == 1) continue;
    // The thinnest piece is the last: n / p points.
    if (n / p < kHalo) {
      throw InputError(what + ": " + split_text(s) + ": " + std::to_string(n) + " points along " +
                       axis[a] + " cut into " + std::to_string(p) + " give subdomains of " +
                       std::to_string(n / p) + " points, thinner than the halo (" +
                       std::to_string(kHalo) +
                       " points, what a neighbour reads); allowed: at most " +
                       std::to_string(std::max(1, n / kHalo)) + " pieces along " + axis[a]);
    }
  }
}

Split auto_split(const Grid& g, int ranks, const std::string& what) {
  Split best{};
  double best_cost = std::numeric_limits<double>::infinity();
  for (int pz = ranks; pz >= 1; --pz) {
    if (ranks % pz) continue;
    for (int py = ranks / pz; py >= 1; --py) {
      if ((ranks / pz) % py) continue;
      const Split s{ranks / (pz * py), py, pz};
      bool fits = true;
      for (int a = 0; a < 3; ++a)
        if (s[static_cast<std::size_t>(a)] > 1 &&
            g.extent(a) / s[static_cast<std::size_t>(a)] < kHalo)
          fits = false;
      if (!fits) continue;
      // Halo points: each cut plane is exchanged both ways.
      const double cost = static_cast<double>(s[0] - 1) * g.ny * g.nz +
                          static_cast<double>(s[1] - 1) * g.nx * g.nz +
                          static_cast<double>(s[2] - 1) * g.nx * g.ny;
      if (cost < best_cost) {
        best_cost = cost;
        best = s;
      }
    }
  }
  if (best[0] == 0) {
    throw InputError(what + ": no split of the " + std::to_string(g.nx) + " x " +
                     std::to_string(g.ny) + " x " + std::to_string(g.nz) + " grid into " +
                     std::to_string(ranks) + " subdomains leaves each at least " +
                     std::to_string(kHalo) + " points thick; allowed: fewer ranks a shot");
  }
  return best;
}

namespace {

/// A direction to a neighbour: -1, 0 or 1 along each axis, not all 0.
using Direction = std::array<int, 3>;

int direction_tag(const Direction& d) {
  return (d[0] + 1) + 3 * (d[1] + 1) + 9 * (d[2] + 1);
}

/// Directions a rank exchanges with: the six faces, and with `edges` the twenty-six.
std::vector<Direction> exchange_directions(bool edges) {
  std::vector<Direction> out;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
        if (nonzero == 0 || (!edges && nonzero > 1)) continue;
        out.push_back({dx, dy, dz});
      }
  return out;
}

/// The points sent toward d (`ghost` false: the subdomain's own kHalo planes next to that face) or
/// received from it (`ghost` true: the ghost planes beyond the face), in the subgrid's indices.
Box exchange_box(const std::array<int, 3>& n, const Direction& d, bool ghost) {
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    const int size = n[static_cast<std::size_t>(a)];
    if (d[static_cast<std::size_t>(a)] == 0) {
      lo[a] = 0;
      hi[a] = size;
    } else if (d[static_cast<std::size_t>(a)] < 0) {
      lo[a] = ghost ? -kHalo : 0;
      hi[a] = ghost ? 0 : kHalo;
    } else {
      lo[a] = ghost ? size : size - kHalo;
      hi[a] = ghost ? size + kHalo : size;
    }
  }
  return Box{lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]};
}

/// Whether the neighbour toward d exists.
bool has_neighbour(const Split& s, const std::array<int, 3>& c, const Direction& d) {
  for (int a = 0; a < 3; ++a) {
    const int to = c[static_cast<std::size_t>(a)] + d[static_cast<std::size_t>(a)];
    if (to < 0 || to >= s[static_cast<std::size_t>(a)]) return false;
  }
  return true;
}

std::array<int, 3> add(const std::array<int, 3>& c, const Direction& d) {
  return {c[0] + d[0], c[1] + d[1], c[2] + d[2]};
}

/// A padded array of the whole grid's layout cut to the subgrid's: every point of the subgrid's
/// padded box whose place in the run's grid lies in the whole grid's padded box (ghost planes
/// included) takes the value there; the rest is zero.
template <typename T>
std::vector<T> cut_padded(const std::vector<T>& global, const FieldLayout& gl,
                          const FieldLayout& ll, const std::array<int, 3>& off) {
  if (global.empty()) return {};
  std::vector<T> out(static_cast<std::size_t>(ll.size), T{});
  const int gn[3] = {gl.nx, gl.ny, gl.nz};
#pragma omp parallel for schedule(static)
  for (int k = -kHalo; k < ll.nz + kHalo; ++k) {
    const int gk = k + off[2];
    if (gk < -kHalo || gk >= gn[2] + kHalo) continue;
    for (int j = -kHalo; j < ll.ny + kHalo; ++j) {
      const int gj = j + off[1];
      if (gj < -kHalo || gj >= gn[1] + kHalo) continue;
      const int i0 = std::max(-kHalo, -kHalo - off[0]);
      const int i1 = std::min(ll.nx + kHalo, gn[0] + kHalo - off[0]);
      if (i1 <= i0) continue;
      std::copy_n(global.data() + gl.index(i0 + off[0], gj, gk), i1 - i0,
                  out.data() + ll.index(i0, j, k));
    }
  }
  return out;
}

/// Grid point (i, j, k) of a padded index.
std::array<int, 3> point_of(const FieldLayout& l, std::int64_t index) {
  const auto k = static_cast<int>(index / l.plane) - kHalo;
  const std::int64_t in_plane = index % l.plane;
  const auto j = static_cast<int>(in_plane / l.pitch) - kHalo;
  const auto i = static_cast<int>(in_plane % l.pitch) - l.x_offset;
  return {i, j, k};
}

/// The rank whose subdomain holds run-grid point p (a point beyond the grid: the nearest one's).
int owner_of(const Grid& g, const Split& s, const std::array<int, 3>& p) {
  std::array<int, 3> c{};
  for (int a = 0; a < 3; ++a) {
    const int n = g.extent(a), parts = s[static_cast<std::size_t>(a)];
    const int at = std::clamp(p[static_cast<std::size_t>(a)], 0, n - 1);
    int piece_index = 0;
    while (piece_index + 1 < parts && piece(n, parts, piece_index + 1).first <= at)
      ++piece_index;
    c[static_cast<std::size_t>(a)] = piece_index;
  }
  return rank_of(s, c);
}

} // namespace

std::size_t halo_floats_per_step(const Grid& g, const Split& s, int rank, int fields, bool edges) {
  const SubdomainBox b = subdomain_box(g, s, rank);
  const auto c = split_coords(s, rank);
  std::size_t floats = 0;
  for (const Direction& d : exchange_directions(edges)) {
    if (!has_neighbour(s, c, d)) continue;
    floats += exchange_box(b.size, d, false).points();
  }
  return floats * static_cast<std::size_t>(fields);
}

ReceiverMap cut_taps(const Problem& global, const Split& s, int rank, Problem& local) {
  const Grid& g = global.grid;
  const FieldLayout& gl = global.layout;
  const FieldLayout& ll = local.layout;
  const SubdomainBox me = subdomain_box(g, s, rank);
  const auto& off = me.offset;
  auto local_index = [&](const std::array<int, 3>& p) {
    return ll.index(p[0] - off[0], p[1] - off[1], p[2] - off[2]);
  };

  // Sources: every one (so the samples stay as they are), with its taps on the padded subgrid.
  local.sources = TapTable{};
  local.sources.begin.push_back(0);
  const TapTable& gs = global.sources;
  for (std::size_t src = 0; src < gs.owners(); ++src) {
    for (std::int64_t t = gs.begin[src]; t < gs.begin[src + 1]; ++t) {
      const auto p = point_of(gl, gs.index[static_cast<std::size_t>(t)]);
      if (global.free_surface && p[2] == 0) continue; // zeroed by the surface after injection
      bool inside = true;
      for (int a = 0; a < 3; ++a) {
        const int l = p[static_cast<std::size_t>(a)] - off[static_cast<std::size_t>(a)];
        if (l < -kHalo || l >= me.size[static_cast<std::size_t>(a)] + kHalo) inside = false;
      }
      if (!inside) continue;
      local.sources.index.push_back(local_index(p));
      local.sources.weight.push_back(gs.weight[static_cast<std::size_t>(t)]);
    }
    local.sources.begin.push_back(static_cast<std::int64_t>(local.sources.index.size()));
  }
  local.source_samples = global.source_samples;

  // Receivers: whole on the rank owning all their taps, else one of weight 1 a tap.
  ReceiverMap map;
  const int ranks = split_ranks(s);
  map.local_count.assign(static_cast<std::size_t>(ranks), 0);
  local.receivers = TapTable{};
  local.receivers.begin.push_back(0);
  const TapTable& gr = global.receivers;
  auto add_receiver = [&](int owner) {
    const int number = map.local_count[static_cast<std::size_t>(owner)]++;
    if (owner == rank)
      local.receivers.begin.push_back(static_cast<std::int64_t>(local.receivers.index.size()));
    return number;
  };
  for (std::size_t r = 0; r < gr.owners(); ++r) {
    std::vector<int> owners;
    std::vector<std::array<int, 3>> points;
    for (std::int64_t t = gr.begin[r]; t < gr.begin[r + 1]; ++t) {
      points.push_back(point_of(gl, gr.index[static_cast<std::size_t>(t)]));
      owners.push_back(owner_of(g, s, points.back()));
    }
    const bool whole =
        std::all_of(owners.begin(), owners.end(), [&](int o) { return o == owners.front(); });
    map.whole.push_back(whole);
    map.sources.emplace_back();
    if (whole) {
      const int owner = owners.empty() ? 0 : owners.front();
      if (owner == rank) {
        for (std::int64_t t = gr.begin[r]; t < gr.begin[r + 1]; ++t) {
          local.receivers.index.push_back(
              local_index(points[static_cast<std::size_t>(t - gr.begin[r])]));
          local.receivers.weight.push_back(gr.weight[static_cast<std::size_t>(t)]);
        }
      }
      map.sources.back().push_back(ReceiverSource{owner, add_receiver(owner), 1.0f});
      continue;
    }
    for (std::size_t t = 0; t < points.size(); ++t) {
      if (owners[t] == rank) {
        local.receivers.index.push_back(local_index(points[t]));
        local.receivers.weight.push_back(1.0f);
      }
      map.sources.back().push_back(
          ReceiverSource{owners[t], add_receiver(owners[t]),
                         gr.weight[static_cast<std::size_t>(gr.begin[r]) + t]});
    }
  }
  return map;
}

std::unique_ptr<Problem> cut_problem(const Problem& global, const Split& s, int rank) {
  const Grid& g = global.grid;
  const SubdomainBox b = subdomain_box(g, s, rank);
  std::unique_ptr<Problem> out;
  if (global.physics() == Physics::Tti) {
    out = std::make_unique<TtiProblem>();
  } else {
    out = std::make_unique<AcousticProblem>();
  }
  Problem& p = *out;
  p.grid = g;
  p.grid.nx = b.size[0];
  p.grid.ny = b.size[1];
  p.grid.nz = b.size[2];
  p.grid.ox = g.ox + b.offset[0] * g.dx;
  p.grid.oy = g.oy + b.offset[1] * g.dy;
  p.grid.oz = g.oz + b.offset[2] * g.dz;
  p.subdomain.offset = b.offset;
  p.subdomain.neighbour = subdomain_neighbours(s, rank);
  // Layer widths of the subgrid: the part of each face's layer inside it.
  const LayerWidths& w = global.layer;
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    const int o = b.offset[static_cast<std::size_t>(a)], n = b.size[static_cast<std::size_t>(a)];
    lo[a] = std::clamp(w.on(a, false) - o, 0, n);
    hi[a] = std::clamp(w.on(a, true) - (g.extent(a) - (o + n)), 0, n);
  }
  p.layer = LayerWidths{lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]};
  p.boundary = global.boundary;
  if (global.boundary == BoundaryType::Cpml) {
    // The C-PML's memory variable psi of an axis is differentiated along that axis inside its
    // slabs: a slab cut along its own axis would need its neighbour's psi, which is not
    // exchanged. Such a split is refused; any other keeps every slab whole on one rank, and the
    // profile arrays (indexed by the grid's points) are sliced to the subgrid.
    static const char* const axis_name[3] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a) {
      const int o = b.offset[static_cast<std::size_t>(a)], n = b.size[static_cast<std::size_t>(a)];
      const int whole = g.extent(a), wl = w.on(a, false), wh = w.on(a, true);
      for (const int cut : {o, o + n}) {
        if (cut <= 0 || cut >= whole) continue;
        if (cut < wl || cut > whole - wh)
          throw InputError("decomposition: [" + std::to_string(s[0]) + ", " + std::to_string(s[1]) +
                           ", " + std::to_string(s[2]) + "] cuts " + axis_name[a] + " at point " +
                           std::to_string(cut) + ", inside the C-PML slab of " +
                           std::to_string(cut < wl ? wl : wh) + " points on the " +
                           (cut < wl ? "low" : "high") + " " + axis_name[a] +
                           " face; allowed: cuts outside the C-PML slabs (fewer pieces along " +
                           axis_name[a] + "), or boundary.type: minimod");
      }
    }
    p.cpml.params = global.cpml.params;
    p.cpml.d1 = global.cpml.d1;
    for (int a = 0; a < 3; ++a) {
      const auto o = static_cast<std::size_t>(b.offset[static_cast<std::size_t>(a)]);
      const auto n = static_cast<std::size_t>(b.size[static_cast<std::size_t>(a)]);
      auto slice = [&](const std::vector<float>& v) {
        return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(o),
                                  v.begin() + static_cast<std::ptrdiff_t>(o + n));
      };
      p.cpml.a[a] = slice(global.cpml.a[a]);
      p.cpml.b[a] = slice(global.cpml.b[a]);
      p.cpml.ik[a] = slice(global.cpml.ik[a]);
      p.cpml.dik[a] = slice(global.cpml.dik[a]);
    }
  }
  // The regions of the whole grid cut to the subgrid (each keeps its id, so its kernel).
  for (int r = 0; r < kRegionCount; ++r) {
    const Box& gb = global.regions[static_cast<std::size_t>(r)].box;
    Box lb{std::max(gb.x0, b.offset[0]) - b.offset[0],
           std::min(gb.x1, b.offset[0] + b.size[0]) - b.offset[0],
           std::max(gb.y0, b.offset[1]) - b.offset[1],
           std::min(gb.y1, b.offset[1] + b.size[1]) - b.offset[1],
           std::max(gb.z0, b.offset[2]) - b.offset[2],
           std::min(gb.z1, b.offset[2] + b.size[2]) - b.offset[2]};
    if (lb.empty()) lb = Box{};
    p.regions[static_cast<std::size_t>(r)] =
        Region{global.regions[static_cast<std::size_t>(r)].id, lb};
  }
  p.layout = make_field_layout(b.size[0], b.size[1], b.size[2], p.layer.x_lo);
  p.dt = global.dt;
  p.steps = global.steps;
  p.free_surface = global.free_surface && b.offset[2] == 0;
  const FieldLayout& gl = global.layout;
  if (global.physics() == Physics::Tti) {
    const auto& gt = static_cast<const TtiProblem&>(global);
    auto& t = static_cast<TtiProblem&>(p);
    t.coefs = gt.coefs;
    t.vp2dt2 = cut_padded(gt.vp2dt2, gl, p.layout, b.offset);
    t.aniso = cut_padded(gt.aniso, gl, p.layout, b.offset);
    t.axis_xz = cut_padded(gt.axis_xz, gl, p.layout, b.offset);
    t.axis_y = cut_padded(gt.axis_y, gl, p.layout, b.offset);
    t.eta = cut_padded(gt.eta, gl, p.layout, b.offset);
  } else {
    const auto& ga = static_cast<const AcousticProblem&>(global);
    auto& ac = static_cast<AcousticProblem&>(p);
    ac.coefs = ga.coefs;
    ac.vp2dt2 = cut_padded(ga.vp2dt2, gl, p.layout, b.offset);
    ac.eta = cut_padded(ga.eta, gl, p.layout, b.offset);
    if (!ga.eta_axes.empty()) {
      // Local point i is global point i + offset: index i + 1 of the profile, i = -1 .. n.
      auto slice = [](const std::vector<double>& v, int offset, int n) {
        return std::vector<double>(v.begin() + offset, v.begin() + offset + n + 2);
      };
      ac.eta_axes.x = slice(ga.eta_axes.x, b.offset[0], b.size[0]);
      ac.eta_axes.y = slice(ga.eta_axes.y, b.offset[1], b.size[1]);
      ac.eta_axes.z = slice(ga.eta_axes.z, b.offset[2], b.size[2]);
    }
  }
  cut_taps(global, s, rank, p);
  return out;
}

FaultInjection parse_fault_injection(const std::string& text) {
  const std::string what = "MINIMOD_FAULT_INJECT='" + text + "'";
  const std::string allowed =
      "; allowed: rank=R,shot=S,step=N, each once, as non-negative integers (rank R of the "
      "group modelling shot S fails as step N starts)";
  FaultInjection f;
  bool seen[3] = {false, false, false};
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = text.find(',', at);
    const std::string item =
        text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int index = key == "rank" ? 0 : key == "shot" ? 1 : key == "step" ? 2 : -1;
    if (eq == std::string::npos || index < 0)
      throw InputError(what + ": '" + item + "' is not rank=R, shot=S or step=N" + allowed);
    if (seen[index]) throw InputError(what + ": " + key + " is given twice" + allowed);
    const std::string digits = item.substr(eq + 1);
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
      throw InputError(what + ": " + key + " '" + digits + "' is not a non-negative integer" +
                       allowed);
    seen[index] = true;
    (index == 0 ? f.rank : index == 1 ? f.shot : f.step) = std::stoi(digits);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  for (int i = 0; i < 3; ++i) {
    if (!seen[i])
      throw InputError(what + ": " +
                       (i == 0   ? "rank"
                        : i == 1 ? "shot"
                                 : "step") +
                       " is missing" + allowed);
  }
  return f;
}

#if defined(MINIMOD_HAVE_MPI)
bool mpi_reads_device_memory() {
  if (const char* force = std::getenv("MINIMOD_HALO_HOST_STAGING"))
    if (std::string(force) == "1") return false;
#if defined(MINIMOD_HAVE_HIP)
      // A HIP build's device memory: Open MPI 5 answers for ROCm, older libraries cannot say.
#if defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
  return MPIX_Query_rocm_support() == 1;
#else
  return false;
#endif
#elif defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

std::string halo_transport_request() {
  if (const char* force = std::getenv("MINIMOD_HALO_HOST_STAGING"))
    if (std::string(force) == "1") return "mpi";
  const char* v = std::getenv("MINIMOD_HALO_TRANSPORT");
  if (v == nullptr || *v == '\0') return "auto";
  const std::string value(v);
  if (value != "auto" && value != "peer" && value != "mpi")
    throw InputError("MINIMOD_HALO_TRANSPORT: '" + value +
                     "' is not allowed; allowed: auto, peer, mpi");
  return value;
}

std::string halo_exchange_notice() {
  const std::string request = halo_transport_request();
  const std::string mpi = mpi_reads_device_memory()
                              ? "device buffers handed to CUDA-aware MPI"
                              : "staged through pinned host memory (this MPI is not CUDA-aware, or "
                                "MINIMOD_HALO_HOST_STAGING=1)";
  if (request == "mpi") return "halo exchange: packed on the GPU, " + mpi;
  if (request == "peer") return "halo exchange: packed on the GPU, copied GPU to GPU (peer copies)";
  return "halo exchange: packed on the GPU, copied GPU to GPU where a shot's ranks share a node, "
         "else " +
         mpi;
}

namespace {

using Clock = std::chrono::steady_clock;

void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw RuntimeFailure(std::string("MPI: ") + what + ": " + std::string(text, length));
  }
}

/// What a subdomain's equation and hooks share: the split, the run's grid, the receiver map of
/// the shot loaded.
struct DecompositionState {
  Split split{};
  int rank = 0;
  Grid grid; ///< the run's grid (set by build_problem)
  bool free_surface = false;
  FieldLayout layout; ///< the subgrid's (set by build_problem)
  ReceiverMap receivers;
};

/// The equation of a subdomain: the run's equation, its problems cut to the subdomain.
class DecomposedEquation final : public Equation {
public:
  DecomposedEquation(std::shared_ptr<const Equation> inner,
                     std::shared_ptr<DecompositionState> state)
      : m_inner(std::move(inner)), m_state(std::move(state)) {}

  Physics physics() const override { return m_inner->physics(); }
  void build_model(const Survey&) override {
    throw std::logic_error("DecomposedEquation: the model is the run's equation's");
  }
  std::vector<std::vector<float>*> model_arrays() override { return {}; }
  double model_bytes() const override { return m_inner->model_bytes(); }
  std::string model_notice() const override { return m_inner->model_notice(); }
  Plan make_plan(const Survey& shot, int steps_override) const override {
    return m_inner->make_plan(shot, steps_override);
  }

  bool model_on_device() const override { return m_inner->model_on_device(); }

  std::unique_ptr<Problem> build_problem(const Survey& shot, const Plan& plan) const override {
    if (m_inner->model_on_device()) {
      throw InputError("model.file: a GPU array is not allowed with a split grid (decompose): "
                       "the subdomains are cut from a host model; allowed: a host array, or no "
                       "split");
    }
    check_split(plan.grid, m_state->split, "decomposition");
    std::unique_ptr<Problem> global = m_inner->build_problem(shot, plan);
    m_state->grid = global->grid;
    m_state->free_surface = global->free_surface;
    std::unique_ptr<Problem> local = cut_problem(*global, m_state->split, m_state->rank);
    m_state->layout = local->layout;
    m_state->receivers = cut_taps(*global, m_state->split, m_state->rank, *local);
    // The whole grid's problem stays for the taps of later shots, without the medium that they
    // do not read (TTI's physical sources are scaled by vp2dt2).
    if (global->physics() == Physics::Tti) {
      auto& t = static_cast<TtiProblem&>(*global);
      t.aniso = {};
      t.axis_xz = {};
      t.axis_y = {};
      t.eta = {};
    } else {
      auto& a = static_cast<AcousticProblem&>(*global);
      a.vp2dt2 = {};
      a.eta = {};
      a.eta_axes = {};
    }
    m_global = std::move(global);
    return local;
  }

  void set_shot(const Survey& shot, const Plan& plan, Problem& problem) const override {
    if (!m_global) throw std::logic_error("DecomposedEquation: set_shot before build_problem");
    m_inner->set_shot(shot, plan, *m_global);
    m_state->receivers = cut_taps(*m_global, m_state->split, m_state->rank, problem);
  }

  void release_host_medium(Problem& problem) const override {
    m_inner->release_host_medium(problem);
  }
  StoredModel stored_model(const Grid& grid) const override { return m_inner->stored_model(grid); }

private:
  std::shared_ptr<const Equation> m_inner;
  std::shared_ptr<DecompositionState> m_state;
  mutable std::unique_ptr<Problem> m_global;
};

/// One neighbour's exchange: the boxes, the buffers and the requests in flight.
struct Exchange {
  Direction d{};
  int peer = 0;
  HaloBox send, recv;    ///< the boxes and their places in the packed buffers
  std::size_t count = 0; ///< floats each way (every halo field)
};

/// Copy a box of every field into a contiguous buffer (fields one after the other, x fastest).
void pack(const std::vector<float*>& fields, const FieldLayout& l, const Box& b, bool zero_surface,
          float* out) {
  const std::size_t per = b.points();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const float* src = fields[f];
    float* dst = out + f * per;
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = b.z0; k < b.z1; ++k) {
      for (int j = b.y0; j < b.y1; ++j) {
        float* row = dst + (static_cast<std::size_t>(k - b.z0) * b.ny() + (j - b.y0)) * b.nx();
        // The surface plane is zero once the step ends; the sender's copy is taken before.
        if (zero_surface && f == 0 && k == 0) {
          std::fill_n(row, b.nx(), 0.0f);
        } else {
          std::copy_n(src + l.index(b.x0, j, k), b.nx(), row);
        }
      }
    }
  }
}

void unpack(const std::vector<float*>& fields, const FieldLayout& l, const Box& b,
            const float* in) {
  const std::size_t per = b.points();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    float* dst = fields[f];
    const float* src = in + f * per;
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = b.z0; k < b.z1; ++k) {
      for (int j = b.y0; j < b.y1; ++j) {
        std::copy_n(src + (static_cast<std::size_t>(k - b.z0) * b.ny() + (j - b.y0)) * b.nx(),
                    b.nx(), dst + l.index(b.x0, j, k));
      }
    }
  }
}

constexpr int kHaloTagBase = 1000;
constexpr int kPeerSetupTagBase = 1100; ///< peer copies: a receive buffer's handle and offset
constexpr int kFreeTagBase = 1200;      ///< peer copies: "my receive buffer is free"
constexpr int kCopiedTagBase = 1300;    ///< peer copies: "my boxes are in your buffer"
const int kNotice = 1;                  ///< the payload of those notices
constexpr int kAbortTag = 999;          ///< a rank of the shot failed: its error

class DecomposedHooks final : public DomainHooks {
public:
  /// `comm`: the ranks of the shot, for the agreement before each shot; the exchanges and
  /// gathers go over a duplicate of it, replaced after a shot that a failure left unfinished.
  DecomposedHooks(std::shared_ptr<DecompositionState> state, MPI_Comm comm, Physics physics,
                  std::optional<FaultInjection> fault)
      : m_state(std::move(state)), m_base(comm), m_edges(physics == Physics::Tti), m_fault(fault) {
    check_mpi(MPI_Comm_dup(comm, &m_comm), "duplicate the shot's communicator");
  }
  ~DecomposedHooks() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&m_comm);
  }
  DecomposedHooks(const DecomposedHooks&) = delete;
  DecomposedHooks& operator=(const DecomposedHooks&) = delete;

  void begin_shot(int shot) override {
    m_shot = shot;
    // Messages of a shot that a failure cut short may still be on their way (halos, an error
    // notice, a scan): the next shot starts on a fresh communicator where any rank has some.
    const int mine = m_dirty ? 1 : 0;
    int any = 0;
    check_mpi(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, m_base), "begin a shot");
    if (any) {
      MPI_Comm fresh = MPI_COMM_NULL;
      check_mpi(MPI_Comm_dup(m_base, &fresh), "renew the shot's communicator");
      MPI_Comm_free(&m_comm); // freed once what is pending on it completes, if ever
      m_comm = fresh;
    }
    m_dirty = false;
  }

  std::string abandon_shot(const std::string& error) override {
    m_dirty = true;
    drop_requests();
    if (!m_peer_error.empty()) {
      // Failed because another rank did: that rank's error is the shot's.
      std::string e;
      std::swap(e, m_peer_error);
      return e;
    }
    const std::string named = "rank " + std::to_string(world_rank()) + ": " + error;
    // The other ranks may wait for this one's halo or scan: tell each. The sends are not waited
    // for (a rank that has finished the shot never receives its notice), so the text stays
    // alive as long as the hooks.
    m_notices.push_back(named);
    const std::string& text = m_notices.back();
    for (int r = 0; r < split_ranks(m_state->split); ++r) {
      if (r == rank()) continue;
      MPI_Request request;
      check_mpi(MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, kAbortTag,
                          m_comm, &request),
                "tell the shot's ranks of a failure");
      MPI_Request_free(&request);
    }
    return named;
  }

  void start_exchange(Backend& backend, int n) override {
    if (m_fault && m_fault->shot == m_shot && m_fault->rank == rank() && m_fault->step == n) {
      throw RuntimeFailure("injected failure (MINIMOD_FAULT_INJECT): shot " +
                           std::to_string(m_shot) + ", step " + std::to_string(n) + ", rank " +
                           std::to_string(rank()) + " of the shot");
    }
    const auto t0 = Clock::now();
    prepare(backend);
    const std::vector<float*> fields = backend.halo_fields();
    float* out = m_device ? m_device->send_buffer() : m_send.data();
    float* in = m_device ? m_device->recv_buffer() : m_recv.data();
    // The shell's update is queued before: the packing follows it on the backend's stream. On a
    // GPU, pack returns once the stream has run up to it, so the previous step's unpacking (and
    // its copy out of the receive buffer) is done too: only then may the receives be posted into
    // that buffer.
    if (m_device) {
      m_device->pack(fields, m_layout, m_send_boxes);
    } else {
      backend.synchronize();
      for (const Exchange& e : m_exchanges)
        pack(fields, m_layout, e.send.box, e.send.zero_surface, out + e.send.offset);
    }
    m_receives.clear();
    m_sends.clear();
    if (m_peer) {
      // Peer copies: this rank's receive buffer is free (the previous unpack is done): each
      // neighbour may copy into it once told so. The receives of those notices and of the
      // neighbours' "copied" notices are posted first.
      for (std::size_t i = 0; i < m_exchanges.size(); ++i) {
        const Exchange& e = m_exchanges[i];
        const int from = direction_tag({-e.d[0], -e.d[1], -e.d[2]});
        m_receives.push_back(irecv_notice(&m_free_in[i], e.peer, kFreeTagBase + from));
        m_copied.push_back(irecv_notice(&m_copied_in[i], e.peer, kCopiedTagBase + from));
      }
      for (const Exchange& e : m_exchanges)
        m_sends.push_back(isend_notice(e.peer, kFreeTagBase + direction_tag(e.d)));
      m_halo_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      return;
    }
    for (const Exchange& e : m_exchanges) {
      MPI_Request r;
      check_mpi(MPI_Irecv(in + e.recv.offset, static_cast<int>(e.count), MPI_FLOAT, e.peer,
                          kHaloTagBase + direction_tag({-e.d[0], -e.d[1], -e.d[2]}), m_comm, &r),
                "receive halo");
      m_receives.push_back(r);
    }
    for (const Exchange& e : m_exchanges) {
      MPI_Request r;
      check_mpi(MPI_Isend(out + e.send.offset, static_cast<int>(e.count), MPI_FLOAT, e.peer,
                          kHaloTagBase + direction_tag(e.d), m_comm, &r),
                "send halo");
      m_sends.push_back(r);
    }
    m_halo_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  void finish_exchange(Backend& backend, int) override {
    const auto t0 = Clock::now();
    if (m_peer) {
      // Each neighbour's buffer is free once its notice is here; the copies run on their own
      // stream while the interior's update runs on the backend's.
      wait(m_receives, "halo exchange: the neighbours' buffers");
      for (std::size_t i = 0; i < m_exchanges.size(); ++i) {
        const Exchange& e = m_exchanges[i];
        m_device->copy_to_peer(static_cast<int>(i), e.send.offset, m_remote_offset[i], e.count);
      }
      m_device->wait_peer_copies();
      for (const Exchange& e : m_exchanges)
        m_sends.push_back(isend_notice(e.peer, kCopiedTagBase + direction_tag(e.d)));
      m_receives = std::move(m_copied);
      m_copied.clear();
    }
    wait(m_receives, "halo exchange");
    wait(m_sends, "halo exchange");
    m_receives.clear();
    m_sends.clear();
    const std::vector<float*> fields = backend.halo_fields();
    if (m_device) {
      // Queued on the backend's stream after the interior: finish_step's kernels follow it.
      m_device->unpack(fields, m_layout, m_recv_boxes);
    } else {
      backend.synchronize();
      for (const Exchange& e : m_exchanges)
        unpack(fields, m_layout, e.recv.box, m_recv.data() + e.recv.offset);
    }
    m_halo_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }

  FiniteScan reduce_scan(const FiniteScan& local) override {
    const SubdomainBox b = box();
    const Grid& g = m_state->grid;
    auto to_global = [&](std::int64_t d) -> std::int64_t {
      if (d < 0) return -1;
      const std::int64_t i = d % b.size[0], j = (d / b.size[0]) % b.size[1],
                         k = d / (static_cast<std::int64_t>(b.size[0]) * b.size[1]);
      return (i + b.offset[0]) +
             static_cast<std::int64_t>(g.nx) *
                 ((j + b.offset[1]) + static_cast<std::int64_t>(g.ny) * (k + b.offset[2]));
    };
    const std::int64_t mine[4] = {local.points, local.nonfinite, to_global(local.first),
                                  to_global(local.max_at)};
    const int ranks = split_ranks(m_state->split);
    std::vector<std::int64_t> all(static_cast<std::size_t>(4 * ranks));
    std::vector<float> maxima(static_cast<std::size_t>(ranks));
    // Non-blocking, so that a rank that failed before its scan cannot leave the others waiting.
    // The buffers are on the heap: an abandoned collective keeps them (moved, so not moved in
    // memory) for as long as the hooks live.
    std::vector<std::int64_t> send(mine, mine + 4);
    std::vector<float> send_max{local.max_abs};
    std::vector<MPI_Request> requests(2);
    check_mpi(MPI_Iallgather(send.data(), 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, m_comm,
                             &requests[0]),
              "reduce scan");
    check_mpi(MPI_Iallgather(send_max.data(), 1, MPI_FLOAT, maxima.data(), 1, MPI_FLOAT, m_comm,
                             &requests[1]),
              "reduce scan");
    try {
      wait(requests, "reduce scan");
    } catch (...) {
      // A collective cannot be cancelled or freed: it may still write or read these.
      m_abandoned_ints.push_back(std::move(all));
      m_abandoned_ints.push_back(std::move(send));
      m_abandoned_floats.push_back(std::move(maxima));
      m_abandoned_floats.push_back(std::move(send_max));
      throw;
    }
    FiniteScan out;
    out.points = 0;
    for (int r = 0; r < ranks; ++r) {
      const std::int64_t* v = all.data() + 4 * r;
      out.points += v[0];
      out.nonfinite += v[1];
      if (v[2] >= 0 && (out.first < 0 || v[2] < out.first)) out.first = v[2];
      const float m = maxima[static_cast<std::size_t>(r)];
      if (v[3] >= 0 &&
          (out.max_at < 0 || m > out.max_abs || (m == out.max_abs && v[3] < out.max_at))) {
        out.max_abs = m;
        out.max_at = v[3];
      } else if (v[3] < 0 && m > out.max_abs) {
        out.max_abs = m;
      }
    }
    return out;
  }

  /// Gather every rank's `local` into `all` on rank 0 (the group's first), rank r's count_of(r)
  /// floats from displs[r] on; `all` and `displs` stay empty on the other ranks.
  template <class CountOf>
  void gather_to_root(const std::vector<float>& local, CountOf count_of, std::vector<float>& all,
                      std::vector<int>& displs, const char* what) {
    const int ranks = split_ranks(m_state->split);
    std::vector<int> counts;
    if (rank() == 0) {
      counts.resize(static_cast<std::size_t>(ranks));
      displs.resize(static_cast<std::size_t>(ranks));
      int at = 0;
      for (int r = 0; r < ranks; ++r) {
        counts[static_cast<std::size_t>(r)] = count_of(r);
        displs[static_cast<std::size_t>(r)] = at;
        at += counts[static_cast<std::size_t>(r)];
      }
      all.resize(static_cast<std::size_t>(at));
    }
    check_mpi(MPI_Gatherv(local.data(), static_cast<int>(local.size()), MPI_FLOAT, all.data(),
                          counts.data(), displs.data(), MPI_FLOAT, 0, m_comm),
              what);
  }

  bool gather_field(const std::vector<float>& local, std::vector<float>& global) override {
    const int ranks = split_ranks(m_state->split);
    std::vector<float> all;
    std::vector<int> displs;
    gather_to_root(
        local,
        [&](int r) {
          return static_cast<int>(subdomain_box(m_state->grid, m_state->split, r).points());
        },
        all, displs, "gather field");
    if (rank() != 0) return false;
    const Grid& g = m_state->grid;
    global.assign(g.points(), 0.0f);
    for (int r = 0; r < ranks; ++r) {
      const SubdomainBox b = subdomain_box(g, m_state->split, r);
      const float* src = all.data() + displs[static_cast<std::size_t>(r)];
      for (int k = 0; k < b.size[2]; ++k)
        for (int j = 0; j < b.size[1]; ++j)
          std::copy_n(src + (static_cast<std::size_t>(k) * b.size[1] + j) * b.size[0], b.size[0],
                      global.data() +
                          (static_cast<std::size_t>(k + b.offset[2]) * g.ny + j + b.offset[1]) *
                              g.nx +
                          b.offset[0]);
    }
    return true;
  }

  bool gather_traces(const std::vector<float>& local, std::vector<float>& global) override {
    const ReceiverMap& map = m_state->receivers;
    const std::size_t samples =
        map.local_count[static_cast<std::size_t>(rank())] == 0
            ? 0
            : local.size() /
                  static_cast<std::size_t>(map.local_count[static_cast<std::size_t>(rank())]);
    // Samples a trace: the same on every rank; a rank without receivers learns it here.
    long long mine = static_cast<long long>(samples), most = 0;
    check_mpi(MPI_Allreduce(&mine, &most, 1, MPI_LONG_LONG, MPI_MAX, m_comm), "gather traces");
    const auto n = static_cast<std::size_t>(most);
    std::vector<float> all;
    std::vector<int> displs;
    gather_to_root(
        local,
        [&](int r) {
          return static_cast<int>(
              n * static_cast<std::size_t>(map.local_count[static_cast<std::size_t>(r)]));
        },
        all, displs, "gather traces");
    if (rank() != 0) return false;
    global.assign(map.sources.size() * n, 0.0f);
    for (std::size_t r = 0; r < map.sources.size(); ++r) {
      float* out = global.data() + r * n;
      auto trace = [&](const ReceiverSource& s) {
        return all.data() + displs[static_cast<std::size_t>(s.rank)] +
               static_cast<std::size_t>(s.local) * n;
      };
      if (map.whole[r]) {
        std::copy_n(trace(map.sources[r].front()), n, out);
        continue;
      }
      // The whole grid's backend sums weight * u over the taps in order from zero (a GPU with
      // fused multiply-adds); each tap's trace here is 1 * u, exactly u.
      for (std::size_t t = 1; t < n; ++t) {
        float sum = 0.0f;
        for (const ReceiverSource& s : map.sources[r])
          sum =
              m_fused_traces ? std::fma(s.weight, trace(s)[t], sum) : sum + s.weight * trace(s)[t];
        out[t] = sum;
      }
    }
    return true;
  }

  double halo_ms() const override { return m_halo_ms; }
  HaloTransport halo_transport() const override { return m_transport; }
  void reset_halo_ms() override { m_halo_ms = 0; }

private:
  int rank() const { return m_state->rank; }
  static int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
  SubdomainBox box() const { return subdomain_box(m_state->grid, m_state->split, m_state->rank); }

  /// Wait for `requests`, while watching for another rank's failure (its notice: throw a
  /// RuntimeFailure with its error) and for SIGINT or SIGTERM (throw Interrupted).
  void wait(std::vector<MPI_Request>& requests, const char* what) {
    for (int spins = 0;;) {
      int done = 0;
      check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                            MPI_STATUSES_IGNORE),
                what);
      if (done) return;
      int notice = 0;
      MPI_Status status;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, m_comm, &notice, &status), what);
      if (notice) {
        int length = 0;
        MPI_Get_count(&status, MPI_CHAR, &length);
        std::string text(static_cast<std::size_t>(length), '\0');
        check_mpi(MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, kAbortTag, m_comm,
                           MPI_STATUS_IGNORE),
                  what);
        m_peer_error = text;
        throw RuntimeFailure(text);
      }
      throw_if_interrupted();
      // Spin while the wait is short (a step's halo); then let a shared core go to the others.
      if (spins < 10000) {
        ++spins;
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  /// Cancel the halo receives in flight (completed or cancelled, their buffer is free after) and
  /// let go of the sends (the peers no longer receive them; the communicator is replaced).
  void drop_requests() {
    for (std::vector<MPI_Request>* receives : {&m_receives, &m_copied}) {
      for (MPI_Request& r : *receives) {
        if (r == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
      receives->clear();
    }
    for (MPI_Request& r : m_sends)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    m_sends.clear();
  }

  /// A one-int notice of the peer-copy protocol to or from `peer`.
  MPI_Request irecv_notice(int* into, int peer, int tag) {
    MPI_Request r;
    check_mpi(MPI_Irecv(into, 1, MPI_INT, peer, tag, m_comm, &r), "receive a halo notice");
    return r;
  }
  MPI_Request isend_notice(int peer, int tag) {
    MPI_Request r;
    check_mpi(MPI_Isend(&kNotice, 1, MPI_INT, peer, tag, m_comm, &r), "send a halo notice");
    return r;
  }

  /// Set up peer copies where every rank of the shot is on one node and can open its
  /// neighbours' receive buffers (collective over the shot's ranks; all agree). Each rank sends
  /// each neighbour its buffer's handle and where in it that neighbour's boxes go.
  bool set_up_peer_copies(const std::string& request) {
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(m_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              "find the shot's ranks on this node");
    int on_node = 0, ranks = 0;
    MPI_Comm_size(node, &on_node);
    MPI_Comm_size(m_comm, &ranks);
    MPI_Comm_free(&node);
    int ok = on_node == ranks ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, m_comm),
              "agree on peer copies");
    if (!ok) {
      if (request == "peer")
        throw RuntimeFailure("MINIMOD_HALO_TRANSPORT=peer: the ranks of a shot are not all on one "
                             "node; peer copies need them to be");
      return false;
    }
    const std::vector<char> mine = m_device->export_receive_buffer();
    const std::size_t n = m_exchanges.size(), message = mine.size() + sizeof(std::int64_t);
    std::vector<std::vector<char>> out(n, std::vector<char>(message)),
        in(n, std::vector<char>(message));
    std::vector<MPI_Request> requests;
    for (std::size_t i = 0; i < n; ++i) {
      const Exchange& e = m_exchanges[i];
      // What the neighbour in direction d sends arrives at e.recv.offset of this buffer.
      std::copy(mine.begin(), mine.end(), out[i].begin());
      std::memcpy(out[i].data() + mine.size(), &e.recv.offset, sizeof(std::int64_t));
      MPI_Request r;
      check_mpi(MPI_Irecv(in[i].data(), static_cast<int>(message), MPI_BYTE, e.peer,
                          kPeerSetupTagBase + direction_tag({-e.d[0], -e.d[1], -e.d[2]}), m_comm,
                          &r),
                "receive a neighbour's buffer handle");
      requests.push_back(r);
      check_mpi(MPI_Isend(out[i].data(), static_cast<int>(message), MPI_BYTE, e.peer,
                          kPeerSetupTagBase + direction_tag(e.d), m_comm, &r),
                "send this rank's buffer handle");
      requests.push_back(r);
    }
    wait(requests, "exchange buffer handles");
    std::string why;
    m_remote_offset.assign(n, 0);
    for (std::size_t i = 0; i < n && why.empty(); ++i) {
      why = m_device->open_peer(std::vector<char>(in[i].begin(), in[i].begin() + mine.size()));
      std::memcpy(&m_remote_offset[i], in[i].data() + mine.size(), sizeof(std::int64_t));
    }
    ok = why.empty() ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, m_comm),
              "agree on peer copies");
    if (!ok && request == "peer")
      throw RuntimeFailure("MINIMOD_HALO_TRANSPORT=peer: " +
                           (why.empty() ? std::string("another rank of the shot cannot open its "
                                                      "neighbours' device memory")
                                        : "rank " + std::to_string(world_rank()) + ": " + why));
    m_free_in.assign(n, 0);
    m_copied_in.assign(n, 0);
    return ok == 1;
  }

  /// The exchanges of this subdomain and their buffers, set up on the first step: packed host
  /// buffers on the CPU; on a GPU, device buffers packed by kernels on the backend's stream and
  /// handed to MPI as they are when it reads device memory, else staged through pinned memory.
  void prepare(Backend& backend) {
    if (m_prepared) return;
    const SubdomainBox b = box();
    m_layout = m_state->layout;
    const std::size_t fields = backend.halo_fields().size();
    const auto c = split_coords(m_state->split, rank());
    std::int64_t send_at = 0, recv_at = 0;
    for (const Direction& d : exchange_directions(m_edges)) {
      if (!has_neighbour(m_state->split, c, d)) continue;
      Exchange e;
      e.d = d;
      e.peer = rank_of(m_state->split, add(c, d));
      e.send.box = exchange_box(b.size, d, false);
      e.recv.box = exchange_box(b.size, d, true);
      e.send.zero_surface = m_state->free_surface && b.offset[2] == 0 && e.send.box.z0 == 0;
      e.count = e.send.box.points() * fields;
      e.send.offset = send_at;
      e.recv.offset = recv_at;
      send_at += static_cast<std::int64_t>(e.count);
      recv_at += static_cast<std::int64_t>(e.recv.box.points() * fields);
      m_send_boxes.push_back(e.send);
      m_recv_boxes.push_back(e.recv);
      m_exchanges.push_back(e);
    }
    m_fused_traces = backend.kind() != BackendKind::Cpu;
    if (backend.kind() == BackendKind::Cpu) {
      m_send.assign(static_cast<std::size_t>(send_at), 0.0f);
      m_recv.assign(static_cast<std::size_t>(recv_at), 0.0f);
    } else {
      m_device = make_cuda_halo(backend.stream(), static_cast<std::size_t>(send_at),
                                static_cast<std::size_t>(recv_at), false);
      const std::string request = halo_transport_request();
      m_peer = request != "mpi" && set_up_peer_copies(request);
      if (m_peer) {
        m_transport = HaloTransport::Peer;
      } else if (mpi_reads_device_memory()) {
        m_transport = HaloTransport::MpiDevice;
      } else {
        m_device->enable_host_staging();
        m_transport = HaloTransport::Staged;
      }
    }
    m_prepared = true;
  }

  std::shared_ptr<DecompositionState> m_state;
  MPI_Comm m_base;                 ///< the shot's ranks (begin_shot's agreement)
  MPI_Comm m_comm = MPI_COMM_NULL; ///< exchanges and gathers
  bool m_edges = false;
  std::optional<FaultInjection> m_fault;
  int m_shot = -1;
  bool m_dirty = false;     ///< this rank left messages of the shot unfinished
  std::string m_peer_error; ///< the notice of another rank's failure, when that stopped this one
  std::deque<std::string> m_notices; ///< texts of this rank's failure notices (sent unwaited)
  std::deque<std::vector<std::int64_t>> m_abandoned_ints; ///< buffers of abandoned scans
  std::deque<std::vector<float>> m_abandoned_floats;
  bool m_prepared = false;
  bool m_fused_traces = false; ///< GPU receivers sum with fused multiply-adds
  FieldLayout m_layout;
  std::vector<Exchange> m_exchanges;
  std::vector<HaloBox> m_send_boxes, m_recv_boxes;
  std::vector<float> m_send, m_recv;               ///< CPU backend
  std::unique_ptr<DeviceHalo> m_device;            ///< GPU backend
  bool m_peer = false;                             ///< GPU to GPU peer copies (set_up_peer_copies)
  HaloTransport m_transport = HaloTransport::Host; ///< halo_transport()
  std::vector<std::int64_t> m_remote_offset; ///< peer copies: where in each neighbour's buffer
  std::vector<int> m_free_in, m_copied_in;   ///< peer copies: the notices' payloads
  std::vector<MPI_Request> m_receives, m_sends;
  std::vector<MPI_Request> m_copied; ///< peer copies: the neighbours' "copied" notices
  double m_halo_ms = 0;
};

} // namespace

DecomposedRun decompose(std::shared_ptr<const Equation> equation, const Split& split,
                        MPI_Comm comm) {
  int size = 0, rank = 0;
  check_mpi(MPI_Comm_size(comm, &size), "decompose");
  check_mpi(MPI_Comm_rank(comm, &rank), "decompose");
  if (size != split_ranks(split)) {
    throw InputError("decomposition: " + split_text(split) + " needs " +
                     std::to_string(split_ranks(split)) + " ranks a shot, the shot has " +
                     std::to_string(size));
  }
  auto state = std::make_shared<DecompositionState>();
  state->split = split;
  state->rank = rank;
  const Physics physics = equation->physics();
  DecomposedRun run;
  run.equation = std::make_shared<DecomposedEquation>(std::move(equation), state);
  std::optional<FaultInjection> fault;
  if (const char* text = std::getenv("MINIMOD_FAULT_INJECT")) fault = parse_fault_injection(text);
  run.hooks = std::make_unique<DecomposedHooks>(state, comm, physics, fault);
  return run;
}
#endif

} // namespace minimod
