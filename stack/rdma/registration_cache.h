// RegistrationCache: application memory registered with the device for remote READ, so a payload
// sent again (a buffer the application reuses, a message sent to several peers, a replay after a
// reconnect) is registered once (UCX's registration cache; the registered memory of CCI's clients).
// One per worker, used on its thread only.
//
// An entry never outlives the memory it covers: it keeps a view of the memory's storage (the
// segment it registered), so the memory cannot be freed, nor its address reused by other memory,
// while the registration exists. A lookup is therefore by storage and address range: a segment of
// the same storage whose bytes lie inside an entry's range is a hit. Memory that only the cache
// still views has been let go by the application and can never be sent again: sweep() drops those
// entries (deregistering first), so the cache does not keep freed memory alive.
//
// Entries are in LRU order within a byte limit (rdma.registration_cache). A miss evicts the least
// recently used entries that no transfer pins until the new one fits; when pinned entries fill the
// limit, or the segment cannot be registered (borrowed memory, which has no storage to hold; larger
// than the limit; the device refuses), acquire() returns null and the caller sends the bytes another
// way. A transfer pins the entry it uses until the peer has read it (release()).
//
// Registration itself is a pair of functions (ibv_reg_mr / ibv_dereg_mr on a worker), so the LRU
// and lifetime rules are unit-tested without a device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "base/buffer_list.h"

namespace bypass::rdma {

class RegistrationCache {
 public:
  struct Keys {
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    void* handle = nullptr;  // what deregistration needs (the ibv_mr)
  };
  // Registers [data, data + len); false when the device refuses.
  using RegisterFn = std::function<bool(char* data, size_t len, Keys* out)>;
  using DeregisterFn = std::function<void(const Keys& keys)>;

  struct Entry {
    BufferSegment memory;  // the registered bytes: this view keeps their storage alive
    Keys keys;
    uint32_t pins = 0;
    Entry* older = nullptr;  // LRU list: the head is the most recently used
    Entry* newer = nullptr;
    Entry* next_of_storage = nullptr;  // other entries of the same storage
  };

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;         // registrations made
    uint64_t evictions = 0;      // entries deregistered to make room
    uint64_t swept = 0;          // entries deregistered because only the cache still viewed the memory
    uint64_t refused = 0;        // acquire() returned null
    size_t bytes_registered = 0; // now: bytes pinned by the cache's registrations
    size_t entries = 0;          // now
    size_t pinned_entries = 0;   // now: entries some transfer pins (leak checks)
  };

  RegistrationCache(size_t byte_limit, RegisterFn register_fn, DeregisterFn deregister_fn);
  ~RegistrationCache();  // deregisters every entry (none may be pinned any more)
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // The entry covering `segment`'s bytes, pinned; registered on a miss. Null when it cannot be
  // cached (see the file comment).
  Entry* acquire(const BufferSegment& segment);
  // The transfer that pinned `entry` is over.
  void release(Entry* entry) {
    if (--entry->pins == 0) --stats_.pinned_entries;
  }
  // Deregisters entries whose memory only the cache views and nobody pins; returns how many.
  size_t sweep();

  const Stats& stats() const { return stats_; }
  size_t byte_limit() const { return limit_; }

 private:
  Entry* find(const BufferSegment& segment);
  bool make_room(size_t bytes);
  void drop(Entry* entry);  // deregisters, unlinks and deletes
  void link_newest(Entry* entry);
  void unlink(Entry* entry);

  size_t limit_;
  RegisterFn register_;
  DeregisterFn deregister_;
  std::unordered_map<const void*, Entry*> by_storage_;  // first entry of each storage
  Entry* newest_ = nullptr;
  Entry* oldest_ = nullptr;
  Stats stats_;
};

}  // namespace bypass::rdma
