#include "tools/bypass-bench/load_generator.h"

#include <atomic>
#include <stdexcept>

#include "tools/bypass-bench/bench_protocol.h"

namespace bypass::bench {

namespace {

int64_t ticks(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::atomic<uint64_t> generators_made{0};

}  // namespace

LoadGenerator::LoadGenerator(BenchMode mode, std::chrono::nanoseconds think_time)
    : mode_(mode), think_time_(think_time), id_(generators_made.fetch_add(1) + 1) {
  if (think_time_.count() > 0) pacer_ = std::thread([this] { pace_loop(); });
}

LoadGenerator::~LoadGenerator() {
  {
    std::lock_guard<std::mutex> guard(pace_lock_);
    pace_stop_ = true;
  }
  pace_cv_.notify_all();
  if (pacer_.joinable()) pacer_.join();
}

void LoadGenerator::add_connection(msgr::ConnectionRef connection) {
  auto window = std::make_unique<Window>();
  window->generator = this;
  window->connection = std::move(connection);
  by_connection_[window->connection.get()] = window.get();
  windows_.push_back(std::move(window));
}

void LoadGenerator::start_case(uint64_t message_size, int depth) {
  payload_ = BufferList();
  std::string bytes(message_size, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + 7);
  // Every worker appends this to its messages at once: the one storage counted across threads.
  payload_.append(BufferSegment::copy_of(bytes.data(), bytes.size(), BufferSharing::across_threads));
  message_size_ = message_size;
  depth_ = depth;
  measuring_.store(false);
  measured_.store(0);
  count_reached_ns_.store(0);
  refilling_.store(true);
  for (auto& window : windows_) {
    std::lock_guard<std::mutex> guard(window->lock);
    window->sent_at.assign(static_cast<size_t>(depth), Clock::time_point());
    for (int i = 0; i < depth; ++i) send_next(*window);
  }
}

LoadGenerator::Shard& LoadGenerator::shard_of_this_thread() {
  thread_local uint64_t owner = 0;
  thread_local Shard* shard = nullptr;
  if (owner != id_) {
    std::lock_guard<std::mutex> guard(shards_lock_);
    shards_.push_back(std::make_unique<Shard>());
    shard = shards_.back().get();
    owner = id_;
  }
  return *shard;
}

void LoadGenerator::reset_shards() {
  std::lock_guard<std::mutex> guard(shards_lock_);
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> shard_guard(shard->lock);
    shard->interval.messages = 0;
    shard->interval.bytes = 0;
    shard->interval.latency_ns.reset();
  }
}

void LoadGenerator::begin_measuring(uint64_t count_limit) {
  reset_shards();  // nothing is recorded before measuring_ is set, but a previous case's may be
  count_limit_.store(count_limit);
  measuring_.store(true);  // seq_cst: a worker that sees it also sees the limit
}

Interval LoadGenerator::collect() {
  Interval total;
  std::lock_guard<std::mutex> guard(shards_lock_);
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> shard_guard(shard->lock);
    total.messages += shard->interval.messages;
    total.bytes += shard->interval.bytes;
    total.latency_ns.merge(shard->interval.latency_ns);
    shard->interval.messages = 0;
    shard->interval.bytes = 0;
    shard->interval.latency_ns.reset();
  }
  return total;
}

bool LoadGenerator::count_reached(Clock::time_point* when) const {
  const int64_t ns = count_reached_ns_.load();
  if (ns == 0) return false;
  *when = Clock::time_point(std::chrono::nanoseconds(ns));
  return true;
}

bool LoadGenerator::finish_case(std::chrono::nanoseconds timeout) {
  measuring_.store(false);
  refilling_.store(false);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    bool drained = true;
    for (auto& window : windows_) {
      std::lock_guard<std::mutex> guard(window->lock);
      if (window->completed != window->sent) drained = false;
    }
    if (drained) break;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Windows waiting out a think time hold no message: forget them.
  std::lock_guard<std::mutex> guard(pace_lock_);
  pace_queue_.clear();
  return true;
}

