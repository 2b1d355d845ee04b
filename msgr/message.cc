#include "msgr/message.h"

namespace bypass::msgr {

void MessageRegistry::add(uint16_t type, Factory factory) {
  std::lock_guard<std::mutex> guard(lock_);
  factories_[type] = std::move(factory);
}

MessageRef MessageRegistry::create(uint16_t type, uint16_t version, uint16_t compat) const {
  {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = factories_.find(type);
    if (it != factories_.end()) return it->second();
  }
  return std::make_shared<Message>(type, version, compat);
}

}  // namespace bypass::msgr
