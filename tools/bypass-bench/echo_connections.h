// The two ends of the echo benchmark: a server connection that echoes bytes back, and a client
// connection that keeps `depth` messages in flight and times each round trip. Both run entirely
// on their worker's thread, driven by its EventCenter.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "stack/network_stack.h"
#include "tools/bypass-bench/latency_histogram.h"

namespace bypass::bench {

class BenchConnection {
 public:
  BenchConnection(Worker& worker, ConnectedSocket socket)
      : worker_(worker), socket_(std::move(socket)) {}
  virtual ~BenchConnection();
  BenchConnection(const BenchConnection&) = delete;
  BenchConnection& operator=(const BenchConnection&) = delete;

 protected:
  virtual void on_readable() = 0;
  virtual void on_writable() = 0;
  void set_interest(int mask);
  // Stops all events and closes the socket; the object stays until its ConnectionSet is cleared.
  void close();
  bool closed() const { return !socket_; }

  Worker& worker_;
  ConnectedSocket socket_;

 private:
  int interest_ = kEventNone;
};

// Owns connections on every worker of one stack. add() runs on the connection's worker thread;
// clear() from any other thread (it runs the destruction on each worker and waits).
class ConnectionSet {
 public:
  explicit ConnectionSet(NetworkStack& stack) : stack_(stack), per_worker_(stack.num_workers()) {}
  void add(Worker& worker, std::unique_ptr<BenchConnection> connection);
  void clear();

 private:
  NetworkStack& stack_;
  std::vector<std::vector<std::unique_ptr<BenchConnection>>> per_worker_;
};

class EchoServerConnection final : public BenchConnection {
 public:
  // `received`, when given, counts every byte read (bypass-pmd's echo server reports totals).
  EchoServerConnection(Worker& worker, ConnectedSocket socket, std::atomic<uint64_t>* received = nullptr);

 private:
  void on_readable() override;
  void on_writable() override { flush(); }
  void flush();

  static constexpr size_t kMaxPending = 4 << 20;  // stop reading while this much is unsent
  BufferList pending_;
  bool eof_ = false;
  std::atomic<uint64_t>* received_;
};

// Per-worker client statistics. `latency` is written only by the worker thread; read it after
// the connections stopped. The counters may be read at any time.
struct alignas(64) ClientWorkerStats {
  LatencyHistogram latency;
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> errors{0};
};

// State shared by every client connection of one job.
struct PingPongShared {
  BufferSegment payload;  // one message; every send borrows it (no copies)
  int depth = 1;
  std::vector<std::unique_ptr<ClientWorkerStats>> stats;  // by worker id
  std::atomic<bool> measuring{false};                     // count and time completions
  std::atomic<bool> issuing{true};                        // send a new message per completion

  // Connect phase bookkeeping.
  void connect_finished(int error);
  // Waits until `total` connects finished or `timeout`; returns the count that succeeded and the
  // first error.
  int wait_connected(int total, std::chrono::milliseconds timeout, int* first_error);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int finished_ = 0;
  int succeeded_ = 0;
  int first_error_ = 0;
};

class PingPongConnection final : public BenchConnection {
 public:
  PingPongConnection(Worker& worker, PingPongShared& shared);
  // Starts the connect; reports to shared.connect_finished() once it resolves.
  void connect(const SocketAddress& peer, const SocketOptions& opts);
  // Puts `depth` messages in flight (worker thread).
  void go();

 private:
  void on_readable() override;
  void on_writable() override;
  void enqueue_message(std::chrono::steady_clock::time_point now);
  void flush();
  void fail(int error);

  PingPongShared& shared_;
  ClientWorkerStats& stats_;
  bool connecting_ = true;
  size_t received_partial_ = 0;  // bytes of the oldest in-flight message received so far
  std::deque<std::chrono::steady_clock::time_point> sent_at_;
  BufferList out_;
};

}  // namespace bypass::bench
