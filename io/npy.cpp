/// The .npy format: a magic string, a version, a header length and a Python dict literal
/// {'descr': '<f4', 'fortran_order': False, 'shape': (nz, ny, nx), } padded with spaces to an
/// aligned data offset, then the elements. Only the literal forms numpy writes are parsed here.

#include "io/npy.hpp"

#include "core/errors.hpp"
#include "io/limits.hpp"
#include "io/memory_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>

namespace minimod {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
/// Largest header we accept: numpy's own limit for version 1 is 65535 bytes; later versions allow
/// 4 GiB, but a model's header is a few dozen bytes, so anything huge means a damaged file.
constexpr std::uint32_t kMaxHeaderBytes = 1u << 20;

[[noreturn]] void reject(const std::string& key, const std::string& path, const std::string& what,
                         const std::string& allowed = "a NumPy .npy file of a 3-D float32 or "
                                                      "float64 array") {
  throw InputError(key + ": " + path + " (" + what + ") is not allowed: " + allowed);
}

bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char first_byte = 0;
  std::memcpy(&first_byte, &one, 1);
  return first_byte == 1;
}

/// Reads the dict literal of the header, one token at a time.
class DictParser {
public:
  DictParser(const std::string& text, const std::string& key, const std::string& path)
      : m_text(text), m_key(key), m_path(path) {}

  NpyHeader parse(NpyHeader header) {
    expect('{');
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<std::size_t>> shape;
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string name = quoted("a key");
      expect(':');
      if (name == "descr") {
        if (descr) fail("'descr' appears twice");
        skip_space();
        if (peek() != '\'' && peek() != '"')
          fail("descr is not a plain dtype string (a structured dtype?)");
        descr = quoted("the dtype");
      } else if (name == "fortran_order") {
        if (fortran) fail("'fortran_order' appears twice");
        fortran = boolean();
      } else if (name == "shape") {
        if (shape) fail("'shape' appears twice");
        shape = tuple();
      } else {
        fail("unexpected key '" + name + "' in the header");
      }
      skip_space();
      if (peek() == ',') {
        ++m_pos;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' in the header at column " + column());
    }
    ++m_pos;
    skip_space();
    if (m_pos != m_text.size()) fail("text after the header's '}'");
    if (!descr || !fortran || !shape) {
      fail(std::string("the header lacks ") + (!descr     ? "'descr'"
                                               : !fortran ? "'fortran_order'"
                                                          : "'shape'"));
    }

    header.descr = *descr;
    header.fortran_order = *fortran;
    if (header.descr == "<f4" || header.descr == ">f4") {
      header.element_bytes = 4;
    } else if (header.descr == "<f8" || header.descr == ">f8") {
      header.element_bytes = 8;
    } else {
      throw InputError(m_key + ": " + m_path + " (dtype '" + header.descr +
                       "') is not allowed: float32 or float64 ('<f4', '>f4', '<f8', '>f8')");
    }
    header.big_endian = header.descr[0] == '>';
    if (shape->size() != 3) {
      std::string dims;
      for (std::size_t n = 0; n < shape->size(); ++n)
        dims += (n ? ", " : "") + std::to_string((*shape)[n]);
      throw InputError(m_key + ": " + m_path + " (shape (" + dims + "), " +
                       std::to_string(shape->size()) +
                       " dimensions) is not allowed: a 3-D array (nz, ny, nx) or (nx, ny, nz)");
    }
    for (std::size_t n = 0; n < 3; ++n) {
      if ((*shape)[n] == 0) {
        throw InputError(m_key + ": " + m_path + " (dimension " + std::to_string(n) +
                         " is 0) is not allowed: a non-empty 3-D array");
      }
      header.shape[n] = (*shape)[n];
    }
    return header;
  }

private:
  [[noreturn]] void fail(const std::string& what) { reject(m_key, m_path, what); }

  std::string column() const { return std::to_string(m_pos + 1); }
  char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
  void skip_space() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
      ++m_pos;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) {
      fail(std::string("expected '") + c + "' in the header at column " + column());
    }
    ++m_pos;
  }
  std::string quoted(const char* what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"')
      fail(std::string("expected ") + what + " at column " + column());
    const std::size_t end = m_text.find(quote, m_pos + 1);
    if (end == std::string::npos) fail("unterminated string in the header");
    std::string value = m_text.substr(m_pos + 1, end - m_pos - 1);
    m_pos = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    if (m_text.compare(m_pos, 4, "True") == 0) {
      m_pos += 4;
      return true;
    }
    if (m_text.compare(m_pos, 5, "False") == 0) {
      m_pos += 5;
      return false;
    }
    fail("fortran_order is neither True nor False");
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> values;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("shape holds something other than non-negative integers");
      std::size_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10)
          fail("a shape dimension overflows");
        value = value * 10 + digit;
        ++m_pos;
      }
      // Python 2 era writers appended L to long integers.
      if (peek() == 'L') ++m_pos;
      values.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++m_pos;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape at column " + column());
      }
    }
    ++m_pos;
    return values;
  }

  const std::string& m_text;
  const std::string& m_key;
  const std::string& m_path;
  std::size_t m_pos = 0;
};

std::uint32_t little_endian_u32(const unsigned char* bytes, int count) {
  std::uint32_t value = 0;
  for (int n = count - 1; n >= 0; --n)
    value = (value << 8) | bytes[n];
  return value;
}

