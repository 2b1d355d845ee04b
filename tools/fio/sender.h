// A sending fio job: one session with the receiver (lossy: a fault ends it, and every io waiting
// on it fails). Each io_u is one request. A write's io_u buffer travels as the message's data
// segment without a copy, so fio may have the io_u back only once the reply came and the
// messenger dropped its last view of the buffer; a read's reply is copied into the io_u buffer,
// the one copy on this side.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/buffer_list.h"
#include "msgr/messenger.h"
#include "tools/fio/completion_queue.h"
#include "tools/fio/engine_job.h"
#include "tools/fio/job_settings.h"
#include "tools/fio/shared_stack.h"
#include "tools/fio/target_protocol.h"

namespace bypass::fio {

class Sender final : public EngineJob, public msgr::Dispatcher {
 public:
  // Starts the messenger and connects, retrying a refused connect until settings.timeout (the
  // receiver may still be starting). Throws std::runtime_error naming the receiver and why.
  Sender(JobSettings settings, unsigned iodepth);
  ~Sender() override;

  bool retire() override;

  int open_file(const std::string& name, uint64_t size, uint64_t* object, std::string* error) override;
  void* create_io(void* io_u) override;
  void free_io(void* io) override;
  int queue(void* io, int op, void* buf, uint64_t length, uint64_t offset, uint64_t object, uint64_t* bytes,
            std::string* error) override;
  void commit() override;
  int getevents(unsigned min, unsigned max, std::string* error) override;
  void* event(int i, int* error) override;

  // Dispatcher: replies on the worker that received them; session events on the dispatch thread.
  bool ms_can_fast_dispatch(const msgr::Message& m) const override;
  void ms_fast_dispatch(const msgr::MessageRef& m) override;
  bool ms_dispatch(const msgr::MessageRef&) override { return false; }
  bool ms_handle_reset(const msgr::ConnectionRef& connection) override;
  void ms_handle_remote_reset(const msgr::ConnectionRef& connection) override;
  bool ms_handle_refused(const msgr::ConnectionRef& connection) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Io;

  void connect();
  // The session is over (the receiver went, a reply timed out, fio gave up): every io and open
  // still waiting for a reply fails with `error`; later requests fail at once. First call wins.
  void end_session(int error, const std::string& why);
  void finish_reply(Io& io, int error);
  static void part_done(Io& io);
  static void release_payload(void* context, BufferStorage* header);
  void collect_completions();  // job thread: completions_ -> ready_
  // Job thread: true once a completion is pending, false at `deadline`. Where this thread runs the
  // stack's loops (polls_) it polls them meanwhile; otherwise the workers push and wake it.
  bool wait_for_completion(Clock::time_point deadline, CompletionQueue::Spin spin);
  void handle_open_reply(const msgr::MessageRef& m);
  std::string describe_status(const Io& io, int32_t status) const;

  JobSettings settings_;
  const bool spin_pays_;  // see spinning_pays() in the .cc
  bool polls_ = false;    // this job's thread runs the stack's loops (no worker threads)
  std::string peer_;  // "127.0.0.1:5555 over posix", for messages
  std::shared_ptr<SharedStack> stack_;
  std::unique_ptr<msgr::Messenger> messenger_;
  msgr::ConnectionRef connection_;                    // job thread
  std::atomic<const msgr::Connection*> current_{nullptr};  // connection_, for the other threads
  std::atomic<bool> connect_failed_{false};
  std::atomic<bool> established_{false};  // connect() returned: a reset now ends the session

  std::atomic<int> session_error_{0};  // errno once the session is over
  std::mutex session_lock_;            // session_why_ and the open call below
  std::string session_why_;

  // The io_us: a fixed array (iodepth), so a worker that maps a reply's tid to its io never races
  // with the job thread adding one.
  std::vector<std::unique_ptr<Io>> ios_;
  std::atomic<size_t> io_count_{0};
  uint64_t sequence_ = 0;  // job thread: makes every request's tid unique
  CompletionQueue completions_;
  std::vector<CompletionLink*> ready_;  // job thread: completed, not yet returned by getevents
  std::vector<Io*> events_;             // job thread: what the last getevents returned
  size_t in_flight_ = 0;                // job thread: queued and not yet collected
  bool unflushed_ = false;              // job thread: requests wait for commit() (polls_ only)

  // open_file waits for one OpenReply at a time (under session_lock_).
  std::condition_variable open_cv_;
  uint64_t open_tid_ = 0;
  std::optional<OpenReply> open_reply_;
};

}  // namespace bypass::fio
