// EventCenter with the epoll driver: timers on the real clock, cross-thread closures, pipe events.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "stack/event_center.h"
#include "tests/unit/stack/driver_wakeup_check.h"
#include "tests/unit/stack/test_pipe.h"

namespace bypass {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Runs the loop until `done()` or the time bound; returns whether done() became true.
template <class Pred>
bool run_until(EventCenter& center, Pred done, std::chrono::milliseconds bound = 10s) {
  const auto give_up = Clock::now() + bound;
  while (!done()) {
    if (Clock::now() > give_up) return false;
    center.process_events(5ms);
  }
  return true;
}

class EventCenterTest : public ::testing::Test {
 protected:
  void SetUp() override { center.set_owner(); }
  EventCenter center{make_epoll_driver(), "test"};
};

TEST_F(EventCenterTest, TimersFireInDeadlineOrderAndNeverEarly) {
  constexpr int kTimers = 300;
  std::vector<int> delays_us(kTimers);
  for (int i = 0; i < kTimers; ++i) delays_us[i] = i * 173 % 60'000;  // distinct, shuffled
  std::vector<int> order;
  std::vector<Clock::time_point> deadlines(kTimers);
  std::vector<Clock::duration> lateness(kTimers);
  bool early = false;
  for (int i = 0; i < kTimers; ++i) {
    const auto created = Clock::now();
    const auto delay = std::chrono::microseconds(delays_us[i]);
    deadlines[i] = created + delay;
    center.create_timer(delay, [&, i, created, delay] {
      const auto elapsed = Clock::now() - created;
      if (elapsed < delay) early = true;
      lateness[i] = elapsed - delay;
      order.push_back(i);
    });
  }
  EXPECT_EQ(center.pending_timers(), size_t(kTimers));
  ASSERT_TRUE(run_until(center, [&] { return order.size() == size_t(kTimers); }));
  EXPECT_FALSE(early);
  EXPECT_EQ(center.pending_timers(), 0u);
  for (int i = 1; i < kTimers; ++i) {
    // The center reads the clock a moment after `created`; allow that much slack.
    EXPECT_LE(deadlines[order[i - 1]], deadlines[order[i]] + 200us) << "position " << i;
  }
  // On time: the typical timer fires within a few wheel ticks (100 us each) of its deadline. The
  // median is immune to the odd descheduling on a shared machine; the bound on the worst is loose.
  std::vector<Clock::duration> sorted = lateness;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_LT(sorted[kTimers / 2], 5ms) << "median lateness";
  EXPECT_LT(sorted.back(), 1s) << "worst lateness";
}

TEST_F(EventCenterTest, ZeroDelayTimerRunsOnNextIteration) {
  bool fired = false;
  center.create_timer(0ns, [&] { fired = true; });
  ASSERT_TRUE(run_until(center, [&] { return fired; }, 2s));
}

TEST_F(EventCenterTest, HundredThousandTimersAllFire) {
  constexpr int kTimers = 100'000;
  std::mt19937 rng(7);
  int fired = 0;
  for (int i = 0; i < kTimers; ++i) center.create_timer(std::chrono::microseconds(rng() % 300'000), [&] { ++fired; });
  ASSERT_TRUE(run_until(center, [&] { return fired == kTimers; }, 20s)) << fired << " fired";
  EXPECT_EQ(center.pending_timers(), 0u);
}

TEST_F(EventCenterTest, CancelledTimersNeverFire) {
  constexpr int kTimers = 1000;
  std::vector<int> fired(kTimers, 0);
  std::vector<EventCenter::TimerId> ids;
  for (int i = 0; i < kTimers; ++i) ids.push_back(center.create_timer(std::chrono::microseconds(i * 20), [&, i] { ++fired[i]; }));
  for (int i = 1; i < kTimers; i += 2) EXPECT_TRUE(center.cancel_timer(ids[i]));
  for (int i = 1; i < kTimers; i += 2) EXPECT_FALSE(center.cancel_timer(ids[i]));
  EXPECT_EQ(center.pending_timers(), size_t(kTimers / 2));
  ASSERT_TRUE(run_until(center, [&] { return center.pending_timers() == 0; }));
  for (int i = 0; i < kTimers; ++i) EXPECT_EQ(fired[i], i % 2 == 0 ? 1 : 0) << "timer " << i;
  EXPECT_FALSE(center.cancel_timer(ids[0]));  // already fired
  EXPECT_FALSE(center.cancel_timer(0));
}

TEST_F(EventCenterTest, MillionTimersAddAndCancelHalf) {
  constexpr int kTimers = 1'000'000;
  const auto begin = Clock::now();
  std::vector<EventCenter::TimerId> ids(kTimers);
  for (int i = 0; i < kTimers; ++i) ids[i] = center.create_timer(std::chrono::milliseconds(1000 + i % 600'000), [] {});
  for (int i = 0; i < kTimers; i += 2) ASSERT_TRUE(center.cancel_timer(ids[i]));
  const auto took = Clock::now() - begin;
  EXPECT_EQ(center.pending_timers(), size_t(kTimers / 2));
  std::printf("1M timers added + 500k cancelled in %.1f ms\n",
              std::chrono::duration<double, std::milli>(took).count());
  EXPECT_LT(took, 20s);
  for (int i = 1; i < kTimers; i += 2) ASSERT_TRUE(center.cancel_timer(ids[i]));
  EXPECT_EQ(center.pending_timers(), 0u);
}

TEST_F(EventCenterTest, ClosuresFromFourProducersArriveFifoPerProducer) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 100'000;
  EventCenter loop(make_epoll_driver(), "loop");
  std::vector<int> next_expected(kProducers, 0);
  std::atomic<int> out_of_order{0};
  int total = 0;  // touched only on the loop thread
  std::thread runner([&] {
    loop.set_owner();
    loop.run();
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int seq = 0; seq < kPerProducer; ++seq) {
        loop.dispatch_external([&, p, seq] {
          if (next_expected[p] != seq) out_of_order.fetch_add(1);
          next_expected[p] = seq + 1;
          ++total;
        });
      }
    });
  }
  for (auto& t : producers) t.join();
  // Runs after every closure above (FIFO per producer: this thread queued after the joins).
  int seen = 0;
  auto done = std::async(std::launch::async, [&] { loop.submit_and_wait([&] { seen = total; }); });
  const bool finished = done.wait_for(30s) == std::future_status::ready;
  loop.stop();
  runner.join();
  ASSERT_TRUE(finished) << "loop did not drain the closures within 30 s";
  EXPECT_EQ(seen, kProducers * kPerProducer);
  EXPECT_EQ(out_of_order.load(), 0);
}

TEST_F(EventCenterTest, SubmitAndWaitRunsInlineOnOwnerAndPropagatesExceptions) {
  bool ran = false;
  center.submit_and_wait([&] { ran = true; });  // owner thread: inline, no loop needed
  EXPECT_TRUE(ran);

  EventCenter loop(make_epoll_driver(), "loop");
  std::thread runner([&] { loop.run(); });
  std::thread::id where;
  loop.submit_and_wait([&] { where = std::this_thread::get_id(); });
  EXPECT_EQ(where, runner.get_id());
  EXPECT_THROW(loop.submit_and_wait([] { throw std::runtime_error("boom"); }), std::runtime_error);
  loop.stop();
  runner.join();
}

TEST_F(EventCenterTest, StopFromAnotherThreadWakesABlockedLoop) {
  EventCenter loop(make_epoll_driver(), "loop");
  std::promise<void> started;
  std::thread runner([&] {
    loop.set_owner();
    started.set_value();
    // One long wait: only stop()'s wake-up can end it early.
    while (!loop.stopping()) loop.process_events(30s);
  });
  started.get_future().wait();
  std::this_thread::sleep_for(20ms);
  const auto begin = Clock::now();
  loop.stop();
  runner.join();
  EXPECT_LT(Clock::now() - begin, 10s);
}

TEST_F(EventCenterTest, ClosuresDispatchedBeforeStopStillRun) {
  EventCenter loop(make_epoll_driver(), "loop");
  std::thread runner([&] { loop.run(); });
  std::atomic<int> ran{0};
  for (int i = 0; i < 5000; ++i) loop.dispatch_external([&] { ran.fetch_add(1); });
  loop.stop();
  runner.join();
  EXPECT_EQ(ran.load(), 5000);
}

TEST_F(EventCenterTest, PipeReadableAndWritableCallbacks) {
  Pipe p;
  int readable = 0, writable = 0;
  char buf[16];
  ASSERT_EQ(center.create_file_event(p.reader(), kEventReadable, [&](int fd, int mask) {
    EXPECT_EQ(fd, p.reader());
    EXPECT_EQ(mask, kEventReadable);
    ++readable;
    EXPECT_EQ(read(fd, buf, sizeof(buf)), 3);
  }), 0);
  ASSERT_EQ(center.create_file_event(p.writer(), kEventWritable, [&](int, int mask) {
    EXPECT_EQ(mask, kEventWritable);
    ++writable;
  }), 0);
  ASSERT_TRUE(run_until(center, [&] { return writable > 0; }, 2s));
  EXPECT_EQ(readable, 0);
  center.delete_file_event(p.writer(), kEventWritable);
  ASSERT_EQ(write(p.writer(), "abc", 3), 3);
  ASSERT_TRUE(run_until(center, [&] { return readable == 1; }, 2s));
  // Drained: level-triggered epoll must not report it again.
  const int writable_before = writable;
  for (int i = 0; i < 5; ++i) center.process_events(1ms);
  EXPECT_EQ(readable, 1);
  EXPECT_EQ(writable, writable_before);
}

TEST_F(EventCenterTest, CallbackDeletingItsOwnEventStopsFurtherCalls) {
  Pipe p;
  int calls = 0;
  ASSERT_EQ(center.create_file_event(p.reader(), kEventReadable, [&](int fd, int) {
    ++calls;
    center.delete_file_event(fd, kEventReadable);  // destroys this very callback's slot
  }), 0);
  ASSERT_EQ(write(p.writer(), "x", 1), 1);  // stays unread: level-triggered would fire forever
  ASSERT_TRUE(run_until(center, [&] { return calls > 0; }, 2s));
  for (int i = 0; i < 5; ++i) center.process_events(1ms);
  EXPECT_EQ(calls, 1);
}

TEST_F(EventCenterTest, ReadCallbackDeletingWriteHalfSkipsTheWriteCallback) {
  // A socketpair end is readable and writable at once, so both bits fire in one iteration.
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  int reads = 0, writes = 0;
  auto on_event = [&](int fd, int mask) {
    if (mask == kEventReadable) {
      ++reads;
      center.delete_file_event(fd, kEventReadable | kEventWritable);
    } else {
      ++writes;
    }
  };
  ASSERT_EQ(write(sv[1], "y", 1), 1);
  ASSERT_EQ(center.create_file_event(sv[0], kEventReadable, on_event), 0);
  ASSERT_EQ(center.create_file_event(sv[0], kEventWritable, on_event), 0);  // keeps the read callback
  ASSERT_TRUE(run_until(center, [&] { return reads > 0; }, 2s));
  for (int i = 0; i < 5; ++i) center.process_events(1ms);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(writes, 0);
  close(sv[0]);
  close(sv[1]);
}

TEST_F(EventCenterTest, RejectsBadFileEvents) {
  EXPECT_LT(center.create_file_event(-1, kEventReadable, [](int, int) {}), 0);
  EXPECT_LT(center.create_file_event(0, 0, [](int, int) {}), 0);
  EXPECT_LT(center.create_file_event(0, kEventReadable, nullptr), 0);
  // Not an open fd: epoll_ctl fails and the error comes back instead of a crash.
  EXPECT_LT(center.create_file_event(1'000'000, kEventReadable, [](int, int) {}), 0);
  center.delete_file_event(12345, kEventReadable);  // unknown: ignored
}

TEST(EpollDriver, WakeupEndsABlockedWaitAndAnEarlierOneSkipsTheNext) {
  expect_wakeup_ends_waits(*make_epoll_driver());
}

// posix.busy_poll: within busy_poll of a wait that found an event, a wait asked to block for
// 300 ms returns at once (it polled); once busy_poll has passed, or without it, it blocks.
TEST(EpollDriver, BusyPollKeepsWaitsFromBlockingForAWhileAfterAnEvent) {
  const auto elapsed_after_event = [](EventDriver& driver, std::chrono::milliseconds pause) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    EXPECT_EQ(driver.add_interest(sv[0], 0, kEventReadable), 0);
    EXPECT_EQ(write(sv[1], "x", 1), 1);
    std::vector<FiredEvent> fired;
    EXPECT_EQ(driver.wait(fired, 1s), 1);
    char byte;
    EXPECT_EQ(read(sv[0], &byte, 1), 1);
    std::this_thread::sleep_for(pause);
    fired.clear();
    const auto start = Clock::now();
    EXPECT_EQ(driver.wait(fired, 300ms), 0);
    const auto elapsed = Clock::now() - start;
    EXPECT_EQ(driver.remove_interest(sv[0], kEventReadable, 0), 0);
    close(sv[0]);
    close(sv[1]);
    return elapsed;
  };
  auto polling = make_epoll_driver(10s);
  EXPECT_LT(elapsed_after_event(*polling, 0ms), 150ms);  // polled: no sleep
  EXPECT_FALSE(polling->last_wait_blocked());
  auto brief = make_epoll_driver(20ms);
  EXPECT_GE(elapsed_after_event(*brief, 50ms), 250ms);  // busy_poll had passed: slept
  EXPECT_TRUE(brief->last_wait_blocked());
  auto sleeping = make_epoll_driver();
  EXPECT_GE(elapsed_after_event(*sleeping, 0ms), 250ms);  // the default sleeps at once
}

}  // namespace
}  // namespace bypass
