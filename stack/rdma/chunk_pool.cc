#include "stack/rdma/chunk_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/log.h"

namespace bypass::rdma {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kMaxChunks = size_t{1} << 31;
}  // namespace

ChunkPool::ChunkPool(std::string name, size_t chunk_size, size_t chunk_count, bool hugepages)
    : name_(std::move(name)), chunk_size_(chunk_size), chunk_count_(chunk_count) {
  if (chunk_size == 0 || chunk_count == 0 || chunk_count > kMaxChunks) {
    throw std::invalid_argument(name_ + ": chunk size and count must be positive (got " +
                                std::to_string(chunk_size) + " x " + std::to_string(chunk_count) + ")");
  }
  if (chunk_size > SIZE_MAX / chunk_count) {
    throw std::invalid_argument(name_ + ": chunk size x count overflows");
  }
  const size_t bytes = chunk_size * chunk_count;
  void* p = MAP_FAILED;
  if (hugepages) {
    mapped_bytes_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      BYPASS_LOG(Warn, "rdma", "%s: no hugepages for %zu bytes (%s); using normal pages",
                 name_.c_str(), mapped_bytes_, strerror(errno));
    } else {
      hugepage_backed_ = true;
    }
  }
  if (p == MAP_FAILED) {
    mapped_bytes_ = bytes;
    p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw std::runtime_error(name_ + ": cannot map " + std::to_string(bytes) +
                               " bytes of buffer memory: " + strerror(errno));
    }
  }
  base_ = static_cast<char*>(p);
  free_.reserve(chunk_count);
  // Hand out low addresses first (pushed last, popped first): easier to read in a debugger.
  for (size_t i = chunk_count; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
  is_free_.assign(chunk_count, true);
}

ChunkPool::~ChunkPool() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
}

char* ChunkPool::get() {
  if (free_.empty() && collect_returned() == 0) return nullptr;
  const uint32_t index = free_.back();
  free_.pop_back();
  is_free_[index] = false;
  return chunk_at(index);
}

void ChunkPool::put(char* chunk) {
  if (!contains(chunk) || (chunk - base_) % chunk_size_ != 0) {
    throw std::logic_error(name_ + ": put of a pointer that is not one of its chunks");
  }
  const size_t index = index_of(chunk);
  if (is_free_[index]) throw std::logic_error(name_ + ": chunk " + std::to_string(index) + " put twice");
  is_free_[index] = true;
  free_.push_back(static_cast<uint32_t>(index));
}

void ChunkPool::put_from_any_thread(char* chunk) {
  if (!contains(chunk) || (chunk - base_) % chunk_size_ != 0) {
    throw std::logic_error(name_ + ": put of a pointer that is not one of its chunks");
  }
  std::lock_guard lock(returned_mutex_);
  returned_.push_back(static_cast<uint32_t>(index_of(chunk)));
  returned_count_.fetch_add(1, std::memory_order_release);
}

size_t ChunkPool::collect_returned() {
  if (returned_count_.load(std::memory_order_acquire) == 0) return 0;
  std::vector<uint32_t> batch;
  {
    std::lock_guard lock(returned_mutex_);
    batch.swap(returned_);
    returned_count_.store(0, std::memory_order_relaxed);
  }
  for (uint32_t index : batch) put(chunk_at(index));
  return batch.size();
}

std::shared_ptr<ChunkPool> ChunkPool::create_lendable(std::string name, size_t chunk_size, size_t chunk_count,
                                                      bool hugepages) {
  auto* pool = new ChunkPool(std::move(name), chunk_size, chunk_count, hugepages);
  pool->descriptors_.resize(chunk_count);
  pool->lendable_ = true;
  return std::shared_ptr<ChunkPool>(pool, [](ChunkPool* p) { p->drop_hold(); });
}

BufferSegment ChunkPool::lend(char* chunk, size_t len) {
  if (!lendable_) throw std::logic_error(name_ + ": lend() on a pool not made by create_lendable()");
  if (!contains(chunk) || (chunk - base_) % chunk_size_ != 0 || len > chunk_size_) {
    throw std::logic_error(name_ + ": lend of a pointer that is not one of its chunks");
  }
  holds_.fetch_add(1, std::memory_order_relaxed);
  return BufferSegment::wrap(&descriptors_[index_of(chunk)], chunk, len, &ChunkPool::return_lent, this);
}

void ChunkPool::return_lent(void* pool, BufferStorage* header) {
  auto* self = static_cast<ChunkPool*>(pool);
  self->put_from_any_thread(self->chunk_at(static_cast<size_t>(header - self->descriptors_.data())));
  self->drop_hold();
}

void ChunkPool::drop_hold() {
  if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace bypass::rdma
