#include "stack/event_center.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <future>
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
      external_(std::make_unique<ExternalQueue>()) {
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
  return timers_->add(now() + delay, std::move(callback));
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
  now_ = Clock::now();
  std::chrono::nanoseconds timeout = std::max(max_wait, std::chrono::nanoseconds::zero());
  if (external_->maybe_pending() || stopping()) {
    timeout = std::chrono::nanoseconds::zero();
  } else if (auto next = timers_->next_wakeup()) {
    timeout = *next <= now_ ? std::chrono::nanoseconds::zero()
                            : std::min(timeout, std::chrono::nanoseconds(*next - now_));
  }

  fired_.clear();
  driver_->wait(fired_, timeout);
  if (driver_->last_wait_blocked()) now_ = Clock::now();

  int ran = 0;
  // Indexes, not iterators, and a fresh lookup per callback: a callback may add or delete file
  // events (growing the tables) and may delete the other half of its own event.
  for (size_t i = 0; i < fired_.size(); ++i) {
    const FiredEvent fired = fired_[i];
    if ((fired.mask & kEventReadable) && run_file_callback(fired.fd, kEventReadable)) ++ran;
    if ((fired.mask & kEventWritable) && run_file_callback(fired.fd, kEventWritable)) ++ran;
  }
  ran += timers_->advance(now_);
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
