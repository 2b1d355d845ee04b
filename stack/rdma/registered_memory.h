// RegisteredMemory: payload memory registered with the device once, at start-up, for the life of
// the stack (rdma.registered_memory bytes). Two users:
//  - applications: NetworkStack::allocate_payload() hands out its blocks, so a payload run of at
//    least rdma.rendezvous_threshold is pulled by the peer with RDMA READ straight from the
//    application's buffer, with no copy and no registration on the way (the model of CCI's
//    clients, which registered their buffers once with io_init);
//  - the receiving side of rendezvous: RDMA READs land in its blocks, which go up to the owner as
//    buffers without a copy.
//
// Layout: the region is cut into 1 MiB slabs; a slab goes to one size class (4 KiB .. 1 MiB,
// powers of two) the first time that class runs dry and stays with it, so blocks are carved once.
// Each class keeps its free blocks on a lock-free stack (a Treiber stack whose head carries an ABA
// tag): any thread allocates, and whichever thread drops a block's last view returns it, without a
// lock, allocation or system call. Every 4 KiB unit has a storage header of its own, so a block
// becomes a BufferSegment with no allocation.
//
// Lifetime: blocks may outlive the stack (an application keeps a buffer): the memory, its
// registration and the device stay until the last block comes back (as ChunkPool::create_lendable).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/buffer_list.h"
#include "stack/rdma/mapped_region.h"

namespace bypass::rdma {

class RegisteredMemory {
 public:
  static constexpr size_t kUnit = 4096;
  static constexpr size_t kSlab = size_t{1} << 20;
  static constexpr size_t kLargestBlock = kSlab;
  static constexpr int kClasses = 9;  // 4 KiB << 0..8

  // Maps `bytes`, rounded up to whole slabs (at least one). Throws std::runtime_error when the
  // memory cannot be mapped.
  static std::shared_ptr<RegisteredMemory> create(const std::string& name, size_t bytes, bool hugepages);
  // Registers the whole region in `pd` for local writes (READ targets) and remote reads, and keeps
  // `keepalive` (what owns the PD) until the memory goes. Throws std::runtime_error naming
  // rdma.registered_memory when the device refuses.
  void register_with(ibv_pd* pd, std::shared_ptr<void> keepalive);
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;

  // A block of at least `len` bytes (1 .. kLargestBlock) as a segment of exactly `len`; empty when
  // the class has no free block and every slab is taken. Any thread.
  BufferSegment allocate(size_t len, BufferSharing sharing = BufferSharing::worker_local);
  // The size of the block allocate(len) takes.
  static size_t block_size(size_t len) { return kUnit << class_of(len); }

  bool contains(const void* p, size_t len) const {
    auto* c = static_cast<const char*>(p);
    return c >= base_ && len <= bytes_ && c <= base_ + bytes_ - len;
  }
  uint32_t lkey() const { return mr_ != nullptr ? mr_->lkey : 0; }
  uint32_t rkey() const { return mr_ != nullptr ? mr_->rkey : 0; }
  char* base() const { return base_; }
  size_t region_bytes() const { return bytes_; }
  size_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }  // by block size
  uint64_t exhausted() const { return exhausted_.load(std::memory_order_relaxed); }  // allocate() found none

 private:
  RegisteredMemory(const std::string& name, size_t bytes, bool hugepages);
  ~RegisteredMemory();
  static int class_of(size_t len) {
    int c = 0;
    while ((kUnit << c) < len) ++c;
    return c;
  }
  bool pop(int size_class, uint32_t* unit);
  void push(int size_class, uint32_t unit);
  bool carve(int size_class, uint32_t* unit);  // a fresh slab for the class; hands out its first block
  static void return_block(void* self, BufferStorage* header);
  void drop_hold();

  size_t bytes_;
  MappedRegion region_;
  char* base_;
  uint32_t slabs_;
  std::unique_ptr<BufferStorage[]> headers_;          // one per unit
  std::unique_ptr<std::atomic<uint32_t>[]> next_;     // free-stack links, one per unit
  std::unique_ptr<uint8_t[]> slab_class_;             // written before the slab's blocks are published
  std::atomic<uint64_t> heads_[kClasses] = {};        // low 32 bits: unit + 1 (0: empty); high: ABA tag
  std::atomic<uint32_t> next_slab_{0};
  std::atomic<size_t> holds_{1};                      // the owner's + one per block handed out
  std::atomic<size_t> in_use_{0};
  std::atomic<uint64_t> exhausted_{0};
  ibv_mr* mr_ = nullptr;
  std::shared_ptr<void> keepalive_;
};

}  // namespace bypass::rdma
