#include "base/buffer_storage.h"

#include <cstdio>
#include <cstdlib>

namespace bypass {

namespace {

std::atomic<uint32_t> next_thread_tag{1};
thread_local uint32_t thread_tag = 0;

// One thread's cached blocks, a singly linked free list per size class threaded through the
// blocks themselves. The bound keeps a thread that frees what another allocates (a consumer of
// handed-over messages) from hoarding memory.
struct FreeBlock {
  FreeBlock* next;
};
constexpr size_t kMaxCachedBytesPerClass = size_t{4} << 20;
constexpr size_t kLine = 64;
constexpr int kLineAlignedClasses = 3;  // classes 0..3: up to 1,056 bytes (see get())
constexpr size_t kMaxCachedBlocksPerClass = 1024;

struct ThreadCache {
  FreeBlock* head[block_pool::kClasses] = {};
  size_t cached[block_pool::kClasses] = {};
  block_pool::Stats stats;
  ~ThreadCache();
};

// The cache once built, until the thread exits (then blocks freed later go straight to free()).
// The hot path reads this one word: in a shared library (the fio engine) every thread-local
// variable read is a call to __tls_get_addr, and reading a state and the cache took 2-3 such calls
// per get or put (~230 instructions per request and side; callgrind, docs/fio.md).
thread_local constinit ThreadCache* live_cache = nullptr;
thread_local constinit bool cache_destroyed = false;
thread_local ThreadCache cache;

ThreadCache::~ThreadCache() {
  for (int c = 0; c < block_pool::kClasses; ++c) {
    while (head[c] != nullptr) {
      FreeBlock* b = head[c];
      head[c] = b->next;
      std::free(b);
    }
  }
  live_cache = nullptr;
  cache_destroyed = true;
}

[[gnu::noinline]] ThreadCache* build_thread_cache() {
  if (cache_destroyed) return nullptr;
  live_cache = &cache;  // first use constructs it and registers its destructor
  return live_cache;
}

ThreadCache* this_thread_cache() {
  if (ThreadCache* tc = live_cache) [[likely]]
    return tc;
  return build_thread_cache();
}

size_t class_limit(int size_class) {
  const size_t by_bytes = kMaxCachedBytesPerClass / block_pool::kClassBytes[size_class];
  return by_bytes < kMaxCachedBlocksPerClass ? by_bytes : kMaxCachedBlocksPerClass;
}

}  // namespace

namespace block_pool {

void* get(int size_class) {
  ThreadCache* tc = this_thread_cache();
  if (tc != nullptr) {
    if (FreeBlock* b = tc->head[size_class]) {
      tc->head[size_class] = b->next;
      --tc->cached[size_class];
      ++tc->stats.hits;
      return b;
    }
    ++tc->stats.misses;
  }
  // Blocks of up to 1 KiB (messages with their counts, buffer headers, segment arrays) start on a
  // cache line: malloc's 16-byte alignment spread a 440-byte Message over 8 lines three times in
  // four, and at a thousand connections every line of a message is fetched once per message. The
  // larger classes hold payload behind a 32-byte header, which no block alignment lines up.
  void* block = size_class <= kLineAlignedClasses
                    ? std::aligned_alloc(kLine, (kClassBytes[size_class] + kLine - 1) / kLine * kLine)
                    : std::malloc(kClassBytes[size_class]);
  if (block == nullptr) {
    std::fprintf(stderr, "bypass: out of memory allocating a %zu-byte buffer block\n", kClassBytes[size_class]);
    std::abort();
  }
  return block;
}

void put(int size_class, void* block) {
  ThreadCache* tc = this_thread_cache();
  if (tc == nullptr || tc->cached[size_class] >= class_limit(size_class)) {
    std::free(block);
    return;
  }
  auto* b = static_cast<FreeBlock*>(block);
  b->next = tc->head[size_class];
  tc->head[size_class] = b;
  ++tc->cached[size_class];
}

Stats stats() {
  ThreadCache* tc = this_thread_cache();
  return tc != nullptr ? tc->stats : Stats{};
}

}  // namespace block_pool

void BufferStorage::init(Origin o, BufferSharing s) {
  refs = 1;
  sharing = s;
  origin = o;
  size_class = 0;
  moved_with_views = 0;
  owner_thread = 0;
  release = nullptr;
  context = nullptr;
#ifndef NDEBUG
  owner_thread = this_thread_tag();
#endif
}

uint32_t BufferStorage::this_thread_tag() {
  if (thread_tag == 0) thread_tag = next_thread_tag.fetch_add(1, std::memory_order_relaxed);
  return thread_tag;
}

// A worker_local count touched from another thread. Holding the only view means every view moved
// here (a hand-over through a queue): the storage now belongs to this thread. With several views it
// may be a move of all of them, once; a second change of thread before the storage is down to one
// view means views live on two threads and their plain count races.
void BufferStorage::adopt_or_abort() {
  if (refs == 1 || moved_with_views == 0) {
    moved_with_views = refs == 1 ? 0 : 1;
    owner_thread = this_thread_tag();
    return;
  }
  std::fprintf(stderr,
               "bypass: buffer storage %p (worker_local, %u views) moved to thread %u is used on thread %u "
               "while views remain there: create it with BufferSharing::across_threads or call "
               "share_across_threads() before handing views over (base/buffer_storage.h)\n",
               static_cast<void*>(this), refs, owner_thread, this_thread_tag());
  std::abort();
}

void BufferStorage::destroy() {
  switch (origin) {
    case Origin::pooled_block:
      block_pool::put(size_class, this);
      return;
    case Origin::heap_block:
      std::free(this);
      return;
    case Origin::foreign:
      release(context, this);
      block_pool::put(0, this);
      return;
    case Origin::foreign_header:
      release(context, this);  // may free the memory this header lives in: nothing after it
      return;
  }
}

}  // namespace bypass
