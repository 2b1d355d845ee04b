// What one loop iteration costs: the clock is read once per iteration (EventCenter::now() is
// constant within it), and a busy polling loop with a fired user event and a re-armed timer makes no
// heap allocation. This binary counts every operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <new>
#include <thread>

#include "stack/event_center.h"

namespace {
std::atomic<uint64_t> allocations{0};
}  // namespace

// GCC (-Wmismatched-new-delete) sees free() reached from operator delete for memory from operator
// new; both are this file's replacements over malloc, so the pair matches.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace bypass {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST(EventLoopCost, NowIsOneReadingPerIteration) {
  EventCenter center(make_polling_driver(0ns), "clock");
  center.set_owner();
  auto& driver = static_cast<PollingDriver&>(center.driver());
  const int id = driver.create_user_event();
  std::vector<Clock::time_point> seen;
  Clock::time_point before_sleep{}, after_sleep{};
  ASSERT_EQ(center.create_file_event(id, kEventReadable, [&](int, int) {
    before_sleep = center.now();
    std::this_thread::sleep_for(2ms);
    after_sleep = center.now();
    seen.push_back(after_sleep);
  }), 0);
  driver.notify(id, kEventReadable);
  const Clock::time_point start = Clock::now();
  center.process_events(0ns);
  center.process_events(0ns);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(before_sleep, after_sleep) << "now() moved within one iteration";
  EXPECT_GE(seen[1] - seen[0], 2ms) << "now() must advance from one iteration to the next";
  EXPECT_GE(seen[0], start);
  // Outside an iteration now() is the clock itself.
  const Clock::time_point outside = center.now();
  EXPECT_GE(outside, seen[1] + 2ms);
}

// A timer made inside an iteration counts from the iteration's reading, so it fires by that clock,
// never before its delay has passed on it.
TEST(EventLoopCost, TimerCreatedInsideAnIterationCountsFromItsReading) {
  EventCenter center(make_polling_driver(0ns), "timers");
  center.set_owner();
  Clock::time_point created_at{}, fired_at{};
  bool fired = false;
  center.dispatch_external([&] {
    created_at = center.now();
    center.create_timer(3ms, [&] {
      fired_at = center.now();
      fired = true;
    });
  });
  const auto give_up = Clock::now() + 5s;
  while (!fired && Clock::now() < give_up) center.process_events(1ms);
  ASSERT_TRUE(fired);
  EXPECT_GE(fired_at - created_at, 3ms);
}

// The callback runs out of its slot, not as a copy: its own state survives from one run to the next
// (a copy per run would also allocate for a capture of this size).
TEST(EventLoopCost, FileCallbackKeepsItsStateAcrossRuns) {
  EventCenter center(make_polling_driver(0ns), "state");
  center.set_owner();
  auto& driver = static_cast<PollingDriver&>(center.driver());
  const int id = driver.create_user_event();
  std::vector<int> runs;
  ASSERT_EQ(center.create_file_event(id, kEventReadable, [&runs, count = 0, pad = std::array<uint64_t, 4>{}](int, int) mutable {
    runs.push_back(++count + static_cast<int>(pad[0]));
  }), 0);
  driver.notify(id, kEventReadable);
  for (int i = 0; i < 3; ++i) center.process_events(0ns);
  EXPECT_EQ(runs, (std::vector<int>{1, 2, 3}));
}

// A callback that replaces itself keeps the replacement; one that deletes itself stays deleted.
TEST(EventLoopCost, CallbackReplacingOrDeletingItself) {
  EventCenter center(make_polling_driver(0ns), "replace");
  center.set_owner();
  auto& driver = static_cast<PollingDriver&>(center.driver());
  const int id = driver.create_user_event();
  std::vector<char> runs;
  ASSERT_EQ(center.create_file_event(id, kEventReadable, [&](int fd, int) {
    runs.push_back('a');
    center.create_file_event(fd, kEventReadable, [&](int fd2, int) {
      runs.push_back('b');
      center.delete_file_event(fd2, kEventReadable);
    });
  }), 0);
  driver.notify(id, kEventReadable);
  for (int i = 0; i < 4; ++i) center.process_events(0ns);
  EXPECT_EQ(std::string(runs.begin(), runs.end()), "ab");
}

