/// The CUDA backend of the acoustic equation (kernels/backend.hpp): owns the device fields of an
/// AcousticProblem and advances them one step at a time with the region kernels chosen by the
/// solver, then injects the sources and samples the receivers. Work runs on one compute stream;
/// snapshots copy on a second stream that overlaps the following step. The TTI equation's is
/// kernels/cuda/tti_backend.cu; both share kernels/cuda/cuda_support.cuh.

#include "io/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_support.cuh"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/finite_scan.cuh"
#include "kernels/cuda/gpu_check.hpp"
#include "kernels/cuda/gpu_runtime.hpp"

#include <array>
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

class CudaBackend final : public Backend {
public:
  CudaBackend() {
    m_copy = make_stream("snapshot copy stream");
    m_compute_done = make_event("end-of-step event");
    m_copy_done = make_event("snapshot-copied event");
  }

  ~CudaBackend() override {
    // Let queued work finish before its memory goes; errors were or will be reported elsewhere.
    m_streams.drain();
    if (m_copy) (void)gpuStreamSynchronize(m_copy.get());
  }

  BackendKind kind() const override { return BackendKind::Cuda; }
  std::string device_name() const override { return m_streams.device_name(); }

  void setup(const Problem& problem, const RegionKernels& kernels) override {
    if (problem.physics() != Physics::Acoustic)
      throw std::invalid_argument(std::string("the acoustic CUDA backend cannot step a ") +
                                  physics_name(problem.physics()) + " problem");
    const auto& p = static_cast<const AcousticProblem&>(problem);
    validate(p, kernels);
    MINIMOD_GPU_CHECK(gpuSetDevice(m_streams.device()));
    synchronize();
    release();

    require_free_memory(p.device_bytes(), "the problem", "fields, taps and traces",
                        m_streams.device_name(), p.grid);

    m_layout = p.layout;
    m_coefs = p.coefs;
    m_regions = p.regions;
    m_parts[0] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Shell);
    m_parts[1] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Interior);
    m_kernels = kernels;
    m_steps = p.steps;

    gpuStream_t s = m_streams.main();
    const std::size_t field_bytes = static_cast<std::size_t>(p.layout.size) * sizeof(float);
    m_u = DeviceBuffer(field_bytes, "u");
    m_v = DeviceBuffer(field_bytes, "v");
    m_vp2dt2 = DeviceBuffer(field_bytes, "vp2dt2");
    MINIMOD_GPU_CHECK(gpuMemsetAsync(m_u.as<void>(), 0, field_bytes, s));
    MINIMOD_GPU_CHECK(gpuMemsetAsync(m_v.as<void>(), 0, field_bytes, s));
    upload(m_vp2dt2, p.vp2dt2.data(), field_bytes);
    if (!p.eta.empty()) {
      m_phi = DeviceBuffer(field_bytes, "phi");
      m_eta = DeviceBuffer(field_bytes, "eta");
      MINIMOD_GPU_CHECK(gpuMemsetAsync(m_phi.as<void>(), 0, field_bytes, s));
      upload(m_eta, p.eta.data(), field_bytes);
    }

    m_free_surface = p.free_surface;
    upload_taps(p);

    // The uploads read pageable host memory that the caller may free once setup returns.
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(s));
    m_ready = true;
  }

  void set_taps(const Problem& p) override {
    require_ready("set_taps");
    if (p.steps != m_steps)
      throw std::invalid_argument("set_taps: a problem of " + std::to_string(p.steps) +
                                  " steps for a backend set up with " + std::to_string(m_steps));
    check_taps(p.sources, p.source_samples, p.receivers, m_steps, m_layout.size);
    synchronize();
    upload_taps(p);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    reset();
  }

  /// Upload the source and receiver tap tables and the source samples; zero the traces.
  void upload_taps(const Problem& p) {
    m_taps.upload(p.sources, p.source_samples, p.receivers, p.steps, m_streams.main());
  }

  void update(StepPart part) override {
    require_ready("update");
    const std::vector<Region>& pieces = m_parts[part == StepPart::Shell ? 0 : 1];
    if (pieces.empty()) return;
    float* u = m_u.as<float>();
    float* v = m_v.as<float>();
    // v is about to be overwritten: if a snapshot copy of it is in flight, wait for it on the
    // device (the copy stream is in order, so the last copy event covers earlier copies too).
    if (m_copy_source[0] == v || m_copy_source[1] == v) {
      MINIMOD_GPU_CHECK(gpuStreamWaitEvent(m_streams.main(), m_copy_done.get(), 0));
      m_copy_source = {nullptr, nullptr};
    }

    IsoFields f;
    f.u = u;
    f.v = v;
    f.vp2dt2 = m_vp2dt2.as<const float>();
    f.phi = m_phi.empty() ? nullptr : m_phi.as<float>();
    f.eta = m_eta.empty() ? nullptr : m_eta.as<const float>();
    // The region kernels read u and write only their own points of v and phi, so they may run
    // at once: the six layer slabs on a stream of the highest priority, whose blocks take SMs as
    // the inner kernel's retire (alone, each thin slab leaves SMs idle at its tail), and the inner
    // region on the compute stream, which the injection follows after joining the layer stream
    // (as the TTI backend does).
    auto launch_kind = [&](RegionKind kind, gpuStream_t stream) {
      for (const Region& r : pieces) {
        if (r.kind() == kind)
          m_kernels[static_cast<int>(r.id)]->launch(f, m_layout, m_coefs, r,
                                                    static_cast<void*>(stream));
      }
    };
    m_streams.fork_join([&](gpuStream_t layers) { launch_kind(RegionKind::Layer, layers); },
                        [&](gpuStream_t main) { launch_kind(RegionKind::Inner, main); });
  }

  std::vector<float*> halo_fields() override { return {m_v.as<float>()}; }

  void* stream() override { return static_cast<void*>(m_streams.main()); }

  void finish_step(int n) override {
    require_ready("finish_step");
    if (n < 0 || n >= m_steps)
      throw std::out_of_range("step " + std::to_string(n) + " outside [0, " +
                              std::to_string(m_steps) + ")");
    gpuStream_t s = m_streams.main();
    m_taps.inject(m_v.as<float>(), n, s, "inject_sources_kernel");

    std::swap(m_u, m_v);

    if (m_free_surface) {
      const dim3 block(32, 8);
      const dim3 grid(static_cast<unsigned>((m_layout.nx + 31) / 32),
                      static_cast<unsigned>((m_layout.ny + 7) / 8));
      free_surface_kernel<<<grid, block, 0, s>>>(m_u.as<float>(), m_layout);
      MINIMOD_GPU_CHECK_LAUNCH("free_surface_kernel", grid, block, 0);
    }

    m_taps.sample(m_u.as<const float>(), n, s, "sample_receivers_kernel");
  }

  void snapshot_begin(int field) override {
    require_ready("snapshot_begin");
    require_field(field, "snapshot_begin");
    const std::size_t field_bytes = static_cast<std::size_t>(m_layout.size) * sizeof(float);
    if (!m_staging) {
      // Pinned so that the copy is a true asynchronous DMA; allocated on first use only.
      float* h = nullptr;
      MINIMOD_GPU_CHECK_WHAT(gpuMallocHost(reinterpret_cast<void**>(&h), field_bytes),
                             "pinned snapshot staging buffer, " + gib_text(field_bytes) + " GiB");
      m_staging.reset(h);
    }
    // The copy stream waits for the steps queued so far, then copies u^n while later steps run.
    MINIMOD_GPU_CHECK(gpuEventRecord(m_compute_done.get(), m_streams.main()));
    MINIMOD_GPU_CHECK(gpuStreamWaitEvent(m_copy.get(), m_compute_done.get(), 0));
    MINIMOD_GPU_CHECK_WHAT(gpuMemcpyAsync(m_staging.get(), m_u.as<const void>(), field_bytes,
                                          gpuMemcpyDeviceToHost, m_copy.get()),
                           "snapshot of u, " + gib_text(field_bytes) + " GiB");
    MINIMOD_GPU_CHECK(gpuEventRecord(m_copy_done.get(), m_copy.get()));
    const float* src = m_u.as<const float>();
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
    unpad_field(m_layout, m_staging.get(), dense.data());
  }

  void synchronize() override {
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_copy.get()));
  }

  void reset() override {
    require_ready("reset");
    synchronize();
    m_snapshot_pending = false;
    m_copy_source = {nullptr, nullptr};
    gpuStream_t s = m_streams.main();
    const std::size_t field_bytes = static_cast<std::size_t>(m_layout.size) * sizeof(float);
    MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(m_u.as<void>(), 0, field_bytes, s), "reset of u");
    MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(m_v.as<void>(), 0, field_bytes, s), "reset of v");
    if (!m_phi.empty())
      MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(m_phi.as<void>(), 0, field_bytes, s), "reset of phi");
    m_taps.zero_traces(s);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(s));
  }

  void set_kernels(const RegionKernels& kernels) override {
    require_ready("set_kernels");
    validate_kernels(m_regions, m_layout, !m_eta.empty(), kernels);
    synchronize();
    m_kernels = kernels;
  }

  double time_steps(int first_step, int count) override {
    require_ready("time_steps");
    return m_streams.time_steps(first_step, count, m_steps, [this](int n) { step(n); });
  }

  void fetch_traces(std::vector<float>& traces) override {
    require_ready("fetch_traces");
    m_taps.fetch(traces, m_streams.main());
  }

  FiniteScan scan_field(int field) override {
    require_ready("scan_field");
    require_field(field, "scan_field");
    return m_scan.scan(m_u.as<const float>(), m_layout, m_streams.main(), "u");
  }

