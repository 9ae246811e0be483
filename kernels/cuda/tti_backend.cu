/// The CUDA backend of the TTI equation (kernels/backend.hpp): the device copy of a TtiProblem (p,
/// q and their previous steps, the medium: vp2dt2 and the 16-bit pairs, eta, and phi_p where the
/// layer has an elliptic point), advanced one step at a time by the region kernels (the layer slabs
/// on a stream of their own, one launch a kernel), then source injection into p and receiver
/// sampling of p, as the CPU backend does with the TTI reference kernel
/// (kernels/cpu/cpu_tti_kernel.cpp).

#include "io/errors.hpp"
#include "kernels/cuda/cuda_support.cuh"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/finite_scan.cuh"
#include "kernels/tti_problem.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace minimod {
namespace gpu {
namespace {

class CudaTtiBackend final : public Backend {
public:
  CudaTtiBackend() = default;
  ~CudaTtiBackend() override { m_streams.drain(); }

  BackendKind kind() const override { return BackendKind::Cuda; }
  std::string device_name() const override { return m_streams.device_name(); }

  void setup(const Problem& problem, const RegionKernels& kernels) override {
    if (problem.physics() != Physics::Tti)
      throw std::invalid_argument(std::string("the TTI CUDA backend cannot step a ") +
                                  physics_name(problem.physics()) + " problem");
    const auto& p = static_cast<const TtiProblem&>(problem);
    if (p.free_surface)
      throw std::invalid_argument("TTI problem with a free surface: not implemented");
    validate(p);
    validate_kernels(p.regions, p.layout, !p.eta.empty(), kernels);
    MINIMOD_GPU_CHECK(gpuSetDevice(m_streams.device()));
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    release();

    // phi_p only where the layer drives it somewhere (one scan of the layer for both uses).
    const bool phi = tti_needs_phi(p);
    require_free_memory(tti_device_bytes(p, phi), "the TTI problem",
                        "fields, medium, taps and traces", m_streams.device_name(), p.grid);

    m_layout = p.layout;
    m_coefs = p.coefs;
    m_regions = p.regions;
    m_parts[0] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Shell);
    m_parts[1] = step_part_regions(p.regions, p.grid, p.subdomain, StepPart::Interior);
    m_kernels = kernels;
    m_steps = p.steps;
    const std::size_t bytes = static_cast<std::size_t>(p.layout.size) * sizeof(float);
    for (DeviceBuffer* b : {&m_p, &m_p_next, &m_q, &m_q_next})
      *b = DeviceBuffer(bytes, "TTI field");
    m_vp2dt2 = upload_new(p.vp2dt2, "vp2dt2");
    m_aniso = upload_new(p.aniso, "2 delta, 2 (epsilon - delta)");
    m_axis_xz = upload_new(p.axis_xz, "axis x, z");
    if (p.has_azimuth()) m_axis_y = upload_new(p.axis_y, "axis y");
    if (!p.eta.empty()) {
      m_eta = upload_new(p.eta, "eta");
      if (phi) m_phi = DeviceBuffer(bytes, "phi_p");
    }

    upload_taps(p);
    // The uploads read pageable memory that the caller may free once setup returns.
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    m_ready = true;
    reset();
  }

  void set_taps(const Problem& p) override {
    require_ready("set_taps");
    if (p.steps != m_steps)
      throw std::invalid_argument("TTI set_taps: a problem of " + std::to_string(p.steps) +
                                  " steps for a backend set up with " + std::to_string(m_steps));
    check_taps(p.sources, p.source_samples, p.receivers, m_steps, m_layout.size);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    upload_taps(p);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    reset();
  }

