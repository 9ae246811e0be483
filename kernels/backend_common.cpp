#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/tti_cpml.hpp"
#include "kernels/tti_problem.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace minimod {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

std::size_t AcousticProblem::device_bytes() const {
  const AcousticProblem& p = *this;
  const std::size_t field = static_cast<std::size_t>(p.layout.size) * sizeof(float);
  // float32: u, v, vp2dt2 always; phi and eta only with an absorbing layer. float16
  // (core/precision.hpp): u^n, u^{n+1}, the step d and the medium's codes in 2 bytes, phi in 2 and
  // eta in 4 with Minimod's layer.
  const std::size_t points = static_cast<std::size_t>(p.layout.size);
  const std::size_t fields = p.precision == Precision::Float16 ? points * (p.eta.empty() ? 8 : 14)
                                                               : field * (p.eta.empty() ? 3 : 5);
  // The C-PML: its memory variables, profile and taps (kernels/gpu/cpml_gpu.cuh).
  const std::size_t cpml =
      p.boundary == BoundaryType::Cpml ? sizeof(float) * cpml_device_floats(p.grid, p.layer) : 0;
  const std::size_t taps =
      (p.sources.index.size() + p.receivers.index.size()) * (sizeof(std::int64_t) + sizeof(float)) +
      (p.sources.begin.size() + p.receivers.begin.size()) * sizeof(std::int64_t);
  const std::size_t samples = p.source_samples.size() * sizeof(float);
  const std::size_t traces =
      p.receivers.owners() * (static_cast<std::size_t>(p.steps) + 1) * sizeof(float);
  return fields + cpml + taps + samples + traces;
}

void pad_field(const FieldLayout& l, const float* dense, float* padded) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < l.nz; ++k) {
    for (int j = 0; j < l.ny; ++j) {
      const float* src = dense + (static_cast<std::size_t>(k) * l.ny + j) * l.nx;
      float* dst = padded + l.index(0, j, k);
      for (int i = 0; i < l.nx; ++i)
        dst[i] = src[i];
    }
  }
}

FiniteScan scan_finite(const FieldLayout& l, const float* padded) {
  std::uint64_t count = 0, first = 0, max_key = 0;
  const std::int64_t rows = static_cast<std::int64_t>(l.ny) * l.nz;
#pragma omp parallel for schedule(static) reduction(+ : count) reduction(max : first, max_key)
  for (std::int64_t row = 0; row < rows; ++row) {
    const int j = static_cast<int>(row % l.ny), k = static_cast<int>(row / l.ny);
    const float* line = padded + l.index(0, j, k);
    const std::int64_t d0 = row * l.nx;
    for (int i = 0; i < l.nx; ++i)
      finite_scan_point(line[i], d0 + i, count, first, max_key);
  }
  return decode_finite_scan(count, first, max_key, rows * l.nx);
}

void unpad_field(const FieldLayout& l, const float* padded, float* dense) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < l.nz; ++k) {
    for (int j = 0; j < l.ny; ++j) {
      const float* src = padded + l.index(0, j, k);
      float* dst = dense + (static_cast<std::size_t>(k) * l.ny + j) * l.nx;
      for (int i = 0; i < l.nx; ++i)
        dst[i] = src[i];
    }
  }
}

std::vector<std::string> wavefield_names(Physics physics) {
  if (physics == Physics::Tti) return {"p", "q"};
  return {"u"};
}

namespace {

/// Append to `out` the pieces of `box` outside `core`, as make_regions splits a grid: whole xy
/// planes above and below the core, then y slabs of the remaining z range, then x slabs.
void add_outside(const Box& box, const Box& core, RegionId id, std::vector<Region>& out) {
  auto add = [&](const Box& b) {
    if (!b.empty()) out.push_back(Region{id, b});
  };
  const int z0 = std::max(box.z0, std::min(core.z0, box.z1));
  const int z1 = std::min(box.z1, std::max(core.z1, z0));
  add(Box{box.x0, box.x1, box.y0, box.y1, box.z0, z0});
  add(Box{box.x0, box.x1, box.y0, box.y1, z1, box.z1});
  const int y0 = std::max(box.y0, std::min(core.y0, box.y1));
  const int y1 = std::min(box.y1, std::max(core.y1, y0));
  add(Box{box.x0, box.x1, box.y0, y0, z0, z1});
  add(Box{box.x0, box.x1, y1, box.y1, z0, z1});
  const int x0 = std::max(box.x0, std::min(core.x0, box.x1));
  const int x1 = std::min(box.x1, std::max(core.x1, x0));
  add(Box{box.x0, x0, y0, y1, z0, z1});
  add(Box{x1, box.x1, y0, y1, z0, z1});
}

} // namespace

std::vector<Region> step_part_regions(const std::array<Region, kRegionCount>& regions,
                                      const Grid& grid, const Subdomain& subdomain, StepPart part) {
  const auto& n = subdomain.neighbour;
  const Box core{n[0] ? kHalo : 0, grid.nx - (n[1] ? kHalo : 0),
                 n[2] ? kHalo : 0, grid.ny - (n[3] ? kHalo : 0),
                 n[4] ? kHalo : 0, grid.nz - (n[5] ? kHalo : 0)};
  std::vector<Region> out;
  for (const Region& r : regions) {
    if (r.box.empty()) continue;
    const Box& b = r.box;
    const Box inside{std::max(b.x0, core.x0), std::min(b.x1, core.x1), std::max(b.y0, core.y0),
                     std::min(b.y1, core.y1), std::max(b.z0, core.z0), std::min(b.z1, core.z1)};
    if (part == StepPart::Interior) {
      if (!inside.empty()) out.push_back(Region{r.id, inside});
    } else if (inside.empty()) {
      out.push_back(r);
    } else {
      add_outside(b, inside, r.id, out);
    }
  }
  return out;
}