/// Parse the header from an open stream; leaves the stream at the data.
NpyHeader parse_header(std::istream& in, std::uintmax_t file_size, const std::string& path,
                       const std::string& key) {
  unsigned char prefix[12] = {};
  in.read(reinterpret_cast<char*>(prefix), 10);
  if (in.gcount() < 10 || std::memcmp(prefix, kMagic, kMagicBytes) != 0) {
    reject(key, path, "no .npy magic string \\x93NUMPY at the start");
  }
  NpyHeader header;
  header.major_version = prefix[6];
  header.minor_version = prefix[7];
  if (header.major_version < 1 || header.major_version > 3) {
    reject(key, path,
           "format version " + std::to_string(header.major_version) + "." +
               std::to_string(header.minor_version),
           "a .npy file of format version 1.0, 2.0 or 3.0");
  }
  std::uint32_t header_bytes = 0;
  std::uint64_t start = 10;
  if (header.major_version == 1) {
    header_bytes = little_endian_u32(prefix + 8, 2);
  } else {
    in.read(reinterpret_cast<char*>(prefix + 10), 2);
    if (in.gcount() < 2) reject(key, path, "file ends inside the header length");
    header_bytes = little_endian_u32(prefix + 8, 4);
    start = 12;
  }
  if (header_bytes > kMaxHeaderBytes || start + header_bytes > file_size) {
    reject(key, path,
           "header of " + std::to_string(header_bytes) + " bytes in a file of " +
               std::to_string(file_size) + " bytes: truncated or damaged");
  }
  std::string text(header_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_bytes));
  if (static_cast<std::uint32_t>(in.gcount()) != header_bytes) {
    reject(key, path, "file ends inside the header");
  }
  // Version 3 allows UTF-8; the keys and values we accept are ASCII either way.
  header.data_offset = start + header_bytes;
  header = DictParser(text, key, path).parse(header);

  std::size_t count = 1;
  for (std::size_t dim : header.shape) {
    if (dim > std::numeric_limits<std::size_t>::max() / 8 / count) {
      reject(key, path, "shape too large to address");
    }
    count *= dim;
  }
  const std::uintmax_t expected =
      header.data_offset + static_cast<std::uintmax_t>(count) * header.element_bytes;
  if (file_size != expected) {
    reject(key, path,
           std::to_string(file_size) + " bytes where the header (" +
               std::to_string(header.shape[0]) + " x " + std::to_string(header.shape[1]) + " x " +
               std::to_string(header.shape[2]) + " of " + header.descr + " after " +
               std::to_string(header.data_offset) + " header bytes) needs " +
               std::to_string(expected) +
               (file_size < expected ? ": truncated" : ": extra bytes at the end"));
  }
  return header;
}

/// A .npy file on disk or in memory (io/memory_file.hpp).
std::unique_ptr<std::istream> open_npy(const std::string& path, const std::string& key,
                                       std::uintmax_t& file_size) {
  std::error_code ec;
  if (!input_file_exists(path)) reject(key, path, "not found", "an existing .npy file");
  file_size = input_file_size(path, ec);
  if (ec) reject(key, path, "size unknown: " + ec.message());
  std::unique_ptr<std::istream> in = open_input_file(path);
  if (!*in) reject(key, path, "cannot be opened", "a readable .npy file");
  return in;
}

/// float64 to float32 without the undefined behaviour of converting an out-of-range value:
/// beyond float's range becomes an infinity (which the model check then rejects).
float narrow(double value) {
  if (value > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (value < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(value);
}

template <typename T> T decode(const unsigned char* bytes, bool swap) {
  unsigned char copy[sizeof(T)];
  std::memcpy(copy, bytes, sizeof(T));
  if (swap) std::reverse(copy, copy + sizeof(T));
  T value;
  std::memcpy(&value, copy, sizeof(T));
  return value;
}

} // namespace

NpyHeader read_npy_header(const std::string& path, const std::string& key) {
  std::uintmax_t file_size = 0;
  const std::unique_ptr<std::istream> stream = open_npy(path, key, file_size);
  return parse_header(*stream, file_size, path, key);
}

NpyArray read_npy(const std::string& path, const std::string& key) {
  std::uintmax_t file_size = 0;
  const std::unique_ptr<std::istream> stream = open_npy(path, key, file_size);
  std::istream& in = *stream;
  NpyArray array;
  array.header = parse_header(in, file_size, path, key);
  const NpyHeader& header = array.header;
  const std::size_t count = header.shape[0] * header.shape[1] * header.shape[2];
  // The values, and their copy reordered to x fastest by the model reader.
  require_host_memory(8.0 * static_cast<double>(count),
                      "reading " + path + " (" + std::to_string(count) + " values)");
  array.values.resize(count);

  const bool swap = header.big_endian == host_is_little_endian();
  const std::size_t width = static_cast<std::size_t>(header.element_bytes);
  if (width == sizeof(float) && !swap) {
    in.read(reinterpret_cast<char*>(array.values.data()),
            static_cast<std::streamsize>(count * width));
    if (static_cast<std::size_t>(in.gcount()) != count * width) {
      reject(key, path, "read failed after " + std::to_string(in.gcount()) + " data bytes");
    }
    return array;
  }
  // Convert in blocks, so a float64 model never needs twice its size in memory.
  constexpr std::size_t kBlock = 1u << 20;
  std::vector<unsigned char> block(kBlock * width);
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    in.read(reinterpret_cast<char*>(block.data()), static_cast<std::streamsize>(n * width));
    if (static_cast<std::size_t>(in.gcount()) != n * width) {
      reject(key, path, "read failed at element " + std::to_string(first));
    }
    float* out = array.values.data() + first;
    if (width == sizeof(float)) {
      for (std::size_t e = 0; e < n; ++e)
        out[e] = decode<float>(block.data() + e * width, swap);
    } else {
      for (std::size_t e = 0; e < n; ++e)
        out[e] = narrow(decode<double>(block.data() + e * width, swap));
    }
  }
  return array;
}

} // namespace minimod
