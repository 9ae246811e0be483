#pragma once
/// Whether the GPU tests can run. One global test environment (registered by the GPU test
/// binary's main, test_gpu_kernels.cpp) asks the runtime once, before any test, and prints the
/// device or why there is none; every GPU test starts with MINIMOD_SKIP_WITHOUT_GPU().

#include "kernels/backend.hpp"

#include <gtest/gtest.h>

#include <exception>
#include <iostream>
#include <string>

namespace minimod::test_support {

/// Asks the runtime once, before any test, whether a device of the binary's GPU backend (CUDA or
/// HIP: kGpuBackend) is usable.
class GpuEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
#if defined(MINIMOD_HAVE_GPU)
    s_available = cuda_device_available(&s_why);
    if (s_available) {
      try {
        s_device = make_cuda_backend()->device_name();
        std::cout << "[ GPU      ] testing the " << backend_name(kGpuBackend) << " backend on "
                  << s_device << "\n";
      } catch (const std::exception& e) {
        s_available = false;
        s_why = e.what();
      }
    }
#else
    s_available = false;
    s_why = "this build has no GPU backend (CUDA or HIP)";
#endif
    if (!s_available)
      std::cout << "[ GPU      ] no " << backend_name(kGpuBackend) << " device: " << s_why << "\n";
  }
  static bool available() {
    return s_available;
  }
  static const std::string& why() {
    return s_why;
  }

private:
  static inline bool s_available = false;
  static inline std::string s_why = "device enumeration has not run";
  static inline std::string s_device;
};

} // namespace minimod::test_support

/// Skip the current test, with the reason, when no device is usable.
#define MINIMOD_SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                             \
    if (!::minimod::test_support::GpuEnvironment::available())                                     \
      GTEST_SKIP() << "no " << ::minimod::backend_name(::minimod::kGpuBackend)                     \
                   << " device: " << ::minimod::test_support::GpuEnvironment::why();               \
  } while (0)
