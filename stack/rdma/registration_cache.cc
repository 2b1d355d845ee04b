#include "stack/rdma/registration_cache.h"

#include <utility>

namespace bypass::rdma {

RegistrationCache::RegistrationCache(size_t byte_limit, RegisterFn register_fn, DeregisterFn deregister_fn)
    : limit_(byte_limit), register_(std::move(register_fn)), deregister_(std::move(deregister_fn)) {}

RegistrationCache::~RegistrationCache() {
  while (oldest_ != nullptr) drop(oldest_);
}

RegistrationCache::Entry* RegistrationCache::find(const BufferSegment& segment) {
  auto it = by_storage_.find(segment.storage_id());
  if (it == by_storage_.end()) return nullptr;
  const char* begin = segment.data();
  const char* end = begin + segment.length();
  for (Entry* e = it->second; e != nullptr; e = e->next_of_storage) {
    if (e->memory.data() <= begin && end <= e->memory.data() + e->memory.length()) return e;
  }
  return nullptr;
}

RegistrationCache::Entry* RegistrationCache::acquire(const BufferSegment& segment) {
  // Borrowed memory has no storage the cache could hold: its owner may free it after the send.
  if (segment.storage_id() == nullptr || segment.empty() || segment.length() > limit_) {
    ++stats_.refused;
    return nullptr;
  }
  if (Entry* hit = find(segment)) {
    ++stats_.hits;
    unlink(hit);
    link_newest(hit);
    if (hit->pins++ == 0) ++stats_.pinned_entries;
    return hit;
  }
  if (!make_room(segment.length())) {
    ++stats_.refused;
    return nullptr;
  }
  Keys keys;
  if (!register_(segment.data(), segment.length(), &keys)) {
    ++stats_.refused;
    return nullptr;
  }
  auto* entry = new Entry;
  entry->memory = segment;
  // The cache's view is held on this worker while the application's views may move to another
  // thread later: the count must be atomic from now on. This thread holds every view of a
  // worker_local storage now (base/buffer_storage.h), so it may promote it.
  entry->memory.share_across_threads();
  entry->keys = keys;
  entry->pins = 1;
  auto [slot, fresh] = by_storage_.try_emplace(segment.storage_id(), entry);
  if (!fresh) {
    entry->next_of_storage = slot->second;
    slot->second = entry;
  }
  link_newest(entry);
  stats_.bytes_registered += segment.length();
  ++stats_.entries;
  ++stats_.pinned_entries;
  ++stats_.misses;
  return entry;
}

bool RegistrationCache::make_room(size_t bytes) {
  if (stats_.bytes_registered + bytes <= limit_) return true;
  sweep();
  for (Entry* e = oldest_; e != nullptr && stats_.bytes_registered + bytes > limit_;) {
    Entry* newer = e->newer;
    if (e->pins == 0) {
      drop(e);
      ++stats_.evictions;
    }
    e = newer;
  }
  return stats_.bytes_registered + bytes <= limit_;
}

size_t RegistrationCache::sweep() {
  size_t dropped = 0;
  for (Entry* e = oldest_; e != nullptr;) {
    Entry* newer = e->newer;
    if (e->pins == 0 && e->memory.use_count() == 1) {
      drop(e);
      ++dropped;
    }
    e = newer;
  }
  stats_.swept += dropped;
  return dropped;
}

void RegistrationCache::drop(Entry* entry) {
  // Deregistered first: once the view below goes, the memory may be freed, and no READ may reach it.
  deregister_(entry->keys);
  unlink(entry);
  auto it = by_storage_.find(entry->memory.storage_id());
  if (it != by_storage_.end()) {
    if (it->second == entry) {
      if (entry->next_of_storage != nullptr) {
        it->second = entry->next_of_storage;
      } else {
        by_storage_.erase(it);
      }
    } else {
      for (Entry* e = it->second; e != nullptr; e = e->next_of_storage) {
        if (e->next_of_storage == entry) {
          e->next_of_storage = entry->next_of_storage;
          break;
        }
      }
    }
  }
  stats_.bytes_registered -= entry->memory.length();
  --stats_.entries;
  if (entry->pins > 0) --stats_.pinned_entries;
  delete entry;
}

void RegistrationCache::link_newest(Entry* entry) {
  entry->older = newest_;
  entry->newer = nullptr;
  if (newest_ != nullptr) newest_->newer = entry;
  newest_ = entry;
  if (oldest_ == nullptr) oldest_ = entry;
}

void RegistrationCache::unlink(Entry* entry) {
  if (entry->older != nullptr) entry->older->newer = entry->newer;
  if (entry->newer != nullptr) entry->newer->older = entry->older;
  if (newest_ == entry) newest_ = entry->older;
  if (oldest_ == entry) oldest_ = entry->newer;
  entry->older = entry->newer = nullptr;
}

}  // namespace bypass::rdma
