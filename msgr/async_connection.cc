// AsyncConnection: the msgr2 session. Ceph's msgr2 protocol document (doc/dev/msgr2.rst,
// "Message flow handshake" and "Message frames") states the rules kept here: every MESSAGE
// carries the next seq and the highest seq received (ack_seq); an ACK frame acknowledges too; on
// a lossless session the sender keeps what the peer has not acknowledged and, after
// SESSION_RECONNECT, drops what SESSION_RECONNECT_OK's msg_seq covers and resends the rest with
// their original seqs; a lossy session ends at its first fault. The link's events are in
// async_connection_io.cc.
#include "msgr/async_connection.h"

#include <utility>

#include "base/log.h"

namespace bypass::msgr {

void AsyncConnection::complete(const MessageRef& m, bool delivered) {
  if (m->completion_) {
    auto hook = std::move(m->completion_);
    m->completion_ = nullptr;
    hook(delivered);
  }
}

AsyncConnection::AsyncConnection(AsyncMessenger& msgr, Worker* worker, Policy policy, EntityType peer_type,
                                 bool client_side)
    : msgr_(msgr), worker_(worker), policy_(std::move(policy)), peer_type_(peer_type), client_side_(client_side) {
  peer_name_.type = peer_type;
  peer_name_.num = -1;
}

AsyncConnection::~AsyncConnection() {
  // Handed over after the worker stopped draining (shutdown): dropped.
  Message* m = handovers_.exchange(nullptr, std::memory_order_acquire);
  while (m) {
    Message* next = m->handover_next_;
    m->handover_next_ = nullptr;
    MessageRef ref = std::move(m->handover_ref_);
    m = next;
    complete(ref, false);
  }
}

std::string AsyncConnection::describe() const {
  std::string text = client_side_ ? "conn(out " : "conn(in ";
  text += peer_name_.to_string();
  if (link_ && !link_->peer_text.empty()) text += " " + link_->peer_text;
  text += " s=" + std::to_string(out_seq_) + "/" + std::to_string(in_seq_) + ")";
  return text;
}

EntityName AsyncConnection::peer_name() const {
  std::lock_guard<std::mutex> guard(peer_lock_);
  return peer_name_;
}

EntityAddrVec AsyncConnection::peer_addrs() const {
  std::lock_guard<std::mutex> guard(peer_lock_);
  return peer_addrs_;
}

auth::CephxMonSession AsyncConnection::cephx_mon_session() const {
  std::lock_guard<std::mutex> guard(peer_lock_);
  return cephx_mon_session_;
}

auth::CephxMonSession cephx_mon_session_of(const Connection& connection) {
  const auto* async = dynamic_cast<const AsyncConnection*>(&connection);
  return async ? async->cephx_mon_session() : auth::CephxMonSession{};
}

void AsyncConnection::run_on_worker(std::function<void()> fn) {
  Worker* w = worker();
  auto self = shared_from_this();
  w->center().dispatch_external([self, w, fn = std::move(fn)]() mutable {
    if (self->worker() != w) {
      self->run_on_worker(std::move(fn));  // the session moved meanwhile; follow it
      return;
    }
    fn();
  });
}

bool AsyncConnection::send(MessageRef m, bool flush) {
  if (closed_.load(std::memory_order_acquire)) {
    drop_unsent(std::move(m));
    return false;
  }
  if (worker()->center().in_thread()) {
    // On our own worker: straight to the output path.
    if (handovers_.load(std::memory_order_relaxed)) take_handovers();
    queue_or_write(std::move(m));
    if (flush) flush_unless_reading();
    return true;
  }
  // Another thread: one lock-free push; the push onto an empty stack schedules the drain. The
  // sender may keep views of these buffers (a payload it appends to every message): their counts
  // become atomic before the worker holds any (base/buffer_storage.h). A payload reused this way is
  // promoted by its first send, while the sending thread still holds every view.
  m->front().share_across_threads();
  std::as_const(*m).middle().share_across_threads();  // const: makes no list
  m->data().share_across_threads();
  Message* raw = m.get();
  raw->handover_ref_ = std::move(m);
  Message* head = handovers_.load(std::memory_order_relaxed);
  do {
    raw->handover_next_ = head;
  } while (!handovers_.compare_exchange_weak(head, raw, std::memory_order_release, std::memory_order_relaxed));
  if (head == nullptr) {
    auto self = shared_from_this();
    run_on_worker([self] {
      self->take_handovers();
      if (self->link_ && self->link_->open()) self->flush_output(self->link_);
    });
  }
  return true;
}

void AsyncConnection::flush_output() {
  if (worker()->center().in_thread()) flush_unless_reading();
}

void AsyncConnection::drop_unsent(MessageRef m) {
  bump(msgr_.perf().msgs_dropped);
  complete(m, false);
}

void AsyncConnection::take_handovers() {
  Message* newest_first = handovers_.exchange(nullptr, std::memory_order_acquire);
  Message* oldest_first = nullptr;
  while (newest_first) {
    Message* next = newest_first->handover_next_;
    newest_first->handover_next_ = oldest_first;
    oldest_first = newest_first;
    newest_first = next;
  }
  while (oldest_first) {
    Message* next = oldest_first->handover_next_;
    oldest_first->handover_next_ = nullptr;
    MessageRef m = std::move(oldest_first->handover_ref_);
    oldest_first = next;
    queue_or_write(std::move(m));
  }
}

// Worker thread. Writes `m` into the link's output, or queues it while there is no open link
// (or older messages still wait). Does not flush: the caller does, once per batch.
void AsyncConnection::queue_or_write(MessageRef m) {
  if (closed_.load(std::memory_order_relaxed)) {
    drop_unsent(std::move(m));
    return;
  }
  if (!link_ || !link_->open() || link_->dead() || !out_queue_.empty()) {
    out_queue_.push_back(std::move(m));
    queued_for_admin_.store(out_queue_.size(), std::memory_order_relaxed);
    return;
  }
  LinkRef link = link_;
  try {
    write_message(link, m, false);
  } catch (const std::exception& e) {
    fault(link, std::string("cannot send: ") + e.what());  // m is in sent_: replayed on the next link
  }
}

void AsyncConnection::mark_down() {
  auto self = shared_from_this();
  run_on_worker([self] { self->close("marked down", false); });
}

// ---- session lifecycle ----------------------------------------------------------------------

void AsyncConnection::start_connect(const EntityAddrVec& addrs) {
  const EntityAddr* addr = addrs.msgr2_addr();
  {
    std::lock_guard<std::mutex> guard(peer_lock_);
    peer_addrs_ = addrs;
  }
  if (!addr) {
    close("no address to connect to", true);
    return;
  }
  target_ = *addr;
  client_cookie_ = msgr_.new_cookie();
  reconnect();
}

void AsyncConnection::reconnect() {
  reconnect_timer_.reset();
  if (closed_.load(std::memory_order_relaxed)) return;
  Worker* w = worker();
  auto link = std::make_shared<ConnectionLink>(w, ++link_serial_, target_.to_string());
  SocketAddress sa = SocketAddress::from_sockaddr(target_.sockaddr_ptr(), target_.sockaddr_len());
  int r = w->connect(sa, msgr_.socket_options(), &link->socket);
  if (r < 0) {
    link_ = link;
    fault(link, std::string("connect to ") + target_.to_string() + " failed: " + socket_error_name(r));
    return;
  }
  link->fd = link->socket.fd();
  link->set_state(ConnectionLink::State::Connecting);
  ClientSession session;
  session.client_cookie = client_cookie_;
  session.server_cookie = session_established_ ? server_cookie_ : 0;
  session.global_seq = msgr_.next_global_seq();
  session.connect_seq = session_established_ ? connect_seq_ + 1 : 0;
  session.in_seq = in_seq_;
  Handshake::ClientHooks hooks;
  hooks.session_reset = [this](bool) {
    // The server lost our session: what it had not acknowledged is lost with it.
    BYPASS_LOG(Info, "msgr", "%s: server reset the session; dropping %zu unacknowledged messages",
               describe().c_str(), sent_.size());
    drop_unacknowledged();
    out_seq_ = in_seq_ = acked_in_seq_ = 0;
    in_seq_atomic_ = 0;
    session_established_ = false;
    bump(msgr_.perf().sessions_reset);
    msgr_.notify(AsyncMessenger::Event::RemoteReset, shared_from_this());
  };
  hooks.next_global_seq = [this](uint64_t at_least) { return msgr_.next_global_seq(at_least); };
  link->handshake = Handshake::client(msgr_.handshake_settings(policy_.lossy), target_, session, std::move(hooks));
  open_link(link);
  watch_connect(link);
}

void AsyncConnection::start_accept(ConnectedSocket socket, const SocketAddress& peer) {
  auto link = std::make_shared<ConnectionLink>(worker(), ++link_serial_, peer.to_string());
  link->socket = std::move(socket);
  link->fd = link->socket.fd();
  EntityAddr peer_addr = EntityAddr::msgr2(peer.sockaddr_ptr(), peer.sockaddr_len(), 0);
  Handshake::ServerHooks hooks;
  std::weak_ptr<ConnectionLink> weak_link = link;
  hooks.accept_session = [this](const wire::ClientIdentFrame& ident, const HandshakeResult& result,
                                std::string* why) -> std::optional<uint64_t> {
    policy_ = msgr_.policy_for(result.peer_name.type);
    peer_type_ = result.peer_name.type;
    {
      std::lock_guard<std::mutex> guard(peer_lock_);
      peer_name_ = result.peer_name;
      peer_addrs_ = result.peer_addrs;
    }
    auto cookie = msgr_.accept_session(shared_from_this(), ident, why);
    if (cookie) server_cookie_ = *cookie;
    client_cookie_ = ident.cookie;
    return cookie;
  };
  hooks.reconnect = [this, weak_link](const wire::SessionReconnectFrame& rc, const HandshakeResult&) {
    ReconnectDecision d;
    auto session = msgr_.find_session(rc.server_cookie);
    if (!session || session->client_cookie() != rc.client_cookie || session->is_lossy()) {
      d.kind = ReconnectDecision::Reset;
      d.full_reset = true;
      return d;
    }
    if (auto l = weak_link.lock()) l->reconnect_target = session;
    d.kind = ReconnectDecision::Ok;
    d.value = session->in_seq_snapshot();
    return d;
  };
  link->handshake = Handshake::server(msgr_.handshake_settings(policy_.lossy), peer_addr, std::move(hooks));
  open_link(link);
  link->handshake->start(link->outbuf);
  flush_output(link);
}

void AsyncConnection::handshake_done(const LinkRef& link) {
  HandshakeResult result = link->handshake->result();
  link->take_framing_from_handshake();
  if (client_side_ || !result.reconnected) {
    session_ready(link, result);
    return;
  }
  // Server: the client resumed an existing session. Hand this link (and its socket, which lives
  // on this worker) to that session, which moves here if it lived elsewhere.
  auto target = std::move(link->reconnect_target);
  link->stop_events();
  link_ = nullptr;
  closed_.store(true, std::memory_order_release);
  msgr_.forget(this);
  if (!target) return;
  Worker* here = link->worker;
  target->run_on_worker([target, link, result, here] {
    // On the session's current worker: retire its old link, then move to the new one's worker.
    target->cancel_standby_expiry();  // its timer lives on this worker's center
    if (target->link_) target->drop_link(target->link_);
    target->connected_ = false;
    target->worker_.store(here, std::memory_order_release);
    here->center().dispatch_external([target, link, result] { target->adopt_reconnected_link(link, result); });
  });
}

void AsyncConnection::adopt_reconnected_link(LinkRef link, HandshakeResult result) {
  if (closed_.load(std::memory_order_relaxed)) {
    link->drop();
    return;
  }
  open_link(link);
  session_ready(link, result);
  process_input(link);
}

void AsyncConnection::session_ready(const LinkRef& link, const HandshakeResult& result) {
  link->set_state(ConnectionLink::State::Open);
  link_ = link;
  {
    std::lock_guard<std::mutex> guard(peer_lock_);
    if (client_side_) {
      peer_name_ = result.peer_name;
    } else if (!result.reconnected) {
      peer_name_ = result.peer_name;
      peer_addrs_ = result.peer_addrs;
    }
    // Every link authenticates afresh (a reconnect too): a renewal on the session answers the
    // challenge of the link it travels on.
    cephx_mon_session_ = result.cephx_mon_session;
  }
  if (result.peer_features) peer_features_ = result.peer_features;
  peer_lossy_ = result.peer_lossy;
  backoff_ = std::chrono::nanoseconds(0);
  if (result.reconnected) {
    connect_seq_ = result.connect_seq;
    bump(msgr_.perf().sessions_reconnected);
    replay_unacknowledged(link, result.peer_in_seq);
    if (link->dead()) return;
  } else {
    server_cookie_ = result.server_cookie;
    client_cookie_ = result.client_cookie;
    connect_seq_ = 0;
    bool first = !session_established_;
    session_established_ = true;
    if (client_side_) bump(msgr_.perf().connections_opened);
    else bump(msgr_.perf().connections_accepted);
    if (first) {
      msgr_.notify(client_side_ ? AsyncMessenger::Event::Connect : AsyncMessenger::Event::Accept,
                   shared_from_this());
    }
  }
  if (result.con_mode == wire::kConModeSecure) bump(msgr_.perf().links_secure);  // handshakes ending in secure mode
  connected_.store(true, std::memory_order_release);
  flush_queue();
}

// msgr2 reconnect (SESSION_RECONNECT_OK carries msg_seq, the last of our messages the peer
// received): drop what the peer already has and resend the rest, in order, with their original
// seqs; the peer drops duplicates by seq.
void AsyncConnection::replay_unacknowledged(const LinkRef& link, uint64_t peer_in_seq) {
  handle_ack(peer_in_seq);
  BYPASS_LOG(Debug, "msgr", "%s: session resumed, replaying %zu messages", describe().c_str(), sent_.size());
  try {
    for (size_t i = 0; i < sent_.size(); ++i) {
      write_message(link, sent_[i], true);
      bump(msgr_.perf().msgs_replayed);
    }
  } catch (const std::exception& e) {
    fault(link, std::string("replay failed: ") + e.what());
  }
}

void AsyncConnection::flush_queue() {
  if (!link_ || !link_->open()) return;
  LinkRef link = link_;
  try {
    while (!out_queue_.empty() && !link->dead()) {
      MessageRef m = std::move(out_queue_.front());
      out_queue_.pop_front();
      queued_for_admin_.store(out_queue_.size(), std::memory_order_relaxed);
      write_message(link, m, false);
    }
  } catch (const std::exception& e) {
    fault(link, std::string("cannot send: ") + e.what());  // the message is in sent_: replayed
    return;
  }
  if (link->dead()) return;
  take_handovers();
  if (link_ == link) flush_output(link);
}

void AsyncConnection::write_message(const LinkRef& link, const MessageRef& m, bool replay) {
  if (!m->encoded_) {
    m->encode_payload(peer_features_);
    m->encoded_ = true;
  }
  if (!replay) {
    // Sequence and place in sent_ first: if framing fails (e.g. the cipher's nonce budget is
    // spent) the message is replayed on the next link rather than lost.
    m->seq_ = ++out_seq_;
    sent_.push_back(m);
  }
  wire::MessageHeader2 h;
  h.seq = m->seq_;
  h.tid = m->tid_;
  h.type = m->type_;
  h.priority = m->priority_;
  h.version = m->version_;
  h.compat_version = m->compat_version_;
  h.ack_seq = in_seq_;
  acked_in_seq_ = in_seq_;
  char header[wire::kMessageHeader2Size];
  h.encode_to(header);
  bump(msgr_.perf().bytes_sent, link->frame_message({header, sizeof(header)}, *m));
  bump(msgr_.perf().msgs_sent);
}

void AsyncConnection::maybe_send_ack(const LinkRef& link) {
  if (in_seq_ <= acked_in_seq_ || !link->open()) return;
  // Encoded on the stack: an ACK goes out per input event.
  const auto payload = wire::encode_flat(wire::AckFrame{in_seq_});
  acked_in_seq_ = in_seq_;
  bump(msgr_.perf().acks_sent);
  try {
    link->frame_control(wire::Tag::Ack, std::string_view(payload.data(), payload.size()));
  } catch (const std::exception& e) {
    fault(link, std::string("cannot send ACK: ") + e.what());
  }
}

// A lossless session acknowledges every input event at once: the peer keeps what it sent until
// then, to replay it after a fault. A lossy session replays nothing, and Ceph's sends no ACK frames
// at all (ProtocolV2 counts ack_left only when !policy.lossy); here the peer still keeps what it
// sent until acknowledged (its completion hooks say delivered then), so a lossy session defers the
// ACK frame by kLossyAckDelay and sends it only if no message of ours carried the ack_seq meanwhile;
// only where the peer said lossy too, since a lossless peer (a lossless client of a stateless
// server) may wait on our ACKs to complete a stream of messages, its window with them.
// Request/reply traffic then sends no ACK frame at all: where the application sends its next
// request after the loop iteration that delivered the reply (fio's job thread polling the stack),
// an immediate ACK was one more frame, TCP segment and (posix) system call per request on each
// side. One timer per connection at a time, so per kLossyAckDelay, not per message.
constexpr auto kLossyAckDelay = std::chrono::microseconds(200);

void AsyncConnection::acknowledge_input(const LinkRef& link) {
  if (!policy_.lossy || !peer_lossy_) {
    maybe_send_ack(link);
    return;
  }
  if (in_seq_ <= acked_in_seq_ || ack_timer_ || !link->open()) return;
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  ack_timer_ = worker()->center().create_timer(kLossyAckDelay, [weak] {
    auto con = weak.lock();
    if (!con) return;
    con->ack_timer_.reset();
    if (con->closed_.load(std::memory_order_relaxed) || !con->link_ || !con->link_->open()) return;
    const LinkRef link = con->link_;
    con->maybe_send_ack(link);
    con->flush_output(link);
  });
}

// An ACK frame, or a MESSAGE's ack_seq: the peer has every message up to `seq`.
void AsyncConnection::handle_ack(uint64_t seq) {
  while (!sent_.empty() && sent_.front()->seq_ <= seq) {
    bump(msgr_.perf().msgs_acked);
    complete(sent_.front(), true);
    sent_.pop_front();
  }
}

void AsyncConnection::drop_unacknowledged() {
  for (size_t i = 0; i < sent_.size(); ++i) {
    bump(msgr_.perf().msgs_dropped);
    complete(sent_[i], false);
  }
  sent_.clear();
}

bool AsyncConnection::handle_message(const LinkRef& link, wire::Frame& frame) {
  char header[wire::kMessageHeader2Size];
  const BufferList& seg0 = frame.segments[0];
  if (seg0.length() != sizeof(header)) wire::MessageHeader2::decode(seg0.to_string());  // throws: wrong size
  seg0.copy_out(0, sizeof(header), header);
  wire::MessageHeader2 h = wire::MessageHeader2::decode(std::string_view(header, sizeof(header)));
  handle_ack(h.ack_seq);
  if (h.seq <= in_seq_) {
    bump(msgr_.perf().duplicates_dropped);  // a replay of something we already have
    return true;
  }
  if (h.seq != in_seq_ + 1) {
    fault(link, "message seq " + std::to_string(h.seq) + " skips ahead of expected " + std::to_string(in_seq_ + 1));
    return false;
  }
  uint64_t size = frame.segments[1].length() + frame.segments[2].length() + frame.segments[3].length();
  // Throttles: take everything or nothing; if short, park the frame and stop reading.
  Throttle* taken[3] = {};
  int ntaken = 0;
  auto take = [&](Throttle* t, uint64_t amount) {
    if (!t) return true;
    if (!t->try_take(amount)) return false;
    taken[ntaken++] = t;
    return true;
  };
  bool ok = take(&msgr_.dispatch_throttle(), size) && take(policy_.throttle_bytes.get(), size) &&
            take(policy_.throttle_messages.get(), 1);
  if (!ok) {
    for (int i = 0; i < ntaken; ++i) taken[i]->put(taken[i] == policy_.throttle_messages.get() ? 1 : size);
    stall_reading(link, frame);
    return false;
  }
  in_seq_ = h.seq;
  in_seq_atomic_.store(in_seq_, std::memory_order_release);
  MessageRef m = msgr_.registry().create(h.type, h.version, h.compat_version);
  m->seq_ = h.seq;
  m->tid_ = h.tid;
  m->priority_ = h.priority;
  m->front_ = std::move(frame.segments[1]);
  if (frame.segments[2].segment_count() != 0) m->middle() = std::move(frame.segments[2]);
  m->data_ = std::move(frame.segments[3]);
  m->connection_ = shared_from_this();
  m->source_ = peer_name_;
  bump(msgr_.perf().msgs_received);
  try {
    m->decode_payload();
  } catch (const std::exception& e) {
    msgr_.dispatch_throttle().put(size);
    if (policy_.throttle_bytes) policy_.throttle_bytes->put(size);
    if (policy_.throttle_messages) policy_.throttle_messages->put(1);
    fault(link, "cannot decode message type " + std::to_string(h.type) + ": " + e.what());
    return false;
  }
  msgr_.deliver(m, policy_, size);
  return true;
}

// ---- faults ---------------------------------------------------------------------------------

void AsyncConnection::fault(const LinkRef& link, const std::string& why) {
  if (link->dead()) return;
  bool attached = link_ == link;
  bool was_open = link->open();
  bump(msgr_.perf().faults);
  BYPASS_LOG(Info, "msgr", "%s: fault: %s", describe().c_str(), why.c_str());
  {
    std::lock_guard<std::mutex> guard(peer_lock_);
    last_fault_ = why;
  }
  drop_link(link);
  if (!attached) return;
  connected_.store(false, std::memory_order_release);
  if (closed_.load(std::memory_order_relaxed)) return;
  if (!client_side_ && !session_established_) {
    close(why, false);  // an accepted link that never became a session
    return;
  }
  if (policy_.lossy) {
    close(why, was_open || client_side_);
    return;
  }
  if (client_side_) {
    schedule_reconnect();
    return;
  }
  // Lossless server side: keep the session (queues and seqs) until the client reconnects.
  arm_standby_expiry();
}

void AsyncConnection::arm_standby_expiry() {
  cancel_standby_expiry();
  const auto timeout = msgr_.timings().standby_timeout;
  if (timeout.count() <= 0) return;
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  standby_timer_ = worker()->center().create_timer(timeout, [weak] {
    auto con = weak.lock();
    if (!con) return;
    con->standby_timer_.reset();
    if (con->closed_.load(std::memory_order_relaxed) || con->link_) return;  // closed, or the client came back
    bump(con->msgr_.perf().sessions_expired);
    con->close("the client did not reconnect within ms.connection_idle_timeout", true);
  });
}

void AsyncConnection::cancel_standby_expiry() {
  if (standby_timer_) worker()->center().cancel_timer(*standby_timer_);
  standby_timer_.reset();
}

bool AsyncConnection::awaiting_acknowledgement() {
  if (closed_.load(std::memory_order_relaxed)) return false;
  take_handovers();
  if (link_ && link_->open()) flush_output(link_);
  return !out_queue_.empty() || !sent_.empty() || (link_ && !link_->outbuf.empty());
}

void AsyncConnection::schedule_reconnect() {
  // Reconnects go on while shutdown lingers: a lossless session replays what the peer has not
  // acknowledged on its next link.
  if (msgr_.closing()) return;
  auto lo = msgr_.timings().backoff_min, hi = msgr_.timings().backoff_max;
  backoff_ = backoff_.count() == 0 ? lo : std::min(hi, backoff_ * 2);
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  reconnect_timer_ = worker()->center().create_timer(backoff_, [weak] {
    if (auto con = weak.lock()) con->reconnect();
  });
}

void AsyncConnection::close(const std::string& why, bool notify_reset) {
  if (closed_.load(std::memory_order_relaxed)) return;
  closed_.store(true, std::memory_order_release);
  std::deque<MessageRef> queued;
  queued.swap(out_queue_);
  queued_for_admin_.store(0, std::memory_order_relaxed);
  BYPASS_LOG(Debug, "msgr", "%s: closed: %s", describe().c_str(), why.c_str());
  connected_.store(false, std::memory_order_release);
  if (link_) drop_link(link_);
  if (reconnect_timer_) worker()->center().cancel_timer(*reconnect_timer_);
  reconnect_timer_.reset();
  if (ack_timer_) worker()->center().cancel_timer(*ack_timer_);
  ack_timer_.reset();
  cancel_standby_expiry();
  drop_unacknowledged();
  for (auto& m : queued) drop_unsent(std::move(m));
  take_handovers();  // closed_ is set: whatever other threads pushed is dropped
  auto self = shared_from_this();
  // Forgotten before the reset is announced: a dispatcher that reconnects from ms_handle_reset
  // (or any thread that saw it) must get a new session from connect_to, never this closed one.
  msgr_.forget(this);
  if (notify_reset) msgr_.notify(AsyncMessenger::Event::Reset, self);
}

}  // namespace bypass::msgr
