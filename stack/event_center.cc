#include "stack/event_center.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>

#include "base/log.h"
#include "base/timer_wheel.h"

namespace bypass {

namespace {
// Closures run per iteration, so a closure that dispatches another cannot starve file events.
constexpr int kMaxExternalPerIteration = 1024;
constexpr std::chrono::milliseconds kRunMaxWait{500};
// Delays are clamped so that now + delay cannot overflow the clock.
constexpr std::chrono::hours kMaxTimerDelay{24 * 365 * 10};
// User event ids index a vector; beyond this something passed garbage.
constexpr int kMaxUserEventIndex = 1 << 22;

// Kernel fds index `files`, userspace event ids index `users`. A template so the private
// FileEvent type need not be named here.
template <class Table>
auto* find_event(Table& files, Table& users, int fd) {
  using Event = typename Table::value_type;
  if (fd >= kUserEventBase) {
    const size_t index = static_cast<size_t>(fd - kUserEventBase);
    return index < users.size() ? &users[index] : static_cast<Event*>(nullptr);
  }
  if (fd < 0 || static_cast<size_t>(fd) >= files.size()) return static_cast<Event*>(nullptr);
  return &files[static_cast<size_t>(fd)];
}
}  // namespace

class EventCenter::TimerWheel : public detail::TimerWheel {
 public:
  using detail::TimerWheel::TimerWheel;
};

// "Can a timer be due yet?" without reading the clock: a polling loop asks every iteration, and
// clock_gettime (about 22 ns through the vDSO here) cost more than the rest of an idle iteration.
// The time stamp counter (rdtsc, about 9 ns) answers instead, where the kernel keeps its own time
// with it (clocksource "tsc": constant rate, synchronised across CPUs). The counter only decides
// when to look: the clock itself (steady_clock) still times every timer, so a wrong guess can make
// a check early, never a timer early. Ticks per nanosecond are measured against the clock over at
// least 50 ms and taken 1/64 low, so a planned check comes no later than its deadline.
class EventCenter::DueClock {
 public:
  DueClock() : usable_(kernel_keeps_time_with_tsc()) {}

  bool usable() const { return usable_; }
  static uint64_t ticks() {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return 0;
#endif
  }

  // A clock reading taken right after `ticks_before`: calibrates until the rate is known.
  void observe(uint64_t ticks_before, Clock::time_point t) {
    if (!usable_ || calibrated_) return;
    // Calibration pairs must be tight: a pair the scheduler split would skew the rate.
    const uint64_t ticks_after = ticks();
    if (ticks_after - ticks_before > kTightPair) return;
    if (first_ticks_ == 0) {
      first_ticks_ = ticks_before;
      first_time_ = t;
      return;
    }
    const auto span = std::chrono::duration<double, std::nano>(t - first_time_).count();
    if (span < std::chrono::duration<double, std::nano>(kCalibrationSpan).count()) return;
    // Ticks counted over the span, at least (the first pair's after-read may be late).
    ticks_per_ns_ = static_cast<double>(ticks_before - first_ticks_) / span * (1.0 - 1.0 / 64);
    calibrated_ = ticks_per_ns_ > 0;
  }

  // The counter value before which `deadline` cannot have come, given `ticks` read just before the
  // clock said `t`; 0 (check at once) while uncalibrated.
  uint64_t check_at(uint64_t ticks_at_t, Clock::time_point t, Clock::time_point deadline) const {
    if (!calibrated_) return 0;
    if (deadline <= t) return ticks_at_t;
    const double ahead = std::chrono::duration<double, std::nano>(deadline - t).count() * ticks_per_ns_;
    if (ahead >= static_cast<double>(UINT64_MAX - ticks_at_t)) return UINT64_MAX;
    return ticks_at_t + static_cast<uint64_t>(ahead);
  }

 private:
  static constexpr uint64_t kTightPair = 20'000;  // ticks: a few microseconds
  static constexpr std::chrono::milliseconds kCalibrationSpan{50};

  static bool kernel_keeps_time_with_tsc() {
#if defined(__x86_64__)
    static const bool tsc = [] {
      char name[32] = {};
      FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
      if (f == nullptr) return false;
      const bool read = std::fgets(name, sizeof(name), f) != nullptr;
      std::fclose(f);
      return read && std::strncmp(name, "tsc\n", 4) == 0;
    }();
    return tsc;
#else
    return false;
#endif
  }

  const bool usable_;
  bool calibrated_ = false;
  uint64_t first_ticks_ = 0;
  Clock::time_point first_time_{};
  double ticks_per_ns_ = 0;
};

// Vyukov's multi-producer single-consumer queue: producers swap themselves in as the head with one
// atomic exchange and then link the previous head to themselves; the consumer follows `next`
// links from a dummy node. FIFO in exchange order, so FIFO per producer. Between a producer's
// exchange and its link the consumer sees a gap and simply retries on the next iteration.
class EventCenter::ExternalQueue {
 public:
  ExternalQueue() : head_(new Node), tail_(head_.load(std::memory_order_relaxed)) {}
  ~ExternalQueue() {
    size_t dropped = 0;
    while (pop()) ++dropped;
    delete tail_;
    if (dropped) BYPASS_LOG(Warn, "event", "dropped %zu external closures at shutdown", dropped);
  }

