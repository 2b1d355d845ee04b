#include "stack/transport_registry.h"

#include <stdexcept>

namespace bypass {

void TransportRegistry::add(std::string name, Factory factory) {
  if (find(name) != nullptr) throw std::logic_error("transport '" + name + "' registered twice");
  entries_.emplace_back(std::move(name), factory);
}

TransportRegistry::Factory TransportRegistry::find(std::string_view name) const {
  for (const auto& [entry_name, factory] : entries_) {
    if (entry_name == name) return factory;
  }
  return nullptr;
}

std::string TransportRegistry::describe_names() const {
  if (entries_.empty()) return "none (this build has no transport)";
  std::string text;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) text += i + 1 == entries_.size() ? " or " : ", ";
    text += entries_[i].first;
  }
  return text;
}

const TransportRegistry& TransportRegistry::compiled_in() {
  static const TransportRegistry registry = [] {
    TransportRegistry r;
    register_compiled_transports(r);
    return r;
  }();
  return registry;
}

}  // namespace bypass
