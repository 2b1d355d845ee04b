// EventCenter with the rsocket transport's rpoll driver, on ordinary fds: rpoll() polls an fd that
// is not an rsocket like poll() does (rsocket(7)), so the driver's bookkeeping — interest by fd,
// level-triggered reports, wake-ups, hang-ups of timed-out connects — is tested here without an
// RDMA device. Over rsockets it runs in the soft-RoCE guest (tests/rdma/rsocket_in_guest.sh).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <future>
#include <stdexcept>
#include <thread>

#include "stack/event_center.h"
#include "stack/rsocket/rpoll_driver.h"
#include "tests/unit/stack/driver_wakeup_check.h"
#include "tests/unit/stack/test_pipe.h"

namespace bypass {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct RpollCenter {
  RpollCenter() {
    auto owned = make_rpoll_driver();
    driver = owned.get();
    center = std::make_unique<EventCenter>(std::move(owned), "rpoll");
    center->set_owner();
  }
  RpollDriver* driver;
  std::unique_ptr<EventCenter> center;
};

TEST(RpollDriver, ReadableAndWritableAreLevelTriggeredPerFd) {
  RpollCenter rc;
  std::array<Pipe, 3> pipes;
  std::array<int, 3> reads{};
  for (size_t i = 0; i < pipes.size(); ++i) {
    ASSERT_EQ(rc.center->create_file_event(pipes[i].reader(), kEventReadable, [&, i](int fd, int mask) {
      EXPECT_EQ(fd, pipes[i].reader());
      EXPECT_EQ(mask, kEventReadable);
      ++reads[i];
    }), 0);
  }
  int writes = 0;
  ASSERT_EQ(rc.center->create_file_event(pipes[0].writer(), kEventWritable, [&](int, int) { ++writes; }), 0);
  rc.center->process_events(0ns);
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(reads, (std::array<int, 3>{0, 0, 0}));
  rc.center->delete_file_event(pipes[0].writer(), kEventWritable);

  // Unread bytes are reported on every iteration; the first pipe's slot is freed in between, so
  // the others' slots move and must still belong to their own fds.
  ASSERT_EQ(write(pipes[2].writer(), "z", 1), 1);
  ASSERT_EQ(write(pipes[1].writer(), "y", 1), 1);
  rc.center->process_events(0ns);
  rc.center->delete_file_event(pipes[0].reader(), kEventReadable);
  rc.center->process_events(0ns);
  EXPECT_EQ(reads, (std::array<int, 3>{0, 2, 2}));
  char byte;
  ASSERT_EQ(read(pipes[1].reader(), &byte, 1), 1);
  rc.center->process_events(0ns);
  EXPECT_EQ(reads, (std::array<int, 3>{0, 2, 3}));
  EXPECT_EQ(writes, 1);
  // The moved slot answers to its fd's interest changes: the third pipe goes quiet, the second
  // (written again) does not.
  rc.center->delete_file_event(pipes[2].reader(), kEventReadable);
  ASSERT_EQ(write(pipes[1].writer(), "y", 1), 1);
  rc.center->process_events(0ns);
  rc.center->process_events(0ns);
  EXPECT_EQ(reads, (std::array<int, 3>{0, 4, 3}));
}

TEST(RpollDriver, WakeupEndsABlockedWaitAndAnEarlierOneSkipsTheNext) {
  expect_wakeup_ends_waits(*make_rpoll_driver());
}

TEST(RpollDriver, DispatchFromAnotherThreadAndTimersWakeTheLoop) {
  RpollCenter rc;
  EventCenter& loop = *rc.center;
  bool timer_fired = false;
  loop.create_timer(2ms, [&] { timer_fired = true; });
  const auto begin = Clock::now();
  while (!timer_fired && Clock::now() - begin < 10s) loop.process_events(1s);
  EXPECT_TRUE(timer_fired);
  EXPECT_LT(Clock::now() - begin, 900ms) << "the wait did not end at the timer";

  std::promise<void> ran;
  std::thread other([&] { loop.dispatch_external([&] { ran.set_value(); }); });
  auto future = ran.get_future();
  const auto start = Clock::now();
  while (future.wait_for(0s) != std::future_status::ready && Clock::now() - start < 10s) loop.process_events(30s);
  other.join();
  EXPECT_EQ(future.wait_for(0s), std::future_status::ready);
}

TEST(RpollDriver, HangupIsReportedUntilTheInterestGoes) {
  RpollCenter rc;
  Pipe silent, unwatched;
  int events = 0;
  int last_mask = 0;
  // A pipe's read end that nobody writes to: silent, like an rsocket still connecting.
  ASSERT_EQ(rc.center->create_file_event(silent.reader(), kEventReadable, [&](int, int mask) {
    ++events;
    last_mask = mask;
  }), 0);
  rc.driver->report_hangup(unwatched.reader());  // no interest: ignored
  rc.center->process_events(0ns);
  EXPECT_EQ(events, 0);

  rc.driver->report_hangup(silent.reader());
  const auto begin = Clock::now();
  rc.center->process_events(30s);  // must not block: the hang-up is pending
  EXPECT_LT(Clock::now() - begin, 10s);
  rc.center->process_events(0ns);
  EXPECT_EQ(events, 2);
  EXPECT_EQ(last_mask, kEventReadable);

  // A new registration of the same fd starts clean.
  rc.center->delete_file_event(silent.reader(), kEventReadable);
  ASSERT_EQ(rc.center->create_file_event(silent.reader(), kEventReadable, [&](int, int) { ++events; }), 0);
  rc.center->process_events(0ns);
  EXPECT_EQ(events, 2);
}

}  // namespace
}  // namespace bypass
