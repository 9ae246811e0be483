/// GPU tests of the temporally blocked family tb2_25d (two steps a pass) against the CPU
/// reference, every compiled design variant (kTblockVariants) on every case: awkward grid sizes,
/// with and without the absorbing layer and the free surface, sources and receivers inside tiles
/// and straddling tile edges, sources inside blocks that take the inner-only path, snapshots after
/// an odd step count (a one-step pass in the middle of a run); and the registered kernels
/// (`tb2_25d_<tile>`) through the GPU backend's whole-grid mode. A timing case on the seeds' 1000^3
/// grid runs only when MINIMOD_TBLOCK_BENCH is set (it needs about 50 GB of device memory).

#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpml.hpp"
#include "kernels/gpu_probe.hpp"
#include "kernels/kernel.hpp"
#include "kernels/selection.hpp"
#include "tests/gpu/compare.hpp"
#include "tests/gpu/cpu_reference.hpp"
#include "tests/gpu/gpu_environment.hpp"
#include "tests/gpu/problem_builder.hpp"
#if defined(MINIMOD_HAVE_GPU)
#include "kernels/gpu/tblock_25d.hpp"
#endif

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

namespace minimod {
namespace {

using test_support::append_trilinear;
using test_support::build_acoustic_problem;
using test_support::cpu_run;
using test_support::CpuRun;
using test_support::expect_close;
using test_support::ProblemSpec;

struct TblockCase {
  int nx, ny, nz;
  int n_layer;
  bool free_surface;
  int steps;
  int tile_x, tile_y;
  int z_chunk;
  int snapshot; ///< step after which the wavefield is compared as well (odd: a one-step pass)
};

void PrintTo(const TblockCase& c, std::ostream* os) {
  *os << c.nx << "x" << c.ny << "x" << c.nz << " layer " << c.n_layer
      << (c.free_surface ? " free surface" : "") << " " << c.steps << " steps, tile " << c.tile_x
      << "x" << c.tile_y << ", z chunk " << c.z_chunk;
}

#if defined(MINIMOD_HAVE_GPU)
/// The builder's problem plus sources and receivers whose trilinear taps straddle tile edges
/// (x = tile_x - 1 | tile_x, y = tile_y - 1 | tile_y), one in the corner of the layer and one
/// beside the free surface.
AcousticProblem tblock_problem(const TblockCase& c) {
  ProblemSpec s;
  s.nx = c.nx;
  s.ny = c.ny;
  s.nz = c.nz;
  s.n_layer = c.n_layer;
  s.steps = c.steps;
  AcousticProblem p = build_acoustic_problem(s);
  p.free_surface = c.free_surface;
  const double h = s.h;
  const FieldLayout& l = p.layout;
  const double cell = h * h * h;
  auto physical = [&](int i, int j, int k) {
    return static_cast<double>(p.vp2dt2[l.index(i, j, k)]) / cell;
  };
  const double edge_x = (c.tile_x - 0.5) * h, edge_y = (c.tile_y - 0.5) * h;
  const double positions[][3] = {{edge_x, edge_y, 0.37 * (c.nz - 1) * h},
                                 {2.3 * h, 1.6 * h, (c.nz - 2.7) * h},
                                 {(2 * c.tile_x - 0.5) * h, 0.6 * (c.ny - 1) * h, 1.4 * h}};
  const std::size_t first_new = p.sources.owners();
  for (const auto& x : positions)
    append_trilinear(p.grid, l, x[0], x[1], x[2], physical, p.sources);
  // Their wavelets: the builder's, delayed and scaled, so that no two sources are alike.
  const std::vector<float> base(p.source_samples.begin(), p.source_samples.begin() + c.steps);
  for (std::size_t src = first_new; src < p.sources.owners(); ++src)
    for (int n = 0; n < c.steps; ++n) {
      const int d = n - 3 * static_cast<int>(src);
      p.source_samples.push_back(d >= 0 ? (0.5f + 0.25f * static_cast<float>(src)) * base[d]
                                        : 0.0f);
    }
  auto unit = [](int, int, int) { return 1.0; };
  append_trilinear(p.grid, l, c.tile_x * h, (c.tile_y - 0.5) * h, 0.37 * (c.nz - 1) * h, unit,
                   p.receivers);
  append_trilinear(p.grid, l, (c.tile_x + 0.5) * h, c.tile_y * h, 0.5 * h, unit, p.receivers);
  append_trilinear(p.grid, l, 1.5 * h, 2.5 * h, (c.nz - 1.5) * h, unit, p.receivers);
  return p;
}

#endif

class TblockVsCpu : public ::testing::TestWithParam<TblockCase> {};

TEST_P(TblockVsCpu, MatchesTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  const TblockCase& c = GetParam();
  const AcousticProblem p = tblock_problem(c);
  const CpuRun ref = cpu_run(p, c.snapshot);
  const std::vector<float>&cpu_mid = ref.mid, &cpu_final = ref.final_u, &cpu_traces = ref.traces;

  ASSERT_EQ(gpu::TemporalBlock25d::can_run(p, gpu::TblockTile{c.tile_x, c.tile_y}), "");
  for (const unsigned options : gpu::kTblockVariants) {
    gpu::TemporalBlock25d tb(gpu::TblockTile{c.tile_x, c.tile_y}, c.z_chunk, options);
    SCOPED_TRACE(tb.name());
    tb.setup(p);
    std::vector<float> mid, final_u, traces;
    tb.advance(0, c.snapshot);
    tb.fetch_wavefield(mid);
    tb.advance(c.snapshot, p.steps - c.snapshot);
    tb.fetch_wavefield(final_u);
    tb.fetch_traces(traces);
    expect_close(mid, cpu_mid, "wavefield at the snapshot step");
    expect_close(final_u, cpu_final, "final wavefield");
    expect_close(traces, cpu_traces, "receiver traces");
    // reset() restarts from zero: the same run gives the same final wavefield, bit for bit.
    tb.reset();
    tb.advance(0, p.steps);
    std::vector<float> again;
    tb.fetch_wavefield(again);
    EXPECT_EQ(again, final_u) << "a run after reset() differs";
  }
#endif
}

std::vector<TblockCase> tblock_cases() {
  return {
      {131, 97, 83, 8, false, 100, 32, 16, 128, 37},
      {131, 97, 83, 8, true, 101, 32, 16, 128, 50},
      {131, 97, 83, 5, true, 100, 32, 32, 24, 21},
      {70, 45, 61, 0, true, 100, 32, 32, 128, 49},
      {77, 53, 40, 0, false, 100, 16, 16, 16, 33},
      {77, 53, 40, 6, true, 100, 16, 16, 9, 64},
      // Sources in blocks that take the inner-only path (tile and cross inside the inner region,
      // away from the free surface): the edge source's taps (x, y = tile - 1 | tile, z = 14 | 15
      // and 30 | 31) lie in the chunks [8, 16) and [16, 32).
      {77, 53, 40, 0, false, 100, 16, 16, 8, 33},
      {131, 97, 83, 8, true, 100, 32, 16, 16, 37},
  };
}

std::string case_name(const ::testing::TestParamInfo<TblockCase>& info) {
  const TblockCase& c = info.param;
  return std::to_string(c.nx) + "x" + std::to_string(c.ny) + "x" + std::to_string(c.nz) + "_layer" +
         std::to_string(c.n_layer) + (c.free_surface ? "_fs" : "") + "_tile" +
         std::to_string(c.tile_x) + "x" + std::to_string(c.tile_y) + "_chunk" +
         std::to_string(c.z_chunk);
}

INSTANTIATE_TEST_SUITE_P(Tiles, TblockVsCpu, ::testing::ValuesIn(tblock_cases()), case_name);

/// The registered kernels (`tb2_25d_<tile>`, depth chunks of kTblockRegisteredChunk) through the
/// GPU backend's whole-grid mode, as the solver drives it: passes of two steps with single steps
/// between them, a snapshot begun after an odd step count and collected two passes later (its
/// level has become a spare and been overwritten by then), against the CPU backend; then the
/// backend's passes against TemporalBlock25d's with the same variant and chunk, bit for bit.
TEST(TblockBackend, RegisteredKernelsMatchTheCpuReference) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  const TblockCase cases[] = {
      {131, 97, 83, 8, false, 100, 32, 16, 128, 37},
      {131, 97, 83, 8, true, 101, 32, 16, 128, 50},
      {70, 45, 61, 0, true, 100, 32, 32, 128, 49},
      {77, 53, 40, 6, true, 100, 16, 16, 128, 63},
  };
  for (const TblockCase& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c));
    const AcousticProblem p = tblock_problem(c);
    const CpuRun ref = cpu_run(p, c.snapshot);
    const std::string name = gpu::tblock_name(gpu::TblockTile{c.tile_x, c.tile_y});
    const RegionKernels kernels =
        resolve_kernels(name, kGpuBackend, Physics::Acoustic, p.regions, p.layout, "--kernel");
    for (const StencilKernel* k : kernels)
      ASSERT_EQ(k->name(), name);
    auto gpu = make_cuda_backend();
    gpu->setup(p, kernels);
    ASSERT_EQ(gpu->pass_steps(), 2);

