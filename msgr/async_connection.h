// AsyncConnection (internal): one msgr2 session (sequence numbers, the sent-but-unacknowledged
// messages and their replay, reconnect with backoff, the lossy/lossless policy) and the link it
// currently runs over (msgr/connection_link.h: socket, framing, keepalive). async_connection.cc
// holds the session's rules, async_connection_io.cc the link's events as the session handles
// them. All session state is touched only on the thread of the worker the session belongs to;
// other threads reach it through the worker's external queue.
//
// send_message() on the connection's own worker frames the message straight into the link's
// output (flushed at the end of the current input event, or at once outside one): no lock, no
// hop. From any other thread it is one lock-free push onto a stack of messages, and the push that
// finds the stack empty schedules one drain on the worker; the worker takes the whole stack with
// one exchange and reverses it, so each producer's order holds. The worker also takes the stack
// before writing its own messages, so a message sent from elsewhere before one sent on the worker
// (ordered by the application) goes out first.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>

#include "msgr/async_messenger.h"
#include "msgr/connection.h"
#include "msgr/connection_link.h"
#include "msgr/handshake.h"
#include "msgr/message_ring.h"
#include "msgr/wire/frame.h"
#include "msgr/wire/message_header.h"

namespace bypass::msgr {

class AsyncConnection final : public Connection, public std::enable_shared_from_this<AsyncConnection> {
 public:
  AsyncConnection(AsyncMessenger& msgr, Worker* worker, Policy policy, EntityType peer_type, bool client_side);
  ~AsyncConnection() override;

  // Connection API (any thread).
  bool send_message(MessageRef m) override { return send(std::move(m), true); }
  bool send_message_unflushed(MessageRef m) override { return send(std::move(m), false); }
  void flush_output() override;
  void send_keepalive() override;
  bool is_connected() const override { return connected_.load(std::memory_order_acquire); }
  EntityName peer_name() const override;
  EntityAddrVec peer_addrs() const override;
  bool is_lossy() const override { return policy_.lossy; }
  std::string last_fault() const override {
    std::lock_guard<std::mutex> guard(peer_lock_);
    return last_fault_;
  }
  void mark_down() override;
  // The monitor-style cephx authentication of the session's current link (see auth::CephxMonSession).
  auth::CephxMonSession cephx_mon_session() const;

  // Worker thread.
  void start_connect(const EntityAddrVec& addrs);
  void start_accept(ConnectedSocket socket, const SocketAddress& peer);
  Worker* worker() const { return worker_.load(std::memory_order_acquire); }
  uint64_t client_cookie() const { return client_cookie_; }
  uint64_t server_cookie() const { return server_cookie_; }
  uint64_t in_seq_snapshot() const { return in_seq_atomic_.load(std::memory_order_acquire); }
  void close(const std::string& why, bool notify_reset);  // worker thread
  // Worker thread, while the messenger shuts down: pushes out what other threads handed over and
  // returns whether messages are still queued, unsent or unacknowledged by the peer (a closed
  // session holds none).
  bool awaiting_acknowledgement();
  // Peer, policy, state and queue depth for the admin socket's `conns` (any thread: reads only
  // what senders share).
  void write_admin_json(Json& out) const;

 private:
  using LinkRef = ConnectionLinkRef;

  void run_on_worker(std::function<void()> fn);

  // ---- the link's events (async_connection_io.cc) ----
  // A file-event callback for `link` that runs `handler` (see the .cc for why raw pointers).
  template <void (AsyncConnection::*handler)(const LinkRef&)>
  EventCenter::FileCallback link_event(ConnectionLink* link);
  void open_link(LinkRef link);
  void watch_connect(const LinkRef& link);
  void on_readable(const LinkRef& link);
  void on_writable(const LinkRef& link);
  void on_connected(const LinkRef& link);
  void process_input(const LinkRef& link);
  bool handle_frame(const LinkRef& link, wire::Frame& frame);
  void send_control(const LinkRef& link, wire::Tag tag, const BufferList& payload);
  void flush_output(const LinkRef& link);
  // On the worker: flushes unless process_input runs (it flushes once when done) or no link is open.
  void flush_unless_reading() {
    if (!in_input_ && link_ && link_->open()) flush_output(link_);
  }
  bool send(MessageRef m, bool flush);  // send_message / send_message_unflushed
  void arm_keepalive(const LinkRef& link);
  void keepalive_tick(const LinkRef& link);
  void stall_reading(const LinkRef& link, wire::Frame& frame);
  void resume_reading(const LinkRef& link);
  void drop_link(const LinkRef& link);

