#include "stack/rdma/registered_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace bypass::rdma {

namespace {

constexpr uint64_t kUnitMask = 0xffffffffu;

size_t whole_slabs(size_t bytes) {
  const size_t slabs = std::max<size_t>(1, (bytes + RegisteredMemory::kSlab - 1) / RegisteredMemory::kSlab);
  return slabs * RegisteredMemory::kSlab;
}

}  // namespace

std::shared_ptr<RegisteredMemory> RegisteredMemory::create(const std::string& name, size_t bytes, bool hugepages) {
  auto* memory = new RegisteredMemory(name, bytes, hugepages);
  return std::shared_ptr<RegisteredMemory>(memory, [](RegisteredMemory* m) { m->drop_hold(); });
}

RegisteredMemory::RegisteredMemory(const std::string& name, size_t bytes, bool hugepages)
    : bytes_(whole_slabs(bytes)),
      region_(name, bytes_, hugepages),
      base_(region_.base()),
      slabs_(static_cast<uint32_t>(bytes_ / kSlab)),
      headers_(new BufferStorage[bytes_ / kUnit]),
      next_(new std::atomic<uint32_t>[bytes_ / kUnit]),
      slab_class_(new uint8_t[slabs_]) {}

RegisteredMemory::~RegisteredMemory() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
}

void RegisteredMemory::register_with(ibv_pd* pd, std::shared_ptr<void> keepalive) {
  mr_ = ibv_reg_mr(pd, base_, bytes_, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  if (mr_ == nullptr) {
    throw std::runtime_error("rdma.registered_memory: cannot register " + std::to_string(bytes_) +
                             " bytes of payload memory (ulimit -l?): " + strerror(errno));
  }
  keepalive_ = std::move(keepalive);
}

BufferSegment RegisteredMemory::allocate(size_t len, BufferSharing sharing) {
  if (len == 0 || len > kLargestBlock) return {};
  const int size_class = class_of(len);
  uint32_t unit = 0;
  if (!pop(size_class, &unit) && !carve(size_class, &unit)) {
    exhausted_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  holds_.fetch_add(1, std::memory_order_relaxed);
  in_use_.fetch_add(kUnit << size_class, std::memory_order_relaxed);
  return BufferSegment::wrap(&headers_[unit], base_ + size_t{unit} * kUnit, len, &RegisteredMemory::return_block,
                             this, sharing);
}

bool RegisteredMemory::pop(int size_class, uint32_t* unit) {
  std::atomic<uint64_t>& head = heads_[size_class];
  uint64_t h = head.load(std::memory_order_acquire);
  while ((h & kUnitMask) != 0) {
    const uint32_t top = static_cast<uint32_t>(h & kUnitMask) - 1;
    const uint64_t next = next_[top].load(std::memory_order_relaxed);
    // The tag changes on every successful exchange, so a head that was popped and pushed back
    // meanwhile (ABA) no longer matches.
    const uint64_t replacement = ((h >> 32) + 1) << 32 | next;
    if (head.compare_exchange_weak(h, replacement, std::memory_order_acquire, std::memory_order_acquire)) {
      *unit = top;
      return true;
    }
  }
  return false;
}

void RegisteredMemory::push(int size_class, uint32_t unit) {
  std::atomic<uint64_t>& head = heads_[size_class];
  uint64_t h = head.load(std::memory_order_relaxed);
  uint64_t replacement;
  do {
    next_[unit].store(static_cast<uint32_t>(h & kUnitMask), std::memory_order_relaxed);
    replacement = ((h >> 32) + 1) << 32 | (uint64_t{unit} + 1);
  } while (!head.compare_exchange_weak(h, replacement, std::memory_order_release, std::memory_order_relaxed));
}

bool RegisteredMemory::carve(int size_class, uint32_t* unit) {
  uint32_t slab = next_slab_.load(std::memory_order_relaxed);
  do {
    if (slab >= slabs_) return false;
  } while (!next_slab_.compare_exchange_weak(slab, slab + 1, std::memory_order_relaxed));
  slab_class_[slab] = static_cast<uint8_t>(size_class);
  constexpr uint32_t kUnitsPerSlab = kSlab / kUnit;
  const uint32_t first = slab * kUnitsPerSlab;
  const uint32_t step = 1u << size_class;
  // Blocks 1.. go on the free stack (its release ordering publishes slab_class_); block 0 is ours.
  for (uint32_t u = first + kUnitsPerSlab - step; u > first; u -= step) push(size_class, u);
  *unit = first;
  return true;
}

void RegisteredMemory::return_block(void* context, BufferStorage* header) {
  auto* self = static_cast<RegisteredMemory*>(context);
  const auto unit = static_cast<uint32_t>(header - self->headers_.get());
  const int size_class = self->slab_class_[unit / (kSlab / kUnit)];
  self->in_use_.fetch_sub(kUnit << size_class, std::memory_order_relaxed);
  self->push(size_class, unit);
  self->drop_hold();
}

void RegisteredMemory::drop_hold() {
  if (holds_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace bypass::rdma