    int n = 0;
    // Passes of two, with a single step wherever n % 7 == 3 or one step is left.
    auto advance_to = [&](int end) {
      while (n < end) {
        if (end - n >= 2 && n % 7 != 3) {
          gpu->step_pass(n, 2);
          n += 2;
        } else {
          gpu->step(n);
          ++n;
        }
      }
    };
    advance_to(c.snapshot);
    gpu->snapshot_begin(0);
    advance_to(c.snapshot + 4);
    std::vector<float> mid, final_u, traces;
    gpu->snapshot_end(mid);
    advance_to(p.steps);
    gpu->fetch_field(0, final_u);
    gpu->fetch_traces(traces);
    expect_close(mid, ref.mid, "snapshot at its step");
    expect_close(final_u, ref.final_u, "final wavefield");
    expect_close(traces, ref.traces, "receiver traces");

    gpu::TemporalBlock25d tb(gpu::TblockTile{c.tile_x, c.tile_y}, gpu::kTblockRegisteredChunk,
                             gpu::kTblockRegistered);
    tb.setup(p);
    tb.advance(0, p.steps);
    std::vector<float> tb_u, tb_traces;
    tb.fetch_wavefield(tb_u);
    tb.fetch_traces(tb_traces);
    gpu->reset();
    gpu->step_pass(0, p.steps);
    gpu->fetch_field(0, final_u);
    gpu->fetch_traces(traces);
    EXPECT_EQ(final_u, tb_u) << "the backend's passes differ from TemporalBlock25d's";
    EXPECT_EQ(traces, tb_traces) << "the backend's traces differ from TemporalBlock25d's";
  }
