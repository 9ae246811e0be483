/// Canvas drawing, the built-in bitmap font and the PNG encoder (io/png.hpp).
#include "io/png.hpp"

#include "core/errors.hpp"

#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace minimod {
namespace {

/// Rows of one glyph, top first; bit 4 is the leftmost of the 5 columns.
using GlyphRows = std::array<std::uint8_t, 9>;

/// One glyph as drawn: rows of 5 pixels separated by spaces, '#' on and '.' off; 7 rows (cap
/// height, baseline on the last) and optionally 2 more for descenders.
struct GlyphArt {
  char ch;
  const char* rows;
};

// clang-format off
/// The font, drawn for this project. Digits and capitals fill the 7 rows; lower case has an
/// x-height of 5 with ascenders to the top row and descenders into rows 8 and 9. Every printable
/// ASCII character has its own glyph; the look-alikes differ in more than a pixel or two: '|' runs
/// the full 9 rows, 'l' is a stem left of centre with a tail, '1' has a flag and a wide foot, 'I'
/// short bars top and bottom.
constexpr GlyphArt kFontArt[] = {
    {' ', "..... ..... ..... ..... ..... ..... ....."},
    {'0', ".###. #...# #..## #.#.# ##..# #...# .###."},
    {'1', "..#.. .##.. #.#.. ..#.. ..#.. ..#.. #####"},
    {'2', ".###. #...# ....# ...#. ..#.. .#... #####"},
    {'3', "##### ...#. ..#.. ...#. ....# #...# .###."},
    {'4', "...#. ..##. .#.#. #..#. ##### ...#. ...#."},
    {'5', "##### #.... ####. ....# ....# #...# .###."},
    {'6', "..##. .#... #.... ####. #...# #...# .###."},
    {'7', "##### ....# ...#. ..#.. .#... .#... .#..."},
    {'8', ".###. #...# #...# .###. #...# #...# .###."},
    {'9', ".###. #...# #...# .#### ....# ...#. .##.."},
    {'A', ".###. #...# #...# ##### #...# #...# #...#"},
    {'B', "####. #...# #...# ####. #...# #...# ####."},
    {'C', ".###. #...# #.... #.... #.... #...# .###."},
    {'D', "###.. #..#. #...# #...# #...# #..#. ###.."},
    {'E', "##### #.... #.... ####. #.... #.... #####"},
    {'F', "##### #.... #.... ####. #.... #.... #...."},
    {'G', ".###. #...# #.... #.### #...# #...# .####"},
    {'H', "#...# #...# #...# ##### #...# #...# #...#"},
    {'I', ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###."},
    {'J', "..### ...#. ...#. ...#. ...#. #..#. .##.."},
    {'K', "#...# #..#. #.#.. ##... #.#.. #..#. #...#"},
    {'L', "#.... #.... #.... #.... #.... #.... #####"},
    {'M', "#...# ##.## #.#.# #.#.# #...# #...# #...#"},
    {'N', "#...# #...# ##..# #.#.# #..## #...# #...#"},
    {'O', ".###. #...# #...# #...# #...# #...# .###."},
    {'P', "####. #...# #...# ####. #.... #.... #...."},
    {'Q', ".###. #...# #...# #...# #.#.# #..#. .##.#"},
    {'R', "####. #...# #...# ####. #.#.. #..#. #...#"},
    {'S', ".#### #.... #.... .###. ....# ....# ####."},
    {'T', "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#.."},
    {'U', "#...# #...# #...# #...# #...# #...# .###."},
    {'V', "#...# #...# #...# #...# #...# .#.#. ..#.."},
    {'W', "#...# #...# #...# #.#.# #.#.# #.#.# .#.#."},
    {'X', "#...# #...# .#.#. ..#.. .#.#. #...# #...#"},
    {'Y', "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#.."},
    {'Z', "##### ....# ...#. ..#.. .#... #.... #####"},
    {'a', "..... ..... .###. ....# .#### #...# .####"},
    {'b', "#.... #.... #.##. ##..# #...# #...# ####."},
    {'c', "..... ..... .###. #.... #.... #...# .###."},
    {'d', "....# ....# .##.# #..## #...# #...# .####"},
    {'e', "..... ..... .###. #...# ##### #.... .###."},
    {'f', "..##. .#..# .#... ###.. .#... .#... .#..."},
    {'g', "..... ..... .#### #...# #...# #...# .#### ....# .###."},
    {'h', "#.... #.... #.##. ##..# #...# #...# #...#"},
    {'i', "..#.. ..... .##.. ..#.. ..#.. ..#.. .###."},
    {'j', "...#. ..... ..##. ...#. ...#. ...#. ...#. #..#. .##.."},
    {'k', "#.... #.... #..#. #.#.. ##... #.#.. #..#."},
    {'l', "##... .#... .#... .#... .#... .#... ..##."},
    {'m', "..... ..... ##.#. #.#.# #.#.# #.#.# #.#.#"},
    {'n', "..... ..... #.##. ##..# #...# #...# #...#"},
    {'o', "..... ..... .###. #...# #...# #...# .###."},
    {'p', "..... ..... ####. #...# #...# #...# ####. #.... #...."},
    {'q', "..... ..... .#### #...# #...# #...# .#### ....# ....#"},
    {'r', "..... ..... #.##. ##..# #.... #.... #...."},
    {'s', "..... ..... .###. #.... .###. ....# ####."},
    {'t', ".#... .#... ###.. .#... .#... .#..# ..##."},
    {'u', "..... ..... #...# #...# #...# #..## .##.#"},
    {'v', "..... ..... #...# #...# #...# .#.#. ..#.."},
    {'w', "..... ..... #...# #...# #.#.# #.#.# .#.#."},
    {'x', "..... ..... #...# .#.#. ..#.. .#.#. #...#"},
    {'y', "..... ..... #...# #...# #...# #...# .#### ....# .###."},
    {'z', "..... ..... ##### ...#. ..#.. .#... #####"},
    {'.', "..... ..... ..... ..... ..... .##.. .##.."},
    {',', "..... ..... ..... ..... ..... .##.. .##.. ..#.. .#..."},
    {'!', "..#.. ..#.. ..#.. ..#.. ..#.. ..... ..#.."},
    {'<', "...#. ..#.. .#... #.... .#... ..#.. ...#."},
    {'>', ".#... ..#.. ...#. ....# ...#. ..#.. .#..."},
    {'-', "..... ..... ..... ##### ..... ..... ....."},
    {'+', "..... ..#.. ..#.. ##### ..#.. ..#.. ....."},
    {'=', "..... ..... ##### ..... ##### ..... ....."},
    {':', "..... .##.. .##.. ..... .##.. .##.. ....."},
    {';', "..... .##.. .##.. ..... .##.. .##.. ..#.. .#... ....."},
    {'(', "...#. ..#.. .#... .#... .#... ..#.. ...#."},
    {')', ".#... ..#.. ...#. ...#. ...#. ..#.. .#..."},
    {'[', ".###. .#... .#... .#... .#... .#... .###."},
    {']', ".###. ...#. ...#. ...#. ...#. ...#. .###."},
    {'/', "..... ....# ...#. ..#.. .#... #.... ....."},
    {'%', "##... ##..# ...#. ..#.. .#... #..## ...##"},
    {'_', "..... ..... ..... ..... ..... ..... ..... ##### ....."},
    {'?', ".###. #...# ....# ...#. ..#.. ..... ..#.."},
    {'\'', "..#.. ..#.. .#... ..... ..... ..... ....."},
    {'|', "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#.."},
    {'#', ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#."},
    {'*', "..... #.#.# .###. ##### .###. #.#.# ....."},
    {'"', ".#.#. .#.#. .#.#. ..... ..... ..... ....."},
    {'$', "..#.. .#### #.#.. .###. ..#.# ####. ..#.."},
    {'&', ".##.. #..#. #.#.. .#... #.#.# #..#. .##.#"},
    {'@', ".###. #...# #.### #.#.# #.### #.... .####"},
    {'\\', "..... #.... .#... ..#.. ...#. ....# ....."},
    {'^', "..#.. .#.#. #...# ..... ..... ..... ....."},
    {'`', ".#... ..#.. ..... ..... ..... ..... ....."},
    {'{', "...## ..#.. ..#.. .#... ..#.. ..#.. ...##"},
    {'}', "##... ..#.. ..#.. ...#. ..#.. ..#.. ##..."},
    {'~', "..... ..... .#... #.#.# ...#. ..... ....."},
};
// clang-format on

/// The font as bit rows, indexed by the 7-bit character code; `present` says which exist.
struct Font {
  std::array<GlyphRows, 128> rows{};
  std::array<bool, 128> present{};
};

const Font& font() {
  static const Font f = [] {
    Font built;
    for (const GlyphArt& art : kFontArt) {
      GlyphRows rows{};
      std::size_t row = 0;
      int column = 0;
      for (const char* p = art.rows; *p != '\0'; ++p) {
        if (*p == ' ') {
          if (column != 5) throw std::logic_error(std::string("font: bad glyph ") + art.ch);
          ++row;
          column = 0;
          continue;
        }
        if (row >= rows.size() || column >= 5) {
          throw std::logic_error(std::string("font: bad glyph ") + art.ch);
        }
        if (*p == '#') rows[row] = static_cast<std::uint8_t>(rows[row] | (0x10 >> column));
        ++column;
      }
      if (column != 5 || (row != 6 && row != 8)) {
        throw std::logic_error(std::string("font: bad glyph ") + art.ch);
      }
      const auto code = static_cast<unsigned char>(art.ch);
      built.rows[code] = rows;
      built.present[code] = true;
    }
    return built;
  }();
  return f;
}

const GlyphRows& glyph(char c) {
  const auto code = static_cast<unsigned char>(c);
  const Font& f = font();
  return code < 128 && f.present[code] ? f.rows[code] : f.rows['?'];
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 24));
  out.push_back(static_cast<std::uint8_t>(value >> 16));
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value));
}