void LoadGenerator::send_next(Window& window) {
  const uint64_t tid = ++window.sent;
  auto m = msgr::make_message(mode_ == BenchMode::RequestReply ? kBenchRequest : kBenchStream);
  m->set_tid(tid);
  m->data().append(payload_);  // shares the payload's storage: no copy per message
  if (mode_ == BenchMode::Stream) {
    // Two words of capture: std::function keeps them inline (libstdc++: 16 bytes), where a third
    // (`this`) made it allocate once per message.
    Window* target = &window;
    m->set_completion([target, tid](bool delivered) {
      if (delivered) target->generator->completed(*target, tid);
      else target->generator->failed("a message was dropped (connection closed)");
    });
  }
  window.sent_at[tid % static_cast<uint64_t>(depth_)] = Clock::now();
  window.connection->send_message(std::move(m));
}

void LoadGenerator::completed(Window& window, uint64_t tid) {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> guard(window.lock);
  ++window.completed;
  bool refill = refilling_.load();
  if (measuring_.load()) {
    const uint64_t limit = count_limit_.load();
    const uint64_t n = measured_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (limit == 0 || n <= limit) {
      const auto latency = now - window.sent_at[tid % static_cast<uint64_t>(depth_)];
      Shard& shard = shard_of_this_thread();
      std::lock_guard<std::mutex> shard_guard(shard.lock);
      shard.interval.latency_ns.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(latency).count()));
      ++shard.interval.messages;
      shard.interval.bytes += message_size_;
    }
    if (limit != 0 && n >= limit) {
      refill = false;
      if (n == limit) count_reached_ns_.store(ticks(now));
    }
  }
  if (!refill) return;
  if (think_time_.count() == 0) {
    send_next(window);
    return;
  }
  {
    std::lock_guard<std::mutex> pace_guard(pace_lock_);
    pace_queue_.emplace_back(now + think_time_, &window);
  }
  pace_cv_.notify_one();
}

void LoadGenerator::pace_loop() {
  std::unique_lock<std::mutex> guard(pace_lock_);
  while (!pace_stop_) {
    if (pace_queue_.empty()) {
      pace_cv_.wait(guard);
      continue;
    }
    const auto [due, window] = pace_queue_.front();
    if (Clock::now() < due) {
      pace_cv_.wait_until(guard, due);
      continue;
    }
    pace_queue_.pop_front();
    guard.unlock();
    {
      std::lock_guard<std::mutex> window_guard(window->lock);
      if (refilling_.load()) send_next(*window);
    }
    guard.lock();
  }
}

std::string LoadGenerator::request_server_stats(std::chrono::nanoseconds timeout) {
  std::future<std::string> answer;
  {
    std::lock_guard<std::mutex> guard(stats_lock_);
    stats_reply_ = std::promise<std::string>();
    answer = stats_reply_.get_future();
    stats_pending_ = true;
  }
  windows_.front()->connection->send_message(std::make_shared<msgr::Message>(kStatsRequest));
  if (answer.wait_for(timeout) != std::future_status::ready)
    throw std::runtime_error("the server did not answer a stats request within " +
                             config::format_duration(timeout));
  return answer.get();
}

std::string LoadGenerator::first_error() const {
  std::lock_guard<std::mutex> guard(error_lock_);
  return first_error_;
}

void LoadGenerator::failed(const std::string& what) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard(error_lock_);
  if (first_error_.empty()) first_error_ = what;
}

bool LoadGenerator::ms_can_fast_dispatch(const msgr::Message& m) const { return m.type() == kBenchReply; }

void LoadGenerator::ms_fast_dispatch(const msgr::MessageRef& m) {
  auto it = by_connection_.find(m->connection().get());
  if (it == by_connection_.end()) {
    failed("a reply arrived on a connection the client did not open");
    return;
  }
  completed(*it->second, m->tid());
}

bool LoadGenerator::ms_dispatch(const msgr::MessageRef& m) {
  if (m->type() != kStatsReply) return false;
  std::lock_guard<std::mutex> guard(stats_lock_);
  if (stats_pending_) {
    stats_pending_ = false;
    stats_reply_.set_value(m->data().to_string());
  }
  return true;
}

bool LoadGenerator::ms_handle_reset(const msgr::ConnectionRef& connection) {
  failed("connection to " + connection->peer_addrs().to_string() + " was reset");
  return true;
}

bool LoadGenerator::ms_handle_refused(const msgr::ConnectionRef& connection) {
  failed("connection to " + connection->peer_addrs().to_string() + " was refused");
  return true;
}

void LoadGenerator::ms_handle_remote_reset(const msgr::ConnectionRef& connection) {
  failed("the server at " + connection->peer_addrs().to_string() + " forgot the session (restarted?)");
}

}  // namespace bypass::bench
