// Json: writes one JSON document in order (bypass-pmd's --json output, the admin socket's answers,
// Config::to_json, bypass-bench's result files): begin/end calls, keys and values build a tree of
// nlohmann-json values, which str() prints compactly with the library's serializer. So every
// JSON text we write has one escaper (RFC 8259 §7: quote, backslash and controls below 0x20;
// invalid UTF-8 replaced by U+FFFD rather than passed through) and one number format (a double in
// its shortest exact form, inf and nan as null). Keys stay in insertion order. Off the data path:
// each value is a heap node.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bypass {

class Json {
 public:
  Json();
  ~Json();
  Json(Json&&) noexcept;
  Json& operator=(Json&&) noexcept;

  // Containers: a value in their parent (after key() in an object), closed by the matching end.
  Json& begin_object();
  Json& end_object();
  Json& begin_array();
  Json& end_array();
  // The key of the next value, inside an object.
  Json& key(std::string_view k);

  Json& value(std::string_view v);
  Json& value(const char* v) { return value(std::string_view(v)); }
  Json& value(const std::string& v) { return value(std::string_view(v)); }
  Json& value(bool v);
  Json& value(uint64_t v);
  Json& value(int64_t v);
  Json& value(unsigned v) { return value(uint64_t{v}); }
  Json& value(int v) { return value(int64_t{v}); }
  Json& value(double v);
  Json& null();
  // A value that is already JSON text (an object another component wrote); std::invalid_argument
  // when it is not valid JSON.
  Json& raw(std::string_view json);
  Json& strings(const std::vector<std::string>& items);
  template <typename T>
  Json& field(std::string_view k, const T& v) { key(k); return value(v); }

  // The document, compact ("{"a":1,"b":[true]}"); "null" when nothing was written.
  std::string str() const;

 private:
  struct Tree;
  template <typename T>
  Json& put(T v);  // the next value (defined and used in json.cc only)
  std::unique_ptr<Tree> tree_;
};

}  // namespace bypass
