// AsyncConnection: the events of the link a session runs over (readable, writable, connected,
// keepalive ticks) and the frames that arrive on it. What a link's failure means for the session
// is fault()'s (async_connection.cc).
#include <ctime>
#include <optional>

#include "base/log.h"
#include "msgr/async_connection.h"

namespace bypass::msgr {

using wire::Tag;
using Clock = EventCenter::Clock;

namespace {
constexpr int kMaxFramesPerEvent = 256;
constexpr auto kThrottleRetry = std::chrono::milliseconds(1);

wire::WireTime wire_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return {static_cast<uint32_t>(ts.tv_sec), static_cast<uint32_t>(ts.tv_nsec)};
}

// The frame process_input reads into: one per thread, shared by every link the thread serves.
// As a member of each link its 600 bytes (four segment lists) were cold at every message once a
// thousand links took turns; one per thread stays in the cache. A process_input that runs inside
// another (a callback running a second link's input) takes a frame of its own. The frame is left
// empty when process_input ends, so no buffer outlives its link in it.
class InputFrame {
 public:
  InputFrame() {
    ThreadFrame& t = thread_frame_;
    if (!t.in_use) {
      t.in_use = true;
      frame_ = &t.frame;
    } else {
      frame_ = &nested_.emplace();
    }
  }
  ~InputFrame() {
    if (nested_) return;
    for (BufferList& segment : frame_->segments)
      if (segment.segment_count() != 0) segment.clear();
    thread_frame_.in_use = false;
  }
  InputFrame(const InputFrame&) = delete;
  InputFrame& operator=(const InputFrame&) = delete;
  wire::Frame& operator*() { return *frame_; }

 private:
  struct ThreadFrame {
    wire::Frame frame;
    bool in_use = false;
  };
  static thread_local ThreadFrame thread_frame_;
  wire::Frame* frame_;
  std::optional<wire::Frame> nested_;
};
thread_local InputFrame::ThreadFrame InputFrame::thread_frame_;
}  // namespace

// The EventCenter copies a callback each time it runs it. Two raw pointers fit std::function's
// inline storage, so that copy allocates nothing (a lambda holding two shared_ptrs did, on every
// event). They are safe: a link's file events are deleted (drop_link, handshake_done) before the
// link or its connection can go away, and the EventCenter never runs a deleted event; for the
// run itself the callback holds strong references.
template <void (AsyncConnection::*handler)(const AsyncConnection::LinkRef&)>
EventCenter::FileCallback AsyncConnection::link_event(ConnectionLink* link) {
  return [con = this, link](int, int) {
    auto self = con->shared_from_this();
    (con->*handler)(link->shared_from_this());
  };
}

void AsyncConnection::open_link(LinkRef link) {
  link_ = link;
  link->worker = worker();
  if (!link->connecting()) link->arm_read(link_event<&AsyncConnection::on_readable>(link.get()));
  arm_keepalive(link);
}

// Client: the transport's connect completes when the socket turns writable.
void AsyncConnection::watch_connect(const LinkRef& link) {
  link->arm_write(link_event<&AsyncConnection::on_connected>(link.get()));
}

void AsyncConnection::on_connected(const LinkRef& link) {
  if (link->dead()) return;
  int r = link->socket.is_connected();
  if (r == 0) return;
  if (r < 0) {
    if (r == -ECONNREFUSED) msgr_.notify(AsyncMessenger::Event::Refused, shared_from_this());
    fault(link, std::string("connect to ") + target_.to_string() + " failed: " + socket_error_name(r));
    return;
  }
  link->set_state(ConnectionLink::State::Handshaking);
  link->disarm_write();
  link->arm_read(link_event<&AsyncConnection::on_readable>(link.get()));
  link->last_rx = Clock::now();
  link->handshake->start(link->outbuf);
  flush_output(link);
}

void AsyncConnection::on_readable(const LinkRef& link) {
  if (link->dead() || link->stalled()) return;
  int error = 0;
  switch (link->read_available(msgr_.perf(), &error)) {
    case ConnectionLink::ReadOutcome::Data:
      process_input(link);
      return;
    case ConnectionLink::ReadOutcome::PeerClosed:
      fault(link, "peer closed the connection");
      return;
    case ConnectionLink::ReadOutcome::Failed:
      fault(link, std::string("read failed: ") + socket_error_name(error));
      return;
  }
}

void AsyncConnection::on_writable(const LinkRef& link) {
  if (!link->dead()) flush_output(link);
}

void AsyncConnection::flush_output(const LinkRef& link) {
  if (link->dead() || link->connecting()) return;
  if (int r = link->send_output(); r < 0) {
    fault(link, std::string("send failed: ") + socket_error_name(r));
    return;
  }
  if (link->needs_write_event()) link->arm_write(link_event<&AsyncConnection::on_writable>(link.get()));
}

