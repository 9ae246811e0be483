#pragma once
/// Minimod's eta for the CPU kernel, formed from its three 1D profiles (EtaProfiles) instead of
/// read from the padded array (docs/kernels.md, "The CPU kernels"). eta(i, j, k) depends on j and k
/// only through the values y[j + 1] and z[k + 1], and a profile takes few distinct values (zero
/// inside, one a layer depth), so the rows along x of every pair of distinct values, each
/// float((x[i + 1] + y) + z) summed in double as build_eta does, hold eta at every point in a small
/// table: about 30 x 30 rows at 256^3 with 27-point layers, 0.9 MB against the array's 70 MB.

#include "kernels/backend.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minimod {

class EtaRows {
public:
  /// The table of a grid of nx x ny x nz points from the profiles, which must have n + 2 values
  /// each (throws std::invalid_argument naming the axis otherwise).
  EtaRows(const EtaProfiles& profiles, int nx, int ny, int nz);

  /// eta along row (j, k), indexed by i = -1 .. nx; j and k in -1 .. n.
  const float* row(int j, int k) const {
    const auto r =
        static_cast<std::size_t>(m_y_class[static_cast<std::size_t>(j + 1)]) * m_z_values +
        static_cast<std::size_t>(m_z_class[static_cast<std::size_t>(k + 1)]);
    return m_rows.data() + r * m_row_length + 1;
  }

  /// Rows in the table (distinct y values times distinct z values).
  std::size_t rows() const { return m_rows.size() / m_row_length; }
  /// Row of (j, k) in the table: y_classes()[j + 1] * z_values() + z_classes()[k + 1].
  const std::vector<int>& y_classes() const { return m_y_class; }
  const std::vector<int>& z_classes() const { return m_z_class; }
  std::size_t z_values() const { return m_z_values; }
  /// The table with each row laid out as a padded row of `layout` (eta(i) at x_offset + i, zero
  /// elsewhere), rows() * layout.pitch floats: the GPU kernels' copy, whose 16-byte words line up
  /// with the fields'.
  std::vector<float> padded_rows(const FieldLayout& layout) const;
  /// Bytes of that copy and of the two class arrays on a device.
  std::size_t padded_bytes(const FieldLayout& layout) const {
    return rows() * static_cast<std::size_t>(layout.pitch) * sizeof(float) +
           (m_y_class.size() + m_z_class.size()) * sizeof(int);
  }

  /// The first padded-layout point (i, j, k), i, j, k in -1 .. n, where `eta` differs from the
  /// table in its bits, as "(i, j, k)"; empty when they agree everywhere.
  std::string first_difference(const std::vector<float>& eta, const FieldLayout& layout) const;

private:
  std::size_t m_row_length = 0; ///< nx + 2
  std::size_t m_z_values = 0;   ///< distinct values of the z profile
  std::vector<int> m_y_class;   ///< index j + 1 -> its y value's place among the distinct ones
  std::vector<int> m_z_class;   ///< the same along z
  std::vector<float> m_rows;    ///< [y value][z value][i + 1]
  int m_nx = 0, m_ny = 0, m_nz = 0;
};

/// The table of an acoustic problem's eta profiles, checked bit for bit against its padded eta
/// array where it has one, so that a kernel reads the same bits either way; null when the problem
/// has no profiles. Throws std::invalid_argument, "<who>: the problem's eta profiles and its eta
/// array differ at point (i, j, k)", or naming a profile of the wrong length.
std::unique_ptr<EtaRows> checked_eta_rows(const AcousticProblem& p, const std::string& who);

} // namespace minimod
