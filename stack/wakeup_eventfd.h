// The cross-thread wake-up of an event driver that blocks in the kernel (EpollDriver, the rsocket
// transport's RpollDriver): an eventfd the driver also waits on, written only when the loop really
// is blocked. The waiter raises `sleeping_` before blocking and wakeup() writes the eventfd only if
// it sees that flag. The two flags form a Dekker pair (store own flag, then load the other's, both
// seq_cst), so either the waiter sees the producer's `pending_` and does not block, or the producer
// sees `sleeping_` and writes the fd.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace bypass {

class WakeupEventfd {
 public:
  WakeupEventfd() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~WakeupEventfd() { ::close(fd_); }
  WakeupEventfd(const WakeupEventfd&) = delete;
  WakeupEventfd& operator=(const WakeupEventfd&) = delete;

  int fd() const { return fd_; }  // readable after a wake-up of a blocked wait

  // Owner thread, before a wait that would block: false when a wake-up is pending (do not block).
  bool prepare_to_block() {
    sleeping_.store(true, std::memory_order_seq_cst);
    return !pending_.exchange(false, std::memory_order_seq_cst);
  }
  // Owner thread, after a wait that blocked.
  void done_blocking() { sleeping_.store(false, std::memory_order_relaxed); }
  // Owner thread, when fd() turned readable.
  void drain() {
    uint64_t count;
    [[maybe_unused]] ssize_t r = ::read(fd_, &count, sizeof(count));
  }

  // Any thread. Only the first producer to see the sleeper pays for the syscall.
  void wakeup() {
    pending_.store(true, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t r = ::write(fd_, &one, sizeof(one));
    }
  }

 private:
  int fd_;
  std::atomic<bool> pending_{false};
  std::atomic<bool> sleeping_{false};
};

}  // namespace bypass
