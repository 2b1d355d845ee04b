// Time and timers for the protocol code. The transport supplies the real implementation (the dpdk
// transport's EventCenterTimerService, stack/dpdk); VirtualTimerService lets tests run the stack on a
// simulated clock, deterministically.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

namespace bypass::inet {

using Duration = std::chrono::nanoseconds;
using TimePoint = std::chrono::nanoseconds;  // since an arbitrary epoch of the service

class TimerService {
 public:
  using TimerId = uint64_t;
  virtual ~TimerService() = default;
  virtual TimePoint now() const = 0;
  // Runs `callback` once, no earlier than `delay` from now.
  virtual TimerId schedule(Duration delay, std::function<void()> callback) = 0;
  virtual void cancel(TimerId id) = 0;
};

// A simulated clock: time moves only when the owner runs due timers. Several stacks can share one
// instance so that their timers interleave in global time order.
class VirtualTimerService : public TimerService {
 public:
  TimePoint now() const override { return now_; }
  TimerId schedule(Duration delay, std::function<void()> callback) override;
  void cancel(TimerId id) override;

  // Advance to the earliest timer and run it. Returns false when no timer is pending.
  bool run_next();
  // Run every timer due up to now + `span`, then set the clock to now + `span`.
  void advance(Duration span);
  size_t pending() const { return timers_.size(); }

 private:
  TimePoint now_{0};
  TimerId next_id_ = 1;
  // Ordered by (deadline, id) so equal deadlines run in scheduling order.
  std::map<std::pair<TimePoint, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, TimePoint> deadlines_;
};

}  // namespace bypass::inet

namespace bypass::inet {

// One logical timer with a movable deadline. Moving the deadline later does not touch the
// underlying service (the armed timer re-arms itself when it fires early), so per-ACK updates of
// the retransmission or delayed-ACK deadline cost nothing.
class DeadlineTimer {
 public:
  DeadlineTimer(TimerService& service, std::function<void()> on_expiry)
      : service_(service), on_expiry_(std::move(on_expiry)) {}
  ~DeadlineTimer() {
    if (scheduled_) service_.cancel(id_);
  }
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  void set(TimePoint deadline) {
    deadline_ = deadline;
    has_deadline_ = true;
    if (scheduled_ && scheduled_for_ <= deadline) return;
    if (scheduled_) service_.cancel(id_);
    arm(deadline);
  }
  void set_after(Duration delay) { set(service_.now() + delay); }
  void clear() { has_deadline_ = false; }
  bool pending() const { return has_deadline_; }
  TimePoint deadline() const { return deadline_; }

 private:
  void arm(TimePoint at) {
    scheduled_ = true;
    scheduled_for_ = at;
    id_ = service_.schedule(at - service_.now(), [this] { fire(); });
  }
  void fire() {
    scheduled_ = false;
    if (!has_deadline_) return;
    if (service_.now() < deadline_) return arm(deadline_);
    has_deadline_ = false;
    on_expiry_();
  }

  TimerService& service_;
  std::function<void()> on_expiry_;
  TimePoint deadline_{0};
  TimePoint scheduled_for_{0};
  TimerService::TimerId id_ = 0;
  bool has_deadline_ = false;
  bool scheduled_ = false;
};

}  // namespace bypass::inet
