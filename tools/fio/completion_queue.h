// Completions handed from the messenger's threads to the fio job's thread (or pushed by the job's
// thread itself, where it runs the stack's loops: bypass_poll=job).
//
// Any thread pushes (a reply's worker, the thread that drops the last view of a sent buffer); the
// job's thread takes everything at once. An intrusive lock-free stack, so a push neither
// allocates nor locks. The job's thread waits by spinning briefly (a reply is usually
// microseconds away) and then sleeping on a futex; a push makes a system call only when the job's
// thread is asleep.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace bypass::fio {

struct CompletionLink {
  CompletionLink* next_completed = nullptr;
};

class CompletionQueue {
 public:
  using Clock = std::chrono::steady_clock;

  void push(CompletionLink* item);  // any thread
  // Whether something was pushed and not taken yet (any thread).
  bool pending() const { return head_.load(std::memory_order_acquire) != nullptr; }
  // The job's thread: appends everything pushed so far to `out`, oldest first.
  void take(std::vector<CompletionLink*>& out);
  // How the job's thread polls before it sleeps (see the .cc for when each pays).
  enum class Spin { none, pause, yield };
  // The job's thread: true once something was pushed (possibly already before the call), false
  // at `deadline`.
  bool wait_until(Clock::time_point deadline, Spin spin);

 private:
  std::atomic<CompletionLink*> head_{nullptr};
  std::atomic<uint32_t> sleeping_{0};  // the futex word: 1 while the job's thread sleeps
};

}  // namespace bypass::fio
