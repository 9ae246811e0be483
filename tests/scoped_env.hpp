#pragma once
/// Scoped settings of a test: an environment variable and the OpenMP thread count, each restored
/// when it goes out of scope.

#include <omp.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace minimod::test_support {

/// Sets an environment variable for the scope (unsets it for std::nullopt), restoring it after.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (m_old)
      setenv(m_name, m_old->c_str(), 1);
    else
      unsetenv(m_name);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* m_name;
  std::optional<std::string> m_old;
};

/// Sets the OpenMP thread count for the scope (more than the cores is allowed: the CPU pass's
/// waits must not rely on a core a thread).
class ScopedThreads {
public:
  explicit ScopedThreads(int threads) : m_saved(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~ScopedThreads() { omp_set_num_threads(m_saved); }
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

private:
  int m_saved;
};

} // namespace minimod::test_support
