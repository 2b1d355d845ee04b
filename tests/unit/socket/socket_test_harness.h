// Test harness for the socket-interface suite: builds the stack named by the environment
// (BYPASS_MS_TYPE, default posix), listens on BYPASS_TEST_ADDR (default 127.0.0.1:0), and runs
// per-connection state machines on the workers' event loops (file events, no busy loops).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "stack/network_stack.h"

namespace bypass::testing {

// Defaults + BYPASS_* environment, then the given overrides ("ms.workers=2").
config::Config make_test_config(const std::vector<std::string>& overrides = {});
// BYPASS_TEST_ADDR or 127.0.0.1:0; throws std::runtime_error on a malformed value.
SocketAddress test_listen_address();

// The main() of a suite that runs on the transport named by BYPASS_MS_TYPE: checks the test
// configuration, then calls `probe`, which builds the transport once. The suite is skipped (exit
// 77) only when the transport is rdma or rsocket and this machine has no RDMA device; any other failure to
// build the transport fails it (exit 1): tools/setup.sh installs all that posix and dpdk need.
int run_transport_suite(int argc, char** argv, const std::function<void()>& probe);

// Counts events from worker threads; the test thread waits with a time bound.
class Completion {
 public:
  void signal();
  // True when at least `count` signals arrived within `timeout`.
  bool wait_for(int count, std::chrono::milliseconds timeout);
  int count();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_ = 0;
};

class HandlerPool;

// One socket driven by its worker's EventCenter. Lives in a HandlerPool; everything runs on the
// worker's thread.
class StreamHandler {
 public:
  StreamHandler(HandlerPool& pool, Worker& worker, ConnectedSocket socket);
  virtual ~StreamHandler();
  StreamHandler(const StreamHandler&) = delete;
  StreamHandler& operator=(const StreamHandler&) = delete;

  virtual void start() = 0;
  bool finished() const { return finished_; }

 protected:
  virtual void on_readable() {}
  virtual void on_writable() {}
  // Wait for exactly these events from now on.
  void set_interest(int mask);
  // Stop handling events; the pool destroys this handler (closing the socket) after the current
  // callback returns.
  void finish();

  HandlerPool& pool_;
  Worker& worker_;
  ConnectedSocket socket_;

 private:
  int interest_ = kEventNone;
  int watched_fd_ = -1;
  bool finished_ = false;
};

// Owns the handlers of every worker. spawn/retire run on the worker's own thread.
class HandlerPool {
 public:
  explicit HandlerPool(NetworkStack& stack);
  ~HandlerPool();

  template <class Handler, class... Args>
  Handler* spawn(Worker& worker, Args&&... args) {
    auto handler = std::make_unique<Handler>(*this, worker, std::forward<Args>(args)...);
    Handler* raw = handler.get();
    live_[worker.id()].emplace(raw, std::move(handler));
    raw->start();
    return raw;
  }
  void retire(Worker& worker, StreamHandler* handler);
  // Destroys every handler on its own worker thread (before the stack stops).
  void clear();
  // Handlers alive on all workers (runs on each worker; call from the test thread).
  size_t live_count();

 private:
  NetworkStack& stack_;
  std::vector<std::map<StreamHandler*, std::unique_ptr<StreamHandler>>> live_;
};

// Listens on every worker (listen_per_worker) or on worker 0 and hands accepted sockets out to
// the least-loaded worker; `on_accept` runs on the worker that owns the new socket.
class TestListener {
 public:
  using AcceptCallback = std::function<void(Worker&, ConnectedSocket)>;
  TestListener(NetworkStack& stack, AcceptCallback on_accept);
  ~TestListener();

  // Returns 0 or the -errno of the first failing listen.
  int listen(SocketAddress addr, const ListenOptions& lopts, const SocketOptions& sopts);
  void close();
  SocketAddress address() const { return address_; }
  // A connectable address: the bound one, with an unspecified IP replaced by loopback.
  SocketAddress connect_address() const;

 private:
  void accept_ready(Worker& worker);

  NetworkStack& stack_;
  AcceptCallback on_accept_;
  SocketOptions sopts_;
  std::vector<ServerSocket> servers_;  // indexed by worker id; empty when not listening there
  SocketAddress address_;
};

// Runs `fn` on worker `w`'s thread and waits for it.
void run_on(Worker& w, std::function<void()> fn);

// A test fixture's teardown, in the only safe order: stop accepting, retire the handlers on
// their workers, then stop the stack they ran on.
void tear_down_transport(std::unique_ptr<TestListener>& listener, std::unique_ptr<HandlerPool>& pool,
                         const std::shared_ptr<NetworkStack>& stack);

}  // namespace bypass::testing
