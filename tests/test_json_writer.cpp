#include "io/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace minimod {
namespace {

TEST(JsonWriter, EscapesQuotesBackslashesAndNamedControls) {
  EXPECT_EQ(JsonWriter::quote("plain"), "\"plain\"");
  EXPECT_EQ(JsonWriter::quote("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(JsonWriter::quote("C:\\dir\\file"), "\"C:\\\\dir\\\\file\"");
  EXPECT_EQ(JsonWriter::quote("a\nb\tc\rd\be\ff"), "\"a\\nb\\tc\\rd\\be\\ff\"");
  EXPECT_EQ(JsonWriter::quote("a/b"), "\"a/b\"");
}

TEST(JsonWriter, EscapesOtherControlCharactersAsUnicode) {
  const std::string text{'x', '\0', '\x01', '\x1f', '\x7f', 'y'};
  // DEL (0x7f) is allowed unescaped in JSON strings.
  EXPECT_EQ(JsonWriter::quote(text), "\"x\\u0000\\u0001\\u001f\x7fy\"");
}

TEST(JsonWriter, PassesUtf8Through) {
  EXPECT_EQ(JsonWriter::quote("v\xc3\xa9locit\xc3\xa9"), "\"v\xc3\xa9locit\xc3\xa9\"");
}

TEST(JsonWriter, EscapesKeys) {
  JsonWriter json;
  json.begin_object().field("a\"b", 1).end_object();
  EXPECT_EQ(json.str(), "{\n  \"a\\\"b\": 1\n}\n");
}

TEST(JsonWriter, PrettyPrintsNestedContainers) {
  JsonWriter json;
  json.begin_object();
  json.field("name", "demo");
  json.key("shape").begin_array().value(3).value(4).end_array();
  json.key("empty_object").begin_object().end_object();
  json.key("empty_array").begin_array().end_array();
  json.key("kernel").begin_object().field("tile", "32x4x4").field("ok", true).end_object();
  json.key("rows").begin_array();
  json.begin_array().value(1).end_array();
  json.begin_object().null_field("missing").end_object();
  json.null();
  json.end_array();
  json.end_object();

  const char* expected = R"({
  "name": "demo",
  "shape": [
    3,
    4
  ],
  "empty_object": {},
  "empty_array": [],
  "kernel": {
    "tile": "32x4x4",
    "ok": true
  },
  "rows": [
    [
      1
    ],
    {
      "missing": null
    },
    null
  ]
}
)";
  EXPECT_EQ(json.str(), expected);
  EXPECT_TRUE(json.complete());
}

TEST(JsonWriter, WritesScalarsAsTopLevelValues) {
  JsonWriter json;
  EXPECT_FALSE(json.complete());
  json.value(false);
  EXPECT_TRUE(json.complete());
  EXPECT_EQ(json.str(), "false\n");
}

TEST(JsonWriter, StringOverloadsDoNotBecomeBools) {
  JsonWriter json;
  const std::string owned = "owned";
  json.begin_array().value("literal").value(owned).value(std::string_view("view")).end_array();
  EXPECT_EQ(json.str(), "[\n  \"literal\",\n  \"owned\",\n  \"view\"\n]\n");
}

TEST(JsonWriter, WritesIntegralDoublesAsIntegers) {
  EXPECT_EQ(JsonWriter::format_number(0.0), "0");
  EXPECT_EQ(JsonWriter::format_number(-0.0), "-0");
  EXPECT_EQ(JsonWriter::format_number(1000.0), "1000");
  EXPECT_EQ(JsonWriter::format_number(-42.0), "-42");
  EXPECT_EQ(JsonWriter::format_number(9007199254740992.0), "9007199254740992");
  // Past 2^53 the exponent form is exact and shorter.
  EXPECT_EQ(JsonWriter::format_number(1e300), "1e+300");
}

TEST(JsonWriter, WritesFractionsWithFewestRoundTripDigits) {
  EXPECT_EQ(JsonWriter::format_number(0.5), "0.5");
  EXPECT_EQ(JsonWriter::format_number(0.1), "0.1");
  EXPECT_EQ(JsonWriter::format_number(1.5e-7), "1.5e-07");
  for (const double number : {0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0 * 1e-300, 5e-324,
                              std::numeric_limits<double>::max(), 123456.789}) {
    const std::string text = JsonWriter::format_number(number);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), number) << text;
  }
  EXPECT_EQ(JsonWriter::format_number(0.1 + 0.2), "0.30000000000000004");
}

TEST(JsonWriter, WritesIntegersExactly) {
  JsonWriter json;
  json.begin_array()
      .value(std::numeric_limits<std::int64_t>::min())
      .value(std::numeric_limits<std::uint64_t>::max())
      .value(static_cast<short>(-7))
      .value(std::size_t{12})
      .end_array();
  EXPECT_EQ(json.str(), "[\n  -9223372036854775808,\n  18446744073709551615,\n  -7,\n  12\n]\n");
}

TEST(JsonWriter, WritesNonFiniteAsNull) {
  JsonWriter json;
  json.begin_object()
      .field("nan", std::nan(""))
      .field("inf", std::numeric_limits<double>::infinity())
      .field("minus_inf", -std::numeric_limits<double>::infinity())
      .field("float_nan", std::numeric_limits<float>::quiet_NaN())
      .end_object();
  EXPECT_EQ(json.str(),
            "{\n  \"nan\": null,\n  \"inf\": null,\n  \"minus_inf\": null,\n  \"float_nan\": "
            "null\n}\n");
}

TEST(JsonWriter, RejectsMisuse) {
  {
    JsonWriter json;
    EXPECT_THROW(json.key("outside"), std::logic_error);
  }
  {
    JsonWriter json;
    json.begin_object();
    EXPECT_THROW(json.value(1), std::logic_error); // no key
    json.key("k");
    EXPECT_THROW(json.key("again"), std::logic_error);
    EXPECT_THROW(json.end_object(), std::logic_error); // key without value
  }
  {
    JsonWriter json;
    json.begin_array();
    EXPECT_THROW(json.end_object(), std::logic_error);
    EXPECT_THROW(json.key("k"), std::logic_error);
    json.end_array();
    EXPECT_THROW(json.end_array(), std::logic_error);
    EXPECT_THROW(json.value(1), std::logic_error); // second top-level value
  }
}

} // namespace
} // namespace minimod
