#include "tools/fio/completion_queue.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace bypass::fio {

namespace {

// How long the job's thread polls before it sleeps: about one loopback request/reply, so a queue
// depth of 1 usually finds its reply without a sleep and a wake-up system call on either side.
constexpr auto kSpin = std::chrono::microseconds(20);

}  // namespace

void CompletionQueue::push(CompletionLink* item) {
  CompletionLink* head = head_.load(std::memory_order_relaxed);
  do {
    item->next_completed = head;
  } while (!head_.compare_exchange_weak(head, item, std::memory_order_seq_cst, std::memory_order_relaxed));
  // seq_cst on both sides (the push above, the sleeper's store of sleeping_ before it looks at
  // head_ again) so one of us always sees the other: no wake-up is lost.
  if (sleeping_.load(std::memory_order_seq_cst) != 0 && sleeping_.exchange(0, std::memory_order_seq_cst) != 0)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sleeping_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void CompletionQueue::take(std::vector<CompletionLink*>& out) {
  CompletionLink* list = head_.exchange(nullptr, std::memory_order_acquire);
  const size_t first = out.size();
  for (; list != nullptr; list = list->next_completed) out.push_back(list);
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());  // the stack is newest first
}

bool CompletionQueue::wait_until(Clock::time_point deadline, Spin spin) {
  // Spin::yield (waiting for one reply): when the job's thread shares its CPU with the worker that
  // will complete the request (both pinned to one core, as benchmarks run a side), a pause loop
  // would hold that worker off for the whole spin (posix, depth 1: p50 80 us instead of 37 us).
  // Spin::pause (many requests out): yielding there hands the CPU over at every completion and
  // fio reaps them one by one (posix, depth 128: 94k instead of 288k IOPS). Spin::none: the CPU
  // is a busy-polling worker's, which only the futex wake-up preempts at once (dpdk, depth 1:
  // p50 28 ms spinning, 11 us sleeping).
  const auto spin_end = std::min(deadline, Clock::now() + kSpin);
  if (spin != Spin::none) do {
    for (int i = 0; i < 64; ++i) {
      if (head_.load(std::memory_order_acquire) != nullptr) return true;
      if (spin == Spin::yield) {
        sched_yield();
      } else {
        __builtin_ia32_pause();
      }
    }
  } while (Clock::now() < spin_end);
  for (;;) {
    const auto now = Clock::now();
    if (head_.load(std::memory_order_acquire) != nullptr) return true;
    if (now >= deadline) return false;
    sleeping_.store(1, std::memory_order_seq_cst);
    if (head_.load(std::memory_order_seq_cst) != nullptr) {
      sleeping_.store(0, std::memory_order_relaxed);
      return true;
    }
    const auto left = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(100));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec timeout{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sleeping_), FUTEX_WAIT_PRIVATE, 1, &timeout, nullptr, 0);
    sleeping_.store(0, std::memory_order_relaxed);
  }
}

}  // namespace bypass::fio
