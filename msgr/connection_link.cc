#include "msgr/connection_link.h"

#include <algorithm>

namespace bypass::msgr {

ConnectionLink::ConnectionLink(Worker* worker_in, uint64_t serial_in, std::string peer_text_in)
    : worker(worker_in), read_size_(kMaxReadSize / 4), serial(serial_in), peer_text(std::move(peer_text_in)) {}

void ConnectionLink::arm(int mask, bool& armed, EventCenter::FileCallback callback) {
  if (armed) return;
  worker->center().create_file_event(fd, mask, std::move(callback));
  armed = true;
}

void ConnectionLink::disarm(int mask, bool& armed) {
  if (!armed) return;
  worker->center().delete_file_event(fd, mask);
  armed = false;
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

}  // namespace bypass::msgr
