/// The CUDA backend, for both equations (kernels/backend.hpp): the device copy of a problem (the
/// equation's fields and medium), advanced one step at a time by the region kernels chosen by the
/// solver, then source injection into the first field and receiver sampling of it. What is the
/// equation's own is small: the medium it uploads (upload_medium) and how its region kernels are
/// launched (launch_acoustic, launch_tti). Work runs on one compute stream, the layer pieces on a
/// stream of the highest priority beside it; snapshots copy on a third stream that overlaps the
/// following steps.

#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_eta_rows.hpp"
#include "kernels/device_array.hpp"
#include "kernels/gpu/cpml_gpu.cuh"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/finite_scan.cuh"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/gpu/gpu_runtime.hpp"
#include "kernels/gpu/gpu_support.cuh"
#include "kernels/gpu/half_host.hpp"
#include "kernels/gpu/tti_cpml_gpu.cuh"
#include "kernels/tti_problem.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace minimod {

namespace gpu {
namespace {

/// Pressure-free top face (docs/physics.md section 3) on the freshly computed field: u(k = 0) = 0
/// and the ghost planes mirror u(-m) = -u(m), so the next step's stencil sees the image field.
__global__ void free_surface_kernel(float* __restrict__ u, const FieldLayout layout) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (i >= layout.nx || j >= layout.ny) return;
  u[layout.index(i, j, 0)] = 0.0f;
  for (int m = 1; m <= kHalo && m < layout.nz; ++m) {
    u[layout.index(i, j, -m)] = -u[layout.index(i, j, m)];
  }
}

/// The free surface of a float16 field (binary16 bits): zero at k = 0, the ghost planes the
/// negated image (the sign bit flipped: -x of a binary16 value is exact).
__global__ void free_surface_half_kernel(std::uint16_t* __restrict__ u, const FieldLayout layout) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (i >= layout.nx || j >= layout.ny) return;
  u[layout.index(i, j, 0)] = 0;
  for (int m = 1; m <= kHalo && m < layout.nz; ++m) {
    u[layout.index(i, j, -m)] = static_cast<std::uint16_t>(u[layout.index(i, j, m)] ^ 0x8000u);
  }
}

