// MessageRing: the FIFO of messages a connection has written but the peer has not acknowledged.
// A power-of-two ring that only grows (to the largest number ever in flight), so pushing and
// popping in steady state never touch the heap, unlike std::deque, which frees and allocates a
// node every few dozen messages.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "msgr/message.h"

namespace bypass::msgr {

class MessageRing {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  MessageRef& front() { return slots_[head_]; }
  // i-th oldest (0 = front).
  MessageRef& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }

  void push_back(MessageRef m) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) & (slots_.size() - 1)] = std::move(m);
    ++count_;
  }
  void pop_front() {
    slots_[head_].reset();
    head_ = (head_ + 1) & (slots_.size() - 1);
    --count_;
  }
  void clear() {
    while (!empty()) pop_front();
    head_ = 0;
  }

 private:
  void grow() {
    std::vector<MessageRef> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<MessageRef> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace bypass::msgr