  // ---- the session (async_connection.cc) ----
  void handshake_done(const LinkRef& link);
  void session_ready(const LinkRef& link, const HandshakeResult& result);
  void replay_unacknowledged(const LinkRef& link, uint64_t peer_in_seq);
  void adopt_reconnected_link(LinkRef link, HandshakeResult result);
  bool handle_message(const LinkRef& link, wire::Frame& frame);
  void handle_ack(uint64_t seq);
  void write_message(const LinkRef& link, const MessageRef& m, bool replay);
  static void complete(const MessageRef& m, bool delivered);
  void drop_unacknowledged();            // completes all of sent_ as not delivered
  void flush_queue();
  void take_handovers();          // worker: everything other threads pushed, in order
  void queue_or_write(MessageRef m);
  void drop_unsent(MessageRef m);
  void maybe_send_ack(const LinkRef& link);
  // After input: acknowledge what came (lossless at once, lossy within kLossyAckDelay; see .cc).
  void acknowledge_input(const LinkRef& link);
  void fault(const LinkRef& link, const std::string& why);
  void schedule_reconnect();
  // A lossless server session without a link waits for its client at most
  // ms.connection_idle_timeout (Ceph's standby), then closes and lets go of what it held.
  void arm_standby_expiry();
  void cancel_standby_expiry();
  void reconnect();
  std::string describe() const;

  // Declared hot first: at a thousand connections a session is cold whenever its next message
  // comes, so what every message reads or writes (identity, the link, sequence numbers, the
  // unacknowledged ring) shares the first cache lines, and the peer's names, cookies and timers
  // that only set-up, faults and the admin socket read come after.
  AsyncMessenger& msgr_;
  std::atomic<Worker*> worker_;
  Policy policy_;
  EntityType peer_type_;
  const bool client_side_;

  // Shared with senders.
  std::atomic<Message*> handovers_{nullptr};  // lock-free stack, newest first
  std::atomic<bool> closed_{false};            // written on the worker only
  std::atomic<bool> connected_{false};

  // Worker-thread state, per message.
  bool in_input_ = false;             // process_input runs: it flushes the output when done
  bool peer_lossy_ = false;           // the peer's ident said lossy (acknowledge_input)
  LinkRef link_;
  MessageRing sent_;  // written, not yet acknowledged
  uint64_t out_seq_ = 0;
  uint64_t in_seq_ = 0;
  std::atomic<uint64_t> in_seq_atomic_{0};
  uint64_t acked_in_seq_ = 0;    // highest in_seq we told the peer about
  uint64_t peer_features_ = 0;
  std::deque<MessageRef> out_queue_;  // waiting for an open link, in order
  std::atomic<size_t> queued_for_admin_{0};  // out_queue_.size() for readers on other threads

  // Shared with readers on other threads.
  mutable std::mutex peer_lock_;  // peer_name_/peer_addrs_/last_fault_ for readers on other threads
  EntityName peer_name_;         // written under peer_lock_
  EntityAddrVec peer_addrs_;     // written under peer_lock_
  std::string last_fault_;       // written under peer_lock_
  auth::CephxMonSession cephx_mon_session_;  // written under peer_lock_

  // Worker-thread state, per link or session.
  uint64_t link_serial_ = 0;
  uint64_t client_cookie_ = 0;
  uint64_t server_cookie_ = 0;
  uint64_t connect_seq_ = 0;
  bool session_established_ = false;
  std::chrono::nanoseconds backoff_{0};
  std::optional<EventCenter::TimerId> reconnect_timer_;
  std::optional<EventCenter::TimerId> standby_timer_;  // on worker()'s center
  std::optional<EventCenter::TimerId> ack_timer_;      // lossy: a deferred ACK frame is due
  EntityAddr target_;
};

// cephx_mon_session() of a connection reached through the public interface, which keeps cephx's
// internals out of the installed headers (empty for a connection that is not an AsyncConnection).
auth::CephxMonSession cephx_mon_session_of(const Connection& connection);

}  // namespace bypass::msgr
