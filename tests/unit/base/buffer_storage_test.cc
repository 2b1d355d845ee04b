// BufferStorage, the block pools and the segment vector underneath BufferList.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/buffer_list.h"

namespace bypass {
namespace {

std::string pattern(size_t n, char seed = 'a') {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 23);
  return s;
}

struct ReleaseLog {
  int calls = 0;
  BufferStorage* header = nullptr;
};
void log_release(void* log, BufferStorage* header) {
  auto* l = static_cast<ReleaseLog*>(log);
  ++l->calls;
  l->header = header;
}

TEST(BufferStorage, WrapWithTheOwnersHeaderUsesThatMemoryAndReleasesOnce) {
  alignas(8) unsigned char header_memory[BufferSegment::header_size];
  static char bytes[] = "payload in an mbuf";
  ReleaseLog log;
  {
    BufferList list;
    list.append(BufferSegment::wrap(reinterpret_cast<BufferStorage*>(header_memory), bytes, 18, &log_release, &log));
    EXPECT_EQ(list.segments().front().storage_id(), static_cast<const void*>(header_memory));
    BufferList copy = list;
    BufferList part = list.sub(3, 4);
    EXPECT_EQ(list.segments().front().use_count(), 3);
    list.clear();
    copy.clear();
    EXPECT_EQ(log.calls, 0);
    EXPECT_EQ(part.to_string(), "load");
  }
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.header, reinterpret_cast<BufferStorage*>(header_memory));
}

TEST(BufferStorage, WrapWithoutAHeaderTakesOneFromThePool) {
  static char bytes[] = "rdma chunk";
  ReleaseLog log;
  { BufferSegment s = BufferSegment::wrap(bytes, 10, &log_release, &log); }  // warm the header pool
  const auto before = block_pool::stats();
  { BufferSegment s = BufferSegment::wrap(bytes, 10, &log_release, &log); }
  const auto after = block_pool::stats();
  EXPECT_EQ(log.calls, 2);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.hits, before.hits + 1);
}