void AsyncConnection::process_input(const LinkRef& link) {
  if (link->dead()) return;
  if (link->handshake) {
    Handshake::Status st = link->handshake->feed(link->inbuf, link->outbuf);
    if (st == Handshake::Status::Failed) {
      bump(msgr_.perf().handshake_failures);
      std::string why = "handshake failed " + link->handshake->error();
      flush_output(link);  // best effort: e.g. IDENT_MISSING_FEATURES
      if (!link->dead()) fault(link, why);
      return;
    }
    flush_output(link);
    if (link->dead() || st != Handshake::Status::Done) return;
    handshake_done(link);
    if (link->dead() || link_ != link || !link->open()) return;
  }
  if (!link->open()) return;
  // Messages sent while frames are handled (replies from fast dispatch, refills from completion
  // hooks) are only framed; the flush below sends them together.
  in_input_ = true;
  InputFrame input;
  wire::Frame& frame = *input;
  try {
    for (int i = 0; i < kMaxFramesPerEvent && !link->stalled(); ++i) {
      if (!link->reader->read(link->inbuf, &frame)) break;
      if (!handle_frame(link, frame) || link->dead()) break;
    }
  } catch (const std::exception& e) {
    in_input_ = false;
    fault(link, std::string("bad frame: ") + e.what());
    return;
  }
  in_input_ = false;
  if (link->dead()) return;
  acknowledge_input(link);
  flush_output(link);
  // More complete frames may be buffered than one event handles: continue on the next loop turn.
  if (!link->dead() && !link->stalled() && link->has_complete_frame_buffered()) {
    auto self = shared_from_this();
    link->worker->center().dispatch_external([self, link] { self->process_input(link); });
  }
}

bool AsyncConnection::handle_frame(const LinkRef& link, wire::Frame& frame) {
  if (frame.aborted) return true;
  switch (frame.tag) {
    case Tag::Message:
      return handle_message(link, frame);
    case Tag::Ack:
      handle_ack(wire::decode_control<wire::AckFrame>(frame.segments[0]).seq);
      return true;
    case Tag::Keepalive2: {
      auto ka = wire::decode_control<wire::Keepalive2Frame>(frame.segments[0]);
      BufferList reply;
      wire::encode(wire::Keepalive2AckFrame{ka.timestamp}, reply);
      send_control(link, Tag::Keepalive2Ack, reply);
      return true;
    }
    case Tag::Keepalive2Ack:
      wire::decode_control<wire::Keepalive2AckFrame>(frame.segments[0]);
      bump(msgr_.perf().keepalive_acks_received);
      return true;
    default:
      fault(link, std::string("unexpected ") + wire::tag_name(frame.tag) + " frame on an open session");
      return false;
  }
}

void AsyncConnection::send_control(const LinkRef& link, Tag tag, const BufferList& payload) {
  try {
    link->frame_control(tag, payload);
  } catch (const std::exception& e) {
    fault(link, std::string("cannot send ") + wire::tag_name(tag) + ": " + e.what());
  }
}

void AsyncConnection::send_keepalive() {
  auto self = shared_from_this();
  run_on_worker([self] {
    if (self->link_ && self->link_->open()) {
      BufferList payload;
      wire::encode(wire::Keepalive2Frame{wire_now()}, payload);
      self->send_control(self->link_, Tag::Keepalive2, payload);
      bump(self->msgr_.perf().keepalives_sent);
      if (self->link_) self->flush_output(self->link_);
    }
  });
}

void AsyncConnection::arm_keepalive(const LinkRef& link) {
  const auto period = ConnectionLink::keepalive_period(msgr_.timings());
  if (period.count() == 0) return;
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  std::weak_ptr<ConnectionLink> weak_link = link;
  link->arm_keepalive(period, [weak, weak_link] {
    auto con = weak.lock();
    auto l = weak_link.lock();
    if (con && l) con->keepalive_tick(l);
  });
}

// Each tick checks ms.keepalive_timeout (nothing heard: the link is dead) and sends a KEEPALIVE2
// for ms.keepalive_interval; reading paused for throttle budget is our silence, not the peer's.
void AsyncConnection::keepalive_tick(const LinkRef& link) {
  link->keepalive_fired();
  if (link->dead()) return;
  const auto now = Clock::now();
  const auto& timings = msgr_.timings();
  if (link->silent_for(timings.keepalive_timeout, now)) {
    bump(msgr_.perf().keepalive_timeouts);
    fault(link, "nothing received from the peer for " + std::to_string(link->silence(now).count()) +
                    " ms (ms.keepalive_timeout)");
    return;
  }
  if (timings.keepalive_interval.count() > 0 && link->open()) {
    BufferList payload;
    wire::encode(wire::Keepalive2Frame{wire_now()}, payload);
    send_control(link, Tag::Keepalive2, payload);
    bump(msgr_.perf().keepalives_sent);
    if (link->dead()) return;
    flush_output(link);
    if (link->dead()) return;
  }
  arm_keepalive(link);
}

// Throttles short: park the frame and stop reading until budget returns (retried every
// kThrottleRetry).
void AsyncConnection::stall_reading(const LinkRef& link, wire::Frame& frame) {
  bump(msgr_.perf().throttle_stalls);
  link->set_state(ConnectionLink::State::Stalled);
  link->stalled_frame = std::make_unique<wire::Frame>(std::move(frame));
  link->disarm_read();
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  link->worker->center().create_timer(kThrottleRetry, [weak, link] {
    if (auto con = weak.lock()) con->resume_reading(link);
  });
}

void AsyncConnection::resume_reading(const LinkRef& link) {
  if (!link->stalled()) return;
  link->set_state(ConnectionLink::State::Open);
  wire::Frame frame = std::move(*link->stalled_frame);
  link->stalled_frame.reset();
  try {
    if (!handle_message(link, frame)) return;  // still short of budget (re-parked) or faulted
  } catch (const std::exception& e) {
    fault(link, std::string("bad frame: ") + e.what());
    return;
  }
  if (!link->dead()) link->arm_read(link_event<&AsyncConnection::on_readable>(link.get()));
  process_input(link);
}

void AsyncConnection::drop_link(const LinkRef& link) {
  if (link->dead()) return;
  link->drop();
  if (link_ == link) link_ = nullptr;
}

}  // namespace bypass::msgr
