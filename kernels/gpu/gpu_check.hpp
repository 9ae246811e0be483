#pragma once
/// Error checking of GPU runtime calls and kernel launches. Every runtime call goes through
/// MINIMOD_GPU_CHECK and every launch is followed by MINIMOD_GPU_CHECK_LAUNCH, so that a failure
/// becomes a minimod::RuntimeFailure (exit code 3) naming the call or kernel, where it was made and
/// the runtime's error name and text.

#include "core/errors.hpp"
#include "kernels/gpu/gpu_runtime.hpp"

#include <cstddef>
#include <cstring>
#include <string>

namespace minimod::gpu {

/// `file` from the source root on (`kernels/gpu/x.cu`), so messages do not carry build paths.
inline const char* short_source_path(const char* file) {
  const char* const markers[] = {"/kernels/", "/solver/", "/tests/", "/app/", "/io/"};
  for (const char* marker : markers) {
    if (const char* at = std::strstr(file, marker)) return at + 1;
  }
  return file;
}

/// "cudaErrorMemoryAllocation: out of memory".
inline std::string error_text(gpuError_t err) {
  return std::string(gpuGetErrorName(err)) + ": " + gpuGetErrorString(err);
}

/// Throws RuntimeFailure when `err` is not gpuSuccess. `call` is the call's source text; `what`,
/// when not empty, says what the call was for (the operation and its sizes).
inline void check_call(gpuError_t err, const char* call, const char* file, int line,
                       const std::string& what = std::string()) {
  if (err == gpuSuccess) return;
  // Clear a non-sticky error so that the next check does not report this one again.
  (void)gpuGetLastError();
  std::string msg = std::string(kGpuRuntimeName) + " call " + call + " failed at " +
                    short_source_path(file) + ":" + std::to_string(line);
  if (!what.empty()) msg += " (" + what + ")";
  msg += ": " + error_text(err);
  throw RuntimeFailure(msg);
}

/// "32x4x4".
inline std::string dim3_text(dim3 d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

/// Checks the launch just enqueued (configuration errors surface in gpuGetLastError at once;
/// faults while the kernel runs surface at the next synchronising call). Define
/// MINIMOD_GPU_SYNC_LAUNCHES to also wait for the kernel, so that a fault names it.
inline void check_launch(const char* kernel, dim3 grid, dim3 block, std::size_t smem_bytes,
                         const char* file, int line) {
  gpuError_t err = gpuGetLastError();
#if defined(MINIMOD_GPU_SYNC_LAUNCHES)
  if (err == gpuSuccess) err = gpuDeviceSynchronize();
#endif
  if (err == gpuSuccess) return;
  throw RuntimeFailure(std::string("launch of kernel ") + kernel + " (grid " + dim3_text(grid) +
                       ", block " + dim3_text(block) + ", " + std::to_string(smem_bytes) +
                       " B dynamic shared memory) failed at " + short_source_path(file) + ":" +
                       std::to_string(line) + ": " + error_text(err));
}

} // namespace minimod::gpu

/// Check a GPU runtime call; throws minimod::RuntimeFailure with the call's text on failure.
#define MINIMOD_GPU_CHECK(call) ::minimod::gpu::check_call((call), #call, __FILE__, __LINE__)

/// Check a GPU runtime call; `what` (a std::string) says what it was for, with sizes.
#define MINIMOD_GPU_CHECK_WHAT(call, what)                                                         \
  ::minimod::gpu::check_call((call), #call, __FILE__, __LINE__, (what))

/// Check the kernel launch just enqueued; `kernel` names it in the error.
#define MINIMOD_GPU_CHECK_LAUNCH(kernel, grid, block, smem_bytes)                                  \
  ::minimod::gpu::check_launch((kernel), (grid), (block), (smem_bytes), __FILE__, __LINE__)
