// The receiving fio job: a memory-backed target. It listens on hostname:port and serves every
// sender's session on the messenger's workers (fast dispatch: a write is stored at its offset in
// the session's object and answered, a read is answered with the stored bytes), whatever fio does
// meanwhile. fio's io_us stand for served requests: queue() returns one completed for each request
// served since (carrying its payload's size), so the receiver's fio report counts requests and
// bytes served. Synchronously: no io_u is ever left in flight when the job ends (fio would keep
// it). The job ends when its runtime does, or once every sender that connected has gone (and none
// came within a second).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "msgr/messenger.h"
#include "tools/fio/engine_job.h"
#include "tools/fio/job_settings.h"
#include "tools/fio/object_store.h"
#include "tools/fio/shared_stack.h"

namespace bypass::fio {

class Receiver final : public EngineJob, public msgr::Dispatcher {
 public:
  // Binds hostname:port and starts serving. Throws std::runtime_error naming the address and why.
  explicit Receiver(JobSettings settings);
  ~Receiver() override = default;

  int open_file(const std::string&, uint64_t, uint64_t* object, std::string*) override {
    *object = 0;
    return 0;
  }
  void* create_io(void* io_u) override { return io_u; }
  void free_io(void*) override {}
  int queue(void* io, int op, void* buf, uint64_t length, uint64_t offset, uint64_t object, uint64_t* bytes,
            std::string* error) override;
  int getevents(unsigned, unsigned, std::string*) override { return 0; }  // nothing is ever queued
  void* event(int, int*) override { return nullptr; }
  bool retire() override;

  // Dispatcher: requests on the worker that received them, session events on the dispatch thread.
  bool ms_can_fast_dispatch(const msgr::Message& m) const override;
  void ms_fast_dispatch(const msgr::MessageRef& m) override;
  bool ms_dispatch(const msgr::MessageRef&) override { return false; }
  void ms_handle_accept(const msgr::ConnectionRef& connection) override;
  bool ms_handle_reset(const msgr::ConnectionRef& connection) override;

 private:
  void serve_open(const msgr::MessageRef& m);
  void serve_io(const msgr::MessageRef& m);
  bool senders_gone();  // job thread

  JobSettings settings_;
  // The front of every successful io reply (status 0), encoded once and shared by the replies:
  // encoding it per reply allocated, filled and freed a block per request (~150 instructions).
  BufferList ok_reply_front_;
  ObjectStore store_;
  std::shared_ptr<SharedStack> stack_;
  std::unique_ptr<msgr::Messenger> messenger_;

  // Workers count what they served; the job's thread turns the counts into completed io_us.
  std::atomic<uint64_t> served_requests_{0};
  std::atomic<uint64_t> served_bytes_{0};
  uint64_t reported_requests_ = 0;  // job thread
  uint64_t reported_bytes_ = 0;     // job thread
  std::atomic<int> sessions_{0};
  std::atomic<bool> had_session_{false};
  std::chrono::steady_clock::time_point quiet_since_{};  // job thread: when the last sender left
};

}  // namespace bypass::fio
