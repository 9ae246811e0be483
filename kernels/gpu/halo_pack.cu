/// Packing and unpacking of halo boxes on the device (kernels/halo_exchange.hpp): one thread a
/// point of a box, consecutive threads along x, so that a packed row and a padded row are read
/// and written in whole transactions. MPI then sends contiguous buffers, never strided device
/// memory.
#include "core/errors.hpp"
#include "kernels/gpu/device_buffer.hpp"
#include "kernels/gpu/gpu_check.hpp"
#include "kernels/halo_exchange.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace minimod {
namespace {

constexpr int kHaloThreads = 256;

/// Copy a box of one field to (pack) or from (unpack) its packed place.
template <bool kPack>
__global__ void MINIMOD_LAUNCH_BOUNDS(kHaloThreads)
    halo_box_kernel(float* __restrict__ field, float* __restrict__ packed, const FieldLayout l,
                    const Box b, bool zero_surface) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t nx = b.x1 - b.x0, ny = b.y1 - b.y0;
  const std::int64_t points = nx * ny * (b.z1 - b.z0);
  if (n >= points) return;
  const int i = b.x0 + static_cast<int>(n % nx);
  const int j = b.y0 + static_cast<int>((n / nx) % ny);
  const int k = b.z0 + static_cast<int>(n / (nx * ny));
  const std::int64_t at = l.index(i, j, k);
  if constexpr (kPack) {
    packed[n] = zero_surface && k == 0 ? 0.0f : field[at];
  } else {
    field[at] = packed[n];
  }
}

class CudaHalo final : public DeviceHalo {
public:
  CudaHalo(gpuStream_t stream, std::size_t send_floats, std::size_t recv_floats, bool staging)
      : m_stream(stream), m_staging(staging),
        m_send(send_floats * sizeof(float), "halo send buffer"),
        m_recv(recv_floats * sizeof(float), "halo receive buffer") {
    MINIMOD_GPU_CHECK_WHAT(gpuEventCreateWithFlags(&m_packed, gpuEventDisableTiming),
                           "halo pack event");
    if (staging) {
      m_staging = false;
      enable_host_staging();
    }
  }
  ~CudaHalo() override {
    for (float* p : m_peers)
      (void)gpuIpcCloseMemHandle(p);
    if (m_copy_stream) (void)gpuStreamDestroy(m_copy_stream);
    (void)gpuEventDestroy(m_packed);
    if (m_send_host) (void)gpuFreeHost(m_send_host);
    if (m_recv_host) (void)gpuFreeHost(m_recv_host);
  }
  CudaHalo(const CudaHalo&) = delete;
  CudaHalo& operator=(const CudaHalo&) = delete;

  void enable_host_staging() override {
    if (m_staging) return;
    m_send_host = pinned(m_send.bytes() / sizeof(float), "halo send staging");
    m_recv_host = pinned(m_recv.bytes() / sizeof(float), "halo receive staging");
    m_staging = true;
  }

  std::vector<char> export_receive_buffer() override {
    gpuIpcMemHandle_t handle{};
    MINIMOD_GPU_CHECK_WHAT(gpuIpcGetMemHandle(&handle, m_recv.as<void>()),
                           "export the halo receive buffer (" + std::to_string(m_recv.bytes()) +
                               " B) to the node's other ranks");
    const char* bytes = reinterpret_cast<const char*>(&handle);
    return std::vector<char>(bytes, bytes + sizeof(handle));
  }

