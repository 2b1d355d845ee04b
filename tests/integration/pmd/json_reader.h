// A strict RFC 8259 JSON reader for the tests: they parse bypass-pmd's --json output instead of
// searching it for substrings, so malformed output (a trailing comma, a bare nan, a missing
// quote) fails the test rather than slipping through.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bypass::test {

struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  std::string text;  // a string's value, or a number's digits as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // in document order

  bool is_object() const { return type == Type::Object; }
  bool is_array() const { return type == Type::Array; }
  bool is_string() const { return type == Type::String; }
  bool is_number() const { return type == Type::Number; }

  const JsonValue* find(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  // The member `key`; throws (failing the test with a message) when absent.
  const JsonValue& at(std::string_view key) const {
    if (!is_object()) throw std::runtime_error("JSON: looked up '" + std::string(key) + "' in a non-object");
    const JsonValue* v = find(key);
    if (!v) throw std::runtime_error("JSON: no member '" + std::string(key) + "'");
    return *v;
  }
  const JsonValue& at(size_t index) const {
    if (!is_array() || index >= items.size()) throw std::runtime_error("JSON: no array item " + std::to_string(index));
    return items[index];
  }
  // A non-negative integer (a counter); throws for anything else.
  uint64_t count() const {
    if (!is_number() || text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("JSON: '" + text + "' is not a non-negative integer");
    return std::stoull(text);
  }
};

class JsonReader {
 public:
  // Parses exactly one JSON value filling all of `text` (surrounding white space allowed).
  static JsonValue parse(std::string_view text) {
    JsonReader r(text);
    JsonValue v = r.value(0);
    r.skip_space();
    if (r.pos_ != text.size()) r.fail("trailing characters");
    return v;
  }

 private:
  explicit JsonReader(std::string_view text) : in_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(pos_) + ": " + what + " in: " +
                             std::string(in_.substr(0, 300)));
  }
  void skip_space() {
    while (pos_ < in_.size() && (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r'))
      ++pos_;
  }
  bool take(char c) {
    if (pos_ < in_.size() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  bool take_word(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue value(int depth) {
    if (depth > 64) fail("nested too deeply");
    skip_space();
    if (pos_ >= in_.size()) fail("unexpected end");
    JsonValue v;
    const char c = in_[pos_];
    if (c == '{') {
      v.type = JsonValue::Type::Object;
      ++pos_;
      skip_space();
      if (take('}')) return v;
      do {
        skip_space();
        std::string key = string();
        skip_space();
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
        skip_space();
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      v.type = JsonValue::Type::Array;
      ++pos_;
      skip_space();
      if (take(']')) return v;
      do {
        v.items.push_back(value(depth + 1));
        skip_space();
      } while (take(','));
      expect(']');
    } else if (c == '"') {
      v.type = JsonValue::Type::String;
      v.text = string();
    } else if (take_word("true")) {
      v.type = JsonValue::Type::Bool;
      v.boolean = true;
    } else if (take_word("false")) {
      v.type = JsonValue::Type::Bool;
    } else if (take_word("null")) {
      v.type = JsonValue::Type::Null;
    } else {
      v.type = JsonValue::Type::Number;
      v.text = number();
    }
    return v;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    take('-');
    if (take('0')) {
      if (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') fail("leading zero");
    } else if (digits() == 0) {
      fail("not a value");
    }
    if (take('.') && digits() == 0) fail("no digits after '.'");
    if (take('e') || take('E')) {
      if (!take('+')) take('-');
      if (digits() == 0) fail("no exponent digits");
    }
    return std::string(in_.substr(start, pos_ - start));
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= in_.size()) fail("unterminated string");
      const char c = in_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= in_.size()) fail("unterminated escape");
      const char e = in_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > in_.size()) fail("short \\u escape");
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = in_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= unsigned(h - '0');
            else if (h >= 'a' && h <= 'f') code |= unsigned(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= unsigned(h - 'A' + 10);
            else fail("bad \\u escape");
          }
          // The tests only compare ASCII names; other code points are kept as '?'.
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default: fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
};

// Every non-empty line of `text` parsed as one JSON document (bypass-pmd prints one per line).
inline std::vector<JsonValue> parse_json_lines(const std::string& text) {
  std::vector<JsonValue> docs;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) docs.push_back(JsonReader::parse(line));
    start = end + 1;
  }
  return docs;
}

}  // namespace bypass::test
