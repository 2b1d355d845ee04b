// EventCenter with the polling driver: userspace event ids, the poll hook, kernel fds mixed in,
// and the idle sleep that a cross-thread dispatch must interrupt.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "stack/event_center.h"

namespace bypass {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct PollingCenter {
  explicit PollingCenter(std::chrono::nanoseconds idle_sleep) {
    auto owned = make_polling_driver(idle_sleep);
    driver = owned.get();
    center = std::make_unique<EventCenter>(std::move(owned), "polling");
    center->set_owner();
  }
  PollingDriver* driver;
  std::unique_ptr<EventCenter> center;
};

TEST(PollingDriver, UserEventIsLevelTriggeredUntilCleared) {
  PollingCenter pc(0ns);
  const int id = pc.driver->create_user_event();
  ASSERT_GE(id, kUserEventBase);
  int reads = 0, writes = 0;
  ASSERT_EQ(pc.center->create_file_event(id, kEventReadable, [&](int fd, int mask) {
    EXPECT_EQ(fd, id);
    EXPECT_EQ(mask, kEventReadable);
    ++reads;
  }), 0);
  for (int i = 0; i < 3; ++i) pc.center->process_events(0ns);
  EXPECT_EQ(reads, 0);
  pc.driver->notify(id, kEventReadable | kEventWritable);  // no write interest yet
  for (int i = 0; i < 3; ++i) pc.center->process_events(0ns);
  EXPECT_EQ(reads, 3);
  // Adding write interest later still sees the pending writable bit.
  ASSERT_EQ(pc.center->create_file_event(id, kEventWritable, [&](int, int mask) {
    EXPECT_EQ(mask, kEventWritable);
    ++writes;
  }), 0);
  pc.center->process_events(0ns);
  EXPECT_EQ(reads, 4);
  EXPECT_EQ(writes, 1);
  pc.driver->clear(id, kEventReadable | kEventWritable);
  for (int i = 0; i < 3; ++i) pc.center->process_events(0ns);
  EXPECT_EQ(reads, 4);
  EXPECT_EQ(writes, 1);
  pc.center->delete_file_event(id, kEventReadable | kEventWritable);
  pc.driver->notify(id, kEventReadable);
  pc.center->process_events(0ns);
  EXPECT_EQ(reads, 4);
  pc.driver->destroy_user_event(id);
  // Ids are recycled; a recycled id starts with no ready bits.
  const int again = pc.driver->create_user_event();
  EXPECT_EQ(again, id);
  ASSERT_EQ(pc.center->create_file_event(again, kEventReadable, [&](int, int) { ++reads; }), 0);
  pc.center->process_events(0ns);
  EXPECT_EQ(reads, 4);
}

TEST(PollingDriver, BadUserIdsAreRejected) {
  PollingCenter pc(0ns);
  EXPECT_LT(pc.center->create_file_event(kUserEventBase + 5, kEventReadable, [](int, int) {}), 0);
  pc.driver->notify(kUserEventBase + 5, kEventReadable);  // logged and ignored
  pc.driver->clear(-3, kEventReadable);
  pc.driver->destroy_user_event(kUserEventBase + 99);
  pc.center->process_events(0ns);
}

TEST(PollingDriver, PollHookRunsEveryIterationAndItsNotifyFiresAtOnce) {
  PollingCenter pc(0ns);
  const int id = pc.driver->create_user_event();
  int hook_calls = 0, fired_at = -1;
  pc.driver->set_poll_hook([&] {
    ++hook_calls;
    if (hook_calls == 5) {
      pc.driver->notify(id, kEventReadable);
      return 1;
    }
    return 0;
  });
  ASSERT_EQ(pc.center->create_file_event(id, kEventReadable, [&](int fd, int) {
    fired_at = hook_calls;
    pc.driver->clear(fd, kEventReadable);
  }), 0);
  for (int i = 0; i < 10; ++i) pc.center->process_events(1ms);
  EXPECT_EQ(hook_calls, 10);
  EXPECT_EQ(fired_at, 5);
}

TEST(PollingDriver, KernelFdIsMixedIn) {
  PollingCenter pc(0ns);
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  int reads = 0;
  ASSERT_EQ(pc.center->create_file_event(fds[0], kEventReadable, [&](int fd, int) {
    char c;
    EXPECT_EQ(read(fd, &c, 1), 1);
    ++reads;
  }), 0);
  ASSERT_EQ(write(fds[1], "k", 1), 1);
  int iterations = 0;
  while (reads == 0 && iterations < 10'000) {
    pc.center->process_events(0ns);
    ++iterations;
  }
  EXPECT_EQ(reads, 1);
  EXPECT_LE(iterations, 64) << "kernel fds should be checked every few dozen iterations";
  pc.center->delete_file_event(fds[0], kEventReadable);
  close(fds[0]);
  close(fds[1]);
}

TEST(PollingDriver, TimersFireWhilePolling) {
  PollingCenter pc(0ns);
  bool fired = false;
  const auto begin = Clock::now();
  pc.center->create_timer(2ms, [&] { fired = true; });
  while (!fired && Clock::now() - begin < 10s) pc.center->process_events(1ms);
  EXPECT_TRUE(fired);
  EXPECT_GE(Clock::now() - begin, 2ms);
}

TEST(PollingDriver, IdleSleepIsInterruptedByDispatchExternal) {
  PollingCenter pc(1ms);
  std::atomic<long> hook_calls{0};
  pc.driver->set_poll_hook([&] {
    hook_calls.fetch_add(1, std::memory_order_relaxed);
    return 0;
  });
  std::atomic<bool> stop{false};
  std::thread loop([&] {
    pc.center->set_owner();
    // A long loop timeout: only a wake-up (or a kernel fd) can end the idle sleep early.
    while (!stop.load()) pc.center->process_events(30s);
  });
  // Let it spin through the idle period and fall asleep, then check it stays asleep.
  long before = 0, after = 0;
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::this_thread::sleep_for(50ms);
    before = hook_calls.load();
    std::this_thread::sleep_for(50ms);
    after = hook_calls.load();
    if (after == before) break;
  }
  EXPECT_EQ(after, before) << "the loop never went to sleep";
  for (int round = 0; round < 3; ++round) {
    auto ran = std::make_shared<std::promise<void>>();
    auto future = ran->get_future();
    const auto sent = Clock::now();
    pc.center->dispatch_external([ran] { ran->set_value(); });
    EXPECT_EQ(future.wait_for(10s), std::future_status::ready) << "round " << round;
    EXPECT_LT(Clock::now() - sent, 10s);
    std::this_thread::sleep_for(30ms);  // back to sleep before the next round
  }
  stop.store(true);
  pc.center->wakeup();
  loop.join();
}

}  // namespace
}  // namespace bypass