/// Appends one chunk: length, type, data, CRC-32 of type and data.
void put_chunk(std::vector<std::uint8_t>& out, const char (&type)[5],
               const std::vector<std::uint8_t>& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t type_at = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, out.data() + type_at, static_cast<uInt>(4 + data.size()));
  put_u32(out, static_cast<std::uint32_t>(crc));
}

/// PNG filter `type` of byte x given its left (a), upper (b) and upper-left (c) neighbours.
std::uint8_t filter_byte(int type, int x, int a, int b, int c) {
  int predicted = 0;
  switch (type) {
  case 1:
    predicted = a;
    break;
  case 2:
    predicted = b;
    break;
  case 3:
    predicted = (a + b) / 2;
    break;
  case 4: {
    const int p = a + b - c;
    const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
    predicted = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
    break;
  }
  default:
    break;
  }
  return static_cast<std::uint8_t>((x - predicted) & 0xff);
}

} // namespace

Canvas::Canvas(int width, int height, Rgb background) : m_width(width), m_height(height) {
  if (width < 1 || height < 1) {
    throw std::invalid_argument("Canvas: size " + std::to_string(width) + "x" +
                                std::to_string(height) + " is empty");
  }
  m_rgb.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  reset_clip();
  fill_rect(0, 0, width, height, background);
}

