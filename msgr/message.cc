#include "msgr/message.h"

#include <new>

#include "base/pool_allocator.h"

namespace bypass::msgr {

void MessageRegistry::add(uint16_t type, Factory factory) {
  std::lock_guard<std::mutex> guard(add_lock_);
  const Table* current = current_.load(std::memory_order_relaxed);
  auto next = current ? std::make_unique<Table>(*current) : std::make_unique<Table>();
  (*next)[type] = std::move(factory);
  tables_.push_back(std::move(next));
  current_.store(tables_.back().get(), std::memory_order_release);
}

MessageRef MessageRegistry::create(uint16_t type, uint16_t version, uint16_t compat) const {
  if (const Table* table = current_.load(std::memory_order_acquire)) {
    auto it = table->find(type);
    if (it != table->end()) return it->second();
  }
  return make_message(type, version, compat);
}

BufferList& Message::make_middle() {
  void* block = PoolAllocator<BufferList>().allocate(1);
  middle_.reset(new (block) BufferList());
  return *middle_;
}

void Message::MiddleDeleter::operator()(BufferList* middle) const {
  middle->~BufferList();
  PoolAllocator<BufferList>().deallocate(middle, 1);
}

const BufferList& Message::empty_middle() {
  static const BufferList empty{};
  return empty;
}

MessageRef make_message(uint16_t type, uint16_t version, uint16_t compat_version) {
  return std::allocate_shared<Message>(PoolAllocator<Message>(), type, version, compat_version);
}

}  // namespace bypass::msgr
