#include "base/json.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace bypass {

using Node = nlohmann::ordered_json;  // keys in insertion order

struct Json::Tree {
  Node root;
  // The containers begun and not yet ended, innermost last. Each is the newest child of the one
  // before it, and only the innermost grows, so these pointers stay valid.
  std::vector<Node*> open;
  std::string key;
  bool has_key = false;

  // Places `v` as the next value: the root, the next item of an array, or the member named by
  // the pending key of an object.
  Node& add(Node v) {
    if (open.empty()) {
      if (!root.is_null()) throw std::logic_error("Json: a second value at the top level");
      root = std::move(v);
      return root;
    }
    Node& parent = *open.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return parent.back();
    }
    if (!has_key) throw std::logic_error("Json: a value inside an object without a key");
    has_key = false;
    Node& slot = parent[key];
    slot = std::move(v);
    return slot;
  }
  void end(bool object) {
    if (open.empty() || open.back()->is_object() != object)
      throw std::logic_error(object ? "Json: end_object without its begin_object"
                                    : "Json: end_array without its begin_array");
    open.pop_back();
  }
};

Json::Json() : tree_(std::make_unique<Tree>()) {}
Json::~Json() = default;
Json::Json(Json&&) noexcept = default;
Json& Json::operator=(Json&&) noexcept = default;

Json& Json::begin_object() {
  tree_->open.push_back(&tree_->add(Node::object()));
  return *this;
}
Json& Json::end_object() {
  tree_->end(true);
  return *this;
}
Json& Json::begin_array() {
  tree_->open.push_back(&tree_->add(Node::array()));
  return *this;
}
Json& Json::end_array() {
  tree_->end(false);
  return *this;
}
Json& Json::key(std::string_view k) {
  if (tree_->open.empty() || !tree_->open.back()->is_object()) throw std::logic_error("Json: a key outside an object");
  tree_->key.assign(k);
  tree_->has_key = true;
  return *this;
}

template <typename T>
Json& Json::put(T v) {
  tree_->add(Node(std::move(v)));
  return *this;
}

Json& Json::value(std::string_view v) { return put(std::string(v)); }
Json& Json::value(bool v) { return put(v); }
Json& Json::value(uint64_t v) { return put(v); }
Json& Json::value(int64_t v) { return put(v); }
Json& Json::value(double v) { return put(v); }
Json& Json::null() { return put(nullptr); }

Json& Json::raw(std::string_view json) {
  Node parsed = Node::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    throw std::invalid_argument("Json::raw: not valid JSON: " + std::string(json.substr(0, 200)));
  tree_->add(std::move(parsed));
  return *this;
}

Json& Json::strings(const std::vector<std::string>& items) {
  begin_array();
  for (const std::string& s : items) value(s);
  return end_array();
}

std::string Json::str() const {
  // Replace, not throw: a peer's name or a file path need not be UTF-8, and an answer with
  // U+FFFD in it serves better than none.
  return tree_->root.dump(-1, ' ', false, Node::error_handler_t::replace);
}

}  // namespace bypass
