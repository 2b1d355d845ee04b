// The connection table's map from 4-tuple to connection: open addressing with linear probing and
// backward-shift deletion (no tombstones), so find, insert and erase are O(1) on average and
// allocate nothing: the slot array only grows, doubling, when it would be more than half full
// (like Linux's established hash, it never shrinks). std::unordered_map allocated a node per
// connection and chased a pointer per lookup.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "stack/inet/tcp_connection.h"

namespace bypass::inet {

template <typename Value>
class TupleTable {
 public:
  explicit TupleTable(size_t initial_capacity = 64) { slots_.resize(std::bit_ceil(std::max<size_t>(initial_capacity, 8))); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return slots_.size(); }

  // nullptr when absent.
  Value* find(const FourTuple& key) {
    for (size_t i = home(key);; i = next(i)) {
      Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }
  const Value* find(const FourTuple& key) const { return const_cast<TupleTable*>(this)->find(key); }
  bool contains(const FourTuple& key) const { return find(key) != nullptr; }

  // False (and `value` untouched) when the key is already present.
  bool insert(const FourTuple& key, Value value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(key);
    for (; slots_[i].used; i = next(i))
      if (slots_[i].key == key) return false;
    slots_[i].key = key;
    slots_[i].value = std::move(value);
    slots_[i].used = true;
    ++size_;
    return true;
  }

  // Removes the key and returns its value (a default Value when absent).
  Value take(const FourTuple& key) {
    size_t i = home(key);
    for (;; i = next(i)) {
      if (!slots_[i].used) return Value{};
      if (slots_[i].key == key) break;
    }
    Value taken = std::move(slots_[i].value);
    // Backward shift: pull later members of the probe run into the hole when the hole lies on
    // their path from home, so every key stays reachable without tombstones.
    for (size_t j = next(i);; j = next(j)) {
      Slot& candidate = slots_[j];
      if (!candidate.used) break;
      const size_t want = home(candidate.key);
      // `candidate` may move to `i` unless its home lies cyclically in (i, j].
      const bool home_between = i <= j ? (want > i && want <= j) : (want > i || want <= j);
      if (home_between) continue;
      slots_[i].key = candidate.key;
      slots_[i].value = std::move(candidate.value);
      i = j;
    }
    slots_[i].used = false;
    slots_[i].value = Value{};
    --size_;
    return taken;
  }
  bool erase(const FourTuple& key) {
    const bool present = find(key) != nullptr;
    if (present) take(key);
    return present;
  }

  // visit(const FourTuple&, const Value&) for every entry, in no particular order. The table must
  // not change during the walk.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const Slot& slot : slots_)
      if (slot.used) visit(slot.key, slot.value);
  }
  // Empties the table into a vector (for teardown that may call back into the owner).
  std::vector<Value> drain() {
    std::vector<Value> out;
    out.reserve(size_);
    for (Slot& slot : slots_) {
      if (!slot.used) continue;
      out.push_back(std::move(slot.value));
      slot.value = Value{};
      slot.used = false;
    }
    size_ = 0;
    return out;
  }

 private:
  struct Slot {
    FourTuple key;
    bool used = false;
    Value value{};
  };

  size_t home(const FourTuple& key) const {
    // Fibonacci hashing over FourTupleHash: the top bits of the product index the power-of-two array.
    const uint64_t h = static_cast<uint64_t>(FourTupleHash{}(key)) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h >> (64 - std::countr_zero(slots_.size())));
  }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (Slot& slot : old)
      if (slot.used) insert(slot.key, std::move(slot.value));
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace bypass::inet
