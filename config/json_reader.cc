#include "config/json_reader.h"

#include <cerrno>
#include <cstdlib>

namespace bypass::config {

namespace {

// Recursive-descent parser over RFC 8259's grammar (section 2 values, 6 numbers, 7 strings).
class Parser {
 public:
  explicit Parser(std::string_view text) : in_(text) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (pos_ != in_.size()) fail("trailing characters after the value");
    return v;
  }

 private:
  // Nesting deeper than this is refused so hostile input cannot exhaust the stack.
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos_ && i < in_.size(); ++i) {
      if (in_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    throw JsonError("line " + std::to_string(line) + ", column " + std::to_string(pos_ - line_start + 1) +
                    " (byte offset " + std::to_string(pos_) + "): " + what);
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
  void expect(char c, const char* where) {
    if (!take(c)) fail(std::string("expected '") + c + "' " + where);
  }
  bool take_word(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    skip_space();
    if (pos_ >= in_.size()) fail("unexpected end of input, expected a value");
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
        expect(':', "after an object key");
        v.members.emplace_back(std::move(key), value(depth + 1));
        skip_space();
      } while (take(','));
      expect('}', "or ',' in an object");
    } else if (c == '[') {
      v.type = JsonValue::Type::Array;
      ++pos_;
      skip_space();
      if (take(']')) return v;
      do {
        v.items.push_back(value(depth + 1));
        skip_space();
      } while (take(','));
      expect(']', "or ',' in an array");
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

  // RFC 8259 section 6: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    take('-');
    if (take('0')) {
      if (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') fail("number with a leading zero");
    } else if (digits() == 0) {
      fail("not a JSON value (expected an object, array, string, number, true, false or null)");
    }
    if (take('.') && digits() == 0) fail("no digits after '.' in a number");
    if (take('e') || take('E')) {
      if (!take('+')) take('-');
      if (digits() == 0) fail("no digits in a number's exponent");
    }
    return std::string(in_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (pos_ + 4 > in_.size()) fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = in_[pos_];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f') code |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= unsigned(h - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
      ++pos_;
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  // RFC 8259 section 7: a code point above U+FFFF is escaped as a UTF-16 surrogate pair.
  unsigned unicode_escape() {
    const unsigned first = hex4();
    if (first >= 0xDC00 && first <= 0xDFFF) fail("unpaired low surrogate in a \\u escape");
    if (first < 0xD800 || first > 0xDBFF) return first;
    if (!take_word("\\u")) fail("high surrogate not followed by a \\u low surrogate");
    const unsigned second = hex4();
    if (second < 0xDC00 || second > 0xDFFF) fail("high surrogate not followed by a low surrogate");
    return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
  }

  std::string string() {
    expect('"', "to start a string");
    std::string out;
    while (true) {
      if (pos_ >= in_.size()) fail("unterminated string");
      const char c = in_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("unescaped control character in a string");
      ++pos_;
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
        case 'u': append_utf8(out, unicode_escape()); break;
        default:
          --pos_;
          fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

std::string JsonValue::type_name() const {
  switch (type) {
    case Type::Null: return "null";
    case Type::Bool: return "a boolean";
    case Type::Number: return "a number";
    case Type::String: return "a string";
    case Type::Array: return "an array";
    case Type::Object: return "an object";
  }
  return "?";
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

const JsonValue& JsonValue::at(std::string_view key) const {
  if (!is_object()) throw JsonError("looked up '" + std::string(key) + "' in " + type_name() + ", not an object");
  const JsonValue* v = find(key);
  if (!v) throw JsonError("no member '" + std::string(key) + "'");
  return *v;
}

const JsonValue& JsonValue::at(size_t index) const {
  if (!is_array()) throw JsonError("looked up item " + std::to_string(index) + " in " + type_name() + ", not an array");
  if (index >= items.size())
    throw JsonError("no item " + std::to_string(index) + " in an array of " + std::to_string(items.size()));
  return items[index];
}

uint64_t JsonValue::count() const {
  if (!is_number() || text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw JsonError((is_number() ? "'" + text + "'" : type_name()) + " is not a non-negative integer");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) throw JsonError("'" + text + "' does not fit in 64 bits");
  return v;
}

double JsonValue::number() const {
  if (!is_number()) throw JsonError(type_name() + " is not a number");
  // The grammar was checked while parsing; strtod accepts every JSON number (an overflow gives inf).
  return std::strtod(text.c_str(), nullptr);
}

JsonValue parse_json(std::string_view text) { return Parser(text).document(); }

std::vector<JsonValue> parse_json_lines(std::string_view text) {
  std::vector<JsonValue> docs;
  size_t start = 0;
  size_t line_number = 1;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      try {
        docs.push_back(parse_json(line));
      } catch (const JsonError& e) {
        throw JsonError("document on line " + std::to_string(line_number) + ": " + e.what() + " in: " +
                        std::string(line.substr(0, 300)));
      }
    }
    start = end + 1;
    ++line_number;
  }
  return docs;
}

}  // namespace bypass::config
