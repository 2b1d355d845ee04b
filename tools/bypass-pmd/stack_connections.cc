#include "tools/bypass-pmd/stack_connections.h"

#include <cerrno>
#include <string>

#include "base/log.h"

namespace bypass::tools {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 16;  // bounded work per callback keeps the loop fair
}  // namespace

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

DiscardConnection::DiscardConnection(Worker& worker, ConnectedSocket socket, ServerTotals& totals)
    : BenchConnection(worker, std::move(socket)), totals_(totals) {
  set_interest(kEventReadable);
}

void DiscardConnection::on_readable() {
  for (int i = 0; i < kReadsPerEvent; ++i) {
    BufferList dropped;
    const ssize_t r = socket_.zero_copy_read(dropped, kReadChunk);
    if (r == -EAGAIN) return;
    if (r <= 0) {
      if (r < 0) BYPASS_LOG(Debug, "bypass-pmd", "discard server: read: %s", socket_error_name(static_cast<int>(r)));
      close();
      return;
    }
    totals_.received.fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
  }
}

SendConnection::SendConnection(Worker& worker, SendProgress& progress, uint64_t total, uint64_t seed)
    : BenchConnection(worker, ConnectedSocket()), progress_(progress), total_(total), random_(seed) {}

int SendConnection::connect(const SocketAddress& peer, const SocketOptions& options) {
  const int rc = worker_.connect(peer, options, &socket_);
  if (rc < 0) {
    progress_.error.store(rc);
    return rc;
  }
  set_interest(kEventWritable);  // connect progress shows as writability
  return 0;
}

void SendConnection::fail(int error) {
  progress_.error.store(error);
  close();
}

void SendConnection::fill() {
  while (queued_ < total_ && out_.length() < 2 * kChunk) {
    const size_t length = static_cast<size_t>(std::min<uint64_t>(kChunk, total_ - queued_));
    BufferSegment chunk = BufferSegment::allocate(length);
    auto* words = reinterpret_cast<uint8_t*>(chunk.data());
    for (size_t i = 0; i < length; i += 8) {
      const uint64_t value = random_();
      std::memcpy(words + i, &value, std::min<size_t>(8, length - i));
    }
    out_.append(std::move(chunk));
    queued_ += length;
  }
}

void SendConnection::on_writable() {
  if (connecting_) {
    const int r = socket_.is_connected();
    if (r == 0) return;
    connecting_ = false;
    if (r < 0) return fail(r);
    progress_.connected_at.store(steady_now_ns());
  }
  while (true) {
    fill();
    if (out_.empty()) break;
    const size_t before = out_.length();
    const ssize_t r = socket_.send(out_, queued_ < total_);
    if (r < 0 && r != -EAGAIN) return fail(static_cast<int>(r));
    progress_.sent.fetch_add(before - out_.length(), std::memory_order_relaxed);
    if (!out_.empty()) break;  // the send buffer is full: wait for writable
  }
  if (out_.empty() && queued_ == total_ && !shut_down_) {
    shut_down_ = true;
    progress_.all_sent_at.store(steady_now_ns());
    socket_.shutdown();  // our FIN follows the data
  }
  set_interest(shut_down_ ? kEventReadable : kEventReadable | kEventWritable);
}

void SendConnection::on_readable() {
  for (int i = 0; i < kReadsPerEvent; ++i) {
    BufferList dropped;
    const ssize_t r = socket_.zero_copy_read(dropped, kReadChunk);
    if (r == -EAGAIN) return;
    if (r < 0) return fail(static_cast<int>(r));
    if (r == 0) {
      if (!shut_down_) return fail(-EPIPE);  // the peer closed before taking everything
      progress_.peer_closed_at.store(steady_now_ns());
      close();
      return;
    }
    progress_.received.fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
  }
}

}  // namespace bypass::tools