  void update(StepPart part) override {
    require_ready("update");
    const std::vector<Region>& pieces = m_parts[part == StepPart::Shell ? 0 : 1];
    if (pieces.empty()) return;
    TtiFields f;
    f.p = m_p.as<const float>();
    f.p_next = m_p_next.as<float>();
    f.q = m_q.as<const float>();
    f.q_next = m_q_next.as<float>();
    f.vp2dt2 = m_vp2dt2.as<const float>();
    f.aniso = m_aniso.as<const std::uint32_t>();
    f.axis_xz = m_axis_xz.as<const std::uint32_t>();
    f.axis_y = m_axis_y.empty() ? nullptr : m_axis_y.as<const std::int16_t>();
    f.phi_p = m_phi.empty() ? nullptr : m_phi.as<float>();
    f.eta = m_eta.empty() ? nullptr : m_eta.as<const float>();
    // The region kernels read p and q and write only their own points of p_next, q_next and
    // phi_p, so they may run at once: the six layer slabs on a stream of the highest priority,
    // whose blocks take SMs as the inner kernel's blocks retire (alone, each thin slab leaves SMs
    // idle at its tail), and the inner region on the main stream, which the injection follows.
    // The slabs that share a kernel go in one launch_tti_regions (one grid for a streaming
    // kernel), in region order.
    auto kernel_of = [&](const Region& r) { return m_kernels[static_cast<int>(r.id)]; };
    auto launch_layers = [&](gpuStream_t layers) {
      std::vector<bool> done(pieces.size(), false);
      for (std::size_t r = 0; r < pieces.size(); ++r) {
        if (pieces[r].kind() != RegionKind::Layer || done[r]) continue;
        std::vector<Region> group;
        for (std::size_t t = r; t < pieces.size(); ++t) {
          if (pieces[t].kind() == RegionKind::Layer &&
              kernel_of(pieces[t]) == kernel_of(pieces[r])) {
            group.push_back(pieces[t]);
            done[t] = true;
          }
        }
        kernel_of(pieces[r])->launch_tti_regions(f, m_layout, m_coefs, group.data(),
                                                 static_cast<int>(group.size()),
                                                 static_cast<void*>(layers));
      }
    };
    auto launch_inner = [&](gpuStream_t main) {
      for (const Region& r : pieces) {
        if (r.kind() == RegionKind::Inner)
          kernel_of(r)->launch_tti(f, m_layout, m_coefs, r, static_cast<void*>(main));
      }
    };
    m_streams.fork_join(launch_layers, launch_inner);
  }

  std::vector<float*> halo_fields() override {
    return {m_p_next.as<float>(), m_q_next.as<float>()};
  }

  void* stream() override { return static_cast<void*>(m_streams.main()); }

  void finish_step(int n) override {
    require_ready("finish_step");
    if (n < 0 || n >= m_steps)
      throw std::out_of_range("TTI step " + std::to_string(n) + " outside [0, " +
                              std::to_string(m_steps) + ")");
    gpuStream_t s = m_streams.main();
    m_taps.inject(m_p_next.as<float>(), n, s, "inject_sources_kernel (TTI p)");
    std::swap(m_p, m_p_next);
    std::swap(m_q, m_q_next);
    m_taps.sample(m_p.as<const float>(), n, s, "sample_receivers_kernel (TTI p)");
  }

