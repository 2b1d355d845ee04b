// EventCenter: one event loop per worker thread.
//
// It multiplexes three kinds of events, all run on the owning thread:
//  - file events: a callback when an fd becomes readable/writable. For posix the fd is a kernel fd
//    waited on with epoll; for dpdk/rdma it is a userspace event id that the transport marks ready
//    from its poll hook (see PollingDriver);
//  - timers: one-shot callbacks after a delay (a hierarchical timing wheel: add and cancel are O(1),
//    so millions of timers stay cheap);
//  - external events: closures handed over from other threads through a lock-free queue plus a
//    wake-up (dispatch_external). This is the only way another thread touches a worker's state.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace bypass {

// Interest and readiness bits of a file event; a mask may combine both.
enum EventMask : int { kEventNone = 0, kEventReadable = 1, kEventWritable = 2 };

// One ready fd (or userspace event id) reported by EventDriver::wait().
struct FiredEvent {
  int fd;  // kernel fd or userspace event id
  int mask;  // the EventMask bits that are ready
};

// How the loop waits. The EventCenter owns exactly one driver.
class EventDriver {
 public:
  virtual ~EventDriver() = default;
  // `mask` is the full interest mask for fd after the change (never 0 here).
  virtual int add_interest(int fd, int old_mask, int new_mask) = 0;
  // `remaining` is the interest left after removing some bits (0 = forget fd).
  virtual int remove_interest(int fd, int old_mask, int remaining) = 0;
  // Wait up to `timeout` (zero: do not block) and append ready fds to `fired`.
  virtual int wait(std::vector<FiredEvent>& fired, std::chrono::nanoseconds timeout) = 0;
  // Make a blocked wait() return soon; called from any thread.
  virtual void wakeup() = 0;
  // A polling driver never sleeps in the kernel; the loop spins.
  virtual bool is_polling() const { return false; }
  // Whether wait() may block for its timeout (then the loop bounds it by the next timer, which
  // takes a clock reading); a polling driver that never sleeps (idle_sleep 0) does not.
  virtual bool may_block() const { return true; }
  // Whether the last wait() blocked in the kernel: the loop then reads its clock again.
  virtual bool last_wait_blocked() const = 0;
};

// Kernel fds through epoll, wake-up through an eventfd. `busy_poll` (posix.busy_poll): for this
// long after a wait that found something, a wait asked to block polls epoll without blocking
// instead, so a loop that expects its next event within microseconds spins rather than sleeps.
std::unique_ptr<EventDriver> make_epoll_driver(std::chrono::nanoseconds busy_poll = std::chrono::nanoseconds::zero());

// For transports that run their own packet/completion processing (dpdk, rdma). Event ids are
// userspace numbers; the transport's poll hook runs every loop iteration and marks ids ready with
// notify(). Kernel fds can still be mixed in (they are checked with a zero-timeout epoll every
// `kernel_check_every` iterations) so a dpdk worker can also serve, say, a signalfd or TCP side channel.
class PollingDriver : public EventDriver {
 public:
  using PollHook = std::function<int()>;  // returns how much work it did (0 = idle)
  virtual void set_poll_hook(PollHook hook) = 0;  // the transport's poll step, run every loop iteration
  // Allocate/free a userspace event id (never collides with a kernel fd: ids start at 1 << 24).
  virtual int create_user_event() = 0;
  // Frees an id from create_user_event(); its ready bits go with it.
  virtual void destroy_user_event(int id) = 0;
  // Mark id ready with mask bits (from the owning thread, typically inside the poll hook). Ready
  // bits stay set until clear() — level-triggered like epoll's default.
  virtual void notify(int id, int mask) = 0;
  // The transport clears what it no longer has (e.g. nothing left to read).
  virtual void clear(int id, int mask) = 0;
  bool is_polling() const override { return true; }
};

// `idle_sleep`: after this long with no work the driver sleeps in epoll (on its wake-up fd and any
// kernel fds) for at most the loop's timeout; zero means busy-poll forever.
std::unique_ptr<PollingDriver> make_polling_driver(std::chrono::nanoseconds idle_sleep);

// One worker's event loop (see the file comment).
class EventCenter {
 public:
  // Called with the fd and the one bit that fired.
  using FileCallback = std::function<void(int fd, int mask)>;
  using TimerCallback = std::function<void()>;  // runs once on the owner thread
  // Carries a generation, so cancelling a stale id (fired or cancelled) is harmless.
  using TimerId = uint64_t;
  using Clock = std::chrono::steady_clock;  // monotonic: timers survive wall-clock changes

