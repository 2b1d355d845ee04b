// What the RDMA transport tests on real verbs share (tests/rdma, run inside tools/rxe-vm): a
// pattern source and sink, the kernel's view of our verbs resources, and the fixture that starts
// an rdma stack and waits for its workers to be idle.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stack/rdma/rdma_stack.h"
#include "tests/unit/socket/socket_test_handlers.h"
#include "tests/unit/socket/socket_test_harness.h"

namespace bypass::testing {

using namespace std::chrono_literals;
using rdma::RdmaNetworkStack;

inline char pattern_byte(size_t i) { return static_cast<char>((i * 131 + (i >> 12)) & 0xff); }

// The pattern's bytes [offset, offset + len) equal `data` (a memcmp against a precomputed copy: a
// byte-by-byte check of 64 MiB under the sanitizers keeps a worker busy for seconds).
bool matches_pattern(const char* data, size_t offset, size_t len);

// Starts this test executable again as a child process with `args` (a role its main() dispatches
// on, then the role's arguments): a peer with a stack of its own, which a test can let die. Returns
// the child's pid, or -1 when fork() failed.
pid_t spawn_self(const std::vector<std::string>& args);

// Sends `total` pattern bytes in 256 KiB batches as fast as the transport accepts, then shuts down.
// `result` (optional) gets 0 or the error that ended it.
class PatternSource final : public StreamHandler {
 public:
  PatternSource(HandlerPool& pool, Worker& worker, ConnectedSocket socket, size_t total,
                std::atomic<int>* eagains, Completion* done, std::atomic<int>* result = nullptr)
      : StreamHandler(pool, worker, std::move(socket)), total_(total), eagains_(eagains), done_(done),
        result_(result) {}
  void start() override { set_interest(kEventWritable); }

 private:
  void on_writable() override {
    if (!connected_) {
      const int rc = socket_.is_connected();
      if (rc == 0) return;
      if (rc < 0) return finish_with(rc);
      connected_ = true;
    }
    while (sent_ < total_) {
      if (pending_.empty()) {
        const size_t n = std::min<size_t>(256 * 1024, total_ - sent_ - pending_.length());
        char* p = pending_.append_hole(n);
        for (size_t i = 0; i < n; ++i) p[i] = pattern_byte(sent_ + i);
      }
      const ssize_t n = socket_.send(pending_, false);
      if (n == -EAGAIN) {
        eagains_->fetch_add(1);
        return;  // writable comes back when chunks do
      }
      if (n < 0) return finish_with(static_cast<int>(n));
      sent_ += static_cast<size_t>(n);
    }
    socket_.shutdown();
    finish_with(0);
  }
  void finish_with(int rc) {
    if (result_) result_->store(rc);
    done_->signal();
    finish();
  }

  size_t total_;
  size_t sent_ = 0;
  BufferList pending_;
  bool connected_ = false;
  std::atomic<int>* eagains_;
  Completion* done_;
  std::atomic<int>* result_;
};

// Reads (after an optional delay) and checks every byte against the pattern until EOF.
class PatternSink final : public StreamHandler {
 public:
  // `zero_copy`: read with zero_copy_read() (the messenger's way) instead of read().
  PatternSink(HandlerPool& pool, Worker& worker, ConnectedSocket socket, std::chrono::milliseconds delay,
              std::atomic<size_t>* received, std::atomic<int>* result, Completion* done, bool zero_copy = false)
      : StreamHandler(pool, worker, std::move(socket)), delay_(delay), received_(received), result_(result),
        done_(done), zero_copy_(zero_copy) {}
  // A negative delay: not until resume() (on the worker's thread).
  void start() override {
    if (delay_ >= 0ms) worker_.center().create_timer(delay_, [this] { resume(); });
  }
  void resume() { set_interest(kEventReadable); }

 private:
  void on_readable() override {
    char buf[65536];
    for (int i = 0; i < 64; ++i) {
      BufferList got;
      const ssize_t n = zero_copy_ ? socket_.zero_copy_read(got, size_t{4} << 20) : socket_.read(buf, sizeof(buf));
      if (n == -EAGAIN) return;
      if (n <= 0) return complete(n == 0 ? 1 : static_cast<int>(n));
      size_t k = 0;
      auto check = [&](const char* p, size_t len) {
        const bool ok = matches_pattern(p, offset_ + k, len);
        k += len;
        return ok;
      };
      if (zero_copy_) {
        for (const BufferSegment& seg : got.segments())
          if (!check(seg.data(), seg.length())) return complete(-EBADMSG);
      } else if (!check(buf, static_cast<size_t>(n))) {
        return complete(-EBADMSG);
      }
      offset_ += static_cast<size_t>(n);
      received_->store(offset_);
    }
  }
  void complete(int result) {
    result_->store(result);
    done_->signal();
    finish();
  }

  std::chrono::milliseconds delay_;
  size_t offset_ = 0;
  std::atomic<size_t>* received_;
  std::atomic<int>* result_;
  Completion* done_;
  bool zero_copy_;
};


// Our process's QPs (MRs, rdma_cm ids) the kernel still tracks, from `rdma resource show`. The
// kernel records the creating thread's id, not the process's, and workers create most resources:
// any thread of this process counts.
int kernel_resources(const char* kind);

class RdmaTransport : public ::testing::Test {
 protected:
  void start(std::vector<std::string> overrides) {
    overrides.push_back("ms.type=rdma");
    conf_ = make_test_config(overrides);
    stack_ = NetworkStack::create(conf_);
    stack_->start();
    pool_ = std::make_unique<HandlerPool>(*stack_);
  }
  // Declared after a test's locals: stops every handler and worker before those locals (that
  // handlers point to) are destroyed, also when an assertion returns early.
  struct StopFirst {
    RdmaTransport* t;
    ~StopFirst() { t->TearDown(); }
  };
  void TearDown() override {
    tear_down_transport(listener_, pool_, stack_);
  }
  RdmaNetworkStack& rdma() { return static_cast<RdmaNetworkStack&>(*stack_); }
  SocketAddress listen(TestListener::AcceptCallback cb) {
    listener_ = std::make_unique<TestListener>(*stack_, std::move(cb));
    EXPECT_EQ(listener_->listen(test_listen_address(), ListenOptions{}, SocketOptions{}), 0);
    return listener_->connect_address();
  }
  // Waits (bounded) until every worker has torn down all of its connections.
  bool wait_idle(std::chrono::seconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      bool idle = true;
      for (unsigned i = 0; i < stack_->num_workers(); ++i) {
        const auto s = rdma().worker_stats(i);
        idle = idle && s.live_connections == 0 && s.tx_chunks_in_use == 0 && s.rx_chunks_held == 0;
      }
      if (idle) return true;
      std::this_thread::sleep_for(20ms);
    }
    for (unsigned i = 0; i < stack_->num_workers(); ++i) {
      const auto s = rdma().worker_stats(i);
      std::fprintf(stderr, "worker %u not idle: %zu connections, %zu tx chunks in use, %zu rx chunks held, %zu "
                   "posted, %zu sends outstanding\n", i, s.live_connections, s.tx_chunks_in_use,
                   s.rx_chunks_held, s.rx_chunks_posted, s.sends_outstanding);
    }
    return false;
  }

  config::Config conf_;
  std::shared_ptr<NetworkStack> stack_;
  std::unique_ptr<HandlerPool> pool_;
  std::unique_ptr<TestListener> listener_;
};

// The child processes the tests fork (argv[1] names the role); returns -1 when argv names none.
int run_rendezvous_child(int argc, char** argv);

}  // namespace bypass::testing