/// eta's padded array from its table (EtaTableView): at every point (i, j, k) with i, j, k in
/// -1 .. n, the points a layer kernel reads, the table's value (checked bit for bit against the
/// problem's array at setup); zero elsewhere, as build_eta leaves it (a subdomain's array holds
/// its neighbour's values there, which no kernel reads).
__global__ void eta_from_table_kernel(float* __restrict__ eta, const EtaTableView table,
                                      const FieldLayout layout) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= layout.size) return;
  const int k = static_cast<int>(idx / layout.plane) - kHalo;
  const std::int64_t in_plane = idx % layout.plane;
  const int j = static_cast<int>(in_plane / layout.pitch) - kHalo;
  const int column = static_cast<int>(in_plane % layout.pitch);
  float value = 0.0f;
  if (j >= -1 && j <= layout.ny && k >= -1 && k <= layout.nz) {
    const int row = __ldg(table.y_class + j + 1) * table.z_values + __ldg(table.z_class + k + 1);
    value = __ldg(table.rows + static_cast<std::int64_t>(row) * layout.pitch + column);
  }
  eta[idx] = value;
}

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(Physics physics)
      : m_physics(physics), m_streams(physics == Physics::Tti ? "TTI " : "") {
    m_copy = make_stream("snapshot copy stream");
    m_compute_done = make_event("end-of-step event");
    m_copy_done = make_event("snapshot-copied event");
  }

  ~CudaBackend() override {
    // Let queued work finish before its memory goes; errors were or will be reported elsewhere.
    m_streams.drain();
    if (m_copy) (void)gpuStreamSynchronize(m_copy.get());
  }

  BackendKind kind() const override { return kGpuBackend; }
  std::string device_name() const override { return m_streams.device_name(); }

  void setup(const Problem& p, const RegionKernels& kernels) override {
    if (p.physics() != m_physics)
      throw std::invalid_argument(std::string("a ") + kGpuRuntimeName + " backend made for the " +
                                  physics_name(m_physics) + " equation cannot step a " +
                                  physics_name(p.physics()) + " problem");
    validate_medium(p);
    validate_precision(p);
    check_taps(p.sources, p.source_samples, p.receivers, p.steps, p.layout.size);
    // Nothing of the backend changes before the problem and its kernels pass their checks: a live
    // backend that refuses a problem keeps its own.
    const bool cpml = p.boundary == BoundaryType::Cpml;
    const bool have_eta = has_eta(p);
    check_region_kernels(p.regions, p.layout, have_eta, kernels, m_physics, cpml, p.precision);
    // eta's table, checked against the array before anything of the last setup is released.
    const std::unique_ptr<EtaRows> eta_table = eta_table_of(p, cpml);
    const std::size_t eta_table_bytes = eta_table ? eta_table->padded_bytes(p.layout) : 0;
    // eta's 3D array only where a chosen kernel reads it (else the table serves).
    const bool eta_array = eta_array_needed(p.regions, kernels, have_eta, eta_table != nullptr);
    const std::size_t eta_array_saved =
        have_eta && !eta_array ? static_cast<std::size_t>(p.layout.size) * sizeof(float) : 0;
    MINIMOD_GPU_CHECK(gpuSetDevice(m_streams.device()));
    synchronize();
    release();
    m_cpml_requested = cpml;

    // The layer's memory variable: phi of u wherever there is a layer; phi of p only where the
    // TTI layer drives it somewhere (one scan of the layer for both uses).
    const bool tti = m_physics == Physics::Tti;
    const bool phi = tti ? tti_needs_phi(as_tti(p)) : have_eta;
    if (tti) {
      require_free_memory(tti_device_bytes(as_tti(p), phi), "the TTI problem",
                          "fields, medium, taps and traces", m_streams.device_name(), p.grid);
    } else {
      require_free_memory(p.device_bytes() - eta_array_saved + eta_table_bytes, "the problem",
                          "fields, taps, traces and eta's table", m_streams.device_name(), p.grid);
    }

    m_layout = p.layout;
    m_regions = p.regions;
    m_parts[0] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Shell);
    m_parts[1] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Interior);
    m_kernels = kernels;
    m_steps = p.steps;
    m_free_surface = p.free_surface;
    m_have_eta = have_eta;
    m_precision = p.precision;
    m_half = p.precision == Precision::Float16;
    m_scale = p.field_scale;

    // A float16 run's fields are binary16 (core/precision.hpp), with the step d beside u.
    const std::size_t bytes = static_cast<std::size_t>(p.layout.size) * element_bytes();
    const std::vector<std::string> names = wavefield_names(m_physics);
    for (const std::string& name : names) {
      m_current.emplace_back(bytes, name.c_str());
      m_next.emplace_back(bytes, (name + " next").c_str());
    }
    if (m_half) m_d = DeviceBuffer(bytes, "u step (float16)");
    upload_medium(p, eta_table.get(), eta_array);
    if (phi) m_phi = DeviceBuffer(bytes, "phi");
    if (m_cpml_requested && tti) m_tti_cpml.setup(p.grid, p.layer, p.cpml, m_streams.main());
    if (m_cpml_requested && !tti)
      m_cpml.setup(p.grid, p.layer, p.cpml, m_streams.main(), /*fused=*/true);
    upload_taps(p);
    m_grid = p.grid;
    // The uploads read pageable host memory that the caller may free once setup returns.
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    m_ready = true;
    reset();
  }

  void set_taps(const Problem& p) override {
    require_ready("set_taps");
    if (p.steps != m_steps)
      throw std::invalid_argument("set_taps: a problem of " + std::to_string(p.steps) +
                                  " steps for a backend set up with " + std::to_string(m_steps));
    check_taps(p.sources, p.source_samples, p.receivers, m_steps, m_layout.size);
    if (p.precision != m_precision)
      throw std::invalid_argument("set_taps: a problem of precision " +
                                  std::string(precision_name(p.precision)) +
                                  " for a backend set up with " + precision_name(m_precision));
    synchronize();
    m_scale = p.field_scale;
    upload_taps(p);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    reset();
  }

  void reset() override {
    require_ready("reset");
    synchronize();
    m_snapshot_pending = false;
    m_copy_source = {nullptr, nullptr};
    gpuStream_t s = m_streams.main();
    for (auto* set : {&m_current, &m_next})
      for (DeviceBuffer& b : *set)
        zero(b, s);
    zero(m_phi, s);
    zero(m_d, s);
    if (m_cpml.on()) m_cpml.zero(s);
    if (m_tti_cpml.on()) m_tti_cpml.zero(s);
    m_taps.zero_traces(s);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(s));
  }

  void set_kernels(const RegionKernels& kernels) override {
    require_ready("set_kernels");
    check_region_kernels(m_regions, m_layout, m_have_eta, kernels, m_physics, m_cpml_requested,
                         m_precision);
    synchronize();
    // eta's array follows the kernels: formed from the table when one reads it (before anything
    // changes: a failed allocation leaves the backend as it was), freed when none does.
    const bool eta_array = eta_array_needed(m_regions, kernels, m_have_eta, !m_eta_rows.empty());
    if (eta_array && m_eta.empty()) m_eta = eta_from_table();
    m_kernels = kernels;
    if (!eta_array) m_eta = DeviceBuffer();
  }

  /// Whether the chosen kernels need eta's 3D array on the device: the problem has eta, and there
  /// is no table (TTI, the C-PML, a problem without eta's profiles) or a non-empty layer region's
  /// kernel reads the array (StencilKernel::reads_eta_array).
  static bool eta_array_needed(const std::array<Region, kRegionCount>& regions,
                               const RegionKernels& kernels, bool have_eta, bool have_table) {
    if (!have_eta) return false;
    if (!have_table) return true;
    for (int r = 0; r < kRegionCount; ++r) {
      const Region& region = regions[r];
      if (!region.box.empty() && region.kind() == RegionKind::Layer && kernels[r] != nullptr &&
          kernels[r]->reads_eta_array())
        return true;
    }
    return false;
  }

  /// eta's 3D array formed on the device from its table, after a free-memory check.
  DeviceBuffer eta_from_table() {
    if (m_eta_rows.empty())
      throw std::logic_error("eta's array asked of a backend without its table");
    const std::size_t bytes = static_cast<std::size_t>(m_layout.size) * sizeof(float);
    require_free_memory(bytes, "eta's 3D array", "a field", m_streams.device_name(), m_grid);
    DeviceBuffer eta(bytes, "eta");
    const EtaTableView table{m_eta_rows.as<const float>(), m_eta_y_class.as<const int>(),
                             m_eta_z_class.as<const int>(), m_eta_z_values};
    constexpr unsigned kThreads = 256;
    const dim3 block(kThreads);
    const dim3 grid(static_cast<unsigned>((m_layout.size + kThreads - 1) / kThreads));
    gpuStream_t s = m_streams.main();
    eta_from_table_kernel<<<grid, block, 0, s>>>(eta.as<float>(), table, m_layout);
    MINIMOD_GPU_CHECK_LAUNCH("eta_from_table_kernel", grid, block, 0);
    MINIMOD_GPU_CHECK_WHAT(gpuStreamSynchronize(s), "forming eta's array from its table");
    return eta;
  }

  void update(StepPart part) override {
    require_ready("update");
    // The TTI C-PML's memory pass reads p^n and q^n at every slab point: once a step, before any
    // region (the layer stream forks from the main one after it). The acoustic one is fused into
    // its layer update.
    if (m_tti_cpml.on() && part == StepPart::Shell)
      m_tti_cpml.memory_pass(m_current[0].as<const float>(), m_current[1].as<const float>(),
                             m_layout, m_streams.main());
    const std::vector<Region>& pieces = m_parts[part == StepPart::Shell ? 0 : 1];
    if (pieces.empty()) return;
    for (const DeviceBuffer& b : m_next)
      wait_for_copy_of(b);
    if (m_physics == Physics::Tti) {
      launch_tti(pieces);
    } else if (m_half) {
      launch_acoustic16(pieces);
    } else {
      launch_acoustic(pieces);
    }
  }

  std::vector<float*> halo_fields() override {
    // validate_precision refuses a float16 problem with neighbours.
    if (m_half) throw std::logic_error("halo_fields of a float16 run");
    std::vector<float*> out;
    for (DeviceBuffer& b : m_next)
      out.push_back(b.as<float>());
    return out;
  }

  void* stream() override { return static_cast<void*>(m_streams.main()); }

  void finish_step(int n) override {
    require_ready("finish_step");
    if (n < 0 || n >= m_steps)
      throw std::out_of_range("step " + std::to_string(n) + " outside [0, " +
                              std::to_string(m_steps) + ")");
    gpuStream_t s = m_streams.main();
    if (m_half) {
      finish_half_step(n, s);
      return;
    }
    const bool tti = m_physics == Physics::Tti;
    // Sources enter the first field only (TTI: p; q is the auxiliary field).
    m_taps.inject(m_next[0].as<float>(), n, s,
                  tti ? "inject_sources_kernel (TTI p)" : "inject_sources_kernel");
    std::swap(m_current, m_next);
    // The C-PML's psi^n, written by this step's layer update, is the next step's psi^(n-1).
    if (m_cpml.on()) m_cpml.end_step();
    if (m_free_surface) {
      const dim3 block(32, 8);
      const dim3 grid(static_cast<unsigned>((m_layout.nx + 31) / 32),
                      static_cast<unsigned>((m_layout.ny + 7) / 8));
      // Every field: TTI's p and q are both odd across the surface (docs/tti.md).
      for (auto& field : m_current) {
        free_surface_kernel<<<grid, block, 0, s>>>(field.as<float>(), m_layout);
        MINIMOD_GPU_CHECK_LAUNCH("free_surface_kernel", grid, block, 0);
      }
    }
    m_taps.sample(m_current[0].as<const float>(), n, s,
                  tti ? "sample_receivers_kernel (TTI p)" : "sample_receivers_kernel");
  }

  double time_steps(int first_step, int count) override {
    require_ready("time_steps");
    return m_streams.time_steps(first_step, count, m_steps, [this](int n) { step(n); });
  }

  FiniteScan scan_field(int field) override {
    require_ready("scan_field");
    if (m_half) {
      // A float16 field holds its values times the field scale (a power of two: exact).
      FiniteScan scan = m_scan.scan(current(field, "scan_field").as<const std::uint16_t>(),
                                    m_layout, m_streams.main(), scan_name(field));
      scan.max_abs *= 1.0f / m_scale;
      return scan;
    }
    return m_scan.scan(current(field, "scan_field").as<const float>(), m_layout, m_streams.main(),
                       scan_name(field));
  }

  void snapshot_begin(int field) override {
    require_ready("snapshot_begin");
    const DeviceBuffer& source = current(field, "snapshot_begin");
    const std::size_t field_bytes = static_cast<std::size_t>(m_layout.size) * element_bytes();
    if (!m_staging) {
      // Pinned so that the copy is a true asynchronous DMA; allocated on first use only.
      float* h = nullptr;
      MINIMOD_GPU_CHECK_WHAT(gpuMallocHost(reinterpret_cast<void**>(&h), field_bytes),
                             "pinned snapshot staging buffer, " + gib_text(field_bytes) + " GiB");
      m_staging.reset(h);
    }
    // The copy stream waits for the steps queued so far, then copies the field while later steps
    // run.
    MINIMOD_GPU_CHECK(gpuEventRecord(m_compute_done.get(), m_streams.main()));
    MINIMOD_GPU_CHECK(gpuStreamWaitEvent(m_copy.get(), m_compute_done.get(), 0));
    MINIMOD_GPU_CHECK_WHAT(gpuMemcpyAsync(m_staging.get(), source.as<const void>(), field_bytes,
                                          gpuMemcpyDeviceToHost, m_copy.get()),
                           "snapshot of " + scan_name(field) + ", " + gib_text(field_bytes) +
                               " GiB");
    MINIMOD_GPU_CHECK(gpuEventRecord(m_copy_done.get(), m_copy.get()));
    const float* src = source.as<const float>();
    if (m_copy_source[0] != src && m_copy_source[1] != src)
      (m_copy_source[0] == nullptr ? m_copy_source[0] : m_copy_source[1]) = src;
    m_snapshot_pending = true;
  }

  void snapshot_end(std::vector<float>& dense) override {
    require_ready("snapshot_end");
    if (!m_snapshot_pending) throw std::logic_error("snapshot_end without snapshot_begin");
    MINIMOD_GPU_CHECK(gpuEventSynchronize(m_copy_done.get()));
    m_snapshot_pending = false;
    dense.resize(static_cast<std::size_t>(m_layout.nx) * static_cast<std::size_t>(m_layout.ny) *
                 static_cast<std::size_t>(m_layout.nz));
    if (m_half) {
      unpad_half_field(m_layout, reinterpret_cast<const std::uint16_t*>(m_staging.get()),
                       1.0f / m_scale, dense.data());
    } else {
      unpad_field(m_layout, m_staging.get(), dense.data());
    }
  }

  void synchronize() override {
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_copy.get()));
  }

  void fetch_traces(std::vector<float>& traces) override {
    require_ready("fetch_traces");
    m_taps.fetch(traces, m_streams.main());
  }

