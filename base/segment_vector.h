// SegmentVector: BufferList's segments, a few inline and the rest in one array from the thread's
// block pool. A front index makes popping from the front O(1) (TCP's send buffer drops acked
// segments from the front while appending at the back); the array is compacted when the back runs
// out of room.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <utility>

#include "base/buffer_storage.h"

namespace bypass {

template <typename T, uint32_t kInline>
class SegmentVector {
 public:
  SegmentVector() = default;
  ~SegmentVector() {
    clear();
    release_array();
  }
  // Copies the items (for segments: shares their storage, copies no bytes).
  SegmentVector(const SegmentVector& other) {
    reserve(other.size());
    for (const T& t : other) new (&items_[end_++]) T(t);
  }
  // Copies the items; this one's array is kept when they fit.
  SegmentVector& operator=(const SegmentVector& other) {
    if (this != &other) {
      clear();
      reserve(other.size());
      for (const T& t : other) new (&items_[end_++]) T(t);
    }
    return *this;
  }
  // Takes other's array (no copy unless inline); other is left empty.
  SegmentVector(SegmentVector&& other) noexcept { take(other); }
  // Drops this one's items and array, then takes other's as the move constructor does.
  SegmentVector& operator=(SegmentVector&& other) noexcept {
    if (this != &other) {
      clear();
      release_array();
      take(other);
    }
    return *this;
  }

  size_t size() const { return end_ - begin_; }  // items held
  bool empty() const { return end_ == begin_; }  // no items
  T* begin() { return items_ + begin_; }  // first item; invalidated by push_back/push_front
  T* end() { return items_ + end_; }  // past the last item
  const T* begin() const { return items_ + begin_; }  // first item
  const T* end() const { return items_ + end_; }  // past the last item
  T& operator[](size_t i) { return items_[begin_ + i]; }  // item i from the front (unchecked)
  const T& operator[](size_t i) const { return items_[begin_ + i]; }  // item i from the front (unchecked)
  T& front() { return items_[begin_]; }  // the first item (not empty())
  T& back() { return items_[end_ - 1]; }  // the last item (not empty())
  const T& front() const { return items_[begin_]; }  // the first item (not empty())
  const T& back() const { return items_[end_ - 1]; }  // the last item (not empty())
  std::span<const T> span() const { return {begin(), size()}; }  // the items, contiguous

  // Appends; amortised O(1) (compacts or grows into a pooled array when the back is full).
  void push_back(T&& t) {
    if (end_ == capacity_) make_room_at_back();
    new (&items_[end_++]) T(std::move(t));
  }
  // Prepends; O(1) after a pop_front() left room, else shifts every item.
  void push_front(T&& t) {
    if (begin_ == 0) {
      if (end_ == capacity_) make_room_at_back();
      // Shift everything one place up (prepend is rare: headers onto short lists).
      new (&items_[end_]) T();
      for (uint32_t i = end_; i > begin_; --i) items_[i] = std::move(items_[i - 1]);
      ++end_;
      items_[begin_] = std::move(t);
      return;
    }
    new (&items_[--begin_]) T(std::move(t));
  }
  // Destroys the first item (not empty()) in O(1); the room it leaves is reused by push_front or compaction.
  void pop_front() {
    items_[begin_++].~T();
    if (begin_ == end_) begin_ = end_ = 0;
  }
  // Keeps the first `n` items.
  void truncate(size_t n) {
    const uint32_t new_end = begin_ + static_cast<uint32_t>(n);
    while (end_ > new_end) items_[--end_].~T();
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() { truncate(0); }  // destroys every item; keeps the array for reuse

 private:
  T* inline_items() { return reinterpret_cast<T*>(inline_); }

  void take(SegmentVector& other) {
    if (other.items_ == other.inline_items()) {
      for (uint32_t i = other.begin_; i < other.end_; ++i) {
        new (&items_[end_++]) T(std::move(other.items_[i]));
        other.items_[i].~T();
      }
    } else {
      items_ = other.items_;
      begin_ = other.begin_;
      end_ = other.end_;
      capacity_ = other.capacity_;
      array_class_ = other.array_class_;
      other.items_ = other.inline_items();
      other.capacity_ = kInline;
      other.array_class_ = -1;
    }
    other.begin_ = other.end_ = 0;
  }

  void release_array() {
    if (items_ != inline_items()) {
      if (array_class_ >= 0) block_pool::put(array_class_, items_);
      else ::operator delete(items_);
      items_ = inline_items();
      capacity_ = kInline;
      array_class_ = -1;
    }
  }

  void reserve(size_t n) {
    if (n > capacity_) move_to(n);
  }

  // The back is full: compact when at least a quarter is free at the front, else grow.
  void make_room_at_back() {
    if (begin_ > 0 && begin_ >= capacity_ / 4) {
      move_to(capacity_);
    } else {
      move_to(size_t{capacity_} * 2);
    }
  }

  // Moves the items to the front of an array of at least `wanted` entries (this one when it fits).
  void move_to(size_t wanted) {
    T* target = items_;
    int target_class = array_class_;
    uint32_t target_capacity = capacity_;
    if (wanted > capacity_) {
      const size_t bytes = wanted * sizeof(T);
      target_class = block_pool::class_for(bytes);
      if (target_class < block_pool::kClasses) {
        target = static_cast<T*>(block_pool::get(target_class));
        target_capacity = static_cast<uint32_t>(block_pool::kClassBytes[target_class] / sizeof(T));
      } else {
        target_class = -1;
        target = static_cast<T*>(::operator new(bytes));
        target_capacity = static_cast<uint32_t>(wanted);
      }
    }
    const uint32_t n = end_ - begin_;
    if (target != items_) {
      for (uint32_t i = 0; i < n; ++i) {
        new (&target[i]) T(std::move(items_[begin_ + i]));
        items_[begin_ + i].~T();
      }
      release_array();
      items_ = target;
      capacity_ = target_capacity;
      array_class_ = target_class;
    } else {
      for (uint32_t i = 0; i < n; ++i) {
        new (&items_[i]) T(std::move(items_[begin_ + i]));
        items_[begin_ + i].~T();
      }
    }
    begin_ = 0;
    end_ = n;
  }

  T* items_ = inline_items();
  uint32_t begin_ = 0;
  uint32_t end_ = 0;
  uint32_t capacity_ = kInline;
  int32_t array_class_ = -1;  // block_pool class of a pooled array, -1 inline or operator new
  alignas(T) unsigned char inline_[kInline * sizeof(T)];
};

}  // namespace bypass
