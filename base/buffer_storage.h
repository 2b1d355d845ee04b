// BufferStorage: the small header that keeps one piece of buffer memory alive.
//
// Every refcounted BufferSegment points at one. The header sits in front of our own blocks (one
// allocation for both), in a per-thread header pool for wrapped foreign memory, or in memory the
// foreign owner already has (an mbuf's headroom, an RDMA chunk descriptor): then wrapping costs no
// allocation at all.
//
// Threads. A worker owns its connections, and almost every buffer is created, shared and dropped on
// that one worker, so the count is a plain integer by default (BufferSharing::worker_local). Moving
// every view of a storage to another thread (a message handed through a queue) is fine; what a
// plain count cannot take is views of one storage held on two threads at once. Storage that will
// be viewed from several threads at once says so where it is created (BufferSharing::across_threads:
// an atomic count), or is promoted with share_across_threads() by the thread that holds every view,
// just before it hands some of them over. The places that do so today:
//   - payloads a benchmark shares between all its connections (tools/bypass-bench: created shared);
//   - messages the messenger hands from a worker to its dispatch thread (msgr: promoted in deliver);
//   - pieces the dpdk transmit path attaches to mbufs as external buffers, which a looped port
//     (net_ring) frees on the receiving worker (stack/dpdk/tx_chain: promoted when attached);
//   - RDMA receive chunks and mbufs are worker_local: only their release functions run elsewhere,
//     and those are thread-safe (ChunkPool::put_from_any_thread, rte_pktmbuf_free_seg).
// Debug builds (no NDEBUG) record the thread of each worker_local storage. A count change from
// another thread while a single view exists is a move (the storage follows it). With several views
// it may still be a move of all of them, so the storage follows once; if it then changes thread
// again before it is down to one view, views live on two threads, and the process aborts naming
// the storage: the race a plain count would otherwise turn into a silent use-after-free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace bypass {

// How a storage counts its views: the choice between a cheap plain count and a thread-safe one
// (see the file comment).
enum class BufferSharing : uint8_t {
  worker_local,    // plain count: at any moment every view lives on one thread
  across_threads,  // atomic count: views may live on several threads at once
};

struct BufferStorage;
// Releases foreign memory once its last view is gone; `header` is the storage header (the owner's
// own memory when it supplied it, so it may compute which chunk or mbuf this was from it).
// Runs on the thread that drops the last view.
using BufferReleaseFn = void (*)(void* context, BufferStorage* header);

struct BufferStorage {
  // Where the header and the bytes live, which decides how the storage is freed.
  enum class Origin : uint8_t {
    pooled_block,    // header + data in one block of size class `size_class` from the thread pool
    heap_block,      // header + data in one malloc'd block (larger than the largest class)
    foreign,         // foreign memory; header from the thread pool
    foreign_header,  // foreign memory; header in memory the owner supplied
  };

  uint32_t refs = 1;  // views of the storage; atomic access when sharing is across_threads
  // How refs is counted; only ever goes to across_threads.
  BufferSharing sharing = BufferSharing::worker_local;
  Origin origin = Origin::heap_block;  // how destroy() gives the memory back
  uint8_t size_class = 0;  // block_pool class of a pooled_block (foreign headers are always class 0)
  uint8_t moved_with_views = 0;  // debug builds: the owner changed while several views existed
  uint32_t owner_thread = 0;     // debug builds: the thread of a worker_local storage
  BufferReleaseFn release = nullptr;  // foreign memory: called after the last view
  void* context = nullptr;  // foreign memory: release's first argument

  // Counts one more view (a copied BufferSegment).
  void ref() {
    if (sharing == BufferSharing::across_threads) {
      std::atomic_ref<uint32_t>(refs).fetch_add(1, std::memory_order_relaxed);
    } else {
      check_thread();
      ++refs;
    }
  }
  // Drops one view; frees the storage (or runs the release function) after the last.
  void unref() {
    if (sharing == BufferSharing::across_threads) {
      if (std::atomic_ref<uint32_t>(refs).fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
    } else {
      check_thread();
      if (--refs == 0) destroy();
#ifndef NDEBUG
      else if (refs == 1) moved_with_views = 0;  // one view left: wherever it goes next is a move
#endif
    }
  }
  // Views right now (tests and leak checks: racy when shared).
  uint32_t count() const {
    return sharing == BufferSharing::across_threads
               ? std::atomic_ref<uint32_t>(const_cast<uint32_t&>(refs)).load(std::memory_order_relaxed)
               : refs;
  }
  // Turns the count atomic for good. Only the thread holding every view may call it.
  void share_across_threads() {
    if (sharing == BufferSharing::across_threads) return;
    check_thread();
    sharing = BufferSharing::across_threads;
  }
  // Resets every field for a fresh storage with one view (headers are reused from pools).
  void init(Origin o, BufferSharing s);

 private:
  void check_thread() {
#ifndef NDEBUG
    if (owner_thread != this_thread_tag()) adopt_or_abort();
#endif
  }
  static uint32_t this_thread_tag();
  void adopt_or_abort();
  void destroy();
};
static_assert(sizeof(BufferStorage) == 32, "the header is a fixed 32 bytes in front of every block");

// The per-thread block pools behind BufferSegment::allocate, headers of wrapped memory and
// BufferList's segment arrays beyond their inline room. Blocks are malloc'd on a miss and kept in
// size classes on the thread that frees them (up to a bound per class, then free()d), so a worker's
// steady state reuses its own memory and makes no heap calls.
namespace block_pool {
constexpr int kClasses = 7;  // size classes
constexpr size_t kClassBytes[kClasses] = {32, 96, 288, 1056, 4128, 16416, 65568};  // 32 + 0/64/256/1K/4K/16K/64K
// Larger blocks bypass the pools (plain malloc/free).
constexpr size_t kLargestBlock = kClassBytes[kClasses - 1];
// The smallest class holding `bytes`; kClasses when none does.
inline int class_for(size_t bytes) {
  int c = 0;
  while (c < kClasses && kClassBytes[c] < bytes) ++c;
  return c;
}
// A block of kClassBytes[size_class] bytes: this thread's cached one, else malloc'd (aborts when
// memory is exhausted).
void* get(int size_class);
// Gives a block of that class back to this thread's pool (free()d when the pool is full).
void put(int size_class, void* block);
// Counters of this thread's pools (tests): blocks handed out from a cache and malloc'd on a miss.
struct Stats {
  uint64_t hits = 0;  // blocks handed out from the cache
  uint64_t misses = 0;  // blocks malloc'd because the cache was empty
};
Stats stats();  // this thread's counters
}  // namespace block_pool

}  // namespace bypass
