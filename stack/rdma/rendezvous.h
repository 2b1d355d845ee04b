// Rendezvous: how a payload run of at least rdma.rendezvous_threshold bytes crosses a connection
// without a copy on either side, inside the transport's byte stream (the messenger and the msgr2
// bytes do not change). The model is Accelio's (Ceph's XioMessenger) and UCX's get_zcopy: the
// receiver pulls.
//
//   sender                                          receiver
//   SEND descriptor (regions: address, rkey,     -> queued in stream order among the small SENDs
//     length; immediate: credits | kDescriptor)     RDMA READ each region into RegisteredMemory
//                                                   blocks (pieces of at most 1 MiB, at most the
//                                                   negotiated READ depth in flight)
//   drops its views, unpins their registrations  <- SEND release (immediate kReleaseTag | n) once
//                                                   every READ of the oldest n descriptors completed
//                                                   the owner reads the blocks as buffers (no copy)
//
// A descriptor is a data message for flow control (it takes one of the receiver's credits until
// the owner consumed its bytes), so a connection has at most its window of descriptors
// outstanding; the release is a zero-length SEND like a credit return (at most one in flight).
// Why READ and not WRITE into buffers the receiver advertised: docs/rdma.md.
//
// Descriptor wire format (a SEND's whole payload, little endian):
//   0  u8 version (1)   1  u8 region count n (1..16)   2  u16 reserved (0)
//   4 + 16 i:  u64 address   u32 rkey   u32 length (1 .. 2^31) of region i
// The receiver only reads what the descriptor names and only through the sender's HCA, which
// refuses an rkey, address or length outside a registration the sender made for remote read: that
// READ completes in error and fails the connection. A malformed descriptor fails it before any READ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/buffer_list.h"
#include "stack/rdma/registration_cache.h"

namespace bypass::rdma {

struct RemoteRegion {
  uint64_t address = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
};

struct Descriptor {
  static constexpr uint8_t kVersion = 1;
  static constexpr size_t kMaxRegions = 16;
  static constexpr uint32_t kMaxRegionLength = 1u << 31;  // the largest RDMA message verbs allow
  static constexpr size_t kHeaderSize = 4;
  static constexpr size_t kRegionSize = 16;
  static constexpr size_t kMaxWireSize = kHeaderSize + kMaxRegions * kRegionSize;

  uint8_t count = 0;
  RemoteRegion regions[kMaxRegions];

  uint64_t total() const;
  size_t wire_size() const { return kHeaderSize + count * kRegionSize; }
  // Writes wire_size() bytes at `out`.
  void encode(uint8_t* out) const;
  // Parses a received descriptor; on malformed input returns false and sets *error to a one-line
  // reason naming the field and its offset.
  static bool decode(const uint8_t* data, size_t len, Descriptor* out, std::string* error);
};

// The sender's side: what each descriptor the peer has not released yet keeps alive.
class OutboundTransfers {
 public:
  struct Transfer {
    BufferList held;  // views keeping the regions' memory alive
    // The registration each region used, pinned until the release (null: RegisteredMemory).
    RegistrationCache::Entry* pinned[Descriptor::kMaxRegions] = {};
    uint8_t count = 0;
    uint64_t bytes = 0;
  };

  // At setup, with the peer's receive window: it bounds the descriptors the peer has not
  // consumed, and so, but for releases trailing the credits (one release message in flight at a
  // time), those it has not released. Room for twice as many.
  void reset(uint32_t peer_window);
  bool full() const { return count_ == ring_.size(); }
  size_t outstanding() const { return count_; }
  // The slot for the next descriptor (not full()); kept by commit(), dropped by abandon().
  Transfer& next() { return ring_[(head_ + count_) % ring_.size()]; }
  void commit() { ++count_; }
  void abandon(RegistrationCache* cache);
  // The peer released the oldest `n`: their views go and their registrations are unpinned. False,
  // with nothing changed, when it released more than are outstanding.
  bool release(uint32_t n, RegistrationCache* cache, uint64_t* bytes);
  // The connection is gone (its QP destroyed: no READ can reach the memory any more).
  void release_all(RegistrationCache* cache);

 private:
  static void unpin(Transfer& t, RegistrationCache* cache);
  std::vector<Transfer> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

// The receiver's side: one descriptor being read and handed to the owner.
struct InboundTransfer {
  Descriptor descriptor;
  uint8_t region = 0;   // the next region to READ from
  uint32_t offset = 0;  // and the next byte in it
  uint64_t total = 0;   // bytes the descriptor names
  uint64_t read = 0;    // bytes whose READ completed
  BufferList ready;     // read, not yet handed to the owner
  bool all_posted() const { return region == descriptor.count; }
  bool complete() const { return read == total; }
};

// The receiver's descriptors in stream order, from arrival until the owner consumed their bytes.
class InboundTransfers {
 public:
  // At setup: our receive window (a descriptor holds one of its credits until consumed).
  void reset(uint32_t capacity);
  // A new descriptor at the back; null when the ring is full (the peer overran our window).
  InboundTransfer* add(const Descriptor& descriptor);
  // The oldest transfer with bytes not yet posted for READ, or null.
  InboundTransfer* next_to_read();
  // The next piece of it to READ: at most `max` bytes, within one region; advances its cursor.
  RemoteRegion take_piece(InboundTransfer& transfer, uint32_t max);
  InboundTransfer& front() { return ring_[head_]; }
  void pop_front();  // the oldest was consumed
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void clear();

 private:
  std::vector<InboundTransfer> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
  size_t posted_ = 0;  // transfers from the front whose every byte was posted
};

}  // namespace bypass::rdma
