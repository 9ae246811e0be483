/// Host-only implementation of DeviceBuffer over the mapped GPU runtime.

#include "kernels/gpu/device_buffer.hpp"

#include "kernels/gpu/gpu_check.hpp"

#include <atomic>
#include <stdexcept>
#include <utility>

namespace minimod::gpu {

namespace {

/// Bytes held by every DeviceBuffer of the process.
std::atomic<std::size_t> g_held{0};

std::string size_text(const std::string& what, std::size_t bytes) {
  return what + ", " + std::to_string(bytes) + " B";
}

void check_range(const std::string& what, std::size_t have, std::size_t want) {
  if (want > have)
    throw std::out_of_range("device buffer " + what + ": copy of " + std::to_string(want) +
                            " B exceeds its " + std::to_string(have) + " B");
}

} // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes, const std::string& what)
    : m_bytes(bytes), m_what(what) {
  if (bytes == 0) return;
  MINIMOD_GPU_CHECK_WHAT(gpuMalloc(&m_ptr, bytes), "allocating " + size_text(what, bytes));
  g_held += bytes;
}

DeviceBuffer::~DeviceBuffer() {
  // No throw from a destructor: a failure here means the context is already broken and the
  // error has been (or will be) reported by a checked call.
  if (m_ptr) {
    (void)gpuFree(m_ptr);
    g_held -= m_bytes;
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : m_ptr(std::exchange(other.m_ptr, nullptr)), m_bytes(std::exchange(other.m_bytes, 0)),
      m_what(std::move(other.m_what)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (m_ptr) {
      (void)gpuFree(m_ptr);
      g_held -= m_bytes;
    }
    m_ptr = std::exchange(other.m_ptr, nullptr);
    m_bytes = std::exchange(other.m_bytes, 0);
    m_what = std::move(other.m_what);
  }
  return *this;
}

std::size_t DeviceBuffer::held_bytes() {
  return g_held.load();
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  check_range(m_what, m_bytes, bytes);
  if (bytes == 0) return;
  MINIMOD_GPU_CHECK_WHAT(gpuMemcpy(m_ptr, host, bytes, gpuMemcpyHostToDevice),
                         "uploading " + size_text(m_what, bytes));
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  check_range(m_what, m_bytes, bytes);
  if (bytes == 0) return;
  MINIMOD_GPU_CHECK_WHAT(gpuMemcpy(host, m_ptr, bytes, gpuMemcpyDeviceToHost),
                         "downloading " + size_text(m_what, bytes));
}

void DeviceBuffer::zero() {
  if (m_bytes == 0) return;
  MINIMOD_GPU_CHECK_WHAT(gpuMemset(m_ptr, 0, m_bytes), "zeroing " + size_text(m_what, m_bytes));
  MINIMOD_GPU_CHECK(gpuDeviceSynchronize());
}

} // namespace minimod::gpu
