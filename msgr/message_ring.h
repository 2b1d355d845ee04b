// MessageRing: the FIFO of messages a connection has written but the peer has not acknowledged.
// A power-of-two ring that only grows (to the largest number ever in flight), so pushing and
// popping in steady state never touch the heap, unlike std::deque, which frees and allocates a
// node every few dozen messages.
//
// The first kInline slots live in the ring itself, that is in the connection's own first cache
// lines: at a thousand connections a session is cold whenever its next message comes, and a
// separate array of 64 slots (1 KiB, walked one line per four messages) cost its own miss at
// every send and every acknowledgement. A connection with more in flight moves to a heap array
// once and stays there.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "msgr/message.h"

namespace bypass::msgr {

class MessageRing {
 public:
  // Slots held inline: a depth of up to 8 messages in flight each way needs no array.
  static constexpr size_t kInline = 8;

  MessageRing() = default;
  MessageRing(const MessageRing&) = delete;  // slots_ may point into this object
  MessageRing& operator=(const MessageRing&) = delete;

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  MessageRef& front() { return slots_[head_]; }
  // i-th oldest (0 = front).
  MessageRef& operator[](size_t i) { return slots_[(head_ + i) & mask_]; }

  void push_back(MessageRef m) {
    if (count_ == mask_ + 1) grow();
    slots_[(head_ + count_) & mask_] = std::move(m);
    ++count_;
  }
  void pop_front() {
    slots_[head_].reset();
    head_ = (head_ + 1) & mask_;
    --count_;
  }
  void clear() {
    while (!empty()) pop_front();
    head_ = 0;
  }

 private:
  void grow() {
    const size_t capacity = (mask_ + 1) * 2;
    auto bigger = std::make_unique<MessageRef[]>(capacity);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move((*this)[i]);
    heap_ = std::move(bigger);  // the old heap array, if any, goes here; inline slots stay empty
    slots_ = heap_.get();
    mask_ = capacity - 1;
    head_ = 0;
  }

  // head_ and count_ first: an acknowledgement reads them and the oldest slot, which then share a line.
  size_t head_ = 0;
  size_t count_ = 0;
  size_t mask_ = kInline - 1;  // capacity - 1 (a power of two)
  MessageRef* slots_ = inline_;
  MessageRef inline_[kInline];
  std::unique_ptr<MessageRef[]> heap_;
};

}  // namespace bypass::msgr
