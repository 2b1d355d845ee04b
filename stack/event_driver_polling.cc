// PollingDriver: the loop spins, running the transport's poll hook every iteration.
//
// Userspace event ids carry level-triggered ready bits that the transport sets with notify().
// Kernel fds live in an inner EpollDriver that is checked with a zero timeout every
// kKernelCheckEvery iterations. After `idle_sleep` without any work the driver blocks in that
// epoll (kernel fds plus its wake-up eventfd) for at most the loop's timeout; the inner driver's
// wakeup() costs no syscall unless it is really blocked, so dispatch_external stays cheap while
// the loop spins.
#include <cerrno>

#include "base/log.h"
#include "stack/event_center.h"

namespace bypass {

namespace {

constexpr uint64_t kKernelCheckEvery = 32;
// Ids are indexes into a vector; refuse absurd ids instead of allocating gigabytes.
constexpr int kMaxUserEvents = 1 << 22;

class PollingDriverImpl final : public PollingDriver {
 public:
  explicit PollingDriverImpl(std::chrono::nanoseconds idle_sleep)
      : kernel_(make_epoll_driver()), idle_sleep_(idle_sleep) {}

  void set_poll_hook(PollHook hook) override { hook_ = std::move(hook); }

  int create_user_event() override {
    int index;
    if (!free_ids_.empty()) {
      index = free_ids_.back();
      free_ids_.pop_back();
    } else {
      if (users_.size() >= static_cast<size_t>(kMaxUserEvents)) {
        BYPASS_LOG(Error, "event", "out of userspace event ids (%d in use)", kMaxUserEvents);
        return -ENOSPC;
      }
      index = static_cast<int>(users_.size());
      users_.emplace_back();
    }
    UserEvent& e = users_[index];
    e.allocated = true;
    e.ready = 0;
    e.interest = 0;
    return kUserEventBase + index;
  }

  void destroy_user_event(int id) override {
    UserEvent* e = find(id, "destroy_user_event");
    if (!e) return;
    e->allocated = false;
    e->ready = 0;
    e->interest = 0;
    free_ids_.push_back(id - kUserEventBase);  // a stale ready_ entry is dropped on the next scan
  }

  void notify(int id, int mask) override {
    UserEvent* e = find(id, "notify");
    if (!e) return;
    e->ready |= static_cast<uint8_t>(mask);
    list_if_fireable(id - kUserEventBase);
  }

  void clear(int id, int mask) override {
    UserEvent* e = find(id, "clear");
    if (e) e->ready &= static_cast<uint8_t>(~mask);
  }

  int add_interest(int fd, int old_mask, int new_mask) override {
    if (fd < kUserEventBase) {
      int r = kernel_->add_interest(fd, old_mask, new_mask);
      if (r == 0 && old_mask == 0) ++kernel_fds_;
      return r;
    }
    UserEvent* e = find(fd, "add_interest");
    if (!e) return -EINVAL;
    e->interest = static_cast<uint8_t>(new_mask);
    list_if_fireable(fd - kUserEventBase);
    return 0;
  }

  int remove_interest(int fd, int old_mask, int remaining) override {
    if (fd < kUserEventBase) {
      int r = kernel_->remove_interest(fd, old_mask, remaining);
      if (remaining == 0 && old_mask != 0) --kernel_fds_;
      return r;
    }
    UserEvent* e = find(fd, "remove_interest");
    if (!e) return -EINVAL;
    e->interest = static_cast<uint8_t>(remaining);
    return 0;
  }

  int wait(std::vector<FiredEvent>& fired, std::chrono::nanoseconds timeout) override {
    ++iteration_;
    blocked_ = false;
    const int work = hook_ ? hook_() : 0;
    int reported = collect_ready(fired);
    if (kernel_fds_ > 0 && iteration_ % kKernelCheckEvery == 0) {
      int r = kernel_->wait(fired, std::chrono::nanoseconds::zero());
      if (r > 0) reported += r;
    }
    if (work > 0 || reported > 0) {
      idle_ = false;
      return reported;
    }
    if (timeout <= std::chrono::nanoseconds::zero() || idle_sleep_ <= std::chrono::nanoseconds::zero())
      return reported;
    const auto now = std::chrono::steady_clock::now();
    if (!idle_) {
      idle_ = true;
      idle_since_ = now;
      return reported;
    }
    if (now - idle_since_ < idle_sleep_) return reported;
    // Idle long enough: block until a kernel fd fires, wakeup() is called, or the timeout ends.
    // Afterwards spin for another idle period, since whatever woke us likely brings more work.
    idle_ = false;
    blocked_ = true;
    int r = kernel_->wait(fired, timeout);
    return r > 0 ? reported + r : reported;
  }

  void wakeup() override { kernel_->wakeup(); }
  bool last_wait_blocked() const override { return blocked_; }
  bool may_block() const override { return idle_sleep_ > std::chrono::nanoseconds::zero(); }

 private:
  struct UserEvent {
    uint8_t interest = 0;
    uint8_t ready = 0;
    bool allocated = false;
    bool listed = false;  // present in ready_
  };

  UserEvent* find(int id, const char* what) {
    const long index = static_cast<long>(id) - kUserEventBase;
    if (index < 0 || index >= static_cast<long>(users_.size()) || !users_[index].allocated) {
      BYPASS_LOG(Warn, "event", "%s: %d is not a live userspace event id", what, id);
      return nullptr;
    }
    return &users_[index];
  }

  // ready_ holds only ids whose ready bits meet their interest: a connected socket is writable
  // for good, and listing every one of them made each loop iteration walk all open connections
  // (10,000 in the connections benchmark) to report none. An id whose interest grows is listed
  // again by add_interest.
  void list_if_fireable(int index) {
    UserEvent& e = users_[index];
    if (e.listed || (e.ready & e.interest) == 0) return;
    e.listed = true;
    ready_.push_back(index);
  }

  // Report ids whose ready bits intersect their interest; forget the others.
  int collect_ready(std::vector<FiredEvent>& fired) {
    int reported = 0;
    size_t keep = 0;
    for (size_t i = 0; i < ready_.size(); ++i) {
      const int index = ready_[i];
      UserEvent& e = users_[index];
      const int bits = e.allocated ? e.ready & e.interest : 0;
      if (bits == 0) {
        e.listed = false;
        continue;
      }
      ready_[keep++] = index;
      fired.push_back(FiredEvent{kUserEventBase + index, bits});
      ++reported;
    }
    ready_.resize(keep);
    return reported;
  }

  std::unique_ptr<EventDriver> kernel_;
  std::chrono::nanoseconds idle_sleep_;
  PollHook hook_;
  std::vector<UserEvent> users_;
  std::vector<int> free_ids_;
  std::vector<int> ready_;
  int kernel_fds_ = 0;
  uint64_t iteration_ = 0;
  bool idle_ = false;
  bool blocked_ = false;
  std::chrono::steady_clock::time_point idle_since_;
};

}  // namespace

std::unique_ptr<PollingDriver> make_polling_driver(std::chrono::nanoseconds idle_sleep) {
  return std::make_unique<PollingDriverImpl>(idle_sleep);
}

}  // namespace bypass
