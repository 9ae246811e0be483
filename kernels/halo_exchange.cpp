#include "kernels/halo_exchange.hpp"

#include "core/errors.hpp"
#include "kernels/kernel.hpp"

namespace minimod {

#if !defined(MINIMOD_HAVE_GPU)
std::unique_ptr<DeviceHalo> make_cuda_halo(void*, std::size_t, std::size_t, bool) {
  throw RuntimeFailure(
      "this minimod-gpu was built without a GPU backend: no device halo exchange; use "
      "--backend cpu");
}
#endif

} // namespace minimod