// A busy loop: poll hook, a ready user event whose callback captures more than std::function keeps
// inline, and a timer re-armed from its own callback. After warm-up: no allocation at all.
TEST(EventLoopCost, BusyIterationsMakeNoHeapAllocation) {
  auto owned = make_polling_driver(0ns);
  PollingDriver& driver = *owned;
  EventCenter center(std::move(owned), "busy");
  center.set_owner();
  const int id = driver.create_user_event();
  uint64_t polls = 0, reads = 0, ticks = 0;
  driver.set_poll_hook([&] {
    ++polls;
    driver.notify(id, kEventReadable);
    return 1;
  });
  std::array<uint64_t, 6> big{};
  ASSERT_EQ(center.create_file_event(id, kEventReadable, [&reads, big](int, int) { reads += 1 + big[0]; }), 0);
  struct Tick {
    EventCenter* center;
    uint64_t* ticks;
    void operator()() const {
      ++*ticks;
      center->create_timer(0ns, *this);
    }
  };
  center.create_timer(0ns, Tick{&center, &ticks});
  for (int i = 0; i < 1000; ++i) center.process_events(0ns);  // warm-up: vectors reach their size
  const uint64_t before = allocations.load();
  for (int i = 0; i < 20000; ++i) center.process_events(0ns);
  EXPECT_EQ(allocations.load() - before, 0u);
  EXPECT_GE(reads, 20000u);
  EXPECT_GE(polls, 20000u);
  EXPECT_GT(ticks, 0u);
}

// Whether the kernel keeps its time with the TSC: then the loop plans its timer checks on it.
bool kernel_clock_is_tsc() {
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return source >> name && name == "tsc";
}

// Idle polling iterations (nothing received, no timer due) read no clock once the loop has measured
// the time stamp counter against it: a timer 10 s away costs a counter comparison per iteration.
// (The wheel still looks at the clock when a level of it cascades, every 25.6 ms at most.)
TEST(EventLoopCost, IdlePollingReadsNoClock) {
  EventCenter center(make_polling_driver(0ns), "idle");
  center.set_owner();
  bool fired = false;
  center.create_timer(10s, [&] { fired = true; });
  const auto calibrated_by = Clock::now() + 200ms;  // the counter is measured over 50 ms
  while (Clock::now() < calibrated_by) center.process_events(0ns);
  const uint64_t before = center.clock_reads();
  for (int i = 0; i < 100'000; ++i) center.process_events(0ns);
  const uint64_t reads = center.clock_reads() - before;
  EXPECT_FALSE(fired);
  if (kernel_clock_is_tsc()) {
    EXPECT_LT(reads, 1000u) << "idle iterations read the clock";
  } else {
    EXPECT_EQ(reads, 100'000u) << "without the TSC every iteration looks at the clock";
  }
}

// Planning checks on the counter never makes a timer late: no iteration that began (its poll
// hook ran) at or after a timer's deadline, rounded up to the wheel's 100 us tick, ends without
// running it. Checked for delays across the counter's calibration and well after it.
TEST(EventLoopCost, TimersRunInTheFirstIterationPastTheirDeadline) {
  auto owned = make_polling_driver(0ns);
  PollingDriver& driver = *owned;
  EventCenter center(std::move(owned), "due");
  center.set_owner();
  Clock::time_point hook_time{};
  driver.set_poll_hook([&] {
    hook_time = Clock::now();
    return 0;
  });
  const auto run_timer = [&](std::chrono::microseconds delay) {
    bool fired = false;
    Clock::time_point deadline{};
    center.dispatch_external([&] {
      deadline = center.now() + delay;
      center.create_timer(delay, [&] { fired = true; });
    });
    const auto give_up = Clock::now() + 10s;
    while (!fired && Clock::now() < give_up) {
      center.process_events(0ns);
      if (!fired && deadline != Clock::time_point{}) {
        ASSERT_LT(hook_time, deadline + 100us) << "an iteration that began past the deadline did not run the "
                                               << delay.count() << " us timer";
      }
    }
    ASSERT_TRUE(fired);
  };
  for (const int us : {300, 1000, 20'000, 60'000, 150, 2000, 7000, 500}) run_timer(std::chrono::microseconds(us));
}

}  // namespace
}  // namespace bypass