#endif
}

/// A whole-grid kernel is all or nothing: beside other kernels the spec is refused, naming it;
/// switching a set-up backend to it and back works; a source tap outside the grid and a C-PML
/// layer are refused.
TEST(TblockBackend, ChoosingTheFamily) {
  MINIMOD_SKIP_WITHOUT_GPU();
#if defined(MINIMOD_HAVE_GPU)
  const TblockCase c{77, 53, 40, 6, true, 30, 16, 16, 128, 15};
  const AcousticProblem p = tblock_problem(c);
  try {
    (void)resolve_kernels("inner=tb2_25d_32x16", kGpuBackend, Physics::Acoustic, p.regions,
                          p.layout, "--kernel");
    FAIL() << "a whole-grid kernel beside others was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("advances the whole grid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--kernel tb2_25d_32x16"), std::string::npos) << e.what();
  }
  // set_kernels into the whole-grid mode and back, mid-run: the same fields as single steps of
  // the region kernels throughout.
  const RegionKernels regions_k =
      resolve_kernels("", kGpuBackend, Physics::Acoustic, p.regions, p.layout, "--kernel");
  const RegionKernels whole_k =
      resolve_kernels("tb2_25d", kGpuBackend, Physics::Acoustic, p.regions, p.layout, "--kernel");
  auto gpu = make_cuda_backend();
  gpu->setup(p, regions_k);
  EXPECT_EQ(gpu->pass_steps(), 1);
  for (int n = 0; n < 10; ++n)
    gpu->step(n);
  gpu->set_kernels(whole_k);
  EXPECT_EQ(gpu->pass_steps(), 2);
  gpu->step_pass(10, 2);
  gpu->step(12);
  gpu->step_pass(13, 2);
  gpu->set_kernels(regions_k);
  EXPECT_EQ(gpu->pass_steps(), 1);
  for (int n = 15; n < p.steps; ++n)
    gpu->step(n);
  std::vector<float> u, traces;
  gpu->fetch_field(0, u);
  gpu->fetch_traces(traces);
  const CpuRun ref = cpu_run(p, 0);
  expect_close(u, ref.final_u, "wavefield after switching kernels twice");
  expect_close(traces, ref.traces, "traces after switching kernels twice");

  // A source tap in a ghost plane: the region kernels take it, the family refuses the problem.
  AcousticProblem ghost = p;
  ghost.sources.index.push_back(ghost.layout.index(-1, 5, 5));
  ghost.sources.weight.push_back(1.0f);
  ghost.sources.begin.push_back(static_cast<std::int64_t>(ghost.sources.index.size()));
  ghost.source_samples.resize(ghost.source_samples.size() + static_cast<std::size_t>(p.steps),
                              0.0f);
  auto gpu_ghost = make_cuda_backend();
  gpu_ghost->setup(ghost, regions_k);
  try {
    gpu_ghost->set_kernels(whole_k);
    FAIL() << "a source tap outside the grid was accepted";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("outside the grid"), std::string::npos) << e.what();
  }

  // set_taps: while the family is chosen a ghost-tap shot is refused and the backend keeps its
  // own; on region kernels the shot is taken and the family refused; a later shot it can run
  // brings it back, with that shot's taps.
  auto gpu3 = make_cuda_backend();
  gpu3->setup(p, whole_k);
  EXPECT_THROW(gpu3->set_taps(ghost), RuntimeFailure);
  gpu3->set_kernels(regions_k);
  gpu3->set_taps(ghost);
  EXPECT_THROW(gpu3->set_kernels(whole_k), RuntimeFailure);
  gpu3->set_taps(p);
  gpu3->set_kernels(whole_k);
  gpu3->step_pass(0, p.steps);
  gpu3->fetch_field(0, u);
  gpu3->fetch_traces(traces);
  expect_close(u, ref.final_u, "wavefield after set_taps back to a shot the family can run");
  expect_close(traces, ref.traces, "traces after set_taps back to a shot the family can run");

  // A C-PML layer is not the family's.
  AcousticProblem cpml = p;
  cpml.boundary = BoundaryType::Cpml;
  cpml.eta.clear();
  cpml.eta_axes = {};
  cpml.cpml = make_cpml_profile(cpml.grid, cpml.layer, cpml.dt, 4000.0,
                                CpmlParams{1e-4, 2, 3.14159265358979 * 15.0, 1.0});
  auto gpu2 = make_cuda_backend();
  EXPECT_THROW(gpu2->setup(cpml, whole_k), RuntimeFailure);
