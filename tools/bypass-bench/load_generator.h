// The client side's traffic: keeps `depth` messages in flight on every connection (a window),
// refills each slot when its message completes (reply received for reqrep, msgr2 ack for stream),
// optionally after a think time, and records each completion's latency while measuring.
//
// Completions run on the connection's worker thread; each connection's window has its own lock
// (uncontended except against the think-time pacer). Sends of one window happen under that lock
// so tids leave in order and the outstanding tids are always `depth` consecutive values: tid %
// depth is then a unique slot for the send time. What completed is counted per completing thread
// (a Shard, locked against the per-second collector only), not per connection: a latency histogram
// is 60 KiB, and one per connection made a thousand connections' records miss the cache and each
// collection walk 60 MB.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "msgr/messenger.h"
#include "base/buffer_list.h"
#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/latency_histogram.h"

namespace bypass::bench {

using Clock = std::chrono::steady_clock;

// What completed (while measuring) since the previous collection.
struct Interval {
  uint64_t messages = 0;
  uint64_t bytes = 0;  // message payload, one way
  LatencyHistogram latency_ns;
};

class LoadGenerator : public msgr::Dispatcher {
 public:
  LoadGenerator(BenchMode mode, std::chrono::nanoseconds think_time);
  ~LoadGenerator() override;
  LoadGenerator(const LoadGenerator&) = delete;
  LoadGenerator& operator=(const LoadGenerator&) = delete;

  // Before the first case; the connection's session may still be opening.
  void add_connection(msgr::ConnectionRef connection);

  // Starts a case: fills every window with `depth` messages of `message_size` bytes. Nothing is
  // measured until begin_measuring().
  void start_case(uint64_t message_size, int depth);
  // From now on completions are recorded; with count_limit > 0 refills stop after that many.
  void begin_measuring(uint64_t count_limit);
  Interval collect();
  void stop_measuring() { measuring_.store(false); }
  // When the count_limit-th measured message completed (count mode), if it has.
  bool count_reached(Clock::time_point* when) const;
  // Stops measuring and refilling; waits until every window is empty. False on timeout.
  bool finish_case(std::chrono::nanoseconds timeout);

  // The server's ProcessSnapshot text (via the first connection); throws std::runtime_error when
  // no answer comes within `timeout`.
  std::string request_server_stats(std::chrono::nanoseconds timeout);

  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  std::string first_error() const;

  // Dispatcher.
  bool ms_can_fast_dispatch(const msgr::Message& m) const override;
  void ms_fast_dispatch(const msgr::MessageRef& m) override;
  bool ms_dispatch(const msgr::MessageRef& m) override;
  bool ms_handle_reset(const msgr::ConnectionRef& connection) override;
  bool ms_handle_refused(const msgr::ConnectionRef& connection) override;
  void ms_handle_remote_reset(const msgr::ConnectionRef& connection) override;

 private:
  struct Window {
    LoadGenerator* generator = nullptr;  // lets a completion hook capture only {window, tid}
    msgr::ConnectionRef connection;
    std::mutex lock;
    std::vector<Clock::time_point> sent_at;  // by tid % depth
    uint64_t sent = 0;                       // tids 1..sent went out
    uint64_t completed = 0;
  };
  // What one completing thread measured since the last collection.
  struct Shard {
    std::mutex lock;
    Interval interval;
  };

  void send_next(Window& window);     // window.lock held
  void completed(Window& window, uint64_t tid);
  void failed(const std::string& what);
  void pace_loop();
  // The calling thread's shard, made on its first completion.
  Shard& shard_of_this_thread();
  // Empties every shard's interval.
  void reset_shards();

  const BenchMode mode_;
  const std::chrono::nanoseconds think_time_;
  std::vector<std::unique_ptr<Window>> windows_;
  std::unordered_map<const msgr::Connection*, Window*> by_connection_;  // read-only once traffic runs
  const uint64_t id_;  // never reused: tells this generator's thread-local shard from an older one's
  std::mutex shards_lock_;
  std::vector<std::unique_ptr<Shard>> shards_;
  BufferList payload_;
  uint64_t message_size_ = 0;
  int depth_ = 1;

  std::atomic<bool> refilling_{false};
  std::atomic<bool> measuring_{false};
  std::atomic<uint64_t> count_limit_{0};
  std::atomic<uint64_t> measured_{0};
  std::atomic<int64_t> count_reached_ns_{0};  // steady_clock since epoch; 0 = not yet

  std::atomic<uint64_t> errors_{0};
  mutable std::mutex error_lock_;
  std::string first_error_;

  std::mutex stats_lock_;
  std::promise<std::string> stats_reply_;
  bool stats_pending_ = false;

  // Think time: windows waiting to send their next message, in due order (one constant delay
  // keeps a FIFO sorted).
  std::mutex pace_lock_;
  std::condition_variable pace_cv_;
  std::deque<std::pair<Clock::time_point, Window*>> pace_queue_;
  bool pace_stop_ = false;
  std::thread pacer_;
};

}  // namespace bypass::bench
