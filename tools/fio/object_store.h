// The receiver's memory: one object per (sender session, fio file name), sized by the sender's
// file size, backed by anonymous memory mapped on open (pages appear as they are written; a read
// of bytes never written returns zeros) and unmapped when the session ends.
//
// Each object belongs to one session, and a session's requests all run on its connection's worker,
// so an object's bytes are only ever touched by one thread at a time and need no lock. Opening and
// releasing take a lock (once per file, once per session). A request looks its object up by handle
// without a lock: the slot's owner (the session's connection, atomic) must be the requester, so a
// handle of another session, or of one that ended, is refused rather than followed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/buffer_list.h"

namespace bypass::fio {

class ObjectStore {
 public:
  // `budget`: the bytes all objects together may span (the receiver job's size=).
  explicit ObjectStore(uint64_t budget);
  ~ObjectStore();  // unmaps what is left
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // Who owns an object: the session's connection (any stable address naming it).
  using Owner = const void*;

  struct Opened {
    int status = 0;       // 0, or -ENOSPC / -EMFILE / -EINVAL / -ENOMEM with `error` saying why
    uint64_t handle = 0;
    std::string error;
  };
  // The object `name` of `owner`, created (zeros) if it does not exist yet. Reopening keeps the
  // bytes; a different size is refused.
  Opened open(Owner owner, std::string_view name, uint64_t size);
  // Copies `data` to [offset, offset + data.length()). 0, -EBADF (no such object of this owner)
  // or -ERANGE (past the object's end).
  int write(Owner owner, uint64_t handle, uint64_t offset, const BufferList& data);
  // Appends a copy of [offset, offset + length) to `out`; errors as write().
  int read(Owner owner, uint64_t handle, uint64_t offset, uint64_t length, BufferList& out);
  // The session ended: its objects go and their bytes return to the budget.
  void release(Owner owner);

  uint64_t used() const;  // bytes the open objects span
  static constexpr uint32_t kMaxObjects = 4096;  // open at once

 private:
  struct Object {
    std::atomic<Owner> owner{nullptr};  // set last on open (release), cleared first on release
    std::atomic<uint32_t> generation{0};  // part of the handle: a slot reused is a new handle
    char* base = nullptr;
    uint64_t size = 0;
    std::string name;
  };
  Object* find(Owner owner, uint64_t handle);
  static int check_range(const Object& object, uint64_t offset, uint64_t length);

  mutable std::mutex lock_;  // open/release and budget
  std::unique_ptr<Object[]> objects_;
  const uint64_t budget_;
  uint64_t used_ = 0;
};

}  // namespace bypass::fio
