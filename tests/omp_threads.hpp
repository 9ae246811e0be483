#pragma once
/// A cap on the OpenMP threads of a test's runs, restored when it goes out of scope. The long C-PML
/// runs are small grids that gain nothing from more threads; on a machine whose cores the suite
/// shares (ctest -j), extra threads spin at every barrier and make them several times slower.

#include <omp.h>

#include <algorithm>

namespace minimod::test_support {

class OmpThreadCap {
public:
  explicit OmpThreadCap(int threads) : m_saved(omp_get_max_threads()) {
    omp_set_num_threads(std::max(1, std::min(threads, m_saved)));
  }
  ~OmpThreadCap() { omp_set_num_threads(m_saved); }
  OmpThreadCap(const OmpThreadCap&) = delete;
  OmpThreadCap& operator=(const OmpThreadCap&) = delete;

private:
  int m_saved;
};

} // namespace minimod::test_support
