// EpollDriver: kernel fds through epoll (level-triggered), cross-thread wake-up through an eventfd.
//
// Wake-ups cost a syscall only when the loop is really blocked: wait() raises `sleeping_` before
// blocking and wakeup() writes the eventfd only if it sees that flag. The two flags form a Dekker
// pair (store own flag, then load the other's, both seq_cst), so either the waiter sees the
// producer's `pending_` and does not block, or the producer sees `sleeping_` and writes the fd.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <system_error>

#include "base/log.h"
#include "stack/event_center.h"

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
  EpollDriver() : events_(kInitialEvents) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wakefd_ < 0) {
      int err = errno;
      ::close(epfd_);
      throw std::system_error(err, std::generic_category(), "eventfd");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wakefd_;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) < 0) {
      int err = errno;
      ::close(wakefd_);
      ::close(epfd_);
      throw std::system_error(err, std::generic_category(), "epoll_ctl(eventfd)");
    }
  }

  ~EpollDriver() override {
    ::close(wakefd_);
    ::close(epfd_);
  }

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
    bool block = timeout > std::chrono::nanoseconds::zero();
    if (block) {
      sleeping_.store(true, std::memory_order_seq_cst);
      if (pending_.exchange(false, std::memory_order_seq_cst)) block = false;
    }
    int n = block ? blocking_wait(std::min<std::chrono::nanoseconds>(timeout, kMaxBlock))
                  : epoll_wait(epfd_, events_.data(), static_cast<int>(events_.size()), 0);
    if (block) sleeping_.store(false, std::memory_order_relaxed);
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
      if (ev.data.fd == wakefd_) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = ::read(wakefd_, &count, sizeof(count));
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
    return reported;
  }

  bool last_wait_blocked() const override { return blocked_; }

  void wakeup() override {
    pending_.store(true, std::memory_order_seq_cst);
    // Only the first producer to see the sleeper pays for the syscall.
    if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t r = ::write(wakefd_, &one, sizeof(one));
    }
  }

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

  int epfd_ = -1;
  int wakefd_ = -1;
  bool have_pwait2_ = true;
  bool blocked_ = false;
  std::vector<epoll_event> events_;
  std::atomic<bool> pending_{false};
  std::atomic<bool> sleeping_{false};
};

}  // namespace

std::unique_ptr<EventDriver> make_epoll_driver() { return std::make_unique<EpollDriver>(); }

}  // namespace bypass
