#pragma once
/// A tiny streaming JSON writer: pretty-printed (2-space indent) into a std::string.
///
/// Calls are checked: a key outside an object, a value without a key inside an object, a
/// mismatched end or a second top-level value throw std::logic_error, so a wrong sequence is a
/// bug found at once rather than an invalid file found later by a reader.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace minimod {

/// Streaming JSON writer: begin/end objects and arrays, keys, scalar values.
///
/// Example:
///   JsonWriter json;
///   json.begin_object().field("name", "demo").key("sizes").begin_array();
///   json.value(1).value(2.5).end_array().end_object();
///   write(json.str());
class JsonWriter {
public:
  /// Starts an object, as the top-level value, an array element or the value of a key.
  JsonWriter& begin_object() {
    open_container('{', Frame::Kind::kObject);
    return *this;
  }

  /// Ends the innermost object.
  JsonWriter& end_object() {
    close_container('}', Frame::Kind::kObject);
    return *this;
  }

  /// Starts an array, as the top-level value, an array element or the value of a key.
  JsonWriter& begin_array() {
    open_container('[', Frame::Kind::kArray);
    return *this;
  }

  /// Ends the innermost array.
  JsonWriter& end_array() {
    close_container(']', Frame::Kind::kArray);
    return *this;
  }

  /// Writes a key in the innermost object; the next call must write its value.
  JsonWriter& key(std::string_view name) {
    if (m_stack.empty() || m_stack.back().kind != Frame::Kind::kObject)
      throw std::logic_error("JsonWriter: key \"" + std::string(name) + "\" outside an object");
    if (m_key_pending)
      throw std::logic_error("JsonWriter: key \"" + std::string(name) +
                             "\" follows a key that has no value");
    separate_and_indent();
    append_escaped(m_out, name);
    m_out += ": ";
    m_key_pending = true;
    return *this;
  }

  /// Writes a string value (escaped; bytes >= 0x80 pass through, so give it UTF-8).
  JsonWriter& value(std::string_view text) {
    write_scalar(quote(text));
    return *this;
  }

  /// Writes a string value; without this overload a string literal would pick value(bool).
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }

  /// Writes a string value.
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }

  /// Writes a number: integral values as integers, others with the fewest digits (at most 17)
  /// that read back to the same double, non-finite values as null (JSON has no NaN or Inf).
  JsonWriter& value(double number) {
    write_scalar(format_number(number));
    return *this;
  }

  /// Writes an integer exactly (any integral type but bool).
  /// @tparam Integer  a signed or unsigned integral type
  template <
      typename Integer,
      std::enable_if_t<std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>, int> = 0>
  JsonWriter& value(Integer number) {
    write_scalar(std::to_string(number));
    return *this;
  }

  /// Writes true or false.
  JsonWriter& value(bool flag) {
    write_scalar(flag ? "true" : "false");
    return *this;
  }

  /// Writes null.
  JsonWriter& null() {
    write_scalar("null");
    return *this;
  }

  /// Writes `"name": value` in the innermost object.
  /// @tparam Value  anything value() accepts
  template <typename Value> JsonWriter& field(std::string_view name, const Value& v) {
    key(name);
    return value(v);
  }

  /// Writes `"name": null` in the innermost object.
  JsonWriter& null_field(std::string_view name) {
    key(name);
    return null();
  }

  /// True once one complete top-level value has been written.
  bool complete() const { return m_top_level_done && m_stack.empty(); }

  /// The text written so far; a complete document ends with a newline.
  const std::string& str() const { return m_out; }

  /// `text` as a quoted JSON string.
  static std::string quote(std::string_view text) {
    std::string out;
    append_escaped(out, text);
    return out;
  }

  /// `number` as JSON writes it (see value(double)).
  static std::string format_number(double number) {
    std::string out;
    append_number(out, number);
    return out;
  }

private:
  struct Frame {
    enum class Kind { kObject, kArray };
    Kind kind;
    std::size_t n_items; ///< members or elements written so far
  };

  static constexpr int kIndentWidth = 2;

  /// Integral doubles below 2^53 are exact as integers; beyond that, exponent form is shorter.
  static constexpr double kMaxExactInteger = 9007199254740992.0;

  /// Newline and indentation before a member or element, with a comma after a previous one.
  void separate_and_indent() {
    Frame& frame = m_stack.back();
    if (frame.n_items > 0) m_out += ',';
    m_out += '\n';
    m_out.append(m_stack.size() * kIndentWidth, ' ');
    ++frame.n_items;
  }

  /// Checks that a value may go here and writes what precedes it.
  void begin_value() {
    if (m_stack.empty()) {
      if (m_top_level_done) throw std::logic_error("JsonWriter: a second top-level value");
      return;
    }
    if (m_stack.back().kind == Frame::Kind::kObject) {
      if (!m_key_pending)
        throw std::logic_error("JsonWriter: a value in an object needs a key first");
      m_key_pending = false;
      return;
    }
    separate_and_indent();
  }

  /// Writes a scalar's text where a value may go.
  void write_scalar(std::string_view text) {
    begin_value();
    m_out += text;
    if (m_stack.empty()) finish_document();
  }

  void open_container(char bracket, Frame::Kind kind) {
    begin_value();
    m_out += bracket;
    m_stack.push_back(Frame{kind, 0});
  }

  void close_container(char bracket, Frame::Kind kind) {
    if (m_stack.empty() || m_stack.back().kind != kind)
      throw std::logic_error(std::string("JsonWriter: '") + bracket +
                             "' does not match the open container");
    if (m_key_pending)
      throw std::logic_error(std::string("JsonWriter: '") + bracket +
                             "' after a key with no value");
    const bool had_items = m_stack.back().n_items > 0;
    m_stack.pop_back();
    if (had_items) {
      m_out += '\n';
      m_out.append(m_stack.size() * kIndentWidth, ' ');
    }
    m_out += bracket;
    if (m_stack.empty()) finish_document();
  }

  void finish_document() {
    m_top_level_done = true;
    m_out += '\n';
  }

  static void append_escaped(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (const char c : text) {
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          const auto byte = static_cast<unsigned char>(c);
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xf];
        } else {
          out += c;
        }
      }
    }
    out += '"';
  }

  static void append_number(std::string& out, double number) {
    if (!std::isfinite(number)) {
      out += "null";
      return;
    }
    if (number == std::trunc(number) && std::fabs(number) <= kMaxExactInteger) {
      if (number == 0.0 && std::signbit(number))
        out += "-0";
      else
        out += std::to_string(static_cast<std::int64_t>(number));
      return;
    }
    // Shortest of %.15g..%.17g that reads back exactly; %.17g always does.
    char buffer[32];
    for (int precision = 15; precision <= 17; ++precision) {
      std::snprintf(buffer, sizeof buffer, "%.*g", precision, number);
      if (precision == 17 || std::strtod(buffer, nullptr) == number) break;
    }
    for (char* p = buffer; *p != '\0'; ++p) {
      if (*p == ',') // a locale with a decimal comma; JSON wants a point
        *p = '.';
    }
    out += buffer;
  }

  std::string m_out;
  std::vector<Frame> m_stack;
  bool m_key_pending = false;
  bool m_top_level_done = false;
};

} // namespace minimod