Rgb Canvas::pixel(int x, int y) const {
  const std::size_t at = (static_cast<std::size_t>(y) * m_width + x) * 3;
  return {m_rgb[at], m_rgb[at + 1], m_rgb[at + 2]};
}

void Canvas::set_pixel(int x, int y, Rgb colour) {
  if (x < m_clip_x0 || x >= m_clip_x1 || y < m_clip_y0 || y >= m_clip_y1) return;
  const std::size_t at = (static_cast<std::size_t>(y) * m_width + x) * 3;
  m_rgb[at] = colour.r;
  m_rgb[at + 1] = colour.g;
  m_rgb[at + 2] = colour.b;
}

void Canvas::set_clip(int x, int y, int w, int h) {
  m_clip_x0 = std::clamp(x, 0, m_width);
  m_clip_y0 = std::clamp(y, 0, m_height);
  m_clip_x1 = std::clamp(x + std::max(w, 0), m_clip_x0, m_width);
  m_clip_y1 = std::clamp(y + std::max(h, 0), m_clip_y0, m_height);
}

void Canvas::reset_clip() {
  set_clip(0, 0, m_width, m_height);
}

void Canvas::fill_rect(int x, int y, int w, int h, Rgb colour) {
  const int x0 = std::max(x, m_clip_x0), x1 = std::min(x + w, m_clip_x1);
  const int y0 = std::max(y, m_clip_y0), y1 = std::min(y + h, m_clip_y1);
  for (int row = y0; row < y1; ++row)
    for (int col = x0; col < x1; ++col)
      set_pixel(col, row, colour);
}

void Canvas::rect(int x, int y, int w, int h, Rgb colour, LineStyle style) {
  const int x1 = x + w - 1, y1 = y + h - 1;
  line(x, y, x1, y, colour, style);
  line(x1, y, x1, y1, colour, style);
  line(x1, y1, x, y1, colour, style);
  line(x, y1, x, y, colour, style);
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb colour, LineStyle style) {
  // Bresenham over all octants; `step` counts pixels along the line for the dash pattern.
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int error = dx + dy;
  for (int step = 0;; ++step) {
    if (style == LineStyle::Solid || step % 10 < 6) set_pixel(x0, y0, colour);
    if (x0 == x1 && y0 == y1) break;
    const int twice = 2 * error;
    if (twice >= dy) {
      error += dy;
      x0 += sx;
    }
    if (twice <= dx) {
      error += dx;
      y0 += sy;
    }
  }
}

