#include "tools/bypass-bench/echo_connections.h"

#include <cerrno>

#include "base/log.h"

namespace bypass::bench {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 16;  // bounded work per callback keeps the loop fair
}  // namespace

BenchConnection::~BenchConnection() { close(); }

void BenchConnection::set_interest(int mask) {
  if (!socket_) return;
  const int fd = socket_.fd();
  const int removed = interest_ & ~mask;
  const int added = mask & ~interest_;
  if (removed != kEventNone) worker_.center().delete_file_event(fd, removed);
  if (added & kEventReadable) {
    worker_.center().create_file_event(fd, kEventReadable, [this](int, int) {
      if (!closed()) on_readable();
    });
  }
  if (added & kEventWritable) {
    worker_.center().create_file_event(fd, kEventWritable, [this](int, int) {
      if (!closed()) on_writable();
    });
  }
  interest_ = mask;
}

void BenchConnection::close() {
  if (!socket_) return;
  set_interest(kEventNone);  // EventCenter runs a copy of the callback, so this is safe inside one
  socket_.close();
}

void ConnectionSet::add(Worker& worker, std::unique_ptr<BenchConnection> connection) {
  per_worker_[worker.id()].push_back(std::move(connection));
}

void ConnectionSet::clear() {
  for (unsigned i = 0; i < stack_.num_workers(); ++i) {
    stack_.worker(i)->center().submit_and_wait([this, i] { per_worker_[i].clear(); });
  }
}

// ---------------------------------------------------------------------------------------------

EchoServerConnection::EchoServerConnection(Worker& worker, ConnectedSocket socket, std::atomic<uint64_t>* received)
    : BenchConnection(worker, std::move(socket)), received_(received) {
  set_interest(kEventReadable);
}

void EchoServerConnection::on_readable() {
  for (int i = 0; i < kReadsPerEvent && pending_.length() < kMaxPending; ++i) {
    const ssize_t r = socket_.zero_copy_read(pending_, kReadChunk);
    if (r == -EAGAIN) break;
    if (r == 0) {
      eof_ = true;
      break;
    }
    if (r < 0) {
      BYPASS_LOG(Debug, "bench", "echo server: read: %s", socket_error_name(static_cast<int>(r)));
      close();
      return;
    }
    if (received_) received_->fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
  }
  flush();
}

void EchoServerConnection::flush() {
  if (!pending_.empty()) {
    const ssize_t r = socket_.send(pending_, false);
    if (r < 0 && r != -EAGAIN) {
      BYPASS_LOG(Debug, "bench", "echo server: send: %s", socket_error_name(static_cast<int>(r)));
      close();
      return;
    }
  }
  if (pending_.empty() && eof_) {
    close();
    return;
  }
  int mask = kEventNone;
  if (!pending_.empty()) mask |= kEventWritable;
  if (!eof_ && pending_.length() < kMaxPending) mask |= kEventReadable;
  set_interest(mask);
}

// ---------------------------------------------------------------------------------------------

void PingPongShared::connect_finished(int error) {
  std::lock_guard lock(mutex_);
  ++finished_;
  if (error == 0) {
    ++succeeded_;
  } else if (first_error_ == 0) {
    first_error_ = error;
  }
  cv_.notify_all();
}

int PingPongShared::wait_connected(int total, std::chrono::milliseconds timeout, int* first_error) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return finished_ >= total; });
  *first_error = first_error_;
  return succeeded_;
}

PingPongConnection::PingPongConnection(Worker& worker, PingPongShared& shared)
    : BenchConnection(worker, ConnectedSocket()), shared_(shared), stats_(*shared.stats.at(worker.id())) {}

void PingPongConnection::connect(const SocketAddress& peer, const SocketOptions& opts) {
  const int rc = worker_.connect(peer, opts, &socket_);
  if (rc < 0) {
    shared_.connect_finished(rc);
    return;
  }
  set_interest(kEventWritable);  // connect progress shows as writability
}

void PingPongConnection::go() {
  if (closed() || connecting_) return;
  const auto now = std::chrono::steady_clock::now();
  for (int i = 0; i < shared_.depth; ++i) enqueue_message(now);
  flush();
}

void PingPongConnection::enqueue_message(std::chrono::steady_clock::time_point now) {
  out_.append(shared_.payload);
  sent_at_.push_back(now);
}

void PingPongConnection::flush() {
  if (!out_.empty()) {
    const ssize_t r = socket_.send(out_, false);
    if (r < 0 && r != -EAGAIN) {
      fail(static_cast<int>(r));
      return;
    }
  }
  set_interest(out_.empty() ? kEventReadable : kEventReadable | kEventWritable);
}

void PingPongConnection::fail(int error) {
  if (shared_.issuing.load(std::memory_order_relaxed)) {
    stats_.errors.fetch_add(1, std::memory_order_relaxed);
    BYPASS_LOG(Error, "bench", "client connection failed: %s", socket_error_name(error));
  }
  close();
}

void PingPongConnection::on_writable() {
  if (connecting_) {
    const int r = socket_.is_connected();
    if (r == 0) return;
    connecting_ = false;
    shared_.connect_finished(r < 0 ? r : 0);
    if (r < 0) {
      close();
      return;
    }
    set_interest(kEventReadable);
    return;
  }
  flush();
}

void PingPongConnection::on_readable() {
  static thread_local char scratch[kReadChunk];
  const size_t message_size = shared_.payload.length();
  bool completed_any = false;
  for (int i = 0; i < kReadsPerEvent; ++i) {
    const ssize_t r = socket_.read(scratch, sizeof(scratch));
    if (r == -EAGAIN) break;
    if (r <= 0) {
      fail(r == 0 ? -ECONNRESET : static_cast<int>(r));
      return;
    }
    received_partial_ += static_cast<size_t>(r);
    const auto now = std::chrono::steady_clock::now();
    const bool measuring = shared_.measuring.load(std::memory_order_relaxed);
    const bool issuing = shared_.issuing.load(std::memory_order_relaxed);
    // The echo keeps byte order, so every message_size bytes complete the oldest message.
    while (received_partial_ >= message_size && !sent_at_.empty()) {
      received_partial_ -= message_size;
      if (measuring) {
        stats_.latency.record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at_.front()).count()));
        stats_.messages.fetch_add(1, std::memory_order_relaxed);
      }
      sent_at_.pop_front();
      if (issuing) enqueue_message(now);
      completed_any = true;
    }
    if (static_cast<size_t>(r) < sizeof(scratch)) break;  // drained for now
  }
  if (completed_any) flush();
}

}  // namespace bypass::bench