  void synchronize() override { MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main())); }

  void reset() override {
    require_ready("reset");
    gpuStream_t s = m_streams.main();
    m_taps.zero_traces(s);
    for (DeviceBuffer* b : {&m_p, &m_p_next, &m_q, &m_q_next, &m_phi}) {
      if (!b->empty())
        MINIMOD_GPU_CHECK_WHAT(gpuMemsetAsync(b->as<void>(), 0, b->bytes(), s),
                               "zeroing " + std::to_string(b->bytes()) + " B of TTI state");
    }
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(s));
  }

  void set_kernels(const RegionKernels& kernels) override {
    require_ready("set_kernels");
    validate_kernels(m_regions, m_layout, !m_eta.empty(), kernels);
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
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

  void snapshot_begin(int field) override {
    require_ready("snapshot_begin");
    const DeviceBuffer& src = field_buffer(field, "snapshot_begin");
    // A synchronous copy: TTI snapshots do not overlap the steps.
    m_snapshot.resize(static_cast<std::size_t>(m_layout.size));
    MINIMOD_GPU_CHECK_WHAT(gpuMemcpyAsync(m_snapshot.data(), src.as<const void>(), src.bytes(),
                                          gpuMemcpyDeviceToHost, m_streams.main()),
                           std::string("copy of the TTI field ") + (field == 1 ? "q" : "p"));
    MINIMOD_GPU_CHECK(gpuStreamSynchronize(m_streams.main()));
    m_snapshot_pending = true;
  }

  void snapshot_end(std::vector<float>& dense) override {
    require_ready("snapshot_end");
    if (!m_snapshot_pending) throw std::logic_error("snapshot_end without snapshot_begin");
    m_snapshot_pending = false;
    dense.resize(static_cast<std::size_t>(m_layout.nx) * static_cast<std::size_t>(m_layout.ny) *
                 static_cast<std::size_t>(m_layout.nz));
    unpad_field(m_layout, m_snapshot.data(), dense.data());
  }

  FiniteScan scan_field(int field) override {
    require_ready("scan_field");
    return m_scan.scan(field_buffer(field, "scan_field").as<const float>(), m_layout,
                       m_streams.main(), field == 1 ? "TTI q" : "TTI p");
  }

private:
  /// Upload the source and receiver taps and the source samples (replacing earlier ones).
  void upload_taps(const Problem& p) {
    m_taps.upload(p.sources, p.source_samples, p.receivers, p.steps, m_streams.main());
  }

  /// Free every device buffer of a previous setup.
  void release() {
    m_ready = false;
    for (DeviceBuffer* b : {&m_p, &m_p_next, &m_q, &m_q_next, &m_vp2dt2, &m_aniso, &m_axis_xz,
                            &m_axis_y, &m_phi, &m_eta})
      *b = DeviceBuffer();
    m_taps = DeviceTaps();
  }

  static void validate(const TtiProblem& p) {
    const auto size = static_cast<std::size_t>(p.layout.size);
    if (p.steps < 0) throw std::invalid_argument("TTI problem: negative step count");
    // Every medium array covers the padded layout; axis_y and eta may instead be empty.
    struct Sized {
      std::size_t n;
      const char* name;
      bool optional;
    };
    for (const Sized& a :
         {Sized{p.vp2dt2.size(), "vp2dt2", false}, Sized{p.aniso.size(), "aniso", false},
          Sized{p.axis_xz.size(), "axis_xz", false}, Sized{p.axis_y.size(), "axis_y", true},
          Sized{p.eta.size(), "eta", true}})
      if (a.n != size && !(a.optional && a.n == 0))
        throw std::invalid_argument(std::string("TTI problem: ") + a.name + " has " +
                                    std::to_string(a.n) + " values, the padded layout " +
                                    std::to_string(size));
    check_taps(p.sources, p.source_samples, p.receivers, p.steps, p.layout.size);
  }

  /// Throws unless every non-empty region gets a CUDA TTI kernel that can update it.
  static void validate_kernels(const std::array<Region, kRegionCount>& regions,
                               const FieldLayout& layout, bool have_eta,
                               const RegionKernels& kernels) {
    check_region_kernels(regions, layout, have_eta, kernels, Physics::Tti);
  }

  /// The current field `field`: p (0) or q (1).
  const DeviceBuffer& field_buffer(int field, const char* what) const {
    if (field != 0 && field != 1)
      throw std::out_of_range(std::string("CUDA TTI backend: ") + what + ": field " +
                              std::to_string(field) + " of the TTI equation's two (p, q)");
    return field == 0 ? m_p : m_q;
  }

  void require_ready(const char* what) const {
    if (!m_ready)
      throw std::logic_error(std::string("CUDA TTI backend: ") + what + " before setup");
  }

  template <class T> DeviceBuffer upload_new(const std::vector<T>& host, const char* what) {
    return gpu::upload_new(host, what, m_streams.main());
  }

  StepStreams m_streams{"TTI "}; ///< the device; every step's kernels (the layer slabs on a
                                 ///< stream forked from the main one and joined back), timing

  bool m_ready = false;
  FieldLayout m_layout{};
  TtiCoefs m_coefs{};
  std::array<Region, kRegionCount> m_regions{};
  std::array<std::vector<Region>, 2> m_parts; ///< the pieces of StepPart::Shell and ::Interior
  RegionKernels m_kernels{};
  int m_steps = 0;

  DeviceBuffer m_p, m_p_next, m_q, m_q_next;
  DeviceBuffer m_vp2dt2, m_aniso, m_axis_xz, m_axis_y, m_phi, m_eta;
  DeviceTaps m_taps;       ///< sources into p, receivers of p, traces
  DeviceFiniteScan m_scan; ///< the NaN/Inf watch's keys

  std::vector<float> m_snapshot; ///< the padded field snapshot_begin copied
  bool m_snapshot_pending = false;
};

} // namespace

std::unique_ptr<Backend> make_tti_backend() {
  return std::make_unique<CudaTtiBackend>();
}

} // namespace gpu

} // namespace minimod
