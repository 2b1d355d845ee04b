// A stack without worker threads (ms.worker_threads false): the thread that starts it runs every
// worker's loop through NetworkStack::poll() and nothing of the stack runs anywhere else. The same
// tests run on every transport (BYPASS_MS_TYPE).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <stdexcept>
#include <thread>

#include "tests/unit/socket/socket_test_handlers.h"

namespace bypass::testing {
namespace {

using namespace std::chrono_literals;

class PolledStackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conf_ = std::make_unique<config::Config>(make_test_config({"ms.workers=2", "ms.worker_threads=false"}));
    stack_ = NetworkStack::create(*conf_);
    stack_->start();
    pool_ = std::make_unique<HandlerPool>(*stack_);
  }

  void TearDown() override {
    // Closures the handlers dispatched to themselves (a retired handler's removal) run before the
    // pool goes: here, submit_and_wait runs inline instead of queueing behind them.
    if (stack_ && stack_->polled_here()) stack_->poll();
    tear_down_transport(listener_, pool_, stack_);
  }

  // Polls until `done` or `limit`; true when done.
  template <class Done>
  bool poll_until(const Done& done, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      stack_->poll();
    }
    return true;
  }

  std::unique_ptr<config::Config> conf_;
  std::shared_ptr<NetworkStack> stack_;
  std::unique_ptr<HandlerPool> pool_;
  std::unique_ptr<TestListener> listener_;
};

// An echo of 1 MiB between two sockets of the stack runs on the test's thread, inside poll(), and
// only there: left unpolled, the connection makes no progress at all.
TEST_F(PolledStackTest, TrafficRunsOnlyInsidePollOnTheStartingThread) {
  EXPECT_FALSE(stack_->worker_threads());
  EXPECT_TRUE(stack_->polled_here());
  for (unsigned i = 0; i < stack_->num_workers(); ++i) EXPECT_TRUE(stack_->worker(i)->center().in_thread()) << i;

  listener_ = std::make_unique<TestListener>(*stack_, [this](Worker& w, ConnectedSocket s) {
    pool_->spawn<EchoServer>(w, std::move(s));
  });
  ASSERT_EQ(listener_->listen(test_listen_address(), ListenOptions{}, SocketOptions{}), 0);
  auto bytes = std::make_shared<std::string>(1 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : *bytes) c = static_cast<char>(rng());
  ClientSpec spec;
  spec.payload.append_copy(*bytes);
  spec.expected = bytes;
  spec.expected_length = bytes->size();
  ClientResult result;
  Completion done;
  Worker& w = *stack_->worker(0);
  run_on(w, [&] { pool_->spawn<StreamClient>(w, listener_->connect_address(), std::move(spec), &result, &done); });

  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(result.received, 0u) << "bytes came back while nobody polled";
  ASSERT_TRUE(poll_until([&] { return done.count() == 1; }, 60s)) << "received " << result.received;
  EXPECT_EQ(result.error, 0) << socket_error_name(result.error) << " " << result.detail;
  EXPECT_TRUE(result.verified) << result.detail;
}

// Timers and closures other threads dispatch run inside poll(), on the polling thread; poll() on
// any other thread is refused.
TEST_F(PolledStackTest, TimersAndDispatchedClosuresRunInsidePoll) {
  const std::thread::id polling = std::this_thread::get_id();
  std::atomic<int> timer_fired{0};
  stack_->worker(0)->center().create_timer(1ms, [&] { timer_fired.store(1); });
  std::atomic<bool> closure_ran{false};
  std::thread::id closure_thread;
  std::string refused;
  std::thread other([&] {
    stack_->worker(1)->center().dispatch_external([&] {
      closure_thread = std::this_thread::get_id();
      closure_ran.store(true);
    });
    try {
      stack_->poll();
    } catch (const std::logic_error& e) {
      refused = e.what();
    }
    EXPECT_FALSE(stack_->polled_here());
  });
  other.join();
  EXPECT_NE(refused.find("poll() on a thread that does not run its loops"), std::string::npos) << refused;
  EXPECT_FALSE(closure_ran.load()) << "a closure ran while nobody polled";
  ASSERT_TRUE(poll_until([&] { return closure_ran.load() && timer_fired.load() == 1; }, 10s));
  EXPECT_EQ(closure_thread, polling);
}

// stop() on a thread other than the one that polled (which polls no more) takes the loops over:
// it returns, and the stack is stopped.
TEST_F(PolledStackTest, StopOnAnotherThreadTakesTheLoopsOver) {
  pool_->clear();
  pool_.reset();
  std::thread other([&] { stack_->stop(); });
  other.join();
  EXPECT_FALSE(stack_->polled_here());
  stack_.reset();
}

}  // namespace
}  // namespace bypass::testing
