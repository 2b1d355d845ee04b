// RegistrationCache without a device (registration is a pair of functions here): hits by storage
// and range, LRU eviction within the byte limit, pinned entries never evicted, borrowed memory
// refused, and entries dropped once only the cache still views their memory, deregistered before
// the memory can go.
#include "stack/rdma/registration_cache.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace bypass::rdma {
namespace {

struct FakeDevice {
  uint32_t next_key = 1;
  std::set<uint32_t> live;
  std::vector<uint32_t> deregistered;
  bool refuse = false;
  RegistrationCache make(size_t limit) {
    return RegistrationCache(
        limit,
        [this](char*, size_t, RegistrationCache::Keys* out) {
          if (refuse) return false;
          out->lkey = out->rkey = next_key;
          live.insert(next_key++);
          return true;
        },
        [this](const RegistrationCache::Keys& keys) {
          live.erase(keys.rkey);
          deregistered.push_back(keys.rkey);
        });
  }
};

TEST(RegistrationCache, SameStorageAndRangeHitsOtherwiseMisses) {
  FakeDevice dev;
  RegistrationCache cache = dev.make(1 << 20);
  BufferSegment buf = BufferSegment::allocate(8192);
  RegistrationCache::Entry* e = cache.acquire(buf);
  ASSERT_NE(e, nullptr);
  cache.release(e);
  EXPECT_EQ(cache.acquire(buf), e);                  // the same bytes again
  cache.release(e);
  EXPECT_EQ(cache.acquire(buf.sub(100, 4000)), e);   // inside the registered range
  cache.release(e);
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().misses, 1u);
  // Other memory, even of the same length, is another registration.
  BufferSegment other = BufferSegment::allocate(8192);
  RegistrationCache::Entry* f = cache.acquire(other);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->keys.rkey, e->keys.rkey);
  cache.release(f);
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_EQ(cache.stats().bytes_registered, 16384u);
  EXPECT_EQ(cache.stats().pinned_entries, 0u);
}

TEST(RegistrationCache, EvictsLeastRecentlyUsedUnpinnedWithinTheLimit) {
  FakeDevice dev;
  RegistrationCache cache = dev.make(3 * 4096);
  std::vector<BufferSegment> bufs;
  for (int i = 0; i < 4; ++i) bufs.push_back(BufferSegment::allocate(4096));
  std::vector<RegistrationCache::Entry*> e;
  for (int i = 0; i < 3; ++i) e.push_back(cache.acquire(bufs[i]));
  cache.release(e[0]);
  cache.release(e[2]);  // e[1] stays pinned (a transfer in flight)
  cache.release(cache.acquire(bufs[0]));  // 0 is now more recent than 2
  RegistrationCache::Entry* fourth = cache.acquire(bufs[3]);
  ASSERT_NE(fourth, nullptr);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(dev.deregistered, std::vector<uint32_t>{3}) << "2 was least recently used and unpinned";
  EXPECT_EQ(cache.stats().bytes_registered, 3u * 4096);
  // Everything left is pinned: no room, no eviction of memory a peer may be reading.
  RegistrationCache::Entry* zero = cache.acquire(bufs[0]);
  BufferSegment fifth = BufferSegment::allocate(4096);
  EXPECT_EQ(cache.acquire(fifth), nullptr);
  EXPECT_EQ(cache.stats().refused, 1u);
  EXPECT_EQ(cache.stats().pinned_entries, 3u);
  cache.release(zero);
  cache.release(zero);
  cache.release(e[1]);
  cache.release(fourth);
  EXPECT_EQ(cache.stats().pinned_entries, 0u);
}

TEST(RegistrationCache, RefusesBorrowedOversizedAndUnregistrableMemory) {
  FakeDevice dev;
  RegistrationCache cache = dev.make(8192);
  static char borrowed[4096];
  EXPECT_EQ(cache.acquire(BufferSegment::borrow(borrowed, sizeof borrowed)), nullptr);
  EXPECT_EQ(cache.acquire(BufferSegment::allocate(8193)), nullptr);
  dev.refuse = true;
  EXPECT_EQ(cache.acquire(BufferSegment::allocate(100)), nullptr);
  EXPECT_EQ(cache.stats().refused, 3u);
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(RegistrationCache, MemoryTheApplicationDroppedIsDeregisteredThenFreed) {
  FakeDevice dev;
  RegistrationCache cache = dev.make(1 << 20);
  BufferSegment buf = BufferSegment::allocate(4096);
  RegistrationCache::Entry* e = cache.acquire(buf);
  EXPECT_EQ(buf.use_count(), 2) << "the entry keeps a view: the memory cannot be freed under it";
  buf = BufferSegment();
  EXPECT_EQ(cache.sweep(), 0u) << "pinned: a peer may still read it";
  cache.release(e);
  EXPECT_EQ(cache.sweep(), 1u);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().swept, 1u);
  EXPECT_TRUE(dev.live.empty());
  // An entry still viewed by the application stays.
  BufferSegment kept = BufferSegment::allocate(4096);
  cache.release(cache.acquire(kept));
  EXPECT_EQ(cache.sweep(), 0u);
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(RegistrationCache, DestructionDeregistersEverything) {
  FakeDevice dev;
  {
    RegistrationCache cache = dev.make(1 << 20);
    BufferSegment a = BufferSegment::allocate(100), b = BufferSegment::allocate(100);
    cache.release(cache.acquire(a));
    cache.release(cache.acquire(b));
    cache.release(cache.acquire(a.sub(10, 20)));
    EXPECT_EQ(dev.live.size(), 2u);
  }
  EXPECT_TRUE(dev.live.empty());
}

}  // namespace
}  // namespace bypass::rdma
