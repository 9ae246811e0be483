#pragma once
/// NumPy .npy files (format versions 1.0, 2.0 and 3.0) holding one 3-D float array: what
/// `numpy.save("vp.npy", v)` writes for a float32 or float64 array `v` of three dimensions.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace minimod {

/// The header of a .npy file.
struct NpyHeader {
  int major_version = 0;
  int minor_version = 0;
  std::string descr;                  ///< dtype as written, e.g. "<f4"
  int element_bytes = 0;              ///< 4 or 8
  bool big_endian = false;            ///< '>' in descr
  bool fortran_order = false;         ///< first axis fastest on disk (else last axis, C order)
  std::array<std::size_t, 3> shape{}; ///< the array's three dimensions, as in the header
  std::uint64_t data_offset = 0;      ///< bytes before the first element
};

/// A 3-D .npy array as float32.
struct NpyArray {
  NpyHeader header;
  /// The elements in file order (C order of `header.shape`, or Fortran order when
  /// `header.fortran_order`), float64 rounded to float32.
  std::vector<float> values;
};

/// Read and check the header only. `key` ("survey.yaml:6: model.file") starts every message.
/// Throws InputError when the file is missing, not a .npy file, of a version other than 1, 2 or
/// 3, holds a dtype other than little- or big-endian float32 or float64 ('<f4', '>f4', '<f8',
/// '>f8'), an array of other than three non-zero dimensions, or is shorter or longer than its
/// header says.
NpyHeader read_npy_header(const std::string& path, const std::string& key);

/// Read the header and the data, converted to native float32. Same errors as read_npy_header.
NpyArray read_npy(const std::string& path, const std::string& key);

} // namespace minimod