#endif
}

#if defined(MINIMOD_HAVE_GPU)
/// The seeds' benchmark problem (docs/physics.md section 7) on an n^3 grid: 20 m spacing,
/// 2000 m/s, dt for vmax 4500 m/s at CFL 0.8, layers of `layer` points (the seeds': 27), one
/// source at the centre.
AcousticProblem seeds_problem(int n, int steps, int layer) {
  ProblemSpec s;
  s.nx = s.ny = s.nz = n;
  s.h = 20.0;
  s.n_layer = layer;
  AcousticProblem p;
  p.grid.nx = p.grid.ny = p.grid.nz = n;
  p.grid.dx = p.grid.dy = p.grid.dz = s.h;
  p.layer = LayerWidths{layer, layer, layer, layer, layer, layer};
  p.regions = make_regions(p.grid, p.layer);
  p.layout = make_field_layout(n, n, n, p.layer.x_lo);
  p.coefs = make_stencil_coefs(p.grid);
  p.steps = steps;
  const double vmax = 4500.0;
  p.dt = test_support::gershgorin_dt(p.grid, vmax, 0.8);
  const FieldLayout& l = p.layout;
  const float vp = static_cast<float>((2000.0 * p.dt) * (2000.0 * p.dt));
  p.vp2dt2.assign(static_cast<std::size_t>(l.size), 0.0f);
  p.eta.assign(static_cast<std::size_t>(l.size), 0.0f);
  std::vector<double> e(static_cast<std::size_t>(n) + 2);
  for (int i = -1; i <= n; ++i)
    e[i + 1] = test_support::eta_axis(i, n, layer, layer, s.h, p.dt, vmax);
  p.eta_axes = EtaProfiles{e, e, e};
  for (int k = -1; k <= n; ++k)
    for (int j = -1; j <= n; ++j) {
      float* eta_row = p.eta.data() + l.index(0, j, k);
      float* vp_row = p.vp2dt2.data() + l.index(0, j, k);
      const bool grid_row = j >= 0 && j < n && k >= 0 && k < n;
      for (int i = -1; i <= n; ++i) {
        eta_row[i] = static_cast<float>(e[i + 1] + e[j + 1] + e[k + 1]);
        if (grid_row && i >= 0 && i < n) vp_row[i] = vp;
      }
    }
  const double centre = 0.5 * (n - 1) * s.h + 0.3 * s.h;
  append_trilinear(
      p.grid, l, centre, centre, centre, [&](int, int, int) { return vp / (s.h * s.h * s.h); },
      p.sources);
  for (int m = 0; m < steps; ++m)
    p.source_samples.push_back(static_cast<float>(test_support::ricker(m * p.dt, 15.0, 0.1)));
  append_trilinear(
      p.grid, l, centre + 10 * s.h, centre, centre, [](int, int, int) { return 1.0; }, p.receivers);
  return p;
}

