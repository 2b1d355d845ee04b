// The timing wheel on a synthetic clock: exact never-early / fires-when-due checks at every scale,
// including deadlines past the four levels (the overflow list).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "base/timer_wheel.h"

namespace bypass::detail {
namespace {

using Clock = TimerWheel::Clock;
using std::chrono::nanoseconds;

struct Fired {
  Clock::time_point deadline;
  Clock::time_point now;
};

// Drives a wheel through time in random steps and checks each firing against the clock.
void check_random_schedule(nanoseconds horizon, nanoseconds max_step, int timers, uint32_t seed) {
  const Clock::time_point start{};
  TimerWheel wheel(start);
  std::mt19937_64 rng(seed);
  std::vector<Clock::time_point> deadlines(timers);
  std::vector<bool> fired(timers, false);
  std::vector<Fired> log;
  Clock::time_point now = start;
  for (int i = 0; i < timers; ++i) {
    deadlines[i] = start + nanoseconds(static_cast<int64_t>(rng() % static_cast<uint64_t>(horizon.count())));
    wheel.add(deadlines[i], [&, i] {
      fired[i] = true;
      log.push_back(Fired{deadlines[i], now});
    });
  }
  const Clock::time_point end = start + horizon + std::chrono::milliseconds(1);
  int steps = 0;
  while (now < end && steps < 2'000'000) {
    now += nanoseconds(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(max_step.count())));
    wheel.advance(now);
    ++steps;
  }
  ASSERT_GE(now, end) << "step budget exhausted";
  ASSERT_EQ(log.size(), static_cast<size_t>(timers));
  EXPECT_EQ(wheel.size(), 0u);
  for (size_t i = 0; i < log.size(); ++i) {
    ASSERT_LE(log[i].deadline, log[i].now) << "timer " << i << " fired early";
    // Due timers fire at the first advance after their (rounded up) tick starts.
    ASSERT_LE(log[i].now - log[i].deadline, TimerWheel::kTick + max_step) << "timer " << i << " fired late";
    if (i > 0) {
      ASSERT_LE(log[i - 1].deadline, log[i].deadline) << "out of deadline order at " << i;
    }
  }
}

TEST(TimerWheel, LevelZeroShortDeadlines) {
  check_random_schedule(std::chrono::milliseconds(20), std::chrono::microseconds(37), 5000, 1);
}

TEST(TimerWheel, CascadesThroughLevelOneAndTwo) {
  check_random_schedule(std::chrono::seconds(30), std::chrono::microseconds(900), 20000, 2);
}

TEST(TimerWheel, LevelThreeAndOverflowDeadlines) {
  // 12 days: beyond 2^32 ticks (~5 days), so some timers start in the overflow list.
  check_random_schedule(std::chrono::hours(24 * 12), std::chrono::seconds(2), 3000, 3);
}

TEST(TimerWheel, HugeJumpFiresEverythingInOrder) {
  const Clock::time_point start{};
  TimerWheel wheel(start);
  std::vector<int> order;
  const std::vector<nanoseconds> delays = {std::chrono::hours(24 * 9), std::chrono::milliseconds(3),
                                           std::chrono::seconds(70), std::chrono::microseconds(1),
                                           std::chrono::hours(3)};
  for (size_t i = 0; i < delays.size(); ++i) wheel.add(start + delays[i], [&order, i] { order.push_back(int(i)); });
  EXPECT_EQ(wheel.advance(start + std::chrono::hours(24 * 30)), 5);
  EXPECT_EQ(order, (std::vector<int>{3, 1, 2, 4, 0}));
}

TEST(TimerWheel, NextWakeupIsNeverAfterTheEarliestDeadline) {
  const Clock::time_point start{};
  TimerWheel wheel(start);
  EXPECT_FALSE(wheel.next_wakeup().has_value());
  std::mt19937_64 rng(4);
  Clock::time_point now = start;
  for (int round = 0; round < 2000; ++round) {
    const auto deadline = now + nanoseconds(static_cast<int64_t>(rng() % 600'000'000'000ull));
    const auto id = wheel.add(deadline, [] {});
    auto wake = wheel.next_wakeup();
    ASSERT_TRUE(wake.has_value());
    ASSERT_LE(*wake, deadline);
    // Following the wake-ups must reach the deadline without firing early.
    int hops = 0;
    while (wheel.size() > 0 && hops < 100) {
      auto next = wheel.next_wakeup();
      ASSERT_TRUE(next.has_value());
      ASSERT_LE(*next, deadline + TimerWheel::kTick);
      now = std::max(now, *next);
      wheel.advance(now);
      ++hops;
    }
    ASSERT_EQ(wheel.size(), 0u) << "timer " << round << " did not fire within 100 wake-ups";
    (void)id;
  }
}

// next_wakeup() remembers a bound between advances: an add lowers it at once, a cancelled timer's
// bound costs one empty wake-up, after which the real next deadline is found again.
TEST(TimerWheel, NextWakeupFollowsAddsAndForgetsPassedBounds) {
  using std::chrono::milliseconds;
  const Clock::time_point start{};
  TimerWheel wheel(start);
  int fired = 0;
  wheel.add(start + milliseconds(50), [&] { ++fired; });
  ASSERT_TRUE(wheel.next_wakeup().has_value());
  EXPECT_LE(*wheel.next_wakeup(), start + milliseconds(50));
  const auto early = wheel.add(start + milliseconds(10), [&] { ++fired; });
  EXPECT_LE(*wheel.next_wakeup(), start + milliseconds(10));
  EXPECT_TRUE(wheel.cancel(early));
  const auto wake = *wheel.next_wakeup();
  EXPECT_LE(wake, start + milliseconds(50));
  EXPECT_EQ(wheel.advance(wake), 0);
  const auto next = wheel.next_wakeup();
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, start + milliseconds(10)) << "a bound the wheel has passed must be forgotten";
  EXPECT_LE(*next, start + milliseconds(50));
  EXPECT_EQ(wheel.advance(start + milliseconds(50)), 1);
  EXPECT_FALSE(wheel.next_wakeup().has_value());
  EXPECT_EQ(fired, 1);
}

// A timer beyond level 0 reaches its slot only through the cascade at the start of its block;
// the remembered bound must not let advance() jump over that tick (the timer then fired only when
// the wheel came round again: a 1 s keepalive check ran seconds late).
TEST(TimerWheel, BoundNeverSkipsTheCascadeOfAHigherLevelTimer) {
  using std::chrono::milliseconds;
  const Clock::time_point start{};
  TimerWheel wheel(start);
  int fired = 0;
  wheel.add(start + milliseconds(2000), [&] { ++fired; });
  ASSERT_TRUE(wheel.next_wakeup().has_value());  // the bound is now known
  wheel.add(start + milliseconds(100), [&] { ++fired; });  // level 1: cascades at tick 768
  EXPECT_LE(*wheel.next_wakeup(), start + milliseconds(100));
  EXPECT_EQ(wheel.advance(start + milliseconds(100)), 1);
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(wheel.advance(start + milliseconds(2000)), 1);
  EXPECT_EQ(fired, 2);
}

TEST(TimerWheel, CancelByIdIsExactAndStaleIdsAreRejected) {
  const Clock::time_point start{};
  TimerWheel wheel(start);
  int fired = 0;
  auto a = wheel.add(start + std::chrono::milliseconds(1), [&] { ++fired; });
  EXPECT_TRUE(wheel.cancel(a));
  EXPECT_FALSE(wheel.cancel(a));
  // The node is recycled; the old id must not cancel the new timer.
  auto b = wheel.add(start + std::chrono::milliseconds(1), [&] { ++fired; });
  EXPECT_NE(a, b);
  EXPECT_FALSE(wheel.cancel(a));
  EXPECT_FALSE(wheel.cancel(0));
  EXPECT_FALSE(wheel.cancel(~uint64_t{0}));
  wheel.advance(start + std::chrono::milliseconds(2));
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(wheel.cancel(b));
}

TEST(TimerWheel, CallbackCancelsALaterTimerDueInTheSameBatch) {
  const Clock::time_point start{};
  TimerWheel wheel(start);
  std::vector<int> order;
  TimerWheel::TimerId second = 0;
  wheel.add(start + std::chrono::microseconds(10), [&] {
    order.push_back(1);
    EXPECT_TRUE(wheel.cancel(second));
    wheel.add(start, [&] { order.push_back(3); });  // already due: runs on the next advance
  });
  second = wheel.add(start + std::chrono::microseconds(20), [&] { order.push_back(2); });
  EXPECT_EQ(wheel.advance(start + std::chrono::milliseconds(5)), 1);
  EXPECT_EQ(order, (std::vector<int>{1}));
  EXPECT_EQ(wheel.advance(start + std::chrono::milliseconds(6)), 1);
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
}

}  // namespace
}  // namespace bypass::detail
