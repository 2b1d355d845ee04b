// RpollDriver over librdmacm's rpoll(). One pollfd array holds the wake-up eventfd (slot 0), a
// timerfd (slot 1) and every fd with interest; a slot index per fd makes interest changes O(1).
//
// A wait that blocks passes rpoll() no timeout (-1) and arms the timerfd instead. rpoll() gates
// the threads that block in it (a count of pollers, and a flag that makes newcomers yield until
// every poller has left, so a change is seen by all); when a finite timeout runs out between
// entering that gate and poll(), it returns without leaving the gate (librdmacm's rpoll: `return 0`
// after rs_poll_enter), and from then on every worker that blocks yields forever. Seen with two
// workers and millisecond timer waits in the soft-RoCE guest: both loops spun in sched_yield.
//
// Wake-ups cost a syscall only when the loop is really blocked, as in EpollDriver (WakeupEventfd).
// A wait that does not block leaves the eventfd and the timerfd out of the set, since rpoll()
// looks at an ordinary fd with a poll() system call each time.
#include "stack/rsocket/rpoll_driver.h"

#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "base/log.h"
#include "stack/wakeup_eventfd.h"

namespace bypass {

namespace {

constexpr std::chrono::hours kMaxBlock{24};
constexpr int kNoSlot = -1;
constexpr size_t kWakeSlot = 0;
constexpr size_t kTimerSlot = 1;
constexpr size_t kFirstSlot = 2;  // the first fd with interest
constexpr short kHangup = POLLHUP;

short to_poll_events(int mask) {
  short events = 0;
  if (mask & kEventReadable) events |= POLLIN;
  if (mask & kEventWritable) events |= POLLOUT;
  return events;
}

// Errors and hang-ups are reported as both readable and writable so the owner's next read or
// send sees the error, as EpollDriver does.
int to_mask(short revents) {
  int mask = 0;
  if (revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)) mask |= kEventReadable;
  if (revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL)) mask |= kEventWritable;
  return mask;
}

