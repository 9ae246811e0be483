#pragma once
/// Host memory for the CPU backend's wavefields on 2 MB pages where the kernel grants them
/// (docs/kernels.md, "The CPU kernels"). A sweep of the 25-point stencil reads 17 rows of u spread
/// over 9 planes, and v, phi, vp2dt2 besides: hundreds of 4 KB pages at once, more than the first
/// level of the TLB holds. Transparent huge pages are often granted only on request ("madvise"
/// mode), so an allocation of several pages asks for them before its first touch. The advice
/// changes where the bytes live, never their values.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace minimod {

template <class T> struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kPage = std::size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U> HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < 2 * kPage) {
      void* p = std::malloc(bytes == 0 ? 1 : bytes);
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
    void* p = std::aligned_alloc(kPage, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Advice only: where the kernel refuses (no transparent huge pages), 4 KB pages serve.
    (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept {
    std::free(p);
  }

  template <class U> bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
  template <class U> bool operator!=(const HugePageAllocator<U>&) const noexcept {
    return false;
  }
};

/// A wavefield of the CPU backend.
using HostField = std::vector<float, HugePageAllocator<float>>;

/// Moves the whole 2 MB pages inside [data, data + bytes) of memory already written (the
/// problem's medium) onto huge pages: the advice, then a synchronous collapse (Linux 6.1 and
/// later; elsewhere a no-op). The values stay as they are.
inline void collapse_to_huge_pages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::size_t page = HugePageAllocator<float>::kPage;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + bytes) / page * page;
  if (last <= first) return;
  void* at = reinterpret_cast<void*>(first);
  (void)madvise(at, last - first, MADV_HUGEPAGE);
#if defined(MADV_COLLAPSE)
  (void)madvise(at, last - first, MADV_COLLAPSE);
#endif
#else
  (void)data;
  (void)bytes;
#endif
}

} // namespace minimod
