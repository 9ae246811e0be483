#pragma once
/// What the parameterised GPU kernel tests share: a test name from a kernel's name, and the
/// registered kernel of a test case.

#include "kernels/kernel.hpp"

#include <cctype>
#include <stdexcept>
#include <string>

namespace minimod::test_support {

/// Test names allow only letters, digits and '_': other characters (of kernel names, such as '+')
/// become '_'.
inline std::string test_name_of(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

/// The registered CUDA kernel `name` of `physics`; throws std::logic_error when it is gone.
inline const StencilKernel& registered_cuda_kernel(const std::string& name, Physics physics) {
  const StencilKernel* k = kernel_registry().find(name, kGpuBackend, physics);
  if (k == nullptr) throw std::logic_error("kernel " + name + " vanished");
  return *k;
}

} // namespace minimod::test_support
