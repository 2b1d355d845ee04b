// One fio job of the bypass engine, behind engine_api.h: a Sender or the Receiver. Every call
// comes on the fio job's own thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

namespace bypass::fio {

class EngineJob {
 public:
  virtual ~EngineJob() = default;

  // See engine_api.h for each; errors are negative errnos with *error set.
  virtual int open_file(const std::string& name, uint64_t size, uint64_t* object, std::string* error) = 0;
  virtual void* create_io(void* io_u) = 0;
  virtual void free_io(void* io) = 0;
  virtual int queue(void* io, int op, void* buf, uint64_t length, uint64_t offset, uint64_t object, uint64_t* bytes,
                    std::string* error) = 0;
  virtual void commit() {}
  virtual int getevents(unsigned min, unsigned max, std::string* error) = 0;
  virtual void* event(int i, int* error) = 0;
  // fio's clean-up: closes the session(s). False when the messenger may still touch this job's
  // memory (a buffer it never let go of): the caller then keeps the object rather than free it.
  virtual bool retire() = 0;

  // The job's first error (noted on any thread), once: fio prints it, and the many ios that fail
  // the same way after it add only fio's own line each. Empty when there is none to print.
  // fio asks after every completed io: that costs one load unless an error is waiting.
  std::string take_error() {
    if (!error_waiting_.load(std::memory_order_acquire)) return {};
    std::lock_guard guard(error_lock_);
    error_waiting_.store(false, std::memory_order_relaxed);
    return std::exchange(error_, std::string());
  }

 protected:
  // Error paths only (takes a lock).
  void note_error(const std::string& what) {
    std::lock_guard guard(error_lock_);
    if (noted_) return;
    noted_ = true;
    error_ = what;
    error_waiting_.store(true, std::memory_order_release);
  }

 private:
  std::mutex error_lock_;
  bool noted_ = false;
  std::string error_;
  std::atomic<bool> error_waiting_{false};  // error_ is set and not taken yet
};

}  // namespace bypass::fio