  std::string open_peer(const std::vector<char>& bytes) override {
    gpuIpcMemHandle_t handle{};
    if (bytes.size() != sizeof(handle))
      return "a peer's handle has " + std::to_string(bytes.size()) + " bytes, not " +
             std::to_string(sizeof(handle));
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(&handle));
    void* p = nullptr;
    const gpuError_t e = gpuIpcOpenMemHandle(&p, handle, gpuIpcMemLazyEnablePeerAccess);
    if (e != gpuSuccess) {
      (void)gpuGetLastError(); // not sticky: clear it, the ranks fall back to MPI
      return std::string("gpuIpcOpenMemHandle: ") + gpuGetErrorName(e) + ": " +
             gpuGetErrorString(e);
    }
    m_peers.push_back(static_cast<float*>(p));
    return {};
  }

  void copy_to_peer(int slot, std::int64_t send_offset, std::int64_t recv_offset,
                    std::size_t floats) override {
    if (!m_copy_stream) {
      MINIMOD_GPU_CHECK_WHAT(gpuStreamCreateWithFlags(&m_copy_stream, gpuStreamNonBlocking),
                             "halo peer copy stream");
    }
    const std::size_t bytes = floats * sizeof(float);
    MINIMOD_GPU_CHECK_WHAT(gpuMemcpyAsync(m_peers.at(static_cast<std::size_t>(slot)) + recv_offset,
                                          m_send.as<float>() + send_offset, bytes,
                                          gpuMemcpyDeviceToDevice, m_copy_stream),
                           "halo copy to peer " + std::to_string(slot) + ", " +
                               std::to_string(bytes) + " B");
  }

  void wait_peer_copies() override {
    if (m_copy_stream)
      MINIMOD_GPU_CHECK_WHAT(gpuStreamSynchronize(m_copy_stream), "halo peer copies");
  }

  float* send_buffer() override { return m_staging ? m_send_host : m_send.as<float>(); }
  float* recv_buffer() override { return m_staging ? m_recv_host : m_recv.as<float>(); }

  void pack(const std::vector<float*>& fields, const FieldLayout& l,
            const std::vector<HaloBox>& boxes) override {
    launch<true>(fields, l, boxes, m_send.as<float>());
    if (m_staging && m_send.bytes() > 0) {
      MINIMOD_GPU_CHECK_WHAT(gpuMemcpyAsync(m_send_host, m_send.as<float>(), m_send.bytes(),
                                            gpuMemcpyDeviceToHost, m_stream),
                             "halo send buffer to the host, " + std::to_string(m_send.bytes()) +
                                 " B");
    }
    MINIMOD_GPU_CHECK_WHAT(gpuEventRecord(m_packed, m_stream), "halo pack event");
    MINIMOD_GPU_CHECK_WHAT(gpuEventSynchronize(m_packed), "halo packing");
  }

  void unpack(const std::vector<float*>& fields, const FieldLayout& l,
              const std::vector<HaloBox>& boxes) override {
    if (m_staging && m_recv.bytes() > 0) {
      MINIMOD_GPU_CHECK_WHAT(gpuMemcpyAsync(m_recv.as<float>(), m_recv_host, m_recv.bytes(),
                                            gpuMemcpyHostToDevice, m_stream),
                             "halo receive buffer to the device, " +
                                 std::to_string(m_recv.bytes()) + " B");
    }
    launch<false>(fields, l, boxes, m_recv.as<float>());
  }

private:
  static float* pinned(std::size_t floats, const char* what) {
    void* p = nullptr;
    if (floats > 0) {
      MINIMOD_GPU_CHECK_WHAT(gpuMallocHost(&p, floats * sizeof(float)),
                             std::string(what) + ", " + std::to_string(floats * sizeof(float)) +
                                 " B");
    }
    return static_cast<float*>(p);
  }

  template <bool kPack>
  void launch(const std::vector<float*>& fields, const FieldLayout& l,
              const std::vector<HaloBox>& boxes, float* packed) {
    for (const HaloBox& h : boxes) {
      const std::int64_t points = static_cast<std::int64_t>(h.box.points());
      if (points == 0) continue;
      const dim3 block(kHaloThreads);
      const dim3 grid(static_cast<unsigned>((points + kHaloThreads - 1) / kHaloThreads));
      for (std::size_t f = 0; f < fields.size(); ++f) {
        halo_box_kernel<kPack><<<grid, block, 0, m_stream>>>(
            fields[f], packed + h.offset + static_cast<std::int64_t>(f) * points, l, h.box,
            kPack && h.zero_surface && f == 0);
        MINIMOD_GPU_CHECK_LAUNCH(kPack ? "halo_box_kernel<pack>" : "halo_box_kernel<unpack>", grid,
                                 block, 0);
      }
    }
  }

  gpuStream_t m_stream;
  bool m_staging;
  gpu::DeviceBuffer m_send, m_recv;
  float* m_send_host = nullptr;
  float* m_recv_host = nullptr;
  gpuEvent_t m_packed = nullptr;
  std::vector<float*> m_peers;         ///< the neighbours' receive buffers, opened
  gpuStream_t m_copy_stream = nullptr; ///< the peer copies, beside the backend's stream
};

} // namespace

std::unique_ptr<DeviceHalo> make_cuda_halo(void* stream, std::size_t send_floats,
                                           std::size_t recv_floats, bool host_staging) {
  return std::make_unique<CudaHalo>(static_cast<gpuStream_t>(stream), send_floats, recv_floats,
                                    host_staging);
}

} // namespace minimod