void Canvas::text(int x, int y, const std::string& text, Rgb colour, int scale,
                  TextDirection direction) {
  scale = std::max(scale, 1);
  int pen = 0; // advance along the text direction, in font pixels
  for (char c : text) {
    const GlyphRows& rows = glyph(c);
    for (int row = 0; row < static_cast<int>(rows.size()); ++row) {
      for (int column = 0; column < 5; ++column) {
        if ((rows[row] & (0x10 >> column)) == 0) continue;
        const int along = pen + column; // font pixel coordinates in the unrotated text
        if (direction == TextDirection::Right) {
          fill_rect(x + along * scale, y + row * scale, scale, scale, colour);
        } else {
          // Rotated a quarter turn anticlockwise: text runs up, glyph tops face left.
          fill_rect(x + row * scale, y - (along + 1) * scale, scale, scale, colour);
        }
      }
    }
    pen += kGlyphAdvance;
  }
}

int Canvas::text_width(const std::string& text, int scale) {
  if (text.empty()) return 0;
  return (static_cast<int>(text.size()) * kGlyphAdvance - 1) * std::max(scale, 1);
}

bool font_has_glyph(char c) {
  const auto code = static_cast<unsigned char>(c);
  return code < 128 && font().present[code];
}

std::vector<std::uint8_t> encode_png(const Canvas& canvas, PngFilter filter) {
  const int width = canvas.width(), height = canvas.height();
  const std::size_t row_bytes = static_cast<std::size_t>(width) * 3;

  std::vector<std::uint8_t> raw;
  raw.reserve((row_bytes + 1) * static_cast<std::size_t>(height));
  const std::uint8_t* pixels = canvas.rgb().data();
  std::array<std::vector<std::uint8_t>, 5> candidates;
  for (auto& candidate : candidates)
    candidate.resize(row_bytes);
  for (int row = 0; row < height; ++row) {
    const std::uint8_t* line = pixels + row * row_bytes;
    if (filter == PngFilter::None) {
      raw.push_back(0);
      raw.insert(raw.end(), line, line + row_bytes);
      continue;
    }
    // Smooth colour ramps deflate far better as residuals; the smallest sum of |residual| (as
    // signed bytes) is the usual cheap guess at which prediction deflates best.
    const std::uint8_t* above = row > 0 ? line - row_bytes : nullptr;
    int best = 0;
    long best_cost = -1;
    for (int type = 0; type < 5; ++type) {
      long cost = 0;
      for (std::size_t i = 0; i < row_bytes; ++i) {
        const int left = i >= 3 ? line[i - 3] : 0;
        const int up = above != nullptr ? above[i] : 0;
        const int up_left = i >= 3 && above != nullptr ? above[i - 3] : 0;
        const std::uint8_t residual = filter_byte(type, line[i], left, up, up_left);
        candidates[type][i] = residual;
        cost += std::abs(static_cast<std::int8_t>(residual));
      }
      if (best_cost < 0 || cost < best_cost) {
        best_cost = cost;
        best = type;
      }
    }
    raw.push_back(static_cast<std::uint8_t>(best));
    raw.insert(raw.end(), candidates[best].begin(), candidates[best].end());
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<std::uint8_t> packed(packed_size);
  const int status = compress2(packed.data(), &packed_size, raw.data(),
                               static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION);
  if (status != Z_OK) {
    throw OutputError("PNG: zlib compress2 failed with code " + std::to_string(status));
  }
  packed.resize(packed_size);

  std::vector<std::uint8_t> header;
  put_u32(header, static_cast<std::uint32_t>(width));
  put_u32(header, static_cast<std::uint32_t>(height));
  header.push_back(8); // bit depth
  header.push_back(2); // colour type: RGB
  header.push_back(0); // compression: deflate
  header.push_back(0); // filter method: adaptive (per-row type byte)
  header.push_back(0); // no interlace

  std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  put_chunk(png, "IHDR", header);
  put_chunk(png, "IDAT", packed);
  put_chunk(png, "IEND", {});
  return png;
}

void write_png(const std::string& path, const Canvas& canvas) {
  namespace fs = std::filesystem;
  const std::vector<std::uint8_t> bytes = encode_png(canvas);
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      throw OutputError("cannot create folder '" + target.parent_path().string() + "' for PNG '" +
                        path + "': " + ec.message());
    }
  }
  const std::string tmp = path + ".tmp-" + std::to_string(static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      throw OutputError("cannot write PNG '" + tmp + "'");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(tmp, ec);
    throw OutputError("cannot rename '" + tmp + "' to '" + path + "': " + reason);
  }
}

} // namespace minimod
