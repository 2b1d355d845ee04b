// ChunkPool: a fixed set of equal-size buffers carved out of one memory region.
//
// The RDMA transport registers the whole region with the device once (one MR for every chunk), so
// posting a chunk costs no registration. The pool never grows: when it is empty, callers get
// nullptr and must apply backpressure (a send returns -EAGAIN until chunks come back). The region
// is anonymous memory, optionally backed by 2 MiB hugepages (falling back to normal pages when the
// kernel has none reserved). Device-independent so it can be unit-tested without verbs.
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/buffer_list.h"
#include "stack/rdma/mapped_region.h"

namespace bypass::rdma {

class ChunkPool {
 public:
  // Throws std::invalid_argument for a zero size/count and std::runtime_error when the memory
  // cannot be mapped.
  ChunkPool(std::string name, size_t chunk_size, size_t chunk_count, bool hugepages);
  ~ChunkPool();
  // A pool that lend() may hand out: it stays alive while lent chunks are viewed anywhere, even
  // after the last shared_ptr (its owner) is gone.
  static std::shared_ptr<ChunkPool> create_lendable(std::string name, size_t chunk_size, size_t chunk_count,
                                                    bool hugepages);
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A free chunk or nullptr when all are in use. Owner thread only.
  char* get();
  // Returns a chunk obtained from get(). Owner thread only. Throws std::logic_error for a pointer
  // that is not the start of one of this pool's chunks or a chunk that is already free.
  void put(char* chunk);
  // From any thread (a BufferSegment released elsewhere): queued and folded into the free list by
  // the owner's next collect_returned().
  void put_from_any_thread(char* chunk);
  // Owner thread: moves chunks returned by other threads back to the free list; returns how many.
  size_t collect_returned();
  // Owner thread: the first `len` bytes of `chunk` (from get()) as a buffer segment whose storage
  // header is the chunk's descriptor (no allocation); the chunk comes back through
  // put_from_any_thread when the last view is dropped, on whatever thread. Pools made by
  // create_lendable() only.
  BufferSegment lend(char* chunk, size_t len);

  bool contains(const void* p, size_t len = 1) const {
    auto* c = static_cast<const char*>(p);
    return c >= base_ && len <= region_bytes() && c <= base_ + region_bytes() - len;
  }
  // The chunk containing p (p must be contains()).
  size_t index_of(const void* p) const {
    return static_cast<size_t>(static_cast<const char*>(p) - base_) / chunk_size_;
  }
  char* chunk_at(size_t index) const { return base_ + index * chunk_size_; }

  char* base() const { return base_; }
  size_t region_bytes() const { return chunk_size_ * chunk_count_; }
  size_t chunk_size() const { return chunk_size_; }
  size_t chunk_count() const { return chunk_count_; }
  size_t free_count() const { return free_.size(); }
  size_t in_use() const { return chunk_count_ - free_.size(); }
  bool hugepage_backed() const { return region_.hugepage_backed(); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  size_t chunk_size_;
  size_t chunk_count_;
  MappedRegion region_;
  char* base_;
  std::vector<uint32_t> free_;          // stack of free chunk indexes
  std::vector<bool> is_free_;           // double-put detection
  std::mutex returned_mutex_;           // only other threads' returns take it
  std::vector<uint32_t> returned_;
  std::atomic<size_t> returned_count_{0};  // lets the owner skip the lock when nothing came back
  std::vector<BufferStorage> descriptors_;  // lend(): one storage header per chunk
  std::atomic<size_t> holds_{1};            // create_lendable(): the owner's hold + one per lent chunk
  bool lendable_ = false;

  static void return_lent(void* pool, BufferStorage* header);
  void drop_hold();
};

}  // namespace bypass::rdma
