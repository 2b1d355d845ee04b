// ChunkPool: fixed-size chunks, bounded (backpressure instead of growth), misuse detected,
// returns from other threads folded back by the owner.
#include "stack/rdma/chunk_pool.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
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

// What the kernel says about the mapping that holds `p` (/proc/self/smaps): its page size and
// whether it is a hugetlb mapping (VmFlags "ht").
struct Mapping {
  bool found = false;
  size_t kernel_page_kib = 0;
  bool hugetlb = false;
};

Mapping mapping_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(p);
  Mapping m;
  bool inside = false;
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2 && line.find(':') > line.find(' ')) {
      if (inside) break;  // the next mapping began
      inside = address >= start && address < end;
      m.found = m.found || inside;
      continue;
    }
    if (!inside) continue;
    if (line.rfind("KernelPageSize:", 0) == 0) m.kernel_page_kib = std::stoul(line.substr(15));
    if (line.rfind("VmFlags:", 0) == 0) m.hugetlb = (line + " ").find(" ht ") != std::string::npos;
  }
  return m;
}

unsigned long free_hugepages() {
  std::ifstream in("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
  unsigned long pages = 0;
  in >> pages;
  return pages;
}

// Touches every chunk: a hugetlb mapping the kernel could not back would fault (SIGBUS) here.
void touch_every_chunk(ChunkPool& pool) {
  std::vector<char*> chunks;
  while (char* c = pool.get()) {
    c[0] = 1;
    c[pool.chunk_size() - 1] = 2;
    chunks.push_back(c);
  }
  EXPECT_EQ(chunks.size(), pool.chunk_count());
  for (char* c : chunks) pool.put(c);
}

TEST(ChunkPool, HugepageRequestIsOnHugepagesWhenReserved) {
  constexpr size_t kChunk = 64 * 1024, kCount = 64;  // 4 MiB: two 2 MiB pages
  if (free_hugepages() < 2)
    GTEST_SKIP() << "no free 2 MiB hugepages (/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages < 2; "
                    "reserve some with tools/setup.sh): the hugepage path cannot be checked here";
  ChunkPool pool("test", kChunk, kCount, true);
  ASSERT_TRUE(pool.hugepage_backed()) << "hugepages are free but the pool took normal pages";
  const Mapping m = mapping_of(pool.base());
  ASSERT_TRUE(m.found) << "no mapping holds the pool's base in /proc/self/smaps";
  EXPECT_EQ(m.kernel_page_kib, 2048u) << "the pool says hugepages, the kernel maps it in " << m.kernel_page_kib
                                      << " KiB pages";
  EXPECT_TRUE(m.hugetlb) << "VmFlags lack ht (hugetlb)";
  EXPECT_EQ(mapping_of(pool.chunk_at(kCount - 1) + kChunk - 1).kernel_page_kib, 2048u) << "the last chunk";
  touch_every_chunk(pool);
}

TEST(ChunkPool, HugepageRequestFallsBackToNormalPagesWhenTooFewAreFree) {
  // Ask for more 2 MiB pages than are free: the hugetlb mmap must fail and the pool take normal
  // pages (an untouched anonymous mapping: it costs no memory until used).
  constexpr size_t kChunk = size_t{2} << 20;
  const unsigned long free_pages = free_hugepages();
  const size_t count = free_pages + 64;
  if (count * kChunk > (size_t{16} << 30))
    GTEST_SKIP() << free_pages << " free hugepages: exhausting them would need a " << (count * kChunk >> 30)
                 << " GiB request";
  ChunkPool pool("test", kChunk, count, true);
  EXPECT_FALSE(pool.hugepage_backed()) << count << " hugepages requested, " << free_pages << " free";
  const Mapping m = mapping_of(pool.base());
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.kernel_page_kib, 4u);
  EXPECT_FALSE(m.hugetlb);
  char* last = pool.chunk_at(count - 1);
  last[kChunk - 1] = 1;  // usable to its last byte
  EXPECT_TRUE(pool.contains(last, kChunk));
}

}  // namespace
}  // namespace bypass::rdma
