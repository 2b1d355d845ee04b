#include "config/json_reader.h"

#include <gtest/gtest.h>

namespace bypass::config {
namespace {

// The JsonError message `text` produces; empty when it parses.
std::string parse_error(std::string_view text) {
  try {
    parse_json(text);
  } catch (const JsonError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonReaderTest, ParsesEveryKindOfValue) {
  const JsonValue v = parse_json(
      R"( {"n": -12.5e1, "zero": 0, "s": "a\"b\\c\u00e9\ud83d\ude00", "t": true, "f": false, "z": null,
           "a": [1, [2], {}], "o": {"k": "v"}} )");
  ASSERT_TRUE(v.is_object());
  EXPECT_DOUBLE_EQ(v.at("n").number(), -125.0);
  EXPECT_EQ(v.at("zero").count(), 0u);
  EXPECT_EQ(v.at("s").text, "a\"b\\c\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v.at("t").boolean);
  EXPECT_TRUE(v.at("f").is_bool());
  EXPECT_FALSE(v.at("f").boolean);
  EXPECT_TRUE(v.at("z").is_null());
  EXPECT_EQ(v.at("a").items.size(), 3u);
  EXPECT_EQ(v.at("a").at(1).at(size_t{0}).count(), 2u);
  EXPECT_EQ(v.at("o").at("k").text, "v");
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonReaderTest, MalformedInputNamesLineColumnAndOffset) {
  EXPECT_EQ(parse_error("{\"a\": 1,\n \"b\": ]}"),
            "line 2, column 7 (byte offset 15): not a JSON value (expected an object, array, string, number, "
            "true, false or null)");
  EXPECT_EQ(parse_error("[1, 2,]"), "line 1, column 7 (byte offset 6): not a JSON value (expected an object, "
                                    "array, string, number, true, false or null)");
  EXPECT_EQ(parse_error("{\"a\" 1}"), "line 1, column 6 (byte offset 5): expected ':' after an object key");
  EXPECT_EQ(parse_error("[1 2]"), "line 1, column 4 (byte offset 3): expected ']' or ',' in an array");
  EXPECT_EQ(parse_error("\"abc"), "line 1, column 5 (byte offset 4): unterminated string");
  EXPECT_EQ(parse_error("01"), "line 1, column 2 (byte offset 1): number with a leading zero");
  EXPECT_EQ(parse_error("1."), "line 1, column 3 (byte offset 2): no digits after '.' in a number");
  EXPECT_EQ(parse_error("nan"), "line 1, column 1 (byte offset 0): not a JSON value (expected an object, array, "
                                "string, number, true, false or null)");
  EXPECT_EQ(parse_error("{} x"), "line 1, column 4 (byte offset 3): trailing characters after the value");
  EXPECT_EQ(parse_error(""), "line 1, column 1 (byte offset 0): unexpected end of input, expected a value");
  EXPECT_EQ(parse_error("\"\\x\""), "line 1, column 3 (byte offset 2): bad escape '\\x'");
  EXPECT_EQ(parse_error("\"\\udc00\""), "line 1, column 8 (byte offset 7): unpaired low surrogate in a \\u escape");
  EXPECT_EQ(parse_error("\"a\tb\""), "line 1, column 3 (byte offset 2): unescaped control character in a string");
  EXPECT_EQ(parse_error(std::string(100, '[')), "line 1, column 66 (byte offset 65): nested more than 64 levels deep");
}

TEST(JsonReaderTest, AccessorsRefuseTheWrongType) {
  const JsonValue v = parse_json(R"({"s": "x", "neg": -1, "frac": 1.5, "a": []})");
  EXPECT_THROW(v.at("missing"), JsonError);
  EXPECT_THROW(v.at("a").at(0), JsonError);
  EXPECT_THROW(v.at("s").at("k"), JsonError);
  EXPECT_THROW(v.at("s").number(), JsonError);
  EXPECT_THROW(v.at("neg").count(), JsonError);
  EXPECT_THROW(v.at("frac").count(), JsonError);
  EXPECT_THROW(parse_json("18446744073709551616").count(), JsonError);
  EXPECT_EQ(parse_json("18446744073709551615").count(), UINT64_MAX);
}

TEST(JsonReaderTest, JsonLinesNameTheBadLine) {
  EXPECT_EQ(parse_json_lines("{\"a\":1}\n\n[2]\n").size(), 2u);
  try {
    parse_json_lines("{}\n{\"a\":}\n");
    FAIL() << "the second document is malformed";
  } catch (const JsonError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("document on line 2: line 1, column 6", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace bypass::config
