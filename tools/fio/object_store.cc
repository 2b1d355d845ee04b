#include "tools/fio/object_store.h"

#include <sys/mman.h>

#include <cerrno>

#include "config/config.h"

namespace bypass::fio {

namespace {

uint64_t make_handle(uint32_t index, uint32_t generation) { return (uint64_t{generation} << 32) | index; }

}  // namespace

ObjectStore::ObjectStore(uint64_t budget) : objects_(new Object[kMaxObjects]), budget_(budget) {}

ObjectStore::~ObjectStore() {
  for (uint32_t i = 0; i < kMaxObjects; ++i)
    if (objects_[i].base != nullptr) munmap(objects_[i].base, objects_[i].size);
}

ObjectStore::Opened ObjectStore::open(Owner owner, std::string_view name, uint64_t size) {
  std::lock_guard guard(lock_);
  uint32_t free_slot = kMaxObjects;
  for (uint32_t i = 0; i < kMaxObjects; ++i) {
    Object& o = objects_[i];
    const Owner holder = o.owner.load(std::memory_order_relaxed);
    if (holder == nullptr) {
      if (free_slot == kMaxObjects) free_slot = i;
    } else if (holder == owner && o.name == name) {
      if (o.size != size)
        return {-EINVAL, 0, std::string(name) + " is open with size " + std::to_string(o.size) + ", not " + std::to_string(size)};
      return {0, make_handle(i, o.generation.load(std::memory_order_relaxed)), {}};
    }
  }
  if (free_slot == kMaxObjects)
    return {-EMFILE, 0, std::to_string(kMaxObjects) + " objects are open, the most one receiver holds"};
  if (size == 0) return {-EINVAL, 0, "an object of 0 bytes"};
  if (size > budget_ - used_)
    return {-ENOSPC, 0,
            "its " + config::format_size(size) + " do not fit in what is left of the receiver's size= (" +
                config::format_size(budget_ - used_) + " of " + config::format_size(budget_) + ")"};
  // Reserved address space only: pages come as senders write (MAP_NORESERVE), zeros until then.
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return {-ENOMEM, 0, "cannot map " + config::format_size(size) + " of memory"};
  Object& o = objects_[free_slot];
  o.base = static_cast<char*>(base);
  o.size = size;
  o.name = name;
  const uint32_t generation = o.generation.load(std::memory_order_relaxed) + 1;
  o.generation.store(generation, std::memory_order_relaxed);
  used_ += size;
  o.owner.store(owner, std::memory_order_release);
  return {0, make_handle(free_slot, generation), {}};
}

ObjectStore::Object* ObjectStore::find(Owner owner, uint64_t handle) {
  const uint64_t index = handle & 0xffffffffu;
  if (index >= kMaxObjects) return nullptr;
  Object& o = objects_[index];
  if (o.owner.load(std::memory_order_acquire) != owner) return nullptr;
  if (o.generation.load(std::memory_order_relaxed) != handle >> 32) return nullptr;
  return &o;
}

int ObjectStore::check_range(const Object& object, uint64_t offset, uint64_t length) {
  return offset <= object.size && length <= object.size - offset ? 0 : -ERANGE;
}

int ObjectStore::write(Owner owner, uint64_t handle, uint64_t offset, const BufferList& data) {
  Object* o = find(owner, handle);
  if (o == nullptr) return -EBADF;
  if (const int r = check_range(*o, offset, data.length()); r != 0) return r;
  data.copy_out(0, data.length(), o->base + offset);
  return 0;
}

int ObjectStore::read(Owner owner, uint64_t handle, uint64_t offset, uint64_t length, BufferList& out) {
  Object* o = find(owner, handle);
  if (o == nullptr) return -EBADF;
  if (const int r = check_range(*o, offset, length); r != 0) return r;
  out.append_copy(o->base + offset, length);
  return 0;
}

void ObjectStore::release(Owner owner) {
  std::lock_guard guard(lock_);
  for (uint32_t i = 0; i < kMaxObjects; ++i) {
    Object& o = objects_[i];
    if (o.owner.load(std::memory_order_relaxed) != owner) continue;
    o.owner.store(nullptr, std::memory_order_release);
    munmap(o.base, o.size);
    used_ -= o.size;
    o.base = nullptr;
    o.size = 0;
    o.name.clear();
  }
}

uint64_t ObjectStore::used() const {
  std::lock_guard guard(lock_);
  return used_;
}

}  // namespace bypass::fio
