// One check every EventDriver's tests run: wakeup() from another thread ends a blocked wait, and a
// wake-up that arrived before a wait makes that wait return at once without blocking.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "stack/event_center.h"

namespace bypass {

inline void expect_wakeup_ends_waits(EventDriver& driver) {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  std::vector<FiredEvent> fired;
  std::thread waker([&] {
    std::this_thread::sleep_for(20ms);
    driver.wakeup();
  });
  const auto begin = Clock::now();
  EXPECT_EQ(driver.wait(fired, 30s), 0);
  EXPECT_LT(Clock::now() - begin, 10s);
  EXPECT_TRUE(driver.last_wait_blocked());
  EXPECT_TRUE(fired.empty());  // the wake-up eventfd is the driver's own
  waker.join();
  driver.wakeup();
  const auto again = Clock::now();
  EXPECT_EQ(driver.wait(fired, 30s), 0);
  EXPECT_LT(Clock::now() - again, 10s);
  EXPECT_FALSE(driver.last_wait_blocked());
}

}  // namespace bypass
