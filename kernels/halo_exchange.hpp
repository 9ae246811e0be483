#pragma once
/// Halo boxes of a decomposed run packed and unpacked on a GPU backend's device
/// (solver/decomposition.cpp exchanges them over MPI). Plain C++: the solver sees no GPU runtime
/// header; the GPU implementation (both backends) is kernels/gpu/halo_pack.cu.

#include "core/field_layout.hpp"
#include "core/grid.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minimod {

/// One box of points of every halo field and its place in a packed buffer: the fields one after
/// the other from `offset` (floats), each box.points() floats, x fastest.
struct HaloBox {
  Box box;
  std::int64_t offset = 0;
  /// Send boxes only: write zero for the first field's plane k = 0 (the grid's free surface,
  /// zeroed after the step's injection, which the sender has not made yet).
  bool zero_surface = false;
};

/// Packed send and receive buffers of a GPU backend's halo exchange, and the kernels that fill
/// and empty them on the backend's stream. Three ways to move them between ranks:
/// - MPI with host staging: the buffers MPI reads and writes are pinned host memory (an MPI that
///   cannot read device memory), copied from and to the device by pack and unpack;
/// - MPI on device memory (a CUDA-aware MPI): the device buffers themselves;
/// - peer copies, for ranks of one node: each rank exports its device receive buffer
///   (export_receive_buffer), its neighbours open it (open_peer), and each rank copies its packed
///   boxes straight into its neighbours' receive buffers (copy_to_peer), device to device, over
///   NVLink or PCIe; MPI then carries only the small messages that order the copies.
class DeviceHalo {
public:
  virtual ~DeviceHalo() = default;
  /// Stage through pinned host memory from now on (allocated here): MPI reads and writes the host
  /// copies.
  virtual void enable_host_staging() = 0;
  /// The handle by which another process of the node opens this rank's device receive buffer.
  virtual std::vector<char> export_receive_buffer() = 0;
  /// Open a neighbour's exported receive buffer as peer `slot` (0, 1, ... in call order). Returns
  /// an empty text, or why it cannot be opened (no throw: the ranks then agree on another way).
  virtual std::string open_peer(const std::vector<char>& handle) = 0;
  /// Queue the copy of `floats` floats from `send_offset` of this rank's send buffer to
  /// `recv_offset` of peer `slot`'s receive buffer, on a copy stream of its own (it overlaps the
  /// work of the backend's stream). The send buffer must be packed (pack has returned).
  virtual void copy_to_peer(int slot, std::int64_t send_offset, std::int64_t recv_offset,
                            std::size_t floats) = 0;
  /// Wait until the queued peer copies are done: the data is in the neighbours' buffers.
  virtual void wait_peer_copies() = 0;
  /// What MPI sends from and receives into (host or device addresses, see host_staging).
  virtual float* send_buffer() = 0;
  virtual float* recv_buffer() = 0;
  /// Queue the packing of `boxes` of `fields` (device pointers, `layout`) on the stream, and with
  /// host staging the copy to the host; then wait for it, so that MPI may send. Everything queued
  /// before on the stream is then done, the previous unpack included: its receive buffer may be
  /// written again.
  virtual void pack(const std::vector<float*>& fields, const FieldLayout& layout,
                    const std::vector<HaloBox>& boxes) = 0;
  /// Queue (with host staging) the copy of the received buffer to the device, and the unpacking
  /// of `boxes` into the ghost planes of `fields` on the stream; the steps queued after it see
  /// them. Asynchronous: the receive buffer is read until the next pack returns.
  virtual void unpack(const std::vector<float*>& fields, const FieldLayout& layout,
                      const std::vector<HaloBox>& boxes) = 0;
};

/// The CUDA implementation on `stream` (the backend's, a gpuStream_t), buffers of `send_floats`
/// and `recv_floats`. Throws RuntimeFailure in a build without CUDA, or when allocation fails.
std::unique_ptr<DeviceHalo> make_cuda_halo(void* stream, std::size_t send_floats,
                                           std::size_t recv_floats, bool host_staging);

} // namespace minimod
