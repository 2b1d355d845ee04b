#include "msgr/connection_link.h"

#include <algorithm>
#include <bit>

#include "msgr/message.h"

namespace bypass::msgr {

namespace {
// Bytes asked of the socket per read. A transport that reads into fresh buffers sizes them by
// this (and copies a read that fills only a small part into a tight buffer), so the ask follows
// what the last read brought: about twice that, within these bounds, or what the frame being
// read still needs when that is more.
constexpr size_t kMinReadSize = 16 * 1024;
constexpr size_t kMaxReadSize = 256 * 1024;
constexpr int kMaxReadsPerEvent = 16;
constexpr int kMaxSendsPerFlush = 64;
}  // namespace

ConnectionLink::ConnectionLink(Worker* worker_in, uint64_t serial_in, std::string peer_text_in)
    : serial(serial_in), worker(worker_in), peer_text(std::move(peer_text_in)), read_size_(kMaxReadSize / 4) {}

ConnectionLink::ReadOutcome ConnectionLink::read_available(PerfCounters& perf, int* error) {
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    const size_t want = std::max(read_size_, reader ? reader->wanted() : size_t{0});
    ssize_t n = socket.zero_copy_read(inbuf, want);
    if (n > 0) {
      // The loop's reading of the clock for this iteration: no clock_gettime per read.
      last_rx = worker->center().now();
      bump(perf.bytes_received, static_cast<uint64_t>(n));
      read_size_ = std::clamp(std::bit_ceil(static_cast<size_t>(n)) * 2, kMinReadSize, kMaxReadSize);
      if (static_cast<size_t>(n) < want) break;
      continue;
    }
    if (n == 0) return ReadOutcome::PeerClosed;
    if (n == -EAGAIN) break;
    *error = static_cast<int>(n);
    return ReadOutcome::Failed;
  }
  return ReadOutcome::Data;
}

int ConnectionLink::send_output() {
  for (int i = 0; i < kMaxSendsPerFlush && !outbuf.empty(); ++i) {
    ssize_t n = socket.send(outbuf, false);
    if (n == -EAGAIN || n == 0) break;
    if (n < 0) return static_cast<int>(n);
  }
  if (outbuf.empty()) disarm_write();
  return 0;
}

void ConnectionLink::arm_read(EventCenter::FileCallback callback) {
  if (read_armed_) return;
  worker->center().create_file_event(fd, kEventReadable, std::move(callback));
  read_armed_ = true;
}

void ConnectionLink::disarm_read() {
  if (!read_armed_) return;
  worker->center().delete_file_event(fd, kEventReadable);
  read_armed_ = false;
}

void ConnectionLink::arm_write(EventCenter::FileCallback callback) {
  if (write_armed_) return;
  worker->center().create_file_event(fd, kEventWritable, std::move(callback));
  write_armed_ = true;
}

void ConnectionLink::disarm_write() {
  if (!write_armed_) return;
  worker->center().delete_file_event(fd, kEventWritable);
  write_armed_ = false;
}

void ConnectionLink::stop_events() {
  if (fd >= 0) {
    disarm_read();
    disarm_write();
  }
  read_armed_ = write_armed_ = false;
  if (keepalive_timer_) worker->center().cancel_timer(*keepalive_timer_);
  keepalive_timer_.reset();
}

void ConnectionLink::drop() {
  if (dead()) return;
  state_ = State::Dead;
  stop_events();
  if (socket) socket.close();
  reconnect_target.reset();
}

size_t ConnectionLink::frame_message(std::string_view header, const Message& m) {
  const size_t before = outbuf.length();
  assembler->assemble_message(header, m.front(), m.middle(), m.data(), outbuf);
  return outbuf.length() - before;
}

void ConnectionLink::frame_control(wire::Tag tag, std::string_view payload) {
  assembler->assemble_control(tag, payload, outbuf);
}

void ConnectionLink::frame_control(wire::Tag tag, const BufferList& payload) {
  assembler->assemble_control(tag, payload, outbuf);
}

// Often enough to send ms.keepalive_interval's KEEPALIVE2 and to notice ms.keepalive_timeout
// within a quarter of it; at least 1 ms.
std::chrono::nanoseconds ConnectionLink::keepalive_period(const MessengerTimings& timings) {
  const auto interval = timings.keepalive_interval;
  const auto timeout = timings.keepalive_timeout;
  if (interval.count() <= 0 && timeout.count() <= 0) return std::chrono::nanoseconds(0);
  auto period = interval.count() > 0 ? interval : timeout / 4;
  if (timeout.count() > 0 && timeout / 4 < period) period = timeout / 4;
  return std::max<std::chrono::nanoseconds>(period, std::chrono::milliseconds(1));
}

bool ConnectionLink::silent_for(std::chrono::nanoseconds timeout, EventCenter::Clock::time_point now) const {
  return timeout.count() > 0 && !stalled() && now - last_rx > timeout;
}

std::chrono::milliseconds ConnectionLink::silence(EventCenter::Clock::time_point now) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - last_rx);
}

void ConnectionLink::arm_keepalive(std::chrono::nanoseconds period, std::function<void()> tick) {
  keepalive_timer_ = worker->center().create_timer(period, std::move(tick));
}

void ConnectionLink::take_framing_from_handshake() {
  reader = handshake->take_reader();
  assembler = handshake->take_assembler();
  handshake.reset();
}

bool ConnectionLink::has_complete_frame_buffered() const {
  return reader->wanted() > 0 && inbuf.length() >= reader->wanted();
}

}  // namespace bypass::msgr
