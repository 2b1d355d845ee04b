// ConnectionLink (internal): one transport connection a session runs over, as msgr2 frames it:
// the socket and its file events, the handshake until it is done, then the frame reader and
// assembler with their input and output bytes, and the keepalive clock. It knows nothing of
// sequence numbers, replay or policy: those are the session's (AsyncConnection), which decides
// what a link's failure means. A session has at most one link at a time; a reconnect makes a new
// one. Worker thread only.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "msgr/async_messenger.h"
#include "msgr/handshake.h"
#include "msgr/message.h"
#include "msgr/wire/frame.h"

namespace bypass::msgr {

class AsyncConnection;

class ConnectionLink : public std::enable_shared_from_this<ConnectionLink> {
 public:
  // One lifecycle: Connecting -> Handshaking -> Open <-> Stalled, and Dead from any of them.
  enum class State {
    Connecting,   // client: the transport's connect is in progress (no reading, no writing)
    Handshaking,  // the msgr2 handshake owns the bytes (banner .. SERVER_IDENT)
    Open,         // the session's frames flow
    Stalled,      // open, but a MESSAGE waits for throttle budget: reading is paused
    Dead,         // dropped: events deleted, socket closed; nothing happens on it any more
  };
  // What one readable event brought.
  enum class ReadOutcome { Data, PeerClosed, Failed };

  ConnectionLink(Worker* worker, uint64_t serial, std::string peer_text);

  State state() const { return state_; }
  bool dead() const { return state_ == State::Dead; }
  bool connecting() const { return state_ == State::Connecting; }
  bool open() const { return state_ == State::Open || state_ == State::Stalled; }
  bool stalled() const { return state_ == State::Stalled; }
  void set_state(State state) { state_ = state; }

  // Reads what the socket has, up to kMaxReadsPerEvent reads; on Failed, `*error` is the
  // negative errno. Counts bytes_received; notes the time for the keepalive timeout.
  ReadOutcome read_available(PerfCounters& perf, int* error);
  // Sends the buffered output (as much as the socket takes); deletes the writable event once all
  // went. Returns 0 or a negative errno from the socket. While output remains,
  // needs_write_event() says to arm the writable event.
  int send_output();
  bool needs_write_event() const { return !write_armed_ && !outbuf.empty(); }

  // File events: each armed at most once.
  void arm_read(EventCenter::FileCallback callback) { arm(kEventReadable, read_armed_, std::move(callback)); }
  void disarm_read() { disarm(kEventReadable, read_armed_); }
  void arm_write(EventCenter::FileCallback callback) { arm(kEventWritable, write_armed_, std::move(callback)); }
  void disarm_write() { disarm(kEventWritable, write_armed_); }
  // Deletes the file events and the keepalive timer (the link moves to another session or dies).
  void stop_events();
  // Dead: events and timer stopped, socket closed. Idempotent.
  void drop();

  // Frames the message (header already encoded) into the output; returns the bytes added.
  size_t frame_message(std::string_view header, const Message& m);
  // Frames a control frame; throws what the assembler throws (the cipher's nonce budget).
  void frame_control(wire::Tag tag, std::string_view payload);
  void frame_control(wire::Tag tag, const BufferList& payload);

  // Keepalive: the timer's period for these settings (0 when neither is set), whether the peer
  // has been silent too long, and arming the next tick.
  static std::chrono::nanoseconds keepalive_period(const MessengerTimings& timings);
  bool silent_for(std::chrono::nanoseconds timeout, EventCenter::Clock::time_point now) const;
  std::chrono::milliseconds silence(EventCenter::Clock::time_point now) const;
  void arm_keepalive(std::chrono::nanoseconds period, std::function<void()> tick);
  void keepalive_fired() { keepalive_timer_.reset(); }

  // The frames after the handshake: handed over by the handshake when it is done.
  void take_framing_from_handshake();
  bool has_complete_frame_buffered() const;

  // Declared in the order a message touches them: at a thousand connections each link is cold
  // when its next message comes, and the fields every message reads or writes sit together in
  // the first few cache lines; what only set-up, a stall or a reconnect touches comes last.
  Worker* worker;
  ConnectedSocket socket;
  int fd = -1;

 private:
  // Every readable event checks the state first: it shares the first line with the socket and
  // fd (and the weak reference the event's callback locks), where it used to sit 352 bytes in,
  // behind the two lists: one miss per event at a thousand connections.
  State state_ = State::Handshaking;
  // Mirror the EventCenter's registrations for fd (the center cannot be asked).
  bool read_armed_ = false;
  bool write_armed_ = false;

 public:
  std::unique_ptr<wire::FrameReader> reader;
  std::unique_ptr<wire::FrameAssembler> assembler;
  EventCenter::Clock::time_point last_rx = EventCenter::Clock::now();

 private:
  size_t read_size_;  // next read's ask (read_available adapts it)

 public:
  BufferList inbuf;
  BufferList outbuf;

  const uint64_t serial;
  std::unique_ptr<Handshake> handshake;
  // Stalled: the MESSAGE waiting for budget (rare: held apart, not 600 bytes in every link).
  std::unique_ptr<wire::Frame> stalled_frame;
  std::shared_ptr<AsyncConnection> reconnect_target;  // server: the session SESSION_RECONNECT named
  const std::string peer_text;

 private:
  // Bytes asked of the socket per read. A transport that reads into fresh buffers sizes them by
  // this (and copies a read that fills only a small part into a tight buffer), so the ask follows
  // what the last read brought: about twice that, within these bounds, or what the frame being
  // read still needs when that is more.
  static constexpr size_t kMinReadSize = 16 * 1024;
  static constexpr size_t kMaxReadSize = 256 * 1024;
  static constexpr int kMaxReadsPerEvent = 16;
  static constexpr int kMaxSendsPerFlush = 64;

  void arm(int mask, bool& armed, EventCenter::FileCallback callback);
  void disarm(int mask, bool& armed);

  std::optional<EventCenter::TimerId> keepalive_timer_;
};

using ConnectionLinkRef = std::shared_ptr<ConnectionLink>;

// The per-message path, inline: the session's calls cost no more than when this was its own code.

inline ConnectionLink::ReadOutcome ConnectionLink::read_available(PerfCounters& perf, int* error) {
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

inline int ConnectionLink::send_output() {
  for (int i = 0; i < kMaxSendsPerFlush && !outbuf.empty(); ++i) {
    ssize_t n = socket.send(outbuf, false);
    if (n == -EAGAIN || n == 0) break;
    if (n < 0) return static_cast<int>(n);
  }
  if (outbuf.empty() && write_armed_) disarm_write();
  return 0;
}

inline size_t ConnectionLink::frame_message(std::string_view header, const Message& m) {
  const size_t before = outbuf.length();
  assembler->assemble_message(header, m.front(), m.middle(), m.data(), outbuf);
  return outbuf.length() - before;
}

inline void ConnectionLink::frame_control(wire::Tag tag, std::string_view payload) {
  assembler->assemble_control(tag, payload, outbuf);
}

inline void ConnectionLink::frame_control(wire::Tag tag, const BufferList& payload) {
  assembler->assemble_control(tag, payload, outbuf);
}

inline bool ConnectionLink::has_complete_frame_buffered() const {
  return reader->wanted() > 0 && inbuf.length() >= reader->wanted();
}

}  // namespace bypass::msgr