std::unique_ptr<Backend> make_backend(BackendKind kind, Physics physics) {
  if (kind == BackendKind::Cpu) return make_cpu_backend();
#if defined(MINIMOD_HAVE_GPU)
  if (kind != kGpuBackend)
    throw RuntimeFailure(std::string("this minimod-gpu was built with the ") +
                         backend_name(kGpuBackend) + " backend, not " + backend_name(kind) +
                         " (one GPU backend a binary); use --backend " + backend_name(kGpuBackend) +
                         " or cpu");
#else
  if (kind == BackendKind::Hip)
    throw RuntimeFailure("this minimod-gpu was built without HIP (configure with -DMINIMOD_HIP=ON "
                         "-DMINIMOD_CUDA=OFF on a machine with hipcc); use --backend cpu");
#endif
  return make_cuda_backend(physics);
}

#if !defined(MINIMOD_HAVE_GPU)
std::unique_ptr<Backend> make_cuda_backend(Physics) {
  throw RuntimeFailure("this minimod-gpu was built without CUDA (configure with -DMINIMOD_CUDA=ON "
                       "on a machine with nvcc); use --backend cpu");
}

bool cuda_device_available(std::string* why) {
  if (why) *why = "this minimod-gpu was built without a GPU backend";
  return false;
}

std::optional<GpuMemory> cuda_device_memory() {
  return std::nullopt;
}

#endif

std::size_t tti_array_bytes(std::int64_t padded_points, bool azimuth, bool layer, bool phi) {
  const std::size_t field = static_cast<std::size_t>(padded_points) * sizeof(float);
  // p, q and their previous steps, vp2dt2, the 16-bit pairs (2 delta, 2 (epsilon - delta)) and
  // (n_x, n_z) (a float's size each), n_y (half of one) with azimuth, eta with a layer, phi_p
  // where the layer drives it.
  const std::size_t arrays = 4 + 1 + 2 + (layer ? 1 : 0) + (layer && phi ? 1 : 0);
  return field * arrays + (azimuth ? field / 2 : 0);
}

TtiFields tti_medium_fields(const TtiProblem& p) {
  TtiFields f;
  f.vp2dt2 = p.vp2dt2.data();
  f.aniso = p.aniso.data();
  f.axis_xz = p.axis_xz.data();
  f.axis_y = p.axis_y.empty() ? nullptr : p.axis_y.data();
  f.eta = p.eta.empty() ? nullptr : p.eta.data();
  return f;
}

namespace {

/// Driven layer points of a problem (tti_layer_driven), counting stopped at `enough`.
std::int64_t count_driven_layer_points(const TtiProblem& p, std::int64_t enough) {
  std::int64_t driven = 0;
  any_layer_point(p.regions, [&](int i, int j, int k) {
    const std::uint32_t aniso = p.aniso[static_cast<std::size_t>(p.layout.index(i, j, k))];
    return tti_layer_driven(tti_pair_hi_half(aniso)) && ++driven >= enough;
  });
  return driven;
}

} // namespace

std::int64_t tti_driven_layer_points(const TtiProblem& p) {
  return count_driven_layer_points(p, std::numeric_limits<std::int64_t>::max());
}

bool tti_needs_phi(const TtiProblem& p) {
  return !p.eta.empty() && count_driven_layer_points(p, 1) > 0;
}

double tti_floor_bytes_per_point(const TtiProblem& p) {
  const auto points = static_cast<double>(p.grid.points());
  if (points == 0) return 0.0;
  std::int64_t layer = 0;
  for (const Region& r : p.regions)
    if (r.kind() == RegionKind::Layer) layer += static_cast<std::int64_t>(r.box.points());
  const std::int64_t driven = tti_driven_layer_points(p);
  const double inner = p.has_azimuth() ? 38.0 : 36.0;
  return inner + (4.0 * static_cast<double>(layer) + 8.0 * static_cast<double>(driven)) / points;
}

std::size_t TtiProblem::device_bytes() const {
  return tti_device_bytes(*this, tti_needs_phi(*this));
}

std::size_t tti_device_bytes(const TtiProblem& p, bool phi) {
  const std::size_t taps =
      (p.sources.index.size() + p.receivers.index.size()) * (sizeof(std::int64_t) + sizeof(float)) +
      (p.sources.begin.size() + p.receivers.begin.size()) * sizeof(std::int64_t) +
      p.sources.index.size() * sizeof(int);
  const std::size_t samples = p.source_samples.size() * sizeof(float);
  const std::size_t traces =
      p.receivers.owners() * (static_cast<std::size_t>(p.steps) + 1) * sizeof(float);
  const std::size_t cpml = p.boundary == BoundaryType::Cpml
                               ? sizeof(float) * tti_cpml_memory_points(p.grid, p.layer)
                               : 0;
  return tti_array_bytes(p.layout.size, p.has_azimuth(), !p.eta.empty(), phi) + cpml + taps +
         samples + traces;
}

} // namespace minimod