private:
  /// Throws unless the problem and the kernels fit together, before anything is allocated.
  void validate(const AcousticProblem& p, const RegionKernels& kernels) const {
    const auto size = static_cast<std::size_t>(p.layout.size);
    if (p.steps < 0) throw std::invalid_argument("negative step count");
    if (p.vp2dt2.size() != size)
      throw std::invalid_argument("vp2dt2 has " + std::to_string(p.vp2dt2.size()) +
                                  " floats, the padded layout " + std::to_string(size));
    if (!p.eta.empty() && p.eta.size() != size)
      throw std::invalid_argument("eta has " + std::to_string(p.eta.size()) +
                                  " floats, the padded layout " + std::to_string(size));
    check_taps(p.sources, p.source_samples, p.receivers, p.steps, p.layout.size);
    validate_kernels(p.regions, p.layout, !p.eta.empty(), kernels);
  }

  /// Throws unless every non-empty region gets a CUDA acoustic kernel that can update it.
  static void validate_kernels(const std::array<Region, kRegionCount>& regions,
                               const FieldLayout& layout, bool have_eta,
                               const RegionKernels& kernels) {
    check_region_kernels(regions, layout, have_eta, kernels, Physics::Acoustic);
  }

  void require_ready(const char* what) const {
    if (!m_ready) throw std::logic_error(std::string("CUDA backend: ") + what + " before setup");
  }

  /// The acoustic equation has one field, u.
  static void require_field(int field, const char* what) {
    if (field != 0)
      throw std::out_of_range(std::string("CUDA backend: ") + what + ": field " +
                              std::to_string(field) + " of the acoustic equation's one (u)");
  }

  /// Free every device buffer of a previous setup.
  void release() {
    m_ready = false;
    m_snapshot_pending = false;
    m_copy_source = {nullptr, nullptr};
    m_staging.reset();
    m_u = DeviceBuffer();
    m_v = DeviceBuffer();
    m_vp2dt2 = DeviceBuffer();
    m_phi = DeviceBuffer();
    m_eta = DeviceBuffer();
    m_taps = DeviceTaps();
  }

  /// Queue a copy of host data into `dst` on the compute stream.
  void upload(DeviceBuffer& dst, const void* host, std::size_t bytes) {
    if (bytes == 0) return;
    MINIMOD_GPU_CHECK_WHAT(
        gpuMemcpyAsync(dst.as<void>(), host, bytes, gpuMemcpyHostToDevice, m_streams.main()),
        "uploading " + std::to_string(bytes) + " B");
  }

  bool m_free_surface = false;
  StepStreams m_streams{""};  ///< the device; every step's kernels (the layers on a stream forked
                              ///< from the main one and joined back), timing
  StreamHandle m_copy;        ///< snapshot copies
  EventHandle m_compute_done; ///< recorded at snapshot_begin: the steps the copy must follow
  EventHandle m_copy_done;    ///< recorded after each snapshot copy

  bool m_ready = false;
  FieldLayout m_layout{};
  StencilCoefs m_coefs{};
  std::array<Region, kRegionCount> m_regions{};
  std::array<std::vector<Region>, 2> m_parts; ///< the pieces of StepPart::Shell and ::Interior
  RegionKernels m_kernels{};
  int m_steps = 0;

  DeviceBuffer m_u, m_v, m_vp2dt2, m_phi, m_eta;
  DeviceTaps m_taps;       ///< sources, receivers, traces
  DeviceFiniteScan m_scan; ///< the NaN/Inf watch's keys

  PinnedFloats m_staging; ///< pinned host copy of the padded u, filled by snapshot_begin
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
  if (!cuda_device_available(&why)) throw RuntimeFailure("no CUDA device: " + why);
  if (physics == Physics::Tti) return gpu::make_tti_backend();
  return std::make_unique<gpu::CudaBackend>();
}

} // namespace minimod
