#pragma once
/// An owning device allocation, declared in plain C++ (no GPU runtime headers) so that host-only
/// code such as the GPU tests (compiled by the host compiler) can hold device memory. Implemented
/// in device_buffer.cpp over the runtime mapped by gpu_runtime.hpp.

#include <cstddef>
#include <string>

namespace minimod::gpu {

/// Device memory of a fixed size, freed on destruction; move-only.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocate `bytes` (uninitialised); `what` names the buffer in an out-of-memory error.
  DeviceBuffer(std::size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// The device address, typed.
  template <class T> T* as() const { return static_cast<T*>(m_ptr); }
  /// Size in bytes.
  std::size_t bytes() const { return m_bytes; }
  /// Whether memory is held.
  bool empty() const { return m_ptr == nullptr; }

  /// Copy `bytes` from host memory to the start of the buffer (synchronous, default stream).
  void upload(const void* host, std::size_t bytes);
  /// Copy `bytes` from the start of the buffer to host memory (synchronous, default stream).
  void download(void* host, std::size_t bytes) const;
  /// Set every byte to zero (synchronous).
  void zero();

  /// Bytes held by all DeviceBuffers of the process at this moment.
  static std::size_t held_bytes();

private:
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
  std::string m_what;
};

} // namespace minimod::gpu