private:
  // ---- float16 storage (core/precision.hpp) ----

  /// Bytes of a stored field value: 2 in a float16 run, else 4.
  std::size_t element_bytes() const { return m_half ? sizeof(std::uint16_t) : sizeof(float); }

  /// What a float16 run needs of its problem, refused by name before anything is allocated: the
  /// acoustic equation with Minimod's layer or none, the grid whole (no neighbour), the medium as
  /// codes on the host.
  void validate_precision(const Problem& p) const {
    if (p.precision == Precision::Float32) return;
    const std::string what = std::string("precision: ") + precision_name(p.precision) + ": ";
    if (m_physics != Physics::Acoustic)
      throw InputError(what + "the " + physics_name(m_physics) +
                       " equation keeps float32 fields; allowed: physics acoustic");
    if (p.boundary == BoundaryType::Cpml)
      throw InputError(what + "boundary.type cpml keeps float32 memory variables; allowed: "
                              "boundary.type minimod, or precision float32");
    if (p.subdomain.has_neighbour())
      throw InputError(what + "a decomposed grid exchanges float32 halos; allowed: the grid "
                              "whole on one process");
    const AcousticProblem& a = as_acoustic(p);
    if (a.device_velocity != nullptr)
      throw InputError(what + "a model in GPU memory; allowed: a host model");
    if (a.vp2dt2_code.size() != static_cast<std::size_t>(p.layout.size))
      throw std::invalid_argument("float16 problem: vp2dt2_code has " +
                                  std::to_string(a.vp2dt2_code.size()) +
                                  " values, the padded layout " + std::to_string(p.layout.size));
    if (!(p.field_scale > 0.0f) || !std::isfinite(p.field_scale))
      throw std::invalid_argument("float16 problem: field scale " + std::to_string(p.field_scale) +
                                  " is not positive and finite");
  }

  /// The float16 update of `pieces` (IsoFields16), on the streams of launch_acoustic.
  void launch_acoustic16(const std::vector<Region>& pieces) {
    IsoFields16 f;
    f.u = m_current[0].as<const std::uint16_t>();
    f.u_next = m_next[0].as<std::uint16_t>();
    f.d = m_d.as<std::uint16_t>();
    f.vp2dt2 = m_vp2dt2.as<const std::uint16_t>();
    f.code = m_medium_code;
    f.phi = m_phi.empty() ? nullptr : m_phi.as<std::uint16_t>();
    f.eta = m_eta.empty() ? nullptr : m_eta.as<const float>();
    f.eta_table = eta_table_view();
    launch_beside(pieces, [&](const StencilKernel& k, const Region& r, void* stream) {
      k.launch16(f, m_layout, m_coefs, r, stream);
    });
  }

  /// finish_step of a float16 run: sources into u^{n+1} and d^{n+1} (one rounding a point), the
  /// swap, the free surface of u and d, the receivers.
  void finish_half_step(int n, gpuStream_t s) {
    m_taps.inject_half(m_next[0].as<std::uint16_t>(), m_d.as<std::uint16_t>(), n, s);
    std::swap(m_current, m_next);
    if (m_free_surface) {
      const dim3 block(32, 8);
      const dim3 grid(static_cast<unsigned>((m_layout.nx + 31) / 32),
                      static_cast<unsigned>((m_layout.ny + 7) / 8));
      for (DeviceBuffer* field : {&m_current[0], &m_d}) {
        free_surface_half_kernel<<<grid, block, 0, s>>>(field->as<std::uint16_t>(), m_layout);
        MINIMOD_GPU_CHECK_LAUNCH("free_surface_half_kernel", grid, block, 0);
      }
    }
    m_taps.sample_half(m_current[0].as<const std::uint16_t>(), n, s);
  }

  // ---- What is the equation's own ----

  static const AcousticProblem& as_acoustic(const Problem& p) {
    return static_cast<const AcousticProblem&>(p);
  }
  static const TtiProblem& as_tti(const Problem& p) { return static_cast<const TtiProblem&>(p); }
  bool has_eta(const Problem& p) const {
    return m_physics == Physics::Tti ? !as_tti(p).eta.empty() : !as_acoustic(p).eta.empty();
  }

  /// Throws std::invalid_argument unless every medium array covers the padded layout (axis_y and
  /// eta may instead be empty).
  void validate_medium(const Problem& p) const {
    const auto size = static_cast<std::size_t>(p.layout.size);
    if (p.steps < 0) throw std::invalid_argument("negative step count");
    struct Sized {
      std::size_t n;
      const char* name;
      bool optional;
    };
    std::vector<Sized> arrays;
    if (m_physics == Physics::Tti) {
      const TtiProblem& t = as_tti(p);
      arrays = {{t.vp2dt2.size(), "vp2dt2", false},
                {t.aniso.size(), "aniso", false},
                {t.axis_xz.size(), "axis_xz", false},
                {t.axis_y.size(), "axis_y", true},
                {t.eta.size(), "eta", true}};
    } else {
      const AcousticProblem& a = as_acoustic(p);
      // A model in GPU memory stands for vp2dt2, which the backend then builds on the device.
      arrays = {{a.device_velocity ? size : a.vp2dt2.size(), "vp2dt2", false},
                {a.eta.size(), "eta", true}};
      if (a.device_velocity) check_device_velocity(*a.device_velocity, p.grid);
    }
    for (const Sized& a : arrays)
      if (a.n != size && !(a.optional && a.n == 0))
        throw std::invalid_argument(std::string(physics_name(m_physics)) + " problem: " + a.name +
                                    " has " + std::to_string(a.n) + " values, the padded layout " +
                                    std::to_string(size));
  }

  /// A model in GPU memory must lie on this backend's device and have the grid's shape.
  void check_device_velocity(const DeviceArray& v, const Grid& g) const {
    if (v.device != m_streams.device()) {
      throw InputError("model.file: " + v.owner + " is on GPU " + std::to_string(v.device) +
                       " and this run's " + kGpuRuntimeName + " backend on GPU " +
                       std::to_string(m_streams.device()) +
                       "; allowed: the array on the run's GPU (or a host array)");
    }
    if (v.shape != std::array<int, 3>{g.nx, g.ny, g.nz})
      throw std::invalid_argument("GPU array model: its shape is not the problem's grid");
  }

  /// Upload the equation's medium (and its stencil coefficients), eta's table where given and
  /// eta's 3D array where `eta_array` (eta_array_needed).
  void upload_medium(const Problem& p, const EtaRows* eta_table, bool eta_array) {
    gpuStream_t s = m_streams.main();
    if (m_physics == Physics::Tti) {
      const TtiProblem& t = as_tti(p);
      m_tti_coefs = t.coefs;
      m_vp2dt2 = upload_new(t.vp2dt2, "vp2dt2", s);
      m_aniso = upload_new(t.aniso, "2 delta, 2 (epsilon - delta)", s);
      m_axis_xz = upload_new(t.axis_xz, "axis x, z", s);
      if (t.has_azimuth()) m_axis_y = upload_new(t.axis_y, "axis y", s);
      if (!t.eta.empty()) m_eta = upload_new(t.eta, "eta", s);
    } else {
      const AcousticProblem& a = as_acoustic(p);
      m_coefs = a.coefs;
      if (a.device_velocity) {
        m_vp2dt2 = DeviceBuffer(static_cast<std::size_t>(a.layout.size) * sizeof(float),
                                "vp2dt2 (" + std::to_string(a.layout.size) + " floats)");
        device_array_medium(*a.device_velocity, a.dt, a.layout, m_vp2dt2.as<float>(), s);
      } else if (a.precision == Precision::Float16) {
        m_vp2dt2 = upload_new(a.vp2dt2_code, "vp2dt2 codes (float16)", s);
        m_medium_code = a.medium_code;
      } else {
        m_vp2dt2 = upload_new(a.vp2dt2, "vp2dt2", s);
      }
      if (eta_array) m_eta = upload_new(a.eta, "eta", s);
      if (eta_table) upload_eta_table(*eta_table, a.layout, s);
    }
  }

  /// eta's table of rows (EtaRows) of an acoustic problem with Minimod's layer and eta's
  /// profiles, checked against the padded array bit for bit (checked_eta_rows, the CPU backend's
  /// check); null for any other problem. Throws std::invalid_argument when the two differ.
  std::unique_ptr<EtaRows> eta_table_of(const Problem& p, bool cpml) const {
    if (m_physics != Physics::Acoustic || cpml) return nullptr;
    const AcousticProblem& a = as_acoustic(p);
    if (a.eta.empty()) return nullptr;
    return checked_eta_rows(a, std::string(kGpuRuntimeName) + " backend");
  }

  /// eta's table on the device, each row laid out like a padded row of the fields, for the layer
  /// kernels that read it (EtaTableView).
  void upload_eta_table(const EtaRows& rows, const FieldLayout& l, gpuStream_t s) {
    const std::vector<float> table = rows.padded_rows(l);
    m_eta_rows = upload_new(table, "eta table", s);
    m_eta_y_class = upload_new(rows.y_classes(), "eta table y classes", s);
    m_eta_z_class = upload_new(rows.z_classes(), "eta table z classes", s);
    m_eta_z_values = static_cast<int>(rows.z_values());
    // upload_new's copies read the host vectors above: finish them before those go.
    MINIMOD_GPU_CHECK_WHAT(gpuStreamSynchronize(s), "eta table upload");
  }

  /// The acoustic update of `pieces`. The region kernels read u and write only their own points
  /// of v and phi, so they may run at once: the layer slabs on a stream of the highest priority,
  /// whose blocks take SMs as the inner kernel's retire (alone, each thin slab leaves SMs idle at
  /// its tail), and the inner pieces on the compute stream, which then joins the layer stream.
  void launch_acoustic(const std::vector<Region>& pieces) {
    IsoFields f;
    f.u = m_current[0].as<const float>();
    f.v = m_next[0].as<float>();
    f.vp2dt2 = m_vp2dt2.as<const float>();
    f.phi = m_phi.empty() ? nullptr : m_phi.as<float>();
    f.eta = m_eta.empty() ? nullptr : m_eta.as<const float>();
    f.cpml = m_cpml.on() ? &m_cpml.view() : nullptr;
    f.eta_table = eta_table_view();
    launch_beside(pieces, [&](const StencilKernel& k, const Region& r, void* stream) {
      k.launch(f, m_layout, m_coefs, r, stream);
    });
  }

  /// eta's table on the device (EtaTableView), or none.
  EtaTableView eta_table_view() const {
    if (m_eta_rows.empty()) return EtaTableView{};
    return EtaTableView{m_eta_rows.as<const float>(), m_eta_y_class.as<const int>(),
                        m_eta_z_class.as<const int>(), m_eta_z_values};
  }

  /// launch(kernel, piece, stream) for every piece with its region's kernel: the layer pieces on
  /// the layer stream, the inner ones on the main stream beside them (fork_join).
  template <class Launch> void launch_beside(const std::vector<Region>& pieces, Launch&& launch) {
    auto launch_kind = [&](RegionKind kind, gpuStream_t stream) {
      for (const Region& r : pieces)
        if (r.kind() == kind)
          launch(*m_kernels[static_cast<int>(r.id)], r, static_cast<void*>(stream));
    };
    m_streams.fork_join([&](gpuStream_t layers) { launch_kind(RegionKind::Layer, layers); },
                        [&](gpuStream_t main) { launch_kind(RegionKind::Inner, main); });
  }

  /// The TTI update of `pieces`, p and q together, on the streams of launch_acoustic. The layer
  /// pieces that share a kernel go in one launch_tti_regions (one grid for a streaming kernel),
  /// in region order.
  void launch_tti(const std::vector<Region>& pieces) {
    TtiFields f;
    f.p = m_current[0].as<const float>();
    f.p_next = m_next[0].as<float>();
    f.q = m_current[1].as<const float>();
    f.q_next = m_next[1].as<float>();
    f.vp2dt2 = m_vp2dt2.as<const float>();
    f.aniso = m_aniso.as<const std::uint32_t>();
    f.axis_xz = m_axis_xz.as<const std::uint32_t>();
    f.axis_y = m_axis_y.empty() ? nullptr : m_axis_y.as<const std::int16_t>();
    f.phi_p = m_phi.empty() ? nullptr : m_phi.as<float>();
    f.eta = m_eta.empty() ? nullptr : m_eta.as<const float>();
    f.cpml = m_tti_cpml.on() ? &m_tti_cpml.view() : nullptr;
    auto kernel_of = [&](const Region& r) { return m_kernels[static_cast<int>(r.id)]; };
    auto launch_layers = [&](gpuStream_t layers) {
      // Scratch kept between steps, so that a step allocates nothing on the host.
      std::vector<bool>& done = m_group_done;
      std::vector<Region>& group = m_group;
      done.assign(pieces.size(), false);
      for (std::size_t r = 0; r < pieces.size(); ++r) {
        if (pieces[r].kind() != RegionKind::Layer || done[r]) continue;
        group.clear();
        for (std::size_t t = r; t < pieces.size(); ++t) {
          if (pieces[t].kind() == RegionKind::Layer &&
              kernel_of(pieces[t]) == kernel_of(pieces[r])) {
            group.push_back(pieces[t]);
            done[t] = true;
          }
        }
        kernel_of(pieces[r])->launch_tti_regions(f, m_layout, m_tti_coefs, group.data(),
                                                 static_cast<int>(group.size()),
                                                 static_cast<void*>(layers));
      }
    };
    auto launch_inner = [&](gpuStream_t main) {
      for (const Region& r : pieces) {
        if (r.kind() == RegionKind::Inner)
          kernel_of(r)->launch_tti(f, m_layout, m_tti_coefs, r, static_cast<void*>(main));
      }
    };
    m_streams.fork_join(launch_layers, launch_inner);
  }

  /// The name of a field in errors: "u", or "TTI p" and "TTI q".
  std::string scan_name(int field) const {
    const std::string name = wavefield_names(m_physics)[static_cast<std::size_t>(field)];
    return m_physics == Physics::Tti ? "TTI " + name : name;
  }

  // ---- Shared by both equations ----

  /// `b` is about to be overwritten: if a snapshot copy of it is in flight, wait for it on the
  /// device (the copy stream is in order, so the last copy event covers earlier copies too).
  void wait_for_copy_of(const DeviceBuffer& b) {
    if (b.empty()) return;
    if (m_copy_source[0] == b.as<const float>() || m_copy_source[1] == b.as<const float>()) {
      MINIMOD_GPU_CHECK(gpuStreamWaitEvent(m_streams.main(), m_copy_done.get(), 0));
      m_copy_source = {nullptr, nullptr};
    }
  }

  const DeviceBuffer& current(int field, const char* what) const {
    if (field < 0 || field >= static_cast<int>(m_current.size()))
      throw std::out_of_range(std::string(kGpuRuntimeName) + " backend: " + what + ": field " +
                              std::to_string(field) + " of the " + physics_name(m_physics) +
                              " equation's " + std::to_string(m_current.size()));
    return m_current[static_cast<std::size_t>(field)];
  }

  void require_ready(const char* what) const {
    if (!m_ready)
      throw std::logic_error(std::string(kGpuRuntimeName) + " backend: " + what + " before setup");
  }

  /// Upload the source and receiver tap tables and the source samples; zero the traces.
  void upload_taps(const Problem& p) {
    m_taps.upload(p.sources, p.source_samples, p.receivers, p.steps, m_streams.main(),
                  p.precision == Precision::Float16 ? p.field_scale : 0.0f);
  }

  /// Queue zeros over `b` (nothing when it is empty).
  static void zero(DeviceBuffer& b, gpuStream_t s) {
    if (!b.empty())
      MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b.as<void>(), 0, b.bytes(), s),
                             "zeroing " + std::to_string(b.bytes()) + " B of state");
  }

  /// Free every device buffer of a previous setup.
  void release() {
    m_ready = false;
    m_snapshot_pending = false;
    m_copy_source = {nullptr, nullptr};
    m_staging.reset();
    m_current.clear();
    m_next.clear();
    for (DeviceBuffer* b : {&m_vp2dt2, &m_eta, &m_eta_rows, &m_eta_y_class, &m_eta_z_class, &m_phi,
                            &m_aniso, &m_axis_xz, &m_axis_y, &m_d})
      *b = DeviceBuffer();
    m_eta_z_values = 0;
    m_have_eta = false;
    m_taps = DeviceTaps();
    m_cpml.release();
    m_tti_cpml.release();
  }

  const Physics m_physics;
  bool m_free_surface = false;
  bool m_cpml_requested = false; ///< the problem's layer is a C-PML (kernels/cpml.hpp)
  CpmlDevice m_cpml;             ///< its profile and memory variables (acoustic)
  TtiCpmlDevice m_tti_cpml;      ///< those of p and q (TTI)
  StepStreams m_streams;      ///< the device; every step's kernels (the layers on a stream forked
                              ///< from the main one and joined back), timing
  StreamHandle m_copy;        ///< snapshot copies
  EventHandle m_compute_done; ///< recorded at snapshot_begin: the steps the copy must follow
  EventHandle m_copy_done;    ///< recorded after each snapshot copy

  bool m_ready = false;
  FieldLayout m_layout{};
  StencilCoefs m_coefs{}; ///< acoustic
  TtiCoefs m_tti_coefs{}; ///< TTI
  std::array<Region, kRegionCount> m_regions{};
  std::array<std::vector<Region>, 2> m_parts; ///< the pieces of StepPart::Shell and ::Interior
  RegionKernels m_kernels{};
  int m_steps = 0;

  std::vector<DeviceBuffer> m_current; ///< the fields at step n (wavefield_names order)
  std::vector<DeviceBuffer> m_next;    ///< step n - 1 on entry to update, n + 1 after it
  DeviceBuffer m_phi;                  ///< the layer's memory variable; may be empty
  Precision m_precision = Precision::Float32;
  bool m_half = false;        ///< float16 storage: u, d, phi binary16, the medium as codes
  float m_scale = 1.0f;       ///< float16: the fields' scale (Problem::field_scale)
  DeviceBuffer m_d;           ///< float16: the step u^n - u^{n-1}
  MediumCode m_medium_code{}; ///< float16: the code of m_vp2dt2
  DeviceBuffer m_vp2dt2;      ///< the medium of both equations
  bool m_have_eta = false;    ///< the problem has eta (Minimod's layer)
  DeviceBuffer m_eta;         ///< its 3D array, while a chosen kernel reads it (eta_array_needed)
  DeviceBuffer m_eta_rows, m_eta_y_class, m_eta_z_class; ///< eta's table (EtaTableView), acoustic
  int m_eta_z_values = 0;
  DeviceBuffer m_aniso, m_axis_xz, m_axis_y; ///< TTI: the 16-bit pairs and n_y
  DeviceTaps m_taps;                         ///< sources, receivers, traces
  DeviceFiniteScan m_scan;                   ///< the NaN/Inf watch's keys

  Grid m_grid{}; ///< for the messages

  std::vector<bool> m_group_done; ///< launch_tti's scratch: pieces already launched
  std::vector<Region> m_group;    ///< launch_tti's scratch: layer pieces of one kernel

  PinnedFloats m_staging; ///< pinned host copy of a padded field, filled by snapshot_begin
  bool m_snapshot_pending = false;
  /// Device fields with a snapshot copy possibly in flight: a step must not overwrite them
  /// before the copy-done event.
  std::array<const float*, 2> m_copy_source{};
};

} // namespace
} // namespace gpu

bool cuda_device_available(std::string* why) {
  int count = 0;
  const gpuError_t err = gpuGetDeviceCount(&count);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    if (why) *why = gpu::error_text(err);
    return false;
  }
  if (count == 0) {
    if (why) *why = std::string(kGpuRuntimeName) + " runtime reports no device";
    return false;
  }
  if (why) why->clear();
  return true;
}

std::optional<GpuMemory> cuda_device_memory() {
  if (!cuda_device_available(nullptr)) return std::nullopt;
  const gpu::OpenedDevice device = gpu::open_device();
  GpuMemory m;
  m.name = device.name;
  MINIMOD_GPU_CHECK(gpuMemGetInfo(&m.free_bytes, &m.total_bytes));
  return m;
}

std::unique_ptr<Backend> make_cuda_backend(Physics physics) {
  std::string why;
  if (!cuda_device_available(&why))
    throw RuntimeFailure(std::string("no ") + kGpuRuntimeName + " device: " + why);
  return std::make_unique<gpu::CudaBackend>(physics);
}

} // namespace minimod
