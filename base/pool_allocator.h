// PoolAllocator: a standard allocator over the per-thread block pools (buffer_storage.h), for the
// few containers that live in a per-connection object and grow on the data path (RACK's list of
// segments in flight, the SACK scoreboard). Their arrays come from and go back to the worker's
// pools, so opening and closing connections makes no heap call once the pools are warm; arrays
// larger than the largest class use operator new.
#pragma once

#include <cstddef>
#include <new>

#include "base/buffer_storage.h"

namespace bypass {

template <typename T>
struct PoolAllocator {
  using value_type = T;

  PoolAllocator() noexcept = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const int size_class = block_pool::class_for(n * sizeof(T));
    if (size_class < block_pool::kClasses) return static_cast<T*>(block_pool::get(size_class));
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const int size_class = block_pool::class_for(n * sizeof(T));
    if (size_class < block_pool::kClasses) return block_pool::put(size_class, p);
    ::operator delete(p);
  }

  template <typename U>
  bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

}  // namespace bypass
