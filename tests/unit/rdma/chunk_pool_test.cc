// ChunkPool: fixed-size chunks, bounded (backpressure instead of growth), misuse detected,
// returns from other threads folded back by the owner.
#include "stack/rdma/chunk_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace bypass::rdma {
namespace {

TEST(ChunkPool, HandsOutDistinctAlignedChunksUntilEmpty) {
  ChunkPool pool("test", 4096, 16, false);
  EXPECT_EQ(pool.free_count(), 16u);
  std::set<char*> seen;
  for (int i = 0; i < 16; ++i) {
    char* c = pool.get();
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(pool.contains(c, 4096));
    EXPECT_EQ((c - pool.base()) % 4096, 0);
    EXPECT_EQ(pool.chunk_at(pool.index_of(c)), c);
    c[0] = static_cast<char>(i);
    c[4095] = static_cast<char>(i);  // the whole chunk is writable
    EXPECT_TRUE(seen.insert(c).second);
  }
  EXPECT_EQ(pool.in_use(), 16u);
  EXPECT_EQ(pool.get(), nullptr) << "an empty pool must refuse, not grow";
  pool.put(*seen.begin());
  EXPECT_EQ(pool.get(), *seen.begin());
}

TEST(ChunkPool, RejectsForeignAndDoublePuts) {
  ChunkPool pool("test", 4096, 4, false);
  char* c = pool.get();
  char local[16];
  EXPECT_THROW(pool.put(local), std::logic_error);
  EXPECT_THROW(pool.put(c + 1), std::logic_error);
  pool.put(c);
  EXPECT_THROW(pool.put(c), std::logic_error);
  EXPECT_EQ(pool.free_count(), 4u);
}

TEST(ChunkPool, ContainsChecksTheWholeRange) {
  ChunkPool pool("test", 4096, 2, false);
  EXPECT_TRUE(pool.contains(pool.base(), 8192));
  EXPECT_FALSE(pool.contains(pool.base(), 8193));
  EXPECT_FALSE(pool.contains(pool.base() + 8192, 1));
  EXPECT_FALSE(pool.contains(pool.base() - 1, 1));
}

TEST(ChunkPool, ReturnsFromOtherThreadsComeBackThroughTheOwner) {
  ChunkPool pool("test", 4096, 64, false);
  std::vector<char*> chunks;
  for (int i = 0; i < 64; ++i) chunks.push_back(pool.get());
  ASSERT_EQ(pool.get(), nullptr);
  std::thread other([&] {
    for (char* c : chunks) pool.put_from_any_thread(c);
  });
  other.join();
  EXPECT_EQ(pool.free_count(), 0u) << "returns wait for the owner";
  // get() collects pending returns when the free list is empty.
  char* c = pool.get();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(pool.free_count(), 63u);
  EXPECT_EQ(pool.collect_returned(), 0u);
}

TEST(ChunkPool, LentChunksComeBackWhenTheLastViewGoesAndKeepThePoolAlive) {
  auto pool = ChunkPool::create_lendable("test", 4096, 4, false);
  char* chunk = pool->get();
  std::memcpy(chunk, "received bytes", 14);
  BufferList received;
  const auto before = block_pool::stats();
  received.append(pool->lend(chunk, 14));
  // The storage header is the chunk's descriptor: no header came from the block pool.
  EXPECT_EQ(block_pool::stats().hits + block_pool::stats().misses, before.hits + before.misses);
  BufferList part = received.sub(9, 5);
  received.clear();
  EXPECT_EQ(pool->collect_returned(), 0u) << "a view remains";
  ChunkPool* raw = pool.get();
  pool.reset();  // the owner lets go while the application still reads the chunk
  EXPECT_EQ(part.to_string(), "bytes");
  EXPECT_EQ(raw->in_use(), 1u);
  std::thread([moved = std::move(part)]() mutable { moved.clear(); }).join();  // freed elsewhere: pool goes
  ChunkPool plain("plain", 4096, 1, false);
  EXPECT_THROW(plain.lend(plain.get(), 1), std::logic_error);
}

TEST(ChunkPool, BadSizesAreRejected) {
  EXPECT_THROW(ChunkPool("test", 0, 4, false), std::invalid_argument);
  EXPECT_THROW(ChunkPool("test", 4096, 0, false), std::invalid_argument);
  EXPECT_THROW(ChunkPool("test", SIZE_MAX / 2, 4, false), std::invalid_argument);
}

TEST(ChunkPool, HugepageRequestFallsBackWhenNoneAreReserved) {
  ChunkPool pool("test", 4096, 8, true);  // works either way; reports which it got
  char* c = pool.get();
  ASSERT_NE(c, nullptr);
  c[0] = 1;
  SUCCEED() << (pool.hugepage_backed() ? "hugepages" : "normal pages");
}

}  // namespace
}  // namespace bypass::rdma
