#include "kernels/cpu/cpu_eta_rows.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace minimod {
namespace {

/// For each value of `profile`, the place of its bits among the distinct values (first-seen
/// order); the distinct values go to `values`.
std::vector<int> classify(const std::vector<double>& profile, std::vector<double>& values) {
  std::vector<int> out(profile.size());
  for (std::size_t n = 0; n < profile.size(); ++n) {
    std::size_t c = 0;
    while (c < values.size() && std::memcmp(&values[c], &profile[n], sizeof(double)) != 0)
      ++c;
    if (c == values.size()) values.push_back(profile[n]);
    out[n] = static_cast<int>(c);
  }
  return out;
}

void check_length(const std::vector<double>& profile, int n, const char* axis) {
  if (profile.size() != static_cast<std::size_t>(n) + 2)
    throw std::invalid_argument(std::string("eta profile along ") + axis + " has " +
                                std::to_string(profile.size()) + " values; the grid needs " +
                                std::to_string(n + 2) + " (n points and one ghost each side)");
}

} // namespace

EtaRows::EtaRows(const EtaProfiles& e, int nx, int ny, int nz) : m_nx(nx), m_ny(ny), m_nz(nz) {
  check_length(e.x, nx, "x");
  check_length(e.y, ny, "y");
  check_length(e.z, nz, "z");
  std::vector<double> yv, zv;
  m_y_class = classify(e.y, yv);
  m_z_class = classify(e.z, zv);
  m_row_length = static_cast<std::size_t>(nx) + 2;
  m_z_values = zv.size();
  m_rows.resize(yv.size() * zv.size() * m_row_length);
  for (std::size_t a = 0; a < yv.size(); ++a) {
    for (std::size_t b = 0; b < zv.size(); ++b) {
      float* r = m_rows.data() + (a * zv.size() + b) * m_row_length;
      // build_eta's sum, in its order: (x + y) + z in double, rounded once.
      for (std::size_t i = 0; i < m_row_length; ++i)
        r[i] = static_cast<float>(e.x[i] + yv[a] + zv[b]);
    }
  }
}

std::unique_ptr<EtaRows> checked_eta_rows(const AcousticProblem& p, const std::string& who) {
  if (p.eta_axes.empty()) return nullptr;
  const FieldLayout& l = p.layout;
  auto rows = std::make_unique<EtaRows>(p.eta_axes, l.nx, l.ny, l.nz);
  if (!p.eta.empty()) {
    const std::string at = rows->first_difference(p.eta, l);
    if (!at.empty())
      throw std::invalid_argument(
          who + ": the problem's eta profiles and its eta array differ at point " + at);
  }
  return rows;
}

std::vector<float> EtaRows::padded_rows(const FieldLayout& l) const {
  std::vector<float> out(rows() * static_cast<std::size_t>(l.pitch), 0.0f);
  for (std::size_t r = 0; r < rows(); ++r)
    std::memcpy(out.data() + r * static_cast<std::size_t>(l.pitch) + l.x_offset - 1,
                m_rows.data() + r * m_row_length, m_row_length * sizeof(float));
  return out;
}

std::string EtaRows::first_difference(const std::vector<float>& eta, const FieldLayout& l) const {
  const std::size_t row_bytes = m_row_length * sizeof(float);
  for (int k = -1; k <= m_nz; ++k) {
    for (int j = -1; j <= m_ny; ++j) {
      const float* r = row(j, k);
      const float* a = eta.data() + l.index(0, j, k);
      if (std::memcmp(r - 1, a - 1, row_bytes) == 0) continue;
      for (int i = -1; i <= m_nx; ++i) {
        if (std::memcmp(&r[i], &a[i], sizeof(float)) != 0)
          return "(" + std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) +
                 ")";
      }
    }
  }
  return {};
}

} // namespace minimod
