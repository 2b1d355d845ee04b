// EpollDriver: kernel fds through epoll (level-triggered), cross-thread wake-up through an eventfd
// that costs a syscall only when the loop is really blocked (WakeupEventfd).
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <system_error>

#include "base/log.h"
#include "stack/event_center.h"
#include "stack/wakeup_eventfd.h"

namespace bypass {

namespace {

constexpr size_t kInitialEvents = 128;
constexpr size_t kMaxEvents = 8192;
constexpr std::chrono::hours kMaxBlock{24};

uint32_t to_epoll_events(int mask) {
  uint32_t events = 0;
  if (mask & kEventReadable) events |= EPOLLIN;
  if (mask & kEventWritable) events |= EPOLLOUT;
  return events;
}

class EpollDriver final : public EventDriver {
 public:
  explicit EpollDriver(std::chrono::nanoseconds busy_poll) : busy_poll_(busy_poll), events_(kInitialEvents) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = waker_.fd();
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, waker_.fd(), &ev) < 0) {
      int err = errno;
      ::close(epfd_);
      throw std::system_error(err, std::generic_category(), "epoll_ctl(eventfd)");
    }
  }

  ~EpollDriver() override { ::close(epfd_); }

  int add_interest(int fd, int old_mask, int new_mask) override {
    epoll_event ev{};
    ev.events = to_epoll_events(new_mask);
    ev.data.fd = fd;
    int op = old_mask ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(epfd_, op, fd, &ev) == 0) return 0;
    // Our idea of the registration can be stale when an fd number was closed and reused.
    if (errno == EEXIST || errno == ENOENT) {
      op = (errno == EEXIST) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
      if (epoll_ctl(epfd_, op, fd, &ev) == 0) return 0;
    }
    int err = errno;
    BYPASS_LOG(Error, "event", "epoll_ctl(%s, fd %d, mask %d) failed: %s",
               op == EPOLL_CTL_ADD ? "add" : "mod", fd, new_mask, std::strerror(err));
    return -err;
  }

  int remove_interest(int fd, int /*old_mask*/, int remaining) override {
    epoll_event ev{};
    ev.events = to_epoll_events(remaining);
    ev.data.fd = fd;
    const int op = remaining ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;
    if (epoll_ctl(epfd_, op, fd, &ev) == 0) return 0;
    int err = errno;
    // Closing an fd already removed it from the epoll set; that is not an error for the caller.
    if (op == EPOLL_CTL_DEL && (err == ENOENT || err == EBADF)) return 0;
    BYPASS_LOG(Error, "event", "epoll_ctl(%s, fd %d) failed: %s", remaining ? "mod" : "del", fd,
               std::strerror(err));
    return -err;
  }

  int wait(std::vector<FiredEvent>& fired, std::chrono::nanoseconds timeout) override {
    const bool block = timeout > std::chrono::nanoseconds::zero() && !busy_polling() && waker_.prepare_to_block();
    int n = block ? blocking_wait(std::min<std::chrono::nanoseconds>(timeout, kMaxBlock))
                  : epoll_wait(epfd_, events_.data(), static_cast<int>(events_.size()), 0);
    if (block) waker_.done_blocking();
    blocked_ = block;
    if (n < 0) {
      if (errno == EINTR) return 0;
      int err = errno;
      BYPASS_LOG(Error, "event", "epoll_wait failed: %s", std::strerror(err));
      return -err;
    }
    int reported = 0;
    for (int i = 0; i < n; ++i) {
      const epoll_event& ev = events_[i];
      if (ev.data.fd == waker_.fd()) {
        waker_.drain();
        continue;
      }
      int mask = 0;
      // Errors and hang-ups are reported as both readable and writable so the owner's next
      // read()/write() sees the error, like Ceph's EpollDriver.
      if (ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP)) mask |= kEventReadable;
      if (ev.events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) mask |= kEventWritable;
      fired.push_back(FiredEvent{ev.data.fd, mask});
      ++reported;
    }
    if (static_cast<size_t>(n) == events_.size() && events_.size() < kMaxEvents) events_.resize(events_.size() * 2);
    // Busy polling: the time of the last wait that found something (a wake-up counts: work came).
    if (n > 0 && busy_poll_.count() > 0) last_ready_ = std::chrono::steady_clock::now();
    return reported;
  }

  bool last_wait_blocked() const override { return blocked_; }

  void wakeup() override { waker_.wakeup(); }

 private:
  int blocking_wait(std::chrono::nanoseconds timeout) {
    if (have_pwait2_) {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(secs.count());
      ts.tv_nsec = static_cast<long>((timeout - secs).count());
      int n = epoll_pwait2(epfd_, events_.data(), static_cast<int>(events_.size()), &ts, nullptr);
      if (n >= 0 || errno != ENOSYS) return n;
      have_pwait2_ = false;  // kernel older than 5.11: millisecond timeouts, rounded up
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout);
    return epoll_wait(epfd_, events_.data(), static_cast<int>(events_.size()), static_cast<int>(ms.count()));
  }

  // Whether a wait asked to block polls instead: within busy_poll_ of the last wait that found
  // something. One clock read per idle wait, and only with posix.busy_poll set.
  bool busy_polling() const {
    return busy_poll_.count() > 0 && std::chrono::steady_clock::now() - last_ready_ < busy_poll_;
  }

  const std::chrono::nanoseconds busy_poll_;
  std::chrono::steady_clock::time_point last_ready_{};
  WakeupEventfd waker_;
  int epfd_ = -1;
  bool have_pwait2_ = true;
  bool blocked_ = false;
  std::vector<epoll_event> events_;
};

}  // namespace

std::unique_ptr<EventDriver> make_epoll_driver(std::chrono::nanoseconds busy_poll) {
  return std::make_unique<EpollDriver>(busy_poll);
}

}  // namespace bypass
