#include "kernels/cpu/cpu_half.hpp"

#include "core/precision.hpp"
#include "kernels/cpu/cpu_sweep.hpp"

#include <algorithm>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace minimod {
namespace {

#if defined(__F16C__)
/// Eight floats rounded to binary16 and back (round to nearest, ties to even; no exceptions).
inline __m256 round_to_half8(__m256 x) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#endif

/// round_to_half of x[0, n).
void round_row(float* x, std::int64_t n) {
  std::int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, round_to_half8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i)
    x[i] = round_to_half(x[i]);
}

/// d = round_to_half(v - u), v = round_to_half(v) over [0, n).
void store_row(const float* u, float* v, float* d, int n) {
  int i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m256 next = _mm256_loadu_ps(v + i);
    _mm256_storeu_ps(d + i, round_to_half8(_mm256_sub_ps(next, _mm256_loadu_ps(u + i))));
    _mm256_storeu_ps(v + i, round_to_half8(next));
  }
#endif
  for (; i < n; ++i) {
    const float next = v[i];
    d[i] = round_to_half(next - u[i]);
    v[i] = round_to_half(next);
  }
}

} // namespace

void round_to_half_cpu(float* x, std::int64_t n) {
  constexpr std::int64_t kChunk = 1 << 16;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t first = c * kChunk;
    round_row(x + first, std::min(kChunk, n - first));
  }
}

void half_previous_step(const float* u, const float* d, float* v, const FieldLayout& l,
                        const Region* regions, int count) {
  cpu_sweep(regions, count, CpuTile{}, [&](const Region& r, int j, int k) {
    const std::int64_t at = l.index(r.box.x0, j, k);
    const int n = r.box.x1 - r.box.x0;
    const float* __restrict__ uu = u + at;
    const float* __restrict__ dd = d + at;
    float* __restrict__ vv = v + at;
#pragma omp simd
    for (int i = 0; i < n; ++i)
      vv[i] = uu[i] - dd[i];
  });
}

void half_store_step(const float* u, float* v, float* d, float* phi, const FieldLayout& l,
                     const Region* regions, int count) {
  cpu_sweep(regions, count, CpuTile{}, [&](const Region& r, int j, int k) {
    const std::int64_t at = l.index(r.box.x0, j, k);
    const int n = r.box.x1 - r.box.x0;
    store_row(u + at, v + at, d + at, n);
    if (phi != nullptr && r.kind() == RegionKind::Layer) round_row(phi + at, n);
  });
}

} // namespace minimod