  void push(std::function<void()> closure) {
    Node* node = new Node;
    node->closure = std::move(closure);
    Node* prev = head_.exchange(node, std::memory_order_acq_rel);
    prev->next.store(node, std::memory_order_release);
  }

  // Consumer only. Empty function when nothing (fully linked) is queued.
  std::function<void()> pop() {
    Node* next = tail_->next.load(std::memory_order_acquire);
    if (!next) return {};
    std::function<void()> closure = std::move(next->closure);
    delete tail_;
    tail_ = next;  // `next` becomes the new dummy
    return closure;
  }

  // Consumer only. True also while a push is half done, so the loop does not go to sleep on it.
  bool maybe_pending() const {
    return tail_->next.load(std::memory_order_acquire) != nullptr ||
           head_.load(std::memory_order_acquire) != tail_;
  }

 private:
  struct Node {
    std::atomic<Node*> next{nullptr};
    std::function<void()> closure;
  };
  std::atomic<Node*> head_;
  Node* tail_;
};

EventCenter::EventCenter(std::unique_ptr<EventDriver> driver, std::string name)
    : name_(std::move(name)),
      driver_(std::move(driver)),
      timers_(std::make_unique<TimerWheel>()),
      external_(std::make_unique<ExternalQueue>()),
      due_clock_(std::make_unique<DueClock>()) {
  if (!driver_) throw std::invalid_argument("EventCenter '" + name_ + "' needs a driver");
}

EventCenter::~EventCenter() {
  // Closures and timer callbacks may own resources that refer back to us: drop them first.
  external_.reset();
  timers_.reset();
}

void EventCenter::set_owner() { owner_.store(std::this_thread::get_id(), std::memory_order_release); }

bool EventCenter::in_thread() const {
  return owner_.load(std::memory_order_acquire) == std::this_thread::get_id();
}

int EventCenter::create_file_event(int fd, int mask, FileCallback callback) {
  mask &= kEventReadable | kEventWritable;
  if (fd < 0 || mask == 0 || !callback) {
    BYPASS_LOG(Error, "event", "%s: create_file_event(fd %d, mask %d): bad fd, mask or callback",
               name_.c_str(), fd, mask);
    return -EINVAL;
  }
  if (fd >= kUserEventBase && fd - kUserEventBase >= kMaxUserEventIndex) {
    BYPASS_LOG(Error, "event", "%s: create_file_event: user event id %d out of range", name_.c_str(), fd);
    return -EINVAL;
  }
  auto* existing = find_event(file_events_, user_events_, fd);
  const int old_mask = existing ? existing->mask : 0;
  const int new_mask = old_mask | mask;
  if (new_mask != old_mask) {
    int r = driver_->add_interest(fd, old_mask, new_mask);
    if (r < 0) return r;
  }
  std::vector<FileEvent>& table = fd >= kUserEventBase ? user_events_ : file_events_;
  const size_t index = static_cast<size_t>(fd >= kUserEventBase ? fd - kUserEventBase : fd);
  if (index >= table.size()) table.resize(std::max(index + 1, table.size() * 2));
  FileEvent& event = table[index];
  event.mask = new_mask;
  if (mask & kEventReadable) {
    event.read_cb = callback;
    ++event.read_generation;
  }
  if (mask & kEventWritable) {
    event.write_cb = std::move(callback);
    ++event.write_generation;
  }
  return 0;
}

void EventCenter::delete_file_event(int fd, int mask) {
  auto* event = find_event(file_events_, user_events_, fd);
  if (!event || !(event->mask & mask)) return;
  const int remaining = event->mask & ~mask;
  driver_->remove_interest(fd, event->mask, remaining);
  event->mask = remaining;
  // Safe even from inside the callback being removed: it runs out of its slot (run_file_callback),
  // and the bumped generation keeps it from going back.
  if (mask & kEventReadable) {
    event->read_cb = nullptr;
    ++event->read_generation;
  }
  if (mask & kEventWritable) {
    event->write_cb = nullptr;
    ++event->write_generation;
  }
}

EventCenter::TimerId EventCenter::create_timer(std::chrono::nanoseconds delay, TimerCallback callback) {
  if (delay < std::chrono::nanoseconds::zero()) delay = std::chrono::nanoseconds::zero();
  if (delay > kMaxTimerDelay) delay = kMaxTimerDelay;
  const Clock::time_point deadline = now() + delay;
  const TimerId id = timers_->add(deadline, std::move(callback));
  // An earlier deadline than the planned check: check by then (outside an iteration, at the next).
  const uint64_t by = in_iteration_ ? due_clock_->check_at(now_ticks_, now_, deadline) : 0;
  if (by < next_timer_check_) next_timer_check_ = by;
  return id;
}

void EventCenter::read_clock() const {
  now_ticks_ = due_clock_->usable() ? DueClock::ticks() : 0;
  now_ = Clock::now();
  now_valid_ = true;
  ++clock_reads_;
  due_clock_->observe(now_ticks_, now_);
}

bool EventCenter::timers_may_be_due() const {
  if (next_timer_check_ == 0) return true;
  return DueClock::ticks() >= next_timer_check_;
}

void EventCenter::plan_next_timer_check() {
  const std::optional<Clock::time_point> next = timers_->next_wakeup();
  if (!next) {
    next_timer_check_ = due_clock_->usable() ? UINT64_MAX : 0;
    return;
  }
  const Clock::time_point t = now();
  next_timer_check_ = due_clock_->check_at(now_ticks_, t, *next);
}

bool EventCenter::cancel_timer(TimerId id) { return timers_->cancel(id); }

size_t EventCenter::pending_timers() const { return timers_->size(); }

void EventCenter::dispatch_external(std::function<void()> closure) {
  external_->push(std::move(closure));
  driver_->wakeup();
}

void EventCenter::submit_and_wait(std::function<void()> closure) {
  if (in_thread()) {
    closure();
    return;
  }
  std::promise<void> done;
  std::future<void> result = done.get_future();
  dispatch_external([&closure, &done] {
    try {
      closure();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  result.get();  // rethrows the closure's exception on the caller's thread
}

void EventCenter::wakeup() { driver_->wakeup(); }

int EventCenter::run_external() {
  int ran = 0;
  while (ran < kMaxExternalPerIteration) {
    std::function<void()> closure = external_->pop();
    if (!closure) break;
    closure();
    ++ran;
  }
  return ran;
}

bool EventCenter::run_file_callback(int fd, int half) {
  auto* event = find_event(file_events_, user_events_, fd);
  if (!event || !(event->mask & half)) return false;
  const bool read = half == kEventReadable;
  FileCallback* slot = read ? &event->read_cb : &event->write_cb;
  if (!*slot) return false;  // already running further up the stack (a nested process_events)
  // Moved out, not copied (a copy may allocate): the slot stays valid for create/delete calls the
  // callback makes, and the callback survives its own deletion while it runs.
  FileCallback callback;
  callback.swap(*slot);
  const uint32_t generation = read ? event->read_generation : event->write_generation;
  callback(fd, half);
  // The tables may have grown meanwhile: look the event up again.
  event = find_event(file_events_, user_events_, fd);
  if (event && (read ? event->read_generation : event->write_generation) == generation)
    (read ? event->read_cb : event->write_cb).swap(callback);
  return true;
}

int EventCenter::process_events(std::chrono::nanoseconds max_wait) {
  // Marks the iteration (now() returns the cached reading) until it ends, also by an exception; a
  // nested call (a callback running the loop) leaves the flag to the outer one.
  struct IterationScope {
    bool& flag;
    const bool outer = !flag;
    explicit IterationScope(bool& f) : flag(f) { flag = true; }
    ~IterationScope() {
      if (outer) flag = false;
    }
  } scope(in_iteration_);
  now_valid_ = false;  // read by the first now() of this iteration, if any asks
  std::chrono::nanoseconds timeout = std::max(max_wait, std::chrono::nanoseconds::zero());
  if (external_->maybe_pending() || stopping() || !driver_->may_block()) {
    timeout = std::chrono::nanoseconds::zero();
  } else if (auto next = timers_->next_wakeup()) {
    const Clock::time_point t = now();
    timeout = *next <= t ? std::chrono::nanoseconds::zero() : std::min(timeout, std::chrono::nanoseconds(*next - t));
  }

  fired_.clear();
  driver_->wait(fired_, timeout);
  if (driver_->last_wait_blocked()) now_valid_ = false;

  int ran = 0;
  // Indexes, not iterators, and a fresh lookup per callback: a callback may add or delete file
  // events (growing the tables) and may delete the other half of its own event.
  for (size_t i = 0; i < fired_.size(); ++i) {
    const FiredEvent fired = fired_[i];
    if ((fired.mask & kEventReadable) && run_file_callback(fired.fd, kEventReadable)) ++ran;
    if ((fired.mask & kEventWritable) && run_file_callback(fired.fd, kEventWritable)) ++ran;
  }
  if (timers_may_be_due()) {
    ran += timers_->advance(now());
    plan_next_timer_check();
  }
  ran += run_external();
  return ran;
}

void EventCenter::run() {
  if (owner_.load(std::memory_order_acquire) == std::thread::id{}) set_owner();
  while (!stopping()) process_events(kRunMaxWait);
  // Closures queued before stop() still run (FIFO per producer covers "dispatch, then stop").
  // Bounded, in case closures keep dispatching more.
  for (int round = 0; round < 64 && external_->maybe_pending(); ++round) run_external();
}

void EventCenter::stop() {
  stop_.store(true, std::memory_order_release);
  driver_->wakeup();
}

}  // namespace bypass
