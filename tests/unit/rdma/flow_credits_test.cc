// Credit-based flow control without verbs: the immediate-data encoding, and the send and receive
// sides of one connection driven against each other.
#include "stack/rdma/flow_credits.h"

#include <gtest/gtest.h>

namespace bypass::rdma {
namespace {

TEST(FlowCredits, ImmediateEncodingKeepsTheFinDistinct) {
  EXPECT_FALSE(is_credit_immediate(kFinImmediate));
  EXPECT_TRUE(is_credit_immediate(credit_immediate(0)));
  EXPECT_EQ(credits_of(credit_immediate(17)), 17u);
  EXPECT_EQ(credits_of(credit_immediate(kMaxCreditsPerImmediate)), kMaxCreditsPerImmediate);
  EXPECT_NE(credit_immediate(kFinImmediate & ~kCreditTag), kFinImmediate);
}

TEST(FlowCredits, DescriptorAndReleaseImmediatesAreDistinct) {
  // A descriptor returns credits like any data SEND; the flag does not leak into the count.
  const uint32_t descriptor = credit_immediate(kMaxCreditsPerImmediate) | kDescriptorFlag;
  EXPECT_TRUE(is_credit_immediate(descriptor));
  EXPECT_TRUE(is_descriptor_immediate(descriptor));
  EXPECT_EQ(credits_of(descriptor), kMaxCreditsPerImmediate);
  EXPECT_FALSE(is_descriptor_immediate(credit_immediate(kMaxCreditsPerImmediate)));
  // A release is neither credits nor the FIN, and the FIN is no release.
  const uint32_t release = release_immediate(kMaxReleasesPerImmediate);
  EXPECT_FALSE(is_credit_immediate(release));
  EXPECT_TRUE(is_release_immediate(release));
  EXPECT_EQ(releases_of(release), kMaxReleasesPerImmediate);
  EXPECT_NE(release, kFinImmediate);
  EXPECT_FALSE(is_release_immediate(kFinImmediate));
  EXPECT_FALSE(is_release_immediate(credit_immediate(0)));
}

TEST(FlowCredits, SenderStopsAtZeroAndResumesOnReturn) {
  SendCredits s;
  s.reset(4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(s.can_send());
    s.consume();
  }
  EXPECT_FALSE(s.can_send());
  EXPECT_TRUE(s.add(3));
  EXPECT_EQ(s.available(), 3u);
  EXPECT_FALSE(s.add(2)) << "more back than was ever given";
  EXPECT_EQ(s.available(), 3u);
  EXPECT_TRUE(s.add(1));
  EXPECT_FALSE(s.add(1));
}

TEST(FlowCredits, ReceiverRefusesAnOverrunAndOwesWhatWasConsumed) {
  ReceiveCredits r(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(r.on_message());
  EXPECT_FALSE(r.on_message()) << "a fifth message overruns a window of 4";
  r.on_consumed(1);
  EXPECT_FALSE(r.on_message()) << "consumed but not yet returned still counts";
  EXPECT_EQ(r.owed(), 1u);
  EXPECT_EQ(r.take(), 1u);
  EXPECT_EQ(r.owed(), 0u);
  EXPECT_TRUE(r.on_message());
}

TEST(FlowCredits, CreditOnlyMessageDueAtHalfAWindowOneAtATime) {
  ReceiveCredits r(8);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(r.on_message());
  r.on_consumed(3);
  EXPECT_FALSE(r.credit_message_due());
  r.on_consumed(1);
  EXPECT_TRUE(r.credit_message_due());
  r.credit_message_posted();
  EXPECT_EQ(r.take(), 4u);
  r.on_consumed(4);
  EXPECT_FALSE(r.credit_message_due()) << "one credit-only message in flight at most";
  r.credit_message_completed();
  EXPECT_TRUE(r.credit_message_due());
  // A window of 2 (the option's minimum) returns each message as it is consumed.
  ReceiveCredits small(2);
  ASSERT_TRUE(small.on_message());
  small.on_consumed(1);
  EXPECT_TRUE(small.credit_message_due());
}

// Both ends against each other, with an owner that reads in bursts and a peer that sends whenever
// it may: the receiver never queues more than its window, and nothing stalls while owed credits
// travel back (piggy-backed or credit-only).
TEST(FlowCredits, SenderAndReceiverNeverExceedTheWindowNorStall) {
  constexpr uint32_t kWindow = 16;
  SendCredits sender;
  sender.reset(kWindow);
  ReceiveCredits receiver(kWindow);
  uint64_t delivered = 0;
  uint32_t in_flight_credits = 0;  // a credit-only message on its way back
  for (int step = 0; step < 100000; ++step) {
    while (sender.can_send()) {
      sender.consume();
      ASSERT_TRUE(receiver.on_message());
      ASSERT_LE(receiver.queued() + receiver.owed(), kWindow);
    }
    // The owner reads a few; credits go back as a credit-only message once half a window is owed.
    const uint32_t reads = std::min<uint32_t>(receiver.queued(), 1 + step % 5);
    receiver.on_consumed(reads);
    delivered += reads;
    if (in_flight_credits > 0) {
      ASSERT_TRUE(sender.add(in_flight_credits));
      in_flight_credits = 0;
      receiver.credit_message_completed();
    }
    if (receiver.credit_message_due()) {
      receiver.credit_message_posted();
      in_flight_credits = receiver.take();
    }
    // Every few steps the receiver also sends data back, carrying what is owed.
    if (step % 7 == 0) {
      ASSERT_TRUE(sender.add(receiver.take()));
    }
  }
  EXPECT_GT(delivered, 100000u);
}

}  // namespace
}  // namespace bypass::rdma
