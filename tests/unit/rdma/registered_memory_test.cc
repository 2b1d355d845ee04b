// RegisteredMemory without a device: blocks by size class, bounded (empty when used up, not
// growth), returned from any thread, alive while an application holds a block after the owner
// let go, and no block handed out twice under contention.
#include "stack/rdma/registered_memory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace bypass::rdma {
namespace {

TEST(RegisteredMemory, BlocksAreDistinctInsideTheRegionAndBounded) {
  auto memory = RegisteredMemory::create("test", 2 << 20, false);
  EXPECT_EQ(memory->region_bytes(), size_t{2} << 20);
  std::vector<BufferSegment> held;
  std::set<char*> starts;
  // Two slabs: one goes to 64 KiB blocks (16 of them), the other to 1 MiB (one block).
  for (int i = 0; i < 16; ++i) {
    BufferSegment b = memory->allocate(65536 - i);
    ASSERT_FALSE(b.empty()) << i;
    EXPECT_EQ(b.length(), size_t(65536 - i));
    EXPECT_TRUE(memory->contains(b.data(), 65536));
    EXPECT_TRUE(starts.insert(b.data()).second);
    b.data()[0] = 1;
    b.data()[b.length() - 1] = 1;
    held.push_back(std::move(b));
  }
  BufferSegment big = memory->allocate(RegisteredMemory::kLargestBlock);
  ASSERT_FALSE(big.empty());
  EXPECT_TRUE(memory->allocate(4096).empty()) << "every slab is taken: refuse, do not grow";
  EXPECT_TRUE(memory->allocate(65536).empty());
  EXPECT_EQ(memory->exhausted(), 2u);
  EXPECT_TRUE(memory->allocate(RegisteredMemory::kLargestBlock + 1).empty());
  EXPECT_EQ(memory->bytes_in_use(), 16u * 65536 + RegisteredMemory::kLargestBlock);
  held.pop_back();  // one block back: the class serves again
  EXPECT_FALSE(memory->allocate(65536).empty());
  EXPECT_EQ(RegisteredMemory::block_size(5000), 8192u);
  EXPECT_EQ(RegisteredMemory::block_size(1), 4096u);
}

TEST(RegisteredMemory, BlocksOutliveTheOwnersHoldAndComeBackFromOtherThreads) {
  auto memory = RegisteredMemory::create("test", 1 << 20, false);
  BufferSegment block = memory->allocate(4096);
  memory.reset();  // the stack is gone; the application still holds a block
  block.data()[4095] = 7;
  EXPECT_EQ(block.data()[4095], 7);
  std::thread([b = std::move(block)]() mutable { b = BufferSegment(); }).join();  // the last hold
}

TEST(RegisteredMemory, ConcurrentAllocateAndReturnNeverShareABlock) {
  auto memory = RegisteredMemory::create("test", 4 << 20, false);
  constexpr int kThreads = 4;
  std::atomic<int> clashes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<BufferSegment> mine;
      for (int round = 0; round < 2000; ++round) {
        BufferSegment b = memory->allocate(8192, BufferSharing::across_threads);
        if (b.empty()) continue;
        // Stamp the block; another owner of it would overwrite the stamp.
        std::fill(b.data(), b.data() + 64, static_cast<char>(t + 1));
        mine.push_back(std::move(b));
        if (mine.size() > 8) {
          for (const BufferSegment& m : mine)
            if (m.data()[0] != static_cast<char>(t + 1) || m.data()[63] != static_cast<char>(t + 1)) ++clashes;
          mine.erase(mine.begin(), mine.begin() + 4);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(clashes.load(), 0);
  EXPECT_EQ(memory->bytes_in_use(), 0u);
}

}  // namespace
}  // namespace bypass::rdma
