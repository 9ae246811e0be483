#include "app/bench.hpp"

#include "core/errors.hpp"
#include "io/durable_file.hpp"
#include "io/survey.hpp"
#include "kernels/autotune.hpp"
#include "kernels/selection.hpp"
#include "models/velocity.hpp"
#include "solver/plan.hpp"
#include "solver/problem.hpp"
#include "solver/tti.hpp"
#include "solver/wavelet.hpp"
#include "version.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

namespace minimod {
namespace {

// The seeds' benchmark problem (docs/physics.md section 7).
constexpr double kSpacing = 20.0;    ///< m
constexpr double kVelocity = 2000.0; ///< m/s everywhere
constexpr double kVmax = 4500.0;     ///< m/s, for dt and the layer width
constexpr double kFmax = 25.0;       ///< Hz, for the layer width and the Minimod wavelet
constexpr double kNtaper = 3.0;      ///< layer = ntaper vmax / fmax / h = 27 points
constexpr double kCfl = 0.8;
constexpr int kReceiverOffset = 10; ///< receiver this many points from the source along x
constexpr int kMinRepeats = 3;      ///< the median of fewer says little
// The TTI medium of the benchmark (uniform; the seeds give only the grid for TTI).
constexpr float kTtiEpsilon = 0.2f, kTtiDelta = 0.1f;
constexpr double kTtiTiltDegrees = 30.0, kTtiAzimuthDegrees = 20.0;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

/// The seeds' layer width in points (ntaper vmax / fmax / h), or `layer` when it is given (>= 0).
int bench_layer_width(int layer) {
  return layer >= 0 ? layer : layer_width_points(kNtaper, kVmax, kFmax, kSpacing);
}

/// The survey of the seeds' benchmark on an nx x ny x nz grid, `steps` steps; a layer of `layer`
/// points on every face, or the seeds' one when `layer` is negative, of formulation `boundary`.
Survey benchmark_survey(const std::array<int, 3>& shape, int steps, int layer,
                        BoundaryType boundary) {
  Survey s;
  s.path = "bench";
  s.name = "seeds_benchmark";
  s.physics = "acoustic";
  s.grid.shape = shape;
  s.grid.spacing = {kSpacing, kSpacing, kSpacing};
  s.grid.loc = SourceLoc{"bench", 0, "--grid"};
  s.model.kind = ModelSpec::Kind::Constant;
  s.model.velocity = kVelocity;
  s.model.vmax = kVmax;
  s.model.loc = s.model.vmax_loc = SourceLoc{"bench", 0, "model"};
  s.time.steps = steps;
  s.time.cfl = kCfl;
  s.time.loc = SourceLoc{"bench", 0, "--steps"};
  s.boundary.type = boundary;
  s.boundary.ntaper = kNtaper;
  s.boundary.fmax = kFmax;
  s.boundary.loc = SourceLoc{"bench", 0, "--grid"};
  if (layer >= 0) {
    s.boundary.width = layer;
    s.boundary.width_loc = SourceLoc{"bench", 0, "--layer"};
  }
  SourceSpec src;
  const int ci = shape[0] / 2, cj = shape[1] / 2, ck = shape[2] / 2;
  src.position = {ci * kSpacing, cj * kSpacing, ck * kSpacing};
  src.wavelet.kind = WaveletSpec::Kind::Minimod;
  src.wavelet.fmax = kFmax;
  src.injection = Injection::Minimod;
  src.loc = SourceLoc{"bench", 0, "source"};
  s.sources.push_back(src);
  ReceiverSpec rcv;
  rcv.position = {std::min(ci + kReceiverOffset, shape[0] - 1) * kSpacing, cj * kSpacing,
                  ck * kSpacing};
  rcv.loc = SourceLoc{"bench", 0, "receiver"};
  s.receivers.push_back(rcv);
  return s;
}

/// Bytes a float16 acoustic step must move per point at least: u^n, the step d and the medium's
/// code read, u^{n+1} and d written, 2 B each (float32's is kAcousticBytesPerPoint).
constexpr double kAcousticBytesPerPoint16 = 10.0;

/// The kernels that take the regions an item's kernel leaves (or refuses), by region kind: the
/// backend's default where it has the run's precision, else the first registered kernel that
/// has it for that kind.
struct Fallback {
  const StencilKernel* inner = nullptr;
  const StencilKernel* layer = nullptr;
  const StencilKernel* of(RegionKind kind) const {
    return kind == RegionKind::Inner ? inner : layer;
  }
  RegionKernels kernels(const std::array<Region, kRegionCount>& regions) const {
    RegionKernels k{};
    for (int r = 0; r < kRegionCount; ++r)
      k[r] = of(regions[r].kind());
    return k;
  }
};

Fallback fallback_kernels(const StencilKernel* default_kernel, BackendKind backend, Physics physics,
                          Precision precision) {
  Fallback f{default_kernel, default_kernel};
  if (default_kernel->handles_precision(precision)) return f;
  for (const RegionKind kind : {RegionKind::Inner, RegionKind::Layer}) {
    for (const StencilKernel* k : kernel_registry().all()) {
      if (k->backend() == backend && k->physics() == physics && k->handles(kind) &&
          k->handles_precision(precision)) {
        (kind == RegionKind::Inner ? f.inner : f.layer) = k;
        break;
      }
    }
  }
  return f;
}

/// How one item of --kernel maps onto the regions, before anything runs.
struct Entry {
  BenchRecord record;
  bool tune = false; ///< an `auto` item: kernels chosen by autotune_kernels when it runs
  RegionKernels kernels{};
};

std::string joined_names(BackendKind backend, Physics physics) {
  std::string out;
  for (const auto& n : kernel_registry().names(backend, physics))
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

/// A kernel used for every region kind it implements; the backend's default takes the other
/// regions and those it refuses (each noted). Refusing the inner region refuses the record.
Entry entry_for_kernel(const StencilKernel* k, const std::array<Region, kRegionCount>& regions,
                       const FieldLayout& layout, const Fallback& fallbacks) {
  Entry e;
  e.record.spec = k->name();
  bool no_layer_noted = false, no_inner_noted = false;
  for (int r = 0; r < kRegionCount; ++r) {
    const Region& region = regions[r];
    const StencilKernel* fallback = fallbacks.of(region.kind());
    e.kernels[r] = fallback;
    if (region.box.empty()) continue;
    if (!k->handles(region.kind())) {
      if (region.kind() == RegionKind::Layer && !no_layer_noted) {
        e.record.notes.push_back("layers on " + fallback->name() + " (" + k->name() +
                                 " has no layer update)");
        no_layer_noted = true;
      } else if (region.kind() == RegionKind::Inner && !no_inner_noted) {
        e.record.notes.push_back("inner on " + fallback->name() + " (" + k->name() +
                                 " has no inner update)");
        no_inner_noted = true;
      }
      continue;
    }
    const std::string why = k->can_run(region, layout);
    if (why.empty()) {
      e.kernels[r] = k;
    } else if (region.kind() == RegionKind::Inner) {
      e.record.status = "refused";
      e.record.reason = k->name() + " cannot run region inner: " + why;
    } else {
      e.record.notes.push_back(std::string(region_name(region.id)) + " on " + fallback->name() +
                               " (" + k->name() + " refuses it: " + why + ")");
    }
  }
  return e;
}

/// A full spec (KEY=NAME,...): the names must exist (InputError otherwise); a kernel that
/// refuses its region refuses the record.
Entry entry_for_spec(const std::string& spec, BackendKind backend, Physics physics,
                     const std::array<Region, kRegionCount>& regions, const FieldLayout& layout) {
  Entry e;
  e.record.spec = spec;
  // Empty boxes: resolve_kernels checks the grammar and the names, not can_run.
  std::array<Region, kRegionCount> no_boxes = regions;
  for (Region& r : no_boxes)
    r.box = Box{};
  e.kernels = resolve_kernels(spec, backend, physics, no_boxes, layout, "--kernel");
  for (int r = 0; r < kRegionCount; ++r) {
    const Region& region = regions[r];
    if (region.box.empty()) continue;
    const std::string why = e.kernels[r]->can_run(region, layout);
    if (!why.empty() && e.record.status == "ok") {
      e.record.status = "refused";
      e.record.reason =
          e.kernels[r]->name() + " cannot run region " + region_name(region.id) + ": " + why;
    }
  }
  return e;
}

/// An entry whose kernels lack `precision` on a region they update is refused, naming them.
void refuse_without_precision(Entry& e, Precision precision,
                              const std::array<Region, kRegionCount>& regions) {
  e.record.precision = precision;
  // `auto` is checked once tuned (the tuner takes the kernels with the problem's precision).
  if (precision == Precision::Float32 || e.record.status != "ok" || e.tune) return;
  for (int r = 0; r < kRegionCount; ++r) {
    if (regions[r].box.empty() || e.kernels[r]->handles_precision(precision)) continue;
    e.record.status = "refused";
    e.record.reason = "--precision " + std::string(precision_name(precision)) + ": " +
                      e.kernels[r]->name() + " (region " + region_name(regions[r].id) +
                      ") has no " + precision_name(precision) + " form";
    return;
  }
}

std::vector<Entry> plan_entries(const BenchOptions& o,
                                const std::array<Region, kRegionCount>& regions,
                                const FieldLayout& layout, const Fallback& fallback) {
  std::vector<Entry> out;
  for (const std::string& item : o.kernels) {
    if (item == "all") {
      int n = 0;
      for (const StencilKernel* k : kernel_registry().all()) {
        if (k->backend() != o.backend || k->physics() != o.physics) continue;
        out.push_back(entry_for_kernel(k, regions, layout, fallback));
        ++n;
      }
      if (n == 0)
        throw InputError(std::string("--kernel all: no ") + physics_name(o.physics) +
                         " kernel is registered for backend " + backend_name(o.backend));
    } else if (item == "auto") {
      Entry e;
      e.record.spec = "auto";
      e.tune = true;
      out.push_back(std::move(e));
    } else if (item.find('=') != std::string::npos) {
      out.push_back(entry_for_spec(item, o.backend, o.physics, regions, layout));
    } else {
      const StencilKernel* k = kernel_registry().find(item, o.backend, o.physics);
      if (!k)
        throw InputError("--kernel: no " + std::string(physics_name(o.physics)) +
                         " kernel named '" + item + "' for backend " + backend_name(o.backend) +
                         "; allowed: all, auto, " + joined_names(o.backend, o.physics) +
                         " (or a family name for its default tile, or a full spec "
                         "KEY=NAME,... with items separated by ';')");
      out.push_back(entry_for_kernel(k, regions, layout, fallback));
    }
  }
  return out;
}

/// The entries of every item at `precision`: those whose kernels lack it are refused.
std::vector<Entry> plan_entries(const BenchOptions& o,
                                const std::array<Region, kRegionCount>& regions,
                                const FieldLayout& layout, const Fallback& fallback,
                                Precision precision) {
  std::vector<Entry> out = plan_entries(o, regions, layout, fallback);
  for (Entry& e : out)
    refuse_without_precision(e, precision, regions);
  return out;
}

/// "gmem_3d_32x4x4" when all six slabs share a kernel, else "mixed"; "-" without layers.
std::string layers_text(const BenchRecord& r) {
  std::string name;
  for (int k = 1; k < kRegionCount; ++k) {
    if (r.kernels[k] == "-") continue;
    if (name.empty())
      name = r.kernels[k];
    else if (name != r.kernels[k])
      return "mixed";
  }
  return name.empty() ? "-" : name;
}

/// A report with the run's options filled in and the start time.
BenchReport new_report(const BenchOptions& o) {
  BenchReport rep;
  rep.date = utc_now();
  rep.backend = backend_name(o.backend);
  rep.physics = physics_name(o.physics);
  rep.steps = o.steps;
  rep.warmup = o.warmup;
  rep.repeats = o.repeats;
  return rep;
}

/// The bytes a step of record `r` must move per point, and the floor that makes at the report's
/// measured bandwidth.
double record_bytes_per_point(const BenchReport& rep, const BenchRecord& r) {
  return r.bytes_per_point > 0 ? r.bytes_per_point : rep.bytes_per_point;
}
double record_floor_ms(const BenchReport& rep, const BenchRecord& r) {
  return rep.bytes_per_point > 0
             ? rep.floor_ms * record_bytes_per_point(rep, r) / rep.bytes_per_point
             : rep.floor_ms;
}

/// Time one configuration on a backend: warm-up, then the repeats, each from zero fields.
void time_entry(Backend& backend, Entry& e, const BenchOptions& o, const BenchReport& rep,
                const std::function<void(const std::string&)>& log) {
  BenchRecord& r = e.record;
  backend.set_kernels(e.kernels);
  backend.reset();
  if (o.warmup > 0) backend.time_steps(0, o.warmup);
  for (int rep_i = 0; rep_i < o.repeats; ++rep_i) {
    backend.reset();
    r.ms_all.push_back(backend.time_steps(0, o.steps) / o.steps);
  }
  // What the backend settled on (the CPU backend's pass may be dropped by its trial).
  r.pass_steps = backend.pass_steps();
  if (r.pass_steps > 1)
    r.notes.push_back("steps in passes of up to " + std::to_string(r.pass_steps) +
                      " over memory (MINIMOD_CPU_PASS_STEPS)");
  const auto points = static_cast<double>(rep.grid.points());
  r.ms = median_of(r.ms_all);
  const double s = r.ms * 1e-3;
  r.gpts_per_s = s > 0 ? points / s / 1e9 : 0.0;
  r.effective_gbps = s > 0 ? record_bytes_per_point(rep, r) * points / s / 1e9 : 0.0;
  r.percent_of_floor = r.ms > 0 ? record_floor_ms(rep, r) / r.ms * 100.0 : 0.0;
  log("bench: " + r.spec + ": " + fmt("%.3f", r.ms) + " ms per step (" +
      fmt("%.1f", r.percent_of_floor) + "% of the floor)");
}

/// The kernels of an `auto` entry: autotune_kernels on the problem set up on `backend` (either
/// equation), with the choice noted in the record.
void tune_entry(Backend& backend, const Problem& problem, Entry& e, const BenchOptions& o,
                const std::function<void(const std::string&)>& log) {
  if (!e.tune) return;
  AutotuneOptions ao;
  ao.cache_path = o.autotune_cache;
  const AutotuneResult t = autotune_kernels(backend, problem, o.physics, ao, log);
  e.kernels = t.kernels;
  e.record.notes.push_back(std::string(t.from_cache ? "cached choice " : "tuned choice ") + t.spec);
  for (int k = 0; k < kRegionCount; ++k)
    e.record.kernels[k] = problem.regions[k].box.empty() ? "-" : e.kernels[k]->name();
}

/// Run every entry on `backend`: refused entries are recorded as they are, the others timed
/// (`prepare(entry)` first: autotuning for `auto`, which may refuse it; `measured(entry)` after)
/// on `backend`, which
/// may be null when every entry is refused; a runtime error fails that entry only. The report is
/// passed to `on_record` after each entry.
template <class Prepare>
void run_entries(Backend* backend, std::vector<Entry>& entries,
                 const std::array<Region, kRegionCount>& regions, const BenchOptions& o,
                 BenchReport& rep, const std::function<void(const std::string&)>& log,
                 const std::function<void(const BenchReport&)>& on_record, Prepare&& prepare,
                 const std::function<void(Entry&)>& measured = {}) {
  for (Entry& e : entries) {
    BenchRecord& r = e.record;
    for (int k = 0; k < kRegionCount; ++k)
      r.kernels[k] = regions[k].box.empty() || !e.kernels[k] ? "-" : e.kernels[k]->name();
    if (r.status != "ok") {
      log("bench: " + r.spec + ": refused: " + r.reason);
    } else {
      try {
        prepare(e);
        if (r.status == "ok") {
          time_entry(*backend, e, o, rep, log);
          if (measured) measured(e);
        } else {
          log("bench: " + r.spec + ": refused: " + r.reason);
        }
      } catch (const RuntimeFailure& err) {
        r.status = "failed";
        r.reason = err.what();
        r.ms_all.clear();
        log("bench: " + r.spec + ": failed: " + r.reason);
      }
    }
    rep.records.push_back(r);
    if (on_record) on_record(rep);
  }
}

} // namespace

bool BenchReport::any_failed() const {
  return std::any_of(records.begin(), records.end(),
                     [](const BenchRecord& r) { return r.status == "failed"; });
}

CLI::App* add_bench_subcommand(CLI::App& app, BenchArgs& a) {
  CLI::App* b = app.add_subcommand(
      "bench", "Time kernels on the seeds' benchmark problem against the measured memory floor");
  b->add_option("--kernel", a.kernel,
                "all (every registered kernel), auto (tune, then time the choice), or a list: "
                "names separated by ',' or ';', full specs (inner=..,pml=..) separated by ';'")
      ->capture_default_str();
  auto* grid = b->add_option("--grid", a.grid, "N: an N x N x N grid (default 1000)")
                   ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  auto* shape = b->add_option("--shape", a.shape, "NXxNYxNZ grid, e.g. 1000x1000x500");
  grid->excludes(shape);
  b->add_option("--steps", a.steps, "Timed steps per repeat")->capture_default_str();
  b->add_option("--warmup", a.warmup, "Untimed steps before each kernel's repeats")
      ->capture_default_str();
  b->add_option("--repeats", a.repeats, "Timed repeats per kernel (>= 3; the median counts)")
      ->capture_default_str();
  b->add_option("--physics", a.physics,
                "acoustic, or tti (the seeds' TTI problem: epsilon 0.2, delta 0.1, tilt 30, "
                "azimuth 20 degrees; default grid 900)")
      ->capture_default_str();
  b->add_flag("--no-azimuth", a.no_azimuth,
              "tti: azimuth 0, so that no axis_y array is stored or read (the 36 B/point floor)");
  b->add_option("--boundary", a.boundary,
                "minimod (the seeds' layer) or cpml (the convolutional PML, docs/physics.md)")
      ->capture_default_str();
  b->add_option("--precision", a.precision,
                "float32, float16 (16-bit storage of the fields and the medium, float32 "
                "arithmetic; acoustic, Minimod's layer), or both: each kernel at float32 then at "
                "float16 on the same problem and steps, with the relative L2 difference of the "
                "final wavefield and the traces")
      ->capture_default_str();
  b->add_option("--json", a.json, "Write one JSON record per kernel to this file");
  b->add_option("--backend", a.backend,
                "gpu (this binary's GPU backend: cuda or hip), cuda, hip or cpu")
      ->capture_default_str();
  b->add_option("--layer", a.layer,
                "Absorbing layer points on every face (0: none; default: the seeds' 27, ntaper "
                "vmax / fmax / h)");
  return b;
}

std::array<int, 3> parse_shape(const std::string& text, const std::string& what) {
  std::array<int, 3> out{};
  std::istringstream in(text);
  std::string part;
  int n = 0;
  const std::string allowed = "; allowed: NXxNYxNZ with three positive integers, e.g. 1000x800x600";
  while (std::getline(in, part, 'x')) {
    if (n == 3 || part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9)
      throw InputError(what + ": '" + text + "' is not a grid shape" + allowed);
    out[n++] = std::stoi(part);
  }
  if (n != 3 || text.back() == 'x')
    throw InputError(what + ": '" + text + "' is not a grid shape" + allowed);
  for (const int v : out)
    if (v <= 0) throw InputError(what + ": '" + text + "' has a zero extent" + allowed);
  return out;
}

std::vector<std::string> split_kernel_list(const std::string& text) {
  const bool specs = text.find('=') != std::string::npos;
  std::vector<std::string> out;
  std::string item;
  for (const char c : text + ";") {
    if (c == ';' || (c == ',' && !specs)) {
      item = trim(item);
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

BenchOptions bench_options(const BenchArgs& a) {
  BenchOptions o;
  o.kernels = split_kernel_list(a.kernel);
  if (o.kernels.empty())
    throw InputError("--kernel: '" + a.kernel + "' names no kernel; allowed: all, auto, a list");
  if (a.grid < 0)
    throw InputError("--grid: " + std::to_string(a.grid) + "; allowed: a positive integer");
  if (a.grid > 0 && !a.shape.empty()) throw InputError("--grid and --shape: give one of them");
  if (a.grid > 0) o.shape = {a.grid, a.grid, a.grid};
  if (!a.shape.empty()) o.shape = parse_shape(a.shape, "--shape");
  if (a.layer < -1)
    throw InputError("--layer: " + std::to_string(a.layer) +
                     "; allowed: a width >= 0 in points (0: no layer)");
  o.layer = a.layer;
  const int layer = bench_layer_width(a.layer);
  for (int ax = 0; ax < 3; ++ax)
    if (o.shape[ax] <= 2 * layer)
      throw InputError(std::string(a.shape.empty() ? "--grid" : "--shape") + ": " +
                       std::to_string(o.shape[ax]) + " points along " + "xyz"[ax] +
                       " leave no inner region between the benchmark's " + std::to_string(layer) +
                       "-point layers; allowed: > " + std::to_string(2 * layer));
  if (a.steps <= 0)
    throw InputError("--steps: " + std::to_string(a.steps) + "; allowed: a positive integer");
  if (a.warmup < 0) throw InputError("--warmup: " + std::to_string(a.warmup) + "; allowed: >= 0");
  if (a.repeats < kMinRepeats)
    throw InputError("--repeats: " + std::to_string(a.repeats) + "; allowed: >= " +
                     std::to_string(kMinRepeats) + " (the median of fewer says little)");
  o.steps = a.steps;
  o.warmup = a.warmup;
  o.repeats = a.repeats;
  if (a.physics == "acoustic")
    o.physics = Physics::Acoustic;
  else if (a.physics == "tti")
    o.physics = Physics::Tti;
  else
    throw InputError("--physics: '" + a.physics + "'; allowed: acoustic, tti");
  if (a.no_azimuth && o.physics != Physics::Tti)
    throw InputError("--no-azimuth: only with --physics tti");
  o.tti_azimuth = !a.no_azimuth;
  // `gpu` (the default) is the binary's GPU backend, whichever it is.
  if (a.backend == "gpu" || a.backend == backend_name(kGpuBackend))
    o.backend = kGpuBackend;
  else if (a.backend == "cpu")
    o.backend = BackendKind::Cpu;
  else
    throw InputError("--backend: '" + a.backend + "'; allowed: gpu, " + backend_name(kGpuBackend) +
                     " (the GPU backend of this binary), cpu");
  if (a.boundary == "minimod")
    o.boundary = BoundaryType::Minimod;
  else if (a.boundary == "cpml")
    o.boundary = BoundaryType::Cpml;
  else
    throw InputError("--boundary: '" + a.boundary + "'; allowed: minimod, cpml");
  if (a.precision == "both")
    o.precisions = {Precision::Float32, Precision::Float16};
  else if (const std::optional<Precision> p = parse_precision(a.precision))
    o.precisions = {*p};
  else
    throw InputError("--precision: '" + a.precision + "'; allowed: " + precision_choices() +
                     ", both (float32 and float16 on the same problem, compared)");
  if (o.precisions.back() == Precision::Float16) {
    // What the 16-bit storage does not have yet (docs/survey.md, `precision`).
    if (o.physics == Physics::Tti)
      throw InputError("--precision " + a.precision +
                       ": float16 is not allowed with --physics tti: 16-bit storage is "
                       "implemented for the acoustic equation only; allowed: --precision float32");
    if (o.boundary == BoundaryType::Cpml)
      throw InputError("--precision " + a.precision +
                       ": float16 is not allowed with --boundary cpml: 16-bit storage has "
                       "Minimod's layer only; allowed: --precision float32, or --boundary minimod");
  }
  if (o.physics == Physics::Tti && a.grid == 0 && a.shape.empty()) o.shape = {900, 900, 900};
  o.json_path = a.json;
  return o;
}

namespace {

/// The TTI benchmark: the seeds' problem (docs/physics.md section 7) with a uniform TTI medium,
/// every chosen TTI kernel timed against the TTI floor of docs/tti.md at the stream bandwidth
/// measured in the same run.
BenchReport run_tti_bench(const BenchOptions& o, const std::function<void(const std::string&)>& log,
                          const std::function<void(const BenchReport&)>& on_record) {
  BenchReport rep = new_report(o);
  std::unique_ptr<Backend> backend = make_backend(o.backend, Physics::Tti);
  rep.device = backend->device_name();
  const bool cuda = o.backend == BackendKind::Cuda;

  Grid g;
  g.nx = o.shape[0];
  g.ny = o.shape[1];
  g.nz = o.shape[2];
  g.dx = g.dy = g.dz = kSpacing;
  const int steps = std::max(o.steps, std::max(o.warmup, 1));
  TtiProblem problem;
  TtiPlan plan;
  {
    constexpr double kDeg = 3.14159265358979323846 / 180.0;
    TtiModel m;
    const std::size_t n = g.points();
    m.vp.assign(n, static_cast<float>(kVelocity));
    m.epsilon.assign(n, kTtiEpsilon);
    m.delta.assign(n, kTtiDelta);
    m.theta.assign(n, static_cast<float>(kTtiTiltDegrees * kDeg));
    if (o.tti_azimuth) m.phi.assign(n, static_cast<float>(kTtiAzimuthDegrees * kDeg));
    TtiPlanOptions po;
    po.steps = steps;
    po.cfl = kCfl;
    po.vmax = kVmax;
    // The seeds' 27-point layer (ntaper vmax / fmax / h), not widened for the faster P wave.
    po.layer_width = bench_layer_width(o.layer);
    plan = make_tti_plan(g, m, po);
    const int ci = g.nx / 2, cj = g.ny / 2, ck = g.nz / 2;
    WaveletSpec w;
    w.kind = WaveletSpec::Kind::Minimod;
    w.fmax = kFmax;
    const TtiSource src{Vec3{ci * kSpacing, cj * kSpacing, ck * kSpacing},
                        sample_wavelet(w, plan.dt, plan.steps, "bench source"), Injection::Minimod};
    const Vec3 rcv{std::min(ci + kReceiverOffset, g.nx - 1) * kSpacing, cj * kSpacing,
                   ck * kSpacing};
    problem = build_tti_problem(plan, m, {src}, {rcv}, Interpolation::Trilinear);
    if (o.boundary == BoundaryType::Cpml) {
      BoundarySpec cpml;
      cpml.type = BoundaryType::Cpml;
      use_tti_cpml(problem, plan, cpml_params(cpml, kFmax));
    }
  }
  rep.grid = g;
  rep.layer = plan.layer;
  rep.boundary = problem.boundary;
  rep.dt = plan.dt;

  // The TTI floor (docs/tti.md): 38 B a point with azimuth, 36 without, eta in the layer, and
  // phi_p where the layer's medium is elliptic (none in this anelliptic medium).
  const auto points = static_cast<std::int64_t>(g.points());
  rep.bytes_per_point = tti_floor_bytes_per_point(problem);

  const StencilKernel* fallback = kernel_registry().find(
      o.backend == BackendKind::Cpu ? default_kernel_name(o.backend) : "gmem_3d", o.backend,
      o.physics);
  if (!fallback)
    throw RuntimeFailure(std::string("this build has no ") + backend_name(o.backend) +
                         " TTI kernels");
  std::vector<Entry> entries =
      plan_entries(o, problem.regions, problem.layout, Fallback{fallback, fallback});
  log("bench: " + rep.device + ", tti " + (problem.has_azimuth() ? "with" : "without") +
      " azimuth, " + std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
      std::to_string(g.nz) + " (layer " + std::to_string(plan.layer.x_lo) + "), " +
      std::to_string(entries.size()) + " configurations; measuring the memory floor");
  rep.floor = cuda ? measure_gpu_memory_floor(points) : measure_host_memory_floor(points);
  rep.floor_ms = rep.bytes_per_point * static_cast<double>(points) / (rep.floor.stream_gbps * 1e6);
  log("bench: floor " + fmt("%.3f", rep.floor_ms) + " ms per step at " +
      fmt("%.1f", rep.bytes_per_point) + " B/point (stream " + fmt("%.1f", rep.floor.stream_gbps) +
      " GB/s)");
  backend->setup(
      problem, RegionKernels{fallback, fallback, fallback, fallback, fallback, fallback, fallback});
  // The host copy of the medium (tens of GB at 900^3) is not needed any more by a GPU backend;
  // the problem's shape stays for autotuning. The CPU backend reads it at every step.
  if (cuda) {
    for (auto* a : {&problem.aniso, &problem.axis_xz})
      std::vector<std::uint32_t>().swap(*a);
    std::vector<std::int16_t>().swap(problem.axis_y);
    for (auto* a : {&problem.vp2dt2, &problem.eta})
      std::vector<float>().swap(*a);
  }
  run_entries(backend.get(), entries, problem.regions, o, rep, log, on_record,
              [&](Entry& e) { tune_entry(*backend, problem, e, o, log); });
  return rep;
}

/// ||x - ref|| / ||ref|| over every value, in double; NaN for a zero `ref` or unequal sizes.
double relative_l2(const std::vector<float>& x, const std::vector<float>& ref) {
  if (x.size() != ref.size()) return std::nan("");
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(ref[i]);
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::nan("");
}

/// The final wavefield and traces of a timed entry (--precision both compares them).
struct EntryResult {
  std::vector<float> field, traces;
};

/// Refuse every entry still ok, saying `why` (a precision the backend lacks).
void refuse_all(std::vector<Entry>& entries, const std::string& why) {
  for (Entry& e : entries) {
    if (e.record.status != "ok") continue;
    e.record.status = "refused";
    e.record.reason = why;
  }
}

} // namespace

BenchReport run_bench(const BenchOptions& o, const std::function<void(const std::string&)>& log_fn,
                      const std::function<void(const BenchReport&)>& on_record) {
  auto log = [&](const std::string& line) {
    if (log_fn) log_fn(line);
  };
  if (o.physics == Physics::Tti) return run_tti_bench(o, log, on_record);
  BenchReport rep = new_report(o);

  // The device first: without one there is nothing to wait for.
  std::unique_ptr<Backend> backend = make_backend(o.backend, Physics::Acoustic);
  rep.device = backend->device_name();

  // The problem, on the host: enough source samples for the longest run of consecutive steps.
  // Each precision's problem is built from the same survey, plan and velocity: the solver's
  // problem building stores the medium as the survey's precision asks (build_acoustic_problem).
  Survey survey =
      benchmark_survey(o.shape, std::max(o.steps, std::max(o.warmup, 1)), o.layer, o.boundary);
  survey.precision_loc = SourceLoc{"--precision", 0, ""};
  Grid g;
  g.nx = o.shape[0];
  g.ny = o.shape[1];
  g.nz = o.shape[2];
  g.dx = g.dy = g.dz = kSpacing;
  const std::vector<float> velocity = build_velocity(survey.model, g);
  const Plan plan = make_plan(survey, velocity, 0);
  auto build = [&](Precision precision) {
    survey.precision = precision;
    return build_acoustic_problem(survey, plan, velocity);
  };
  AcousticProblem problem = build(o.precisions.front());
  rep.grid = problem.grid;
  rep.layer = problem.layer;
  rep.boundary = problem.boundary;
  rep.dt = problem.dt;
  const std::array<Region, kRegionCount> regions = problem.regions;

  const StencilKernel* default_kernel =
      kernel_registry().find(default_kernel_name(o.backend), o.backend, o.physics);
  if (!default_kernel)
    throw RuntimeFailure(std::string("no default kernel for backend ") + backend_name(o.backend));
  // Names are checked before the slow parts, so that a typo costs nothing: every precision's
  // entries are planned here (the precision changes neither the regions nor the layout).
  std::vector<Fallback> fallbacks;
  std::vector<std::vector<Entry>> passes;
  for (const Precision p : o.precisions) {
    fallbacks.push_back(fallback_kernels(default_kernel, o.backend, o.physics, p));
    passes.push_back(plan_entries(o, regions, problem.layout, fallbacks.back(), p));
    for (Entry& e : passes.back())
      if (p == Precision::Float16) e.record.bytes_per_point = kAcousticBytesPerPoint16;
  }

  const auto points = static_cast<std::int64_t>(problem.grid.points());
  log("bench: " + rep.device + ", " + std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" +
      std::to_string(g.nz) + " (layer " + std::to_string(problem.layer.x_lo) + ", " +
      boundary_type_name(problem.boundary) + "), " +
      std::to_string(passes.front().size() * passes.size()) +
      " configurations; measuring the memory floor");
  // Before the backend allocates: the probe's arrays and the fields are never held together.
  rep.floor = o.backend == BackendKind::Cpu ? measure_host_memory_floor(points)
                                            : measure_gpu_memory_floor(points);
  rep.floor_ms = rep.floor.floor_ms(points);
  log("bench: floor " + fmt("%.3f", rep.floor_ms) + " ms per step (stream " +
      fmt("%.1f", rep.floor.stream_gbps) + " GB/s, copy " + fmt("%.1f", rep.floor.copy_gbps) +
      " GB/s)");

  // --precision both: the float32 results of each item whose float16 entry is timed (held on
  // the host until it is: a field a kernel, so only those).
  const bool compare = o.precisions.size() > 1;
  std::vector<std::optional<EntryResult>> float32_results(passes.front().size());
  for (std::size_t pass = 0; pass < passes.size(); ++pass) {
    const Precision precision = o.precisions[pass];
    std::vector<Entry>& entries = passes[pass];
    if (pass > 0) {
      // The backend reads its problem while it steps: release both before the next is built.
      backend.reset();
      problem = AcousticProblem();
      problem = build(precision);
      backend = make_backend(o.backend, Physics::Acoustic);
    }
    const std::string name = precision_name(precision);
    const bool any = std::any_of(entries.begin(), entries.end(),
                                 [](const Entry& e) { return e.record.status == "ok"; });
    if (any) {
      try {
        backend->setup(problem, fallbacks[pass].kernels(regions));
      } catch (const std::exception& e) {
        // A backend without float16 refuses it before any step; float32's failures stop the run.
        if (precision == Precision::Float32) throw;
        refuse_all(entries, "--precision " + name + ": the " + backend_name(o.backend) +
                                " backend refuses it: " + e.what());
      }
    }
    std::size_t index = 0;
    const auto measured = [&](Entry& e) {
      if (!compare ||
          (precision == Precision::Float32 && passes.back()[index].record.status != "ok"))
        return;
      EntryResult result;
      backend->fetch_field(0, result.field);
      backend->fetch_traces(result.traces);
      if (precision == Precision::Float32) {
        float32_results[index] = std::move(result);
        return;
      }
      PrecisionDifference d{std::nan(""), std::nan("")};
      if (float32_results[index]) {
        d.field_rel_l2 = relative_l2(result.field, float32_results[index]->field);
        d.traces_rel_l2 = relative_l2(result.traces, float32_results[index]->traces);
        float32_results[index].reset();
      }
      e.record.float32_difference = d;
      log("bench: " + e.record.spec + ": float16 against float32: wavefield " +
          fmt("%.3g", d.field_rel_l2) + ", traces " + fmt("%.3g", d.traces_rel_l2) +
          " relative L2");
    };
    // `index` follows the entry run_entries is at, refused ones included.
    const auto prepare = [&](Entry& e) {
      index = static_cast<std::size_t>(&e - entries.data());
      if (!e.tune) return;
      tune_entry(*backend, problem, e, o, log);
      e.tune = false; // its kernels are chosen: checked as any item's
      refuse_without_precision(e, precision, regions);
    };
    run_entries(any ? backend.get() : nullptr, entries, regions, o, rep, log, on_record, prepare,
                measured);
  }
  return rep;
}

std::string bench_table(const BenchReport& rep) {
  std::ostringstream o;
  o << "minimod-gpu bench: " << rep.device << " (" << rep.backend << "), " << rep.physics << ", "
    << rep.grid.nx << "x" << rep.grid.ny << "x" << rep.grid.nz << " (layer " << rep.layer.x_lo
    << "), " << rep.steps << " steps x " << rep.repeats << " repeats after " << rep.warmup
    << " warm-up steps\n";
  o << "memory floor: stream " << fmt("%.1f", rep.floor.stream_gbps) << " GB/s, copy "
    << fmt("%.1f", rep.floor.copy_gbps) << " GB/s (" << rep.floor.points << " points, median of "
    << rep.floor.repeats << ") -> " << fmt("%.3f", rep.floor_ms) << " ms per step at "
    << fmt("%.1f", rep.bytes_per_point) << " B/point\n\n";
  std::size_t wk = 6, wi = 5, wl = 6;
  for (const auto& r : rep.records) {
    wk = std::max(wk, r.spec.size());
    wi = std::max(wi, r.kernels[0].size());
    wl = std::max(wl, layers_text(r).size());
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-9s  %-*s  %-*s  %9s  %19s  %7s  %7s  %7s\n",
                static_cast<int>(wk), "kernel", "precision", static_cast<int>(wi), "inner",
                static_cast<int>(wl), "layers", "ms/step", "min..max", "Gpts/s", "GB/s", "% floor");
  o << line;
  for (const auto& r : rep.records) {
    if (r.status != "ok") {
      std::snprintf(line, sizeof line, "%-*s  %-9s  %-*s  %-*s  %s\n", static_cast<int>(wk),
                    r.spec.c_str(), precision_name(r.precision), static_cast<int>(wi),
                    r.kernels[0].c_str(), static_cast<int>(wl), layers_text(r).c_str(),
                    r.status.c_str());
      o << line;
      continue;
    }
    const auto [lo, hi] = std::minmax_element(r.ms_all.begin(), r.ms_all.end());
    const std::string range = fmt("%.3f", *lo) + ".." + fmt("%.3f", *hi);
    std::snprintf(line, sizeof line, "%-*s  %-9s  %-*s  %-*s  %9.3f  %19s  %7.2f  %7.1f  %7.1f\n",
                  static_cast<int>(wk), r.spec.c_str(), precision_name(r.precision),
                  static_cast<int>(wi), r.kernels[0].c_str(), static_cast<int>(wl),
                  layers_text(r).c_str(), r.ms, range.c_str(), r.gpts_per_s, r.effective_gbps,
                  r.percent_of_floor);
    o << line;
  }
  bool compared = false;
  for (const auto& r : rep.records) {
    if (!r.float32_difference) continue;
    if (!compared) o << "\nfloat16 against float32 (relative L2, same problem and steps):\n";
    compared = true;
    o << "  " << r.spec << ": final wavefield " << fmt("%.3g", r.float32_difference->field_rel_l2)
      << ", traces " << fmt("%.3g", r.float32_difference->traces_rel_l2) << "\n";
  }
  bool header = false;
  for (const auto& r : rep.records) {
    if (r.notes.empty() && r.reason.empty()) continue;
    if (!header) o << "\nnotes:\n";
    header = true;
    if (!r.reason.empty()) o << "  " << r.spec << ": " << r.status << ": " << r.reason << "\n";
    for (const auto& n : r.notes)
      o << "  " << r.spec << ": " << n << "\n";
  }
  return o.str();
}

std::string bench_json(const BenchReport& rep) {
  using Json = nlohmann::ordered_json;
  Json layer = Json::array();
  Json width = Json::object();
  for (int a = 0; a < 3; ++a) {
    for (const bool hi : {false, true}) {
      layer.push_back(rep.layer.on(a, hi));
      width[std::string(1, "xyz"[a]) + (hi ? "+" : "-")] = rep.layer.on(a, hi);
    }
  }
  const std::string boundary = rep.layer.any() ? boundary_type_name(rep.boundary) : "none";
  Json records = Json::array();
  for (const auto& r : rep.records) {
    const bool ok = r.status == "ok";
    Json kernels = Json::object();
    for (int k = 0; k < kRegionCount; ++k)
      kernels[region_name(static_cast<RegionId>(k))] = r.kernels[k];
    Json j;
    j["gpu"] = rep.device;
    j["backend"] = rep.backend;
    j["physics"] = rep.physics;
    j["precision"] = precision_name(r.precision);
    j["grid"] = {rep.grid.nx, rep.grid.ny, rep.grid.nz};
    j["layer"] = layer;
    j["boundary"] = boundary;
    j["boundary_width"] = width;
    j["spacing"] = rep.grid.dx;
    j["dt"] = rep.dt;
    j["steps"] = rep.steps;
    j["warmup_steps"] = rep.warmup;
    j["repeats"] = rep.repeats;
    j["kernel"] = r.spec;
    j["status"] = r.status;
    j["reason"] = r.reason.empty() ? Json() : Json(r.reason);
    j["kernels"] = kernels;
    j["pass_steps"] = r.pass_steps;
    j["notes"] = r.notes;
    j["ms_per_step"] = ok ? Json(r.ms) : Json();
    j["ms_per_step_all"] = r.ms_all;
    j["floor_ms_per_step"] = record_floor_ms(rep, r);
    j["copy_gbps"] = rep.floor.copy_gbps;
    j["stream_gbps"] = rep.floor.stream_gbps;
    j["floor_points"] = rep.floor.points;
    j["gpts_per_s"] = ok ? Json(r.gpts_per_s) : Json();
    j["effective_gbps"] = ok ? Json(r.effective_gbps) : Json();
    j["percent_of_floor"] = ok ? Json(r.percent_of_floor) : Json();
    j["bytes_per_point"] = record_bytes_per_point(rep, r);
    // --precision both, float16 records: how far they are from float32 (NaN -> null).
    j["float32_difference"] = r.float32_difference
                                  ? Json{{"field_rel_l2", r.float32_difference->field_rel_l2},
                                         {"traces_rel_l2", r.float32_difference->traces_rel_l2}}
                                  : Json();
    j["date"] = rep.date;
    j["commit"] = kGitCommit;
    records.push_back(std::move(j));
  }
  Json doc;
  doc["program"] = "minimod-gpu bench";
  doc["version"] = kProgramVersion;
  doc["commit"] = kGitCommit;
  doc["date"] = rep.date;
  doc["records"] = std::move(records);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

int cmd_bench(const BenchArgs& args) {
  const BenchOptions o = bench_options(args);
  auto partial = [&](const BenchReport& so_far) {
    if (!o.json_path.empty()) write_file_durably(o.json_path, bench_json(so_far));
  };
  const BenchReport rep = run_bench(
      o, [](const std::string& line) { std::cerr << line << std::endl; }, partial);
  std::cout << bench_table(rep) << std::flush;
  if (!o.json_path.empty()) {
    write_file_durably(o.json_path, bench_json(rep));
    std::cout << "json: " << o.json_path << "\n";
  }
  return rep.any_failed() ? kExitRuntime : kExitOk;
}

} // namespace minimod