class RpollDriverImpl final : public RpollDriver {
 public:
  RpollDriverImpl() {
    timerfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timerfd_ < 0) throw std::system_error(errno, std::generic_category(), "timerfd_create");
    fds_.push_back(pollfd{waker_.fd(), POLLIN, 0});
    fds_.push_back(pollfd{timerfd_, POLLIN, 0});
    hangups_.resize(fds_.size(), 0);
  }

  ~RpollDriverImpl() override { ::close(timerfd_); }

  int add_interest(int fd, int /*old_mask*/, int new_mask) override {
    if (fd < 0 || fd == waker_.fd() || fd == timerfd_) return -EBADF;
    int slot = slot_of(fd);
    if (slot == kNoSlot) {
      if (static_cast<size_t>(fd) >= slots_.size()) slots_.resize(static_cast<size_t>(fd) + 1, kNoSlot);
      slot = static_cast<int>(fds_.size());
      slots_[static_cast<size_t>(fd)] = slot;
      fds_.push_back(pollfd{fd, 0, 0});
      hangups_.push_back(0);
    }
    fds_[static_cast<size_t>(slot)].events = to_poll_events(new_mask);
    return 0;
  }

  int remove_interest(int fd, int /*old_mask*/, int remaining) override {
    const int slot = slot_of(fd);
    if (slot == kNoSlot) return 0;
    if (remaining != 0) {
      fds_[static_cast<size_t>(slot)].events = to_poll_events(remaining);
      return 0;
    }
    // The last slot moves into the freed one.
    const size_t last = fds_.size() - 1;
    if (static_cast<size_t>(slot) != last) {
      fds_[static_cast<size_t>(slot)] = fds_[last];
      hangups_[static_cast<size_t>(slot)] = hangups_[last];
      slots_[static_cast<size_t>(fds_[last].fd)] = slot;
    }
    fds_.pop_back();
    hangups_.pop_back();
    slots_[static_cast<size_t>(fd)] = kNoSlot;
    return 0;
  }

  void report_hangup(int fd) override {
    const int slot = slot_of(fd);
    if (slot == kNoSlot) return;
    hangups_[static_cast<size_t>(slot)] = kHangup;
    ++hangups_reported_;
  }

  int wait(std::vector<FiredEvent>& fired, std::chrono::nanoseconds timeout) override {
    const bool block = timeout > std::chrono::nanoseconds::zero() && !has_hangups() && waker_.prepare_to_block();
    int n = 0;
    if (block && arm_timer(timeout) != 0) {
      const int err = errno;
      waker_.done_blocking();
      BYPASS_LOG(Error, "event", "timerfd_settime failed: %s", std::strerror(err));
      return -err;
    }
    if (block) {
      n = rpoll(fds_.data(), fds_.size(), -1);  // the timerfd ends it (see the file comment)
      waker_.done_blocking();
    } else if (fds_.size() > kFirstSlot) {
      n = rpoll(fds_.data() + kFirstSlot, fds_.size() - kFirstSlot, 0);
    }
    blocked_ = block;
    if (n < 0) {
      if (errno == EINTR) return 0;
      const int err = errno;
      BYPASS_LOG(Error, "event", "rpoll failed: %s", std::strerror(err));
      return -err;
    }
    if (n == 0 && !has_hangups()) return 0;
    if (block && fds_[kWakeSlot].revents != 0) waker_.drain();
    // The timerfd needs no read: the next arm_timer() resets its expirations.
    fds_[kWakeSlot].revents = fds_[kTimerSlot].revents = 0;
    int reported = 0;
    for (size_t slot = kFirstSlot; slot < fds_.size(); ++slot) {
      const int mask = to_mask(static_cast<short>(fds_[slot].revents | hangups_[slot]));
      fds_[slot].revents = 0;
      if (mask == 0) continue;
      fired.push_back(FiredEvent{fds_[slot].fd, mask});
      ++reported;
    }
    return reported;
  }

  bool last_wait_blocked() const override { return blocked_; }

  void wakeup() override { waker_.wakeup(); }

 private:
  // One-shot expiry after `timeout` (at least 1 ns: zero would disarm it).
  int arm_timer(std::chrono::nanoseconds timeout) {
    const auto bounded = std::clamp<std::chrono::nanoseconds>(timeout, std::chrono::nanoseconds(1), kMaxBlock);
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(bounded);
    itimerspec spec{};
    spec.it_value.tv_sec = static_cast<time_t>(secs.count());
    spec.it_value.tv_nsec = static_cast<long>((bounded - secs).count());
    return timerfd_settime(timerfd_, 0, &spec, nullptr);
  }

  int slot_of(int fd) const {
    return fd >= 0 && static_cast<size_t>(fd) < slots_.size() ? slots_[static_cast<size_t>(fd)] : kNoSlot;
  }

  // Whether a reported hang-up is still registered (rare: a connect that timed out).
  bool has_hangups() {
    if (hangups_reported_ == 0) return false;
    hangups_reported_ = static_cast<size_t>(std::count(hangups_.begin(), hangups_.end(), kHangup));
    return hangups_reported_ != 0;
  }

  WakeupEventfd waker_;
  int timerfd_ = -1;
  std::vector<pollfd> fds_;    // kWakeSlot: waker_, kTimerSlot: timerfd_, then every fd with interest
  std::vector<short> hangups_; // per slot: kHangup after report_hangup, else 0
  std::vector<int> slots_;     // by fd: its slot in fds_, or kNoSlot
  size_t hangups_reported_ = 0;  // an upper bound of the slots holding kHangup
  bool blocked_ = false;
};

}  // namespace

std::unique_ptr<RpollDriver> make_rpoll_driver() { return std::make_unique<RpollDriverImpl>(); }

}  // namespace bypass