TEST(BufferStorage, DroppedBlocksAreReusedByTheNextAllocationOfTheirClass) {
  const void* first;
  {
    BufferSegment s = BufferSegment::allocate(4096);
    first = s.storage_id();
  }
  const auto before = block_pool::stats();
  BufferSegment again = BufferSegment::allocate(3000);  // same class (4 KiB of data)
  EXPECT_EQ(again.storage_id(), first);
  EXPECT_EQ(block_pool::stats().misses, before.misses);
  // A block larger than the largest class comes from the heap and still works.
  BufferSegment huge = BufferSegment::copy_of(pattern(200'000).data(), 200'000);
  EXPECT_EQ(huge.view(), pattern(200'000));
  EXPECT_EQ(huge.room_after(), 0u);
}

// Object-sized blocks (up to 1,056 bytes: a Message with its count, headers, segment arrays) start
// on a cache line, fresh or reused; payload classes keep malloc's alignment.
TEST(BufferStorage, ObjectSizedBlocksStartOnACacheLine) {
  for (int size_class = 0; size_class <= 3; ++size_class) {
    void* blocks[8];
    for (void*& block : blocks) {  // more than one: the first may come from the cache
      block = block_pool::get(size_class);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u) << "class " << size_class;
      std::memset(block, 0xab, block_pool::kClassBytes[size_class]);  // the whole class is usable
    }
    for (void* block : blocks) block_pool::put(size_class, block);
  }
}

// A thread-local object built before the thread's block cache is destroyed after it: the blocks it
// frees then must go back to the heap, not into the destroyed cache (LeakSanitizer would see them
// lost; a cache rebuilt after its destructor ran would be used after destruction).
struct FreedAtThreadExit {
  BufferSegment block;
};
thread_local FreedAtThreadExit freed_at_thread_exit;

TEST(BufferStorage, BlocksFreedAfterTheThreadsCacheWasDestroyedGoToTheHeap) {
  std::thread([] {
    FreedAtThreadExit& holder = freed_at_thread_exit;  // built first: destroyed after the cache
    { BufferSegment warm = BufferSegment::allocate(100); }  // builds the cache, caches one block
    holder.block = BufferSegment::allocate(100);
    EXPECT_EQ(block_pool::stats().hits, 1u);
  }).join();
}

TEST(BufferStorage, AppendHoleUsesTheWholeBlockOfItsClass) {
  BufferList bl;
  bl.append_copy("x");
  const size_t first_room = bl.segments().front().room_after();
  EXPECT_EQ(first_room, BufferList::append_block - 1);
  for (size_t i = 0; i < first_room; ++i) bl.append_copy("y");
  EXPECT_EQ(bl.segment_count(), 1u);
  bl.append_copy("z");
  EXPECT_EQ(bl.segment_count(), 2u);
}

TEST(SegmentVector, QueueOfManySegmentsKeepsOrderAcrossGrowthAndCompaction) {
  // TCP's send buffer: appended at the back, acknowledged from the front, for a long time.
  const std::string bytes = pattern(64);
  BufferList queue;
  std::string expected;
  size_t next = 0;
  for (int round = 0; round < 2000; ++round) {
    const size_t n = 1 + (round * 7) % 13;
    for (size_t i = 0; i < n; ++i) {
      const char c = static_cast<char>('A' + next++ % 26);
      queue.append(BufferSegment::copy_of(&c, 1));
      expected.push_back(c);
    }
    const size_t drop = std::min<size_t>(queue.length(), 1 + (round * 5) % 11);
    EXPECT_EQ(queue.trim_front(drop), drop);  // one-byte segments: as many segments as bytes
    expected.erase(0, drop);
    ASSERT_TRUE(queue.contents_equal(expected)) << "round " << round;
  }
  // A Position still resumes where the last sub() stopped.
  BufferList::Position at;
  for (size_t off = 0; off + 3 <= queue.length(); off += 3) {
    ASSERT_EQ(queue.sub(off, 3, at).to_string(), expected.substr(off, 3));
  }
}

TEST(SegmentVector, PrependMoveAndCopyBeyondTheInlineEntries) {
  BufferList bl;
  for (char c = 'b'; c <= 'k'; ++c) bl.append(BufferSegment::copy_of(&c, 1));
  bl.prepend(BufferSegment::copy_of("a", 1));
  EXPECT_EQ(bl.to_string(), "abcdefghijk");
  bl.trim_front(2);
  bl.prepend(BufferSegment::copy_of("B", 1));  // room at the front now
  EXPECT_EQ(bl.to_string(), "Bcdefghijk");
  BufferList copy = bl;
  BufferList moved = std::move(bl);
  EXPECT_TRUE(bl.empty());  // NOLINT(bugprone-use-after-move): documented state
  EXPECT_EQ(moved.to_string(), "Bcdefghijk");
  EXPECT_EQ(copy.to_string(), "Bcdefghijk");
  EXPECT_EQ(copy.segments()[3].use_count(), 2);
  BufferList small;
  small.append_copy("inline");
  BufferList small_moved = std::move(small);
  EXPECT_EQ(small_moved.to_string(), "inline");
  small_moved.truncate(2);
  EXPECT_EQ(small_moved.to_string(), "in");
}

TEST(BufferStorage, AcrossThreadsCountsStayExactUnderConcurrentCopies) {
  static char bytes[] = "shared payload";
  ReleaseLog log;
  {
    BufferSegment shared = BufferSegment::wrap(bytes, 14, &log_release, &log, BufferSharing::across_threads);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&shared] {
        for (int i = 0; i < 50'000; ++i) {
          BufferList l;
          l.append(shared);
          BufferList l2 = l;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(shared.use_count(), 1);
  }
  EXPECT_EQ(log.calls, 1);
}

TEST(BufferStorage, MovingEveryViewToAnotherThreadIsAllowed) {
  BufferList list;
  list.append_copy("one block, ");
  list.append(list.sub(0, 3));  // two views of one worker_local block
  std::thread([moved = std::move(list)]() mutable {
    moved.append(moved.sub(0, 4));
    moved.clear();
  }).join();
}

#ifndef NDEBUG
TEST(BufferStorageDeathTest, ViewsOfAWorkerLocalStorageOnTwoThreadsAbort) {
  EXPECT_DEATH(
      {
        BufferSegment a = BufferSegment::copy_of("x", 1);
        BufferSegment b = a;
        std::thread([&a] { BufferSegment c = a; (void)c; }).join();  // views here and there
        b = BufferSegment();
      },
      "share_across_threads");
}

TEST(BufferStorage, SharingBeforeHandingViewsOverKeepsTheDebugCheckQuiet) {
  BufferSegment a = BufferSegment::copy_of("x", 1);
  BufferSegment b = a;
  a.share_across_threads();
  std::thread([&a] { BufferSegment c = a; (void)c; }).join();
  b = BufferSegment();
  EXPECT_EQ(a.use_count(), 1);
}
#endif

}  // namespace
}  // namespace bypass
