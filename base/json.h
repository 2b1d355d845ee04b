// A minimal JSON writer (bypass-pmd's --json output, the admin socket's answers): compact, keys in
// insertion order, strings escaped per RFC 8259 §7.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace bypass {

class Json {
 public:
  Json& begin_object() { separator(); out_ += '{'; first_ = true; return *this; }
  Json& end_object() { out_ += '}'; first_ = false; return *this; }
  Json& begin_array() { separator(); out_ += '['; first_ = true; return *this; }
  Json& end_array() { out_ += ']'; first_ = false; return *this; }
  Json& key(std::string_view k) {
    separator();
    quote(k);
    out_ += ':';
    first_ = true;  // the value follows without a comma
    return *this;
  }
  Json& value(std::string_view v) { separator(); quote(v); return *this; }
  Json& value(const char* v) { return value(std::string_view(v)); }
  Json& value(const std::string& v) { return value(std::string_view(v)); }
  Json& value(bool v) { separator(); out_ += v ? "true" : "false"; return *this; }
  Json& value(uint64_t v) { separator(); out_ += std::to_string(v); return *this; }
  Json& value(int64_t v) { separator(); out_ += std::to_string(v); return *this; }
  Json& value(unsigned v) { return value(uint64_t{v}); }
  Json& value(int v) { return value(int64_t{v}); }
  Json& value(double v) {
    separator();
    // JSON has no inf or nan; %g would print them as bare words and break every parser.
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v);
    out_ += text;
    return *this;
  }
  // A value that is already JSON text (an object another component wrote).
  Json& raw(std::string_view json) { separator(); out_ += json; return *this; }
  Json& strings(const std::vector<std::string>& items) {
    begin_array();
    for (const auto& s : items) value(s);
    return end_array();
  }
  template <typename T>
  Json& field(std::string_view k, const T& v) { key(k); return value(v); }
  const std::string& str() const { return out_; }

 private:
  void separator() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  void quote(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out_ += esc;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }
  std::string out_;
  bool first_ = true;
};

}  // namespace bypass
