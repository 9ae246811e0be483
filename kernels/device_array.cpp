/// kernels/device_array.hpp in a build without a GPU backend: no array can be on a GPU here.
#include "kernels/device_array.hpp"

#if !defined(MINIMOD_HAVE_CUDA) && !defined(MINIMOD_HAVE_HIP)
#include "core/errors.hpp"

namespace minimod {
namespace {
[[noreturn]] void no_gpu(const DeviceArray& array) {
  throw RuntimeFailure(array.owner + ": a GPU array needs a build with the CUDA or HIP backend; "
                                     "this one has none (pass a host array)");
}
} // namespace

void scan_device_array(DeviceArray& array) {
  no_gpu(array);
}
void device_array_medium(const DeviceArray& array, double, const FieldLayout&, float*, void*) {
  no_gpu(array);
}
std::vector<float> device_array_values(const DeviceArray& array, const std::vector<std::int64_t>&) {
  no_gpu(array);
}

} // namespace minimod
#endif