  // `name` tells workers apart in log messages; call set_owner() on the thread that runs the loop.
  explicit EventCenter(std::unique_ptr<EventDriver> driver, std::string name = "worker");
  ~EventCenter();
  EventCenter(const EventCenter&) = delete;
  EventCenter& operator=(const EventCenter&) = delete;

  // Bind to the calling thread: afterwards in_thread() is true only there.
  void set_owner();
  bool in_thread() const;  // true on the thread set_owner() bound
  const std::string& name() const { return name_; }  // as given at construction
  EventDriver& driver() { return *driver_; }  // e.g. a PollingDriver to set the poll hook on

  // File events (owner thread only). Adding a mask to an fd keeps its other callback.
  int create_file_event(int fd, int mask, FileCallback callback);
  void delete_file_event(int fd, int mask);  // removes the callbacks for these bits; the others stay

  // The loop's clock: read at most once per iteration, by the first now() in it (and again after a
  // wait that blocked), so everything in one iteration sees the same time and a busy loop pays for
  // one clock read per iteration, not one per packet or timer; an iteration that asks for no time
  // (a polling loop finding nothing, no timer due) reads no clock at all. Outside process_events
  // (before the loop runs, or between iterations) it reads the clock. Owner thread only.
  Clock::time_point now() const {
    if (!in_iteration_) return Clock::now();
    if (!now_valid_) read_clock();
    return now_;
  }
  // Clock readings the loop took (now() inside iterations): what the loop's time costs it.
  uint64_t clock_reads() const { return clock_reads_; }

  // Timers (owner thread only). Resolution is the wheel tick (100 us); a callback never runs before
  // now() + delay as now() read when the timer was created (inside an iteration that is the
  // iteration's reading, which may be a little earlier than the moment of the call).
  TimerId create_timer(std::chrono::nanoseconds delay, TimerCallback callback);
  bool cancel_timer(TimerId id);  // false if already fired or unknown
  size_t pending_timers() const;  // created and neither fired nor cancelled

  // Any thread. The closure runs on the owner thread in FIFO order per producer.
  void dispatch_external(std::function<void()> closure);
  // Run `closure` on the owner thread and wait for it (runs inline when already on it).
  void submit_and_wait(std::function<void()> closure);
  void wakeup();  // any thread: a blocked wait returns soon

  // One loop iteration: waits at most `max_wait` (less if a timer is due), then runs fired file
  // events, due timers and external closures. Returns the number of callbacks run.
  int process_events(std::chrono::nanoseconds max_wait);
  // Loop until stop() (from any thread).
  void run();
  void stop();  // any thread: run() returns after the current iteration
  bool stopping() const { return stop_.load(std::memory_order_acquire); }  // stop() was called

 private:
  struct FileEvent {
    int mask = 0;
    FileCallback read_cb;
    FileCallback write_cb;
    // Bumped whenever a half is set or deleted: a callback taken out of its slot to run goes back
    // only if nobody replaced or deleted that half meanwhile.
    uint32_t read_generation = 0;
    uint32_t write_generation = 0;
  };
  class TimerWheel;
  class ExternalQueue;
  class DueClock;

  int run_external();
  void read_clock() const;
  // Whether a timer may be due: a time stamp counter comparison, no clock read (DueClock).
  bool timers_may_be_due() const;
  // Recomputes the counter value before which no timer can be due, from the wheel's next wakeup.
  void plan_next_timer_check();
  // Runs the `half` (kEventReadable or kEventWritable) callback of fd, if it is still registered.
  bool run_file_callback(int fd, int half);

  std::string name_;
  std::unique_ptr<EventDriver> driver_;
  std::vector<FileEvent> file_events_;      // indexed by fd (kernel fds)
  std::vector<FileEvent> user_events_;      // indexed by id - (1 << 24) (userspace ids)
  std::unique_ptr<TimerWheel> timers_;
  std::unique_ptr<ExternalQueue> external_;
  std::vector<FiredEvent> fired_;
  std::unique_ptr<DueClock> due_clock_;
  // The iteration's reading of the clock (read_clock()), and the counter value read just before it.
  mutable Clock::time_point now_{};
  mutable uint64_t now_ticks_ = 0;
  mutable bool now_valid_ = false;
  mutable uint64_t clock_reads_ = 0;
  // Before this counter value no timer can be due (0: look every iteration); DueClock.
  uint64_t next_timer_check_ = 0;
  bool in_iteration_ = false;
  std::atomic<std::thread::id> owner_{};
  std::atomic<bool> stop_{false};
};

// The first userspace event id (PollingDriver::create_user_event()); kernel fds stay below it.
constexpr int kUserEventBase = 1 << 24;

}  // namespace bypass
