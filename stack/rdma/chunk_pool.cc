#include "stack/rdma/chunk_pool.h"

#include <stdexcept>

namespace bypass::rdma {

namespace {
constexpr size_t kMaxChunks = size_t{1} << 31;

// The region's size, checked before it is mapped (the member initializer runs first).
size_t checked_bytes(const std::string& name, size_t chunk_size, size_t chunk_count) {
  if (chunk_size == 0 || chunk_count == 0 || chunk_count > kMaxChunks) {
    throw std::invalid_argument(name + ": chunk size and count must be positive (got " +
                                std::to_string(chunk_size) + " x " + std::to_string(chunk_count) + ")");
  }
  if (chunk_size > SIZE_MAX / chunk_count) throw std::invalid_argument(name + ": chunk size x count overflows");
  return chunk_size * chunk_count;
}
}  // namespace

ChunkPool::ChunkPool(std::string name, size_t chunk_size, size_t chunk_count, bool hugepages)
    : name_(std::move(name)),
      chunk_size_(chunk_size),
      chunk_count_(chunk_count),
      region_(name_, checked_bytes(name_, chunk_size, chunk_count), hugepages),
      base_(region_.base()) {
  free_.reserve(chunk_count);
  // Hand out low addresses first (pushed last, popped first): easier to read in a debugger.
  for (size_t i = chunk_count; i-- > 0;) free_.push_back(static_cast<uint32_t>(i));
  is_free_.assign(chunk_count, true);
}

ChunkPool::~ChunkPool() = default;

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
