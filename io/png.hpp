#pragma once
/// A small RGB canvas with lines, rectangles and bitmap text, and a PNG writer for it
/// (8-bit RGB, zlib-compressed, written through a temporary name). Enough for quicklooks
/// without an image library.

#include <cstdint>
#include <string>
#include <vector>

namespace minimod {

/// An 8-bit sRGB colour.
struct Rgb {
  std::uint8_t r = 0; ///< red
  std::uint8_t g = 0; ///< green
  std::uint8_t b = 0; ///< blue
};

/// Equal when all three channels are.
inline bool operator==(Rgb a, Rgb b) {
  return a.r == b.r && a.g == b.g && a.b == b.b;
}
/// Not equal in some channel.
inline bool operator!=(Rgb a, Rgb b) {
  return !(a == b);
}

/// Solid or dashed strokes.
enum class LineStyle { Solid, Dashed };

/// Which way text runs: left to right, or bottom to top (for vertical axis labels).
enum class TextDirection { Right, Up };

/// An RGB image, rows top to bottom, x to the right. Every drawing call is clipped to the clip
/// rectangle (the whole canvas unless set_clip narrows it), so callers can draw past edges.
class Canvas {
public:
  /// Glyph cell of the built-in font at scale 1: 5x7 glyphs (with 2 rows of descender) in a
  /// 6x10 cell, the extra column and row being the spacing.
  static constexpr int kGlyphAdvance = 6;
  /// Line height of the built-in font at scale 1 (cap height 7, descender 2, spacing 1).
  static constexpr int kLineHeight = 10;
  /// Height of capitals and digits at scale 1, from the top of the cell.
  static constexpr int kCapHeight = 7;

  /// A width x height canvas filled with `background`; both sizes must be >= 1.
  Canvas(int width, int height, Rgb background);

  /// Width in pixels.
  int width() const { return m_width; }
  /// Height in pixels.
  int height() const { return m_height; }
  /// Pixels, row by row from the top, 3 bytes (R, G, B) each.
  const std::vector<std::uint8_t>& rgb() const { return m_rgb; }

  /// The colour at (x, y); (x, y) must be inside the canvas.
  Rgb pixel(int x, int y) const;
  /// Sets one pixel; ignored outside the clip rectangle.
  void set_pixel(int x, int y, Rgb colour);

  /// Restricts drawing to the rectangle [x, x + w) x [y, y + h) (intersected with the canvas).
  void set_clip(int x, int y, int w, int h);
  /// Drawing may touch the whole canvas again.
  void reset_clip();

  /// Fills [x, x + w) x [y, y + h).
  void fill_rect(int x, int y, int w, int h, Rgb colour);
  /// Outlines [x, x + w) x [y, y + h) one pixel wide (w, h >= 1).
  void rect(int x, int y, int w, int h, Rgb colour, LineStyle style = LineStyle::Solid);
  /// A one-pixel line from (x0, y0) to (x1, y1), both ends included. Dashes are 6 pixels on,
  /// 4 off, counted along the line.
  void line(int x0, int y0, int x1, int y1, Rgb colour, LineStyle style = LineStyle::Solid);

  /// Draws `text` with the built-in font, each font pixel a scale x scale block. (x, y) is the
  /// top-left corner of the first glyph cell (for TextDirection::Up, the bottom-left corner of
  /// the rotated text, which then runs upwards). Characters outside the font draw as '?'.
  void text(int x, int y, const std::string& text, Rgb colour, int scale = 1,
            TextDirection direction = TextDirection::Right);
  /// Width in pixels that text() takes for `text` (without the trailing spacing column).
  static int text_width(const std::string& text, int scale = 1);

private:
  int m_width;
  int m_height;
  int m_clip_x0 = 0, m_clip_y0 = 0, m_clip_x1 = 0, m_clip_y1 = 0; ///< half-open clip box
  std::vector<std::uint8_t> m_rgb;
};

/// True when the built-in font has a glyph for `c` (others draw as '?').
bool font_has_glyph(char c);

/// How the encoder predicts each row before deflate (PNG filter types 0-4).
enum class PngFilter {
  None,     ///< type 0 on every row: the raw pixels
  Adaptive, ///< per row, the type whose residuals have the smallest sum of magnitudes
};

/// The PNG file (signature, IHDR, one IDAT, IEND) of `canvas`, as bytes.
std::vector<std::uint8_t> encode_png(const Canvas& canvas, PngFilter filter = PngFilter::Adaptive);

/// Writes `canvas` as a PNG file at `path` through `<path>.tmp-<pid>` and an atomic rename, so
/// `path` is either the old file or the complete new one. Creates missing parent folders.
/// Throws OutputError naming the path and the failing step.
void write_png(const std::string& path, const Canvas& canvas);

} // namespace minimod
