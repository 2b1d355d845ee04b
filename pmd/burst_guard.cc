#include "pmd/burst_guard.h"

#include <rte_alarm.h>
#include <rte_interrupts.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.h"

namespace bypass::pmd {

namespace {

// A burst copies at most a few hundred frames (microseconds); a worker preempted inside one may
// take a scheduler slice or two. Past this the unmap goes ahead, as it would without us.
constexpr auto kBurstWaitLimit = std::chrono::seconds(2);

struct Registry {
  std::mutex mutex;  // ports open and close on the main thread; munmap runs on the interrupt thread
  std::vector<const BurstGuard*> guards;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: munmap may run during exit
  return *r;
}

}  // namespace

BurstGuard::BurstGuard(unsigned workers) : workers_(workers), marks_(std::make_unique<Mark[]>(workers)) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.guards.push_back(this);
}

BurstGuard::~BurstGuard() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.guards.erase(std::remove(r.guards.begin(), r.guards.end(), this), r.guards.end());
}

bool BurstGuard::wait_for_bursts_to_leave() const {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the driver's flag store before our reads
  std::vector<uint64_t> inside(workers_);
  bool any = false;
  for (unsigned w = 0; w < workers_; ++w) {
    inside[w] = marks_[w].sequence.load(std::memory_order_acquire);
    any = any || (inside[w] & 1);
  }
  if (!any) return true;
  const auto deadline = std::chrono::steady_clock::now() + kBurstWaitLimit;
  for (unsigned w = 0; w < workers_; ++w) {
    if (!(inside[w] & 1)) continue;
    while (marks_[w].sequence.load(std::memory_order_acquire) == inside[w]) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
  return true;
}

namespace {

void mark_fired(void* flag) { static_cast<std::atomic<bool>*>(flag)->store(true, std::memory_order_release); }

}  // namespace

bool wait_for_interrupt_thread() {
  std::atomic<bool> fired{false};
  if (rte_eal_alarm_set(1, mark_fired, &fired) != 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + kBurstWaitLimit;
  while (!fired.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) {
      // Cancelling waits for a callback already running, so `fired` outlives every use.
      rte_eal_alarm_cancel(mark_fired, &fired);
      return fired.load(std::memory_order_acquire);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

void wait_for_bursts_before_unmap() {
  if (rte_thread_is_intr() != 1) return;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.guards.empty()) return;
  for (const BurstGuard* guard : r.guards)
    if (!guard->wait_for_bursts_to_leave())
      BYPASS_LOG(Warn, "pmd", "memif peer left while a worker stayed inside a burst for %lld s; unmapping anyway",
                 static_cast<long long>(kBurstWaitLimit.count()));
}

}  // namespace bypass::pmd

// The process-wide munmap (see burst_guard.h): the executable's definition comes first in symbol
// lookup, so the memif PMD (a plugin DPDK loads at start-up) calls this one.
extern "C" int munmap(void* address, size_t length) noexcept {
  bypass::pmd::wait_for_bursts_before_unmap();
  return static_cast<int>(syscall(SYS_munmap, address, length));
}
