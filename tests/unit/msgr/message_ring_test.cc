// MessageRing: FIFO order across wrap-around, and across the move from the inline slots to a heap
// array while the ring is wrapped.
#include "msgr/message_ring.h"

#include <gtest/gtest.h>

#include <memory>

namespace bypass::msgr {
namespace {

MessageRef message_with_tid(uint64_t tid) {
  auto m = std::make_shared<Message>(1);
  m->set_tid(tid);
  return m;
}

TEST(MessageRing, KeepsOrderWhenWrappingInsideTheInlineSlots) {
  MessageRing ring;
  uint64_t next_in = 1, next_out = 1;
  // Three times round the inline slots, never more than kInline in flight.
  for (int round = 0; round < 3 * static_cast<int>(MessageRing::kInline); ++round) {
    while (ring.size() < MessageRing::kInline) ring.push_back(message_with_tid(next_in++));
    ASSERT_EQ(ring.front()->tid(), next_out);
    ring.pop_front();
    ++next_out;
  }
  for (size_t i = 0; i < ring.size(); ++i) EXPECT_EQ(ring[i]->tid(), next_out + i);
}

TEST(MessageRing, GrowsPastTheInlineSlotsInOrderAndReleasesWhatItDrops) {
  MessageRing ring;
  // Wrap first, so the move to the heap array has to unwind head_.
  for (uint64_t t = 1; t <= MessageRing::kInline; ++t) ring.push_back(message_with_tid(t));
  for (int i = 0; i < 3; ++i) ring.pop_front();
  const size_t many = 5 * MessageRing::kInline;
  std::weak_ptr<Message> watched;
  for (uint64_t t = MessageRing::kInline + 1; t <= MessageRing::kInline + many; ++t) {
    auto m = message_with_tid(t);
    if (t == MessageRing::kInline + 2) watched = m;
    ring.push_back(std::move(m));
  }
  ASSERT_EQ(ring.size(), MessageRing::kInline - 3 + many);
  for (size_t i = 0; i < ring.size(); ++i) ASSERT_EQ(ring[i]->tid(), 4 + i) << "slot " << i;
  EXPECT_FALSE(watched.expired());
  while (ring.front()->tid() <= MessageRing::kInline + 2) ring.pop_front();
  EXPECT_TRUE(watched.expired());  // popping drops the ring's reference
  ring.clear();
  EXPECT_TRUE(ring.empty());
  ring.push_back(message_with_tid(99));
  EXPECT_EQ(ring.front()->tid(), 99u);
}

}  // namespace
}  // namespace bypass::msgr
