// Credit-based flow control for one RC connection (the model of eRPC's session credits and of the
// credits in Ceph's and Lustre's RDMA layers).
//
// Why: a worker's connections share one SRQ fed from one receive chunk pool, and a received chunk
// stays with its connection until the owner reads it. Without a per-connection bound, a peer that
// keeps sending to an owner that stops reading soaks up the whole pool, and every other connection
// of the worker stops receiving (the RC transport's RNR retry is the only backpressure, and it
// stalls them all alike).
//
// How: each end advertises a receive window in messages (chunks) during setup (QpInfo on the TCP
// side channel, CmPrivateData in rdma_cm mode). A sender may have at most that many data messages
// the receiver has not handed to its owner yet: every data SEND consumes one credit, and at zero
// send() returns -EAGAIN until credits come back. The receiver counts messages its owner consumed
// (a received segment left the connection's queue through read() or zero_copy_read()) and returns
// them in the immediate data of its own data SENDs, or, when at least half a window is owed and
// nothing carried it, in a zero-length credit-only SEND (at most one in flight per connection; the
// peer recycles its receive chunk at once, so it is not counted against the window).
//
// Immediate data of our SEND_WITH_IMM messages (host order; posted with htonl):
//   kFinImmediate 0x46494e21 ("FIN!"): end of stream, no data; bit 31 clear.
//   kCreditTag | n (bit 31 set): returns n credits (n < 2^30); with data (piggy-backed) or without
//   (credit-only). A data SEND that returns nothing is a plain SEND without immediate.
//   kCreditTag | kDescriptorFlag | n: the SEND's payload is a rendezvous descriptor (rendezvous.h),
//   not stream bytes; it returns n credits like any data SEND.
//   kReleaseTag | n (top byte 'R', bit 31 clear): the peer read the oldest n descriptors we sent
//   (n < 2^24); no data.
// Any other immediate is a protocol error.
//
// Plain counters: no allocation, lock or system call on the data path.
#pragma once

#include <algorithm>
#include <cstdint>

namespace bypass::rdma {

constexpr uint32_t kFinImmediate = 0x46494e21;  // "FIN!"
constexpr uint32_t kCreditTag = 0x80000000u;
constexpr uint32_t kDescriptorFlag = 0x40000000u;
constexpr uint32_t kMaxCreditsPerImmediate = kDescriptorFlag - 1;
constexpr uint32_t kReleaseTag = 0x52000000u;  // 'R'
constexpr uint32_t kMaxReleasesPerImmediate = (1u << 24) - 1;

constexpr uint32_t credit_immediate(uint32_t credits) { return kCreditTag | credits; }
constexpr bool is_credit_immediate(uint32_t imm) { return (imm & kCreditTag) != 0; }
constexpr uint32_t credits_of(uint32_t imm) { return imm & kMaxCreditsPerImmediate; }
constexpr bool is_descriptor_immediate(uint32_t imm) { return (imm & (kCreditTag | kDescriptorFlag)) == (kCreditTag | kDescriptorFlag); }
constexpr uint32_t release_immediate(uint32_t released) { return kReleaseTag | released; }
constexpr bool is_release_immediate(uint32_t imm) { return (imm & 0xff000000u) == kReleaseTag; }
constexpr uint32_t releases_of(uint32_t imm) { return imm & kMaxReleasesPerImmediate; }

// The sending side: how many more data messages the peer has room for.
class SendCredits {
 public:
  // At setup, with the window the peer advertised.
  void reset(uint32_t window) {
    window_ = window;
    available_ = window;
  }
  bool can_send() const { return available_ > 0; }
  void consume() { --available_; }
  // The peer returned `n` credits. False (and nothing changes) when that is more than it was ever
  // given: a peer that does not follow the protocol.
  bool add(uint32_t n) {
    if (n > window_ - available_) return false;
    available_ += n;
    return true;
  }
  uint32_t available() const { return available_; }
  uint32_t window() const { return window_; }

 private:
  uint32_t window_ = 0;
  uint32_t available_ = 0;
};

// The receiving side: data messages queued for the owner, consumed ones owed back to the peer,
// and whether a credit-only message is in flight.
//
// Invariant for a peer that follows the protocol: queued + owed <= window (the peer's unreturned
// messages are at least these), so a message that would break it is a protocol error.
class ReceiveCredits {
 public:
  explicit ReceiveCredits(uint32_t window = 0) { reset(window); }
  void reset(uint32_t window) {
    window_ = window;
    queued_ = owed_ = 0;
    credit_message_in_flight_ = false;
  }
  uint32_t window() const { return window_; }
  uint32_t queued() const { return queued_; }
  uint32_t owed() const { return owed_; }

  // A data message arrived. False when it overruns the window.
  bool on_message() {
    if (queued_ + owed_ >= window_) return false;
    ++queued_;
    return true;
  }
  // The owner consumed `n` queued messages: they are owed to the peer.
  void on_consumed(uint32_t n = 1) {
    queued_ -= n;
    owed_ += n;
  }
  // What the next outgoing SEND returns (all that is owed); the count is reset.
  uint32_t take() {
    const uint32_t n = std::min(owed_, kMaxCreditsPerImmediate);
    owed_ -= n;
    return n;
  }
  // A credit-only message is worth a receive on the peer: at least half a window owed, and none
  // already in flight (so they cannot pile up on the peer's receive queue).
  bool credit_message_due() const {
    return !credit_message_in_flight_ && owed_ > 0 && owed_ >= std::max<uint32_t>(1, window_ / 2);
  }
  void credit_message_posted() { credit_message_in_flight_ = true; }
  void credit_message_completed() { credit_message_in_flight_ = false; }
  bool credit_message_in_flight() const { return credit_message_in_flight_; }

 private:
  uint32_t window_ = 0;
  uint32_t queued_ = 0;
  uint32_t owed_ = 0;
  bool credit_message_in_flight_ = false;
};

}  // namespace bypass::rdma
