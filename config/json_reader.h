// A strict RFC 8259 JSON reader, shared by the tools (bypass-bench compare reads result files) and
// the tests (they parse bypass-pmd's --json output instead of searching it for substrings, so
// malformed output — a trailing comma, a bare nan, a missing quote — fails rather than slipping
// through). Errors name the line, column and byte offset of the first bad character.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bypass::config {

class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  std::string text;  // a string's value, or a number's digits as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // in document order

  bool is_null() const { return type == Type::Null; }
  bool is_bool() const { return type == Type::Bool; }
  bool is_object() const { return type == Type::Object; }
  bool is_array() const { return type == Type::Array; }
  bool is_string() const { return type == Type::String; }
  bool is_number() const { return type == Type::Number; }
  // "an object", "an array", "a string", "a number", "a boolean" or "null": for error messages
  // ("is an array, expected an object").
  std::string type_name() const;

  // The member `key`, or nullptr when absent (or when this is not an object).
  const JsonValue* find(std::string_view key) const;
  // The member `key`; throws JsonError when absent or when this is not an object.
  const JsonValue& at(std::string_view key) const;
  // Array item `index`; throws JsonError when out of range or when this is not an array.
  const JsonValue& at(size_t index) const;
  // A non-negative integer (a counter); throws JsonError for anything else.
  uint64_t count() const;
  // Any number as a double; throws JsonError for a non-number.
  double number() const;
};

// Parses exactly one JSON value filling all of `text` (surrounding white space allowed). Throws
// JsonError "line L, column C (byte offset O): what" on malformed input.
JsonValue parse_json(std::string_view text);

// Every non-empty line of `text` parsed as one JSON document (bypass-pmd prints one per line).
std::vector<JsonValue> parse_json_lines(std::string_view text);

}  // namespace bypass::config