double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A float with all its digits, for the JSON record.
std::string digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void min_max(const std::vector<float>& u, float& lo, float& hi) {
  const auto mm = std::minmax_element(u.begin(), u.end());
  lo = *mm.first;
  hi = *mm.second;
}
#endif

/// Timing on the seeds' grid (MINIMOD_TBLOCK_BENCH=N for N^3, N a whole number, empty for 1000;
/// anything else fails the case): the memory floor, the single-pass default pair, every variant on
/// the default tile and depth chunk, and the other tiles and other depth chunks with all the
/// options of each design, in one process (MINIMOD_TBLOCK_ONLY=TEXT: only the variants whose name
/// contains TEXT); with MINIMOD_TBLOCK_BENCH_JSON=FILE the numbers go to FILE as well.
TEST(TblockTiming, SeedsProblem) {
  MINIMOD_SKIP_WITHOUT_GPU();
  const char* env = std::getenv("MINIMOD_TBLOCK_BENCH");
  if (env == nullptr) GTEST_SKIP() << "set MINIMOD_TBLOCK_BENCH=N to time an N^3 grid";
#if defined(MINIMOD_HAVE_GPU)
  int n = 1000;
  if (*env != '\0') {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1 || v > 4000)
      FAIL() << "MINIMOD_TBLOCK_BENCH=" << env
             << ": a whole number of points a side in [1, 4000] is allowed (empty: 1000)";
    n = static_cast<int>(v);
  }
  // MINIMOD_TBLOCK_LAYER=W: layers of W points instead of the seeds' 27 (0: none, every block of
  // the temporally blocked passes but the grid's edges inside).
  const char* layer_env = std::getenv("MINIMOD_TBLOCK_LAYER");
  int layer = 27;
  if (layer_env != nullptr) {
    char* end = nullptr;
    const long w = std::strtol(layer_env, &end, 10);
    if (end == layer_env || *end != '\0' || w < 0 || 2 * w >= n)
      FAIL() << "MINIMOD_TBLOCK_LAYER=" << layer_env << ": a whole number of points in [0, "
             << (n + 1) / 2 << ") is allowed";
    layer = static_cast<int>(w);
  }
  if (2 * layer >= n)
    FAIL() << "MINIMOD_TBLOCK_BENCH=" << n << ": the seeds' layers of " << layer
           << " points leave no inner region; set MINIMOD_TBLOCK_LAYER below " << (n + 1) / 2;
  constexpr int kSteps = 500, kTimed = 50, kRepeats = 3, kWarmup = 10;
  const AcousticProblem p = seeds_problem(n, kSteps, layer);
  const auto points = static_cast<std::int64_t>(n) * n * n;
  const MemoryFloor floor = measure_gpu_memory_floor(points);
  const double floor_ms = floor.floor_ms(points);
  std::string json = "{\n  \"grid\": " + std::to_string(n) +
                     ",\n  \"layer\": " + std::to_string(layer) +
                     ",\n  \"timed_steps\": " + std::to_string(kTimed) +
                     ",\n  \"repeats\": " + std::to_string(kRepeats) +
                     ",\n  \"floor_ms\": " + std::to_string(floor_ms) + ",\n  \"results\": [\n";
  std::printf("%d^3, layers of %d points: floor %.3f ms a step (16 B a point at %.1f GB/s)\n", n,
              layer, floor_ms, floor.stream_gbps);
  float ref_lo = 0, ref_hi = 0;
  {
    std::array<const StencilKernel*, kRegionCount> k;
    const StencilKernel* inner =
        kernel_registry().find("st_reg_shft_25d_32x16", kGpuBackend, Physics::Acoustic);
    const StencilKernel* layer =
        kernel_registry().find("gmem_3d_f4_32x4x4", kGpuBackend, Physics::Acoustic);
    ASSERT_NE(inner, nullptr);
    ASSERT_NE(layer, nullptr);
    for (int r = 0; r < kRegionCount; ++r)
      k[r] = p.regions[r].kind() == RegionKind::Inner ? inner : layer;
    auto b = make_cuda_backend();
    b->setup(p, k);
    b->time_steps(0, kWarmup);
    std::vector<double> t;
    for (int r = 0; r < kRepeats; ++r)
      t.push_back(b->time_steps(0, kTimed) / kTimed);
    const double ms = median3(t);
    b->reset();
    b->time_steps(0, kSteps);
    std::vector<float> u;
    b->fetch_field(0, u);
    min_max(u, ref_lo, ref_hi);
    std::printf("default pair: %.3f ms a step (%.1f%% of the floor); after %d steps min %.9g "
                "max %.9g\n",
                ms, floor_ms / ms * 100.0, kSteps, ref_lo, ref_hi);
    std::fflush(stdout);
    json += "    {\"kernel\": \"inner=st_reg_shft_25d_32x16,pml=gmem_3d_f4_32x4x4\", \"ms\": " +
            std::to_string(ms) + ", \"percent_of_floor\": " + std::to_string(floor_ms / ms * 100) +
            ", \"min\": " + digits(ref_lo) + ", \"max\": " + digits(ref_hi) + "}";
  }
  struct Config {
    gpu::TblockTile tile;
    int chunk;
    unsigned options;
  };
  std::vector<Config> configs;
  const gpu::TblockTile default_tile = gpu::tblock_tiles().front();
  for (const unsigned options : gpu::kTblockVariants)
    configs.push_back({default_tile, 128, options});
  const unsigned all = gpu::kTblockPlaneStride | gpu::kTblockSourceTiles | gpu::kTblockInnerFast |
                       gpu::kTblockWideRegisters;
  configs.push_back({default_tile, 64, all});
  const unsigned ring = gpu::kTblockSmemRing | gpu::kTblockSourceTiles | gpu::kTblockInnerFast;
  configs.push_back({default_tile, 64, ring});
  configs.push_back({default_tile, 256, ring});
  for (const gpu::TblockTile& tile : gpu::tblock_tiles())
    if (tile.dx != default_tile.dx || tile.dy != default_tile.dy) {
      configs.push_back({tile, 128, all});
      configs.push_back({tile, 128, ring});
    }
  // MINIMOD_TBLOCK_ONLY=TEXT times only the variants whose name contains TEXT.
  const char* only = std::getenv("MINIMOD_TBLOCK_ONLY");
  for (const Config& cfg : configs) {
    if (only != nullptr && gpu::tblock_variant_name(cfg.options).find(only) == std::string::npos)
      continue;
    const int chunk = cfg.chunk;
    gpu::TemporalBlock25d tb(cfg.tile, chunk, cfg.options);
    tb.setup(p);
    tb.time_steps(0, kWarmup);
    std::vector<double> t;
    for (int r = 0; r < kRepeats; ++r)
      t.push_back(tb.time_steps(0, kTimed) / kTimed);
    const double ms = median3(t);
    tb.reset();
    tb.advance(0, kSteps);
    std::vector<float> u;
    tb.fetch_wavefield(u);
    float lo = 0, hi = 0;
    min_max(u, lo, hi);
    std::printf("%s z chunk %d: %.3f ms a step (%.1f%% of the floor); after %d steps min %.9g "
                "max %.9g (relative to the default pair: %.2g, %.2g)\n",
                tb.name().c_str(), chunk, ms, floor_ms / ms * 100.0, kSteps, lo, hi,
                (lo - ref_lo) / std::abs(ref_lo), (hi - ref_hi) / std::abs(ref_hi));
    std::fflush(stdout);
    json += ",\n    {\"kernel\": \"" + tb.name() + "\", \"options\": \"" +
            gpu::tblock_variant_name(cfg.options) + "\", \"z_chunk\": " + std::to_string(chunk) +
            ", \"ms\": " + std::to_string(ms) +
            ", \"percent_of_floor\": " + std::to_string(floor_ms / ms * 100) +
            ", \"min\": " + digits(lo) + ", \"max\": " + digits(hi) + "}";
    EXPECT_LE(std::abs(lo - ref_lo), 1e-4 * std::abs(ref_lo)) << tb.name();
    EXPECT_LE(std::abs(hi - ref_hi), 1e-4 * std::abs(ref_hi)) << tb.name();
  }
  json += "\n  ]\n}\n";
  if (const char* file = std::getenv("MINIMOD_TBLOCK_BENCH_JSON")) std::ofstream(file) << json;
#endif
}

} // namespace
} // namespace minimod
