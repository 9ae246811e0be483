#pragma once
/// HDF5 C API helpers shared by the tests that read minimod-gpu output files.

#include <hdf5.h>

#include <string>
#include <vector>

namespace minimod::test_support {

/// A string attribute of an HDF5 object (fixed or variable length), "<missing NAME>" when absent.
inline std::string read_string_attribute(hid_t object, const char* name) {
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  if (attribute < 0) return "<missing " + std::string(name) + ">";
  const hid_t type = H5Aget_type(attribute);
  std::string value;
  if (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    const hid_t mem_type = H5Tcopy(H5T_C_S1);
    H5Tset_size(mem_type, H5T_VARIABLE);
    H5Tset_cset(mem_type, H5Tget_cset(type));
    if (H5Aread(attribute, mem_type, &text) >= 0 && text != nullptr) value = text;
    H5free_memory(text);
    H5Tclose(mem_type);
  } else if (H5Tget_class(type) == H5T_STRING) {
    std::vector<char> buffer(H5Tget_size(type) + 1, '\0');
    H5Aread(attribute, type, buffer.data());
    value = buffer.data();
  } else {
    value = "<not a string>";
  }
  H5Tclose(type);
  H5Aclose(attribute);
  return value;
}

} // namespace minimod::test_support
