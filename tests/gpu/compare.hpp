#pragma once
/// How the GPU tests compare a GPU result with the CPU reference: the tolerances of the isotropic
/// kernel issue (relative L2 <= 1e-5, max |diff| <= 1e-4 of the reference's maximum), shared by the
/// acoustic and the TTI kernel tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace minimod::test_support {

/// Relative L2 and max-norm distance of `got` from `ref`.
struct Distance {
  double rel_l2 = 0;
  double max_abs = 0;
  double max_ref = 0;
  std::size_t non_finite = 0;
};

inline Distance distance(const std::vector<float>& got, const std::vector<float>& ref) {
  Distance d;
  double diff2 = 0, ref2 = 0;
  const std::size_t n = std::min(got.size(), ref.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) {
      ++d.non_finite;
      continue;
    }
    const double e = static_cast<double>(got[i]) - ref[i];
    diff2 += e * e;
    ref2 += static_cast<double>(ref[i]) * ref[i];
    d.max_abs = std::max(d.max_abs, std::abs(e));
    d.max_ref = std::max(d.max_ref, std::abs(static_cast<double>(ref[i])));
  }
  d.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return d;
}

/// The tolerances of the brief: relative L2 <= 1e-5 (or `rel_l2`) and max |diff| <= 1e-4 max |ref|.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& ref,
                         const char* what, double rel_l2 = 1e-5) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  const Distance d = distance(got, ref);
  EXPECT_EQ(d.non_finite, 0u) << what << ": non-finite values in the GPU result";
  EXPECT_GT(d.max_ref, 0.0) << what << ": the CPU reference is all zero, the test proves nothing";
  EXPECT_LE(d.rel_l2, rel_l2) << what << ": relative L2 distance";
  EXPECT_LE(d.max_abs, 1e-4 * d.max_ref)
      << what << ": max |diff| " << d.max_abs << " vs max |cpu| " << d.max_ref;
}

} // namespace minimod::test_support
