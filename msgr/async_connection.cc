#include "msgr/async_connection.h"

#include <ctime>

#include "base/log.h"

namespace bypass::msgr {

using wire::Tag;
using Clock = EventCenter::Clock;

namespace {
constexpr size_t kReadChunk = 256 * 1024;
constexpr int kMaxReadsPerEvent = 16;
constexpr int kMaxFramesPerEvent = 256;
constexpr auto kThrottleRetry = std::chrono::milliseconds(1);

wire::WireTime wire_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return {static_cast<uint32_t>(ts.tv_sec), static_cast<uint32_t>(ts.tv_nsec)};
}
}  // namespace

void AsyncConnection::complete(const MessageRef& m, bool delivered) {
  if (m->completion_) {
    auto hook = std::move(m->completion_);
    m->completion_ = nullptr;
    hook(delivered);
  }
}

struct AsyncConnection::Link {
  uint64_t serial = 0;
  Worker* worker = nullptr;
  ConnectedSocket socket;
  int fd = -1;
  bool connecting = false;
  bool read_armed = false;
  bool write_armed = false;
  bool open = false;
  bool dead = false;
  bool stalled = false;  // a MESSAGE waits for throttle budget; reading is paused
  std::unique_ptr<Handshake> handshake;
  std::unique_ptr<wire::FrameReader> reader;
  std::unique_ptr<wire::FrameAssembler> assembler;
  BufferList inbuf;
  BufferList outbuf;
  wire::Frame stalled_frame;
  std::optional<EventCenter::TimerId> keepalive_timer;
  Clock::time_point last_rx = Clock::now();
  std::shared_ptr<AsyncConnection> reconnect_target;  // server: the session SESSION_RECONNECT named
  std::string peer_text;
};

AsyncConnection::AsyncConnection(AsyncMessenger& msgr, Worker* worker, Policy policy, EntityType peer_type,
                                 bool client_side)
    : msgr_(msgr), worker_(worker), policy_(std::move(policy)), peer_type_(peer_type), client_side_(client_side) {
  peer_name_.type = peer_type;
  peer_name_.num = -1;
}

AsyncConnection::~AsyncConnection() = default;

std::string AsyncConnection::describe() const {
  std::string text = client_side_ ? "conn(out " : "conn(in ";
  text += peer_name_.to_string();
  if (link_ && !link_->peer_text.empty()) text += " " + link_->peer_text;
  text += " s=" + std::to_string(out_seq_) + "/" + std::to_string(in_seq_) + ")";
  return text;
}

EntityName AsyncConnection::peer_name() const {
  std::lock_guard<std::mutex> guard(out_lock_);
  return peer_name_;
}

EntityAddrVec AsyncConnection::peer_addrs() const {
  std::lock_guard<std::mutex> guard(out_lock_);
  return peer_addrs_;
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

bool AsyncConnection::send_message(MessageRef m) {
  bool schedule = false;
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    if (!closed_) {
      out_queue_.push_back(m);
      schedule = !flush_scheduled_;
      flush_scheduled_ = true;
      m.reset();
    }
  }
  if (m) {  // closed: dropped
    bump(msgr_.perf().msgs_dropped);
    complete(m, false);
    return false;
  }
  if (schedule) {
    auto self = shared_from_this();
    run_on_worker([self] { self->flush_queue(); });
  }
  return true;
}

void AsyncConnection::send_keepalive() {
  auto self = shared_from_this();
  run_on_worker([self] {
    if (self->link_ && self->link_->open) {
      BufferList payload;
      wire::encode(wire::Keepalive2Frame{wire_now()}, payload);
      self->send_control(self->link_, Tag::Keepalive2, payload);
      bump(self->msgr_.perf().keepalives_sent);
      if (self->link_) self->flush_output(self->link_);
    }
  });
}

void AsyncConnection::mark_down() {
  auto self = shared_from_this();
  run_on_worker([self] { self->close("marked down", false); });
}

// ---- link lifecycle -------------------------------------------------------------------------

void AsyncConnection::open_link(LinkRef link) {
  link_ = link;
  link->worker = worker();
  auto self = shared_from_this();
  EventCenter& center = link->worker->center();
  if (!link->connecting) {
    center.create_file_event(link->fd, kEventReadable, [self, link](int, int) { self->on_readable(link); });
    link->read_armed = true;
  }
  auto interval = msgr_.timings().keepalive_interval;
  auto timeout = msgr_.timings().keepalive_timeout;
  if (interval.count() > 0 || timeout.count() > 0) {
    auto period = interval.count() > 0 ? interval : timeout / 4;
    if (timeout.count() > 0 && timeout / 4 < period) period = timeout / 4;
    if (period < std::chrono::milliseconds(1)) period = std::chrono::milliseconds(1);
    std::weak_ptr<AsyncConnection> weak = self;
    std::weak_ptr<Link> weak_link = link;
    std::function<void()> tick;
    link->keepalive_timer = center.create_timer(period, [weak, weak_link] {
      auto con = weak.lock();
      auto l = weak_link.lock();
      if (con && l) con->keepalive_tick(l);
    });
  }
}

void AsyncConnection::start_connect(const EntityAddrVec& addrs) {
  const EntityAddr* addr = addrs.msgr2_addr();
  {
    std::lock_guard<std::mutex> guard(out_lock_);
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
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    if (closed_) return;
  }
  auto link = std::make_shared<Link>();
  link->serial = ++link_serial_;
  link->peer_text = target_.to_string();
  Worker* w = worker();
  SocketAddress sa = SocketAddress::from_sockaddr(target_.sockaddr_ptr(), target_.sockaddr_len());
  int r = w->connect(sa, msgr_.socket_options(), &link->socket);
  link->worker = w;
  if (r < 0) {
    link_ = link;
    link->dead = false;
    fault(link, std::string("connect to ") + target_.to_string() + " failed: " + socket_error_name(r));
    return;
  }
  link->fd = link->socket.fd();
  link->connecting = true;
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
    for (auto& m : sent_) {
      bump(msgr_.perf().msgs_dropped);
      complete(m, false);
    }
    sent_.clear();
    out_seq_ = in_seq_ = acked_in_seq_ = 0;
    in_seq_atomic_ = 0;
    session_established_ = false;
    bump(msgr_.perf().sessions_reset);
    msgr_.notify(AsyncMessenger::Event::RemoteReset, shared_from_this());
  };
  hooks.next_global_seq = [this](uint64_t at_least) { return msgr_.next_global_seq(at_least); };
  link->handshake = Handshake::client(msgr_.handshake_settings(policy_.lossy), target_, session, std::move(hooks));
  open_link(link);
  auto self = shared_from_this();
  w->center().create_file_event(link->fd, kEventWritable, [self, link](int, int) { self->on_connected(link); });
  link->write_armed = true;
}

void AsyncConnection::on_connected(const LinkRef& link) {
  if (link->dead) return;
  int r = link->socket.is_connected();
  if (r == 0) return;
  if (r < 0) {
    if (r == -ECONNREFUSED) msgr_.notify(AsyncMessenger::Event::Refused, shared_from_this());
    fault(link, std::string("connect to ") + target_.to_string() + " failed: " + socket_error_name(r));
    return;
  }
  link->connecting = false;
  EventCenter& center = link->worker->center();
  center.delete_file_event(link->fd, kEventWritable);
  link->write_armed = false;
  auto self = shared_from_this();
  center.create_file_event(link->fd, kEventReadable, [self, link](int, int) { self->on_readable(link); });
  link->read_armed = true;
  link->last_rx = Clock::now();
  link->handshake->start(link->outbuf);
  flush_output(link);
}

void AsyncConnection::start_accept(ConnectedSocket socket, const SocketAddress& peer) {
  auto link = std::make_shared<Link>();
  link->serial = ++link_serial_;
  link->socket = std::move(socket);
  link->fd = link->socket.fd();
  link->peer_text = peer.to_string();
  EntityAddr peer_addr = EntityAddr::msgr2(peer.sockaddr_ptr(), peer.sockaddr_len(), 0);
  Handshake::ServerHooks hooks;
  std::weak_ptr<Link> weak_link = link;
  hooks.accept_session = [this](const wire::ClientIdentFrame& ident, const HandshakeResult& result,
                                std::string* why) -> std::optional<uint64_t> {
    policy_ = msgr_.policy_for(result.peer_name.type);
    peer_type_ = result.peer_name.type;
    {
      std::lock_guard<std::mutex> guard(out_lock_);
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

// ---- I/O ------------------------------------------------------------------------------------

void AsyncConnection::on_readable(const LinkRef& link) {
  if (link->dead || link->stalled) return;
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    ssize_t n = link->socket.zero_copy_read(link->inbuf, kReadChunk);
    if (n > 0) {
      link->last_rx = Clock::now();
      bump(msgr_.perf().bytes_received, static_cast<uint64_t>(n));
      if (static_cast<size_t>(n) < kReadChunk) break;
      continue;
    }
    if (n == 0) {
      fault(link, "peer closed the connection");
      return;
    }
    if (n == -EAGAIN) break;
    fault(link, std::string("read failed: ") + socket_error_name(static_cast<int>(n)));
    return;
  }
  process_input(link);
}

void AsyncConnection::on_writable(const LinkRef& link) {
  if (!link->dead) flush_output(link);
}

void AsyncConnection::flush_output(const LinkRef& link) {
  if (link->dead || link->connecting) return;
  for (int i = 0; i < 64 && !link->outbuf.empty(); ++i) {
    ssize_t n = link->socket.send(link->outbuf, false);
    if (n == -EAGAIN || n == 0) break;
    if (n < 0) {
      fault(link, std::string("send failed: ") + socket_error_name(static_cast<int>(n)));
      return;
    }
  }
  EventCenter& center = link->worker->center();
  if (!link->outbuf.empty() && !link->write_armed) {
    auto self = shared_from_this();
    center.create_file_event(link->fd, kEventWritable, [self, link](int, int) { self->on_writable(link); });
    link->write_armed = true;
  } else if (link->outbuf.empty() && link->write_armed) {
    center.delete_file_event(link->fd, kEventWritable);
    link->write_armed = false;
  }
}

void AsyncConnection::process_input(const LinkRef& link) {
  if (link->dead) return;
  if (link->handshake) {
    Handshake::Status st = link->handshake->feed(link->inbuf, link->outbuf);
    if (st == Handshake::Status::Failed) {
      bump(msgr_.perf().handshake_failures);
      std::string why = "handshake failed " + link->handshake->error();
      flush_output(link);  // best effort: e.g. IDENT_MISSING_FEATURES
      if (!link->dead) fault(link, why);
      return;
    }
    flush_output(link);
    if (link->dead || st != Handshake::Status::Done) return;
    handshake_done(link);
    if (link->dead || link_ != link || !link->open) return;
  }
  if (!link->open) return;
  try {
    for (int i = 0; i < kMaxFramesPerEvent && !link->stalled; ++i) {
      wire::Frame frame;
      if (!link->reader->read(link->inbuf, &frame)) break;
      if (!handle_frame(link, frame) || link->dead) break;
    }
  } catch (const std::exception& e) {
    fault(link, std::string("bad frame: ") + e.what());
    return;
  }
  if (link->dead) return;
  maybe_send_ack(link);
  flush_output(link);
  // More complete frames may be buffered than one event handles: continue on the next loop turn.
  if (!link->dead && !link->stalled && link->inbuf.length() >= link->reader->wanted() && link->reader->wanted() > 0) {
    auto self = shared_from_this();
    link->worker->center().dispatch_external([self, link] { self->process_input(link); });
  }
}

void AsyncConnection::handshake_done(const LinkRef& link) {
  HandshakeResult result = link->handshake->result();
  link->reader = link->handshake->take_reader();
  link->assembler = link->handshake->take_assembler();
  link->handshake.reset();
  if (client_side_ || !result.reconnected) {
    session_ready(link, result);
    return;
  }
  // Server: the client resumed an existing session. Hand this link (and its socket, which lives
  // on this worker) to that session, which moves here if it lived elsewhere.
  auto target = std::move(link->reconnect_target);
  EventCenter& center = link->worker->center();
  if (link->read_armed) center.delete_file_event(link->fd, kEventReadable);
  if (link->write_armed) center.delete_file_event(link->fd, kEventWritable);
  link->read_armed = link->write_armed = false;
  if (link->keepalive_timer) center.cancel_timer(*link->keepalive_timer);
  link->keepalive_timer.reset();
  link_ = nullptr;
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    closed_ = true;
  }
  msgr_.forget(this);
  if (!target) return;
  Worker* here = link->worker;
  target->run_on_worker([target, link, result, here] {
    // On the session's current worker: retire its old link, then move to the new one's worker.
    if (target->link_) target->drop_link(target->link_);
    target->connected_ = false;
    target->worker_.store(here, std::memory_order_release);
    here->center().dispatch_external([target, link, result] { target->adopt_reconnected_link(link, result); });
  });
}

void AsyncConnection::adopt_reconnected_link(LinkRef link, HandshakeResult result) {
  bool closed;
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    closed = closed_;
  }
  if (closed) {
    link->dead = true;
    link->socket.close();
    return;
  }
  open_link(link);
  session_ready(link, result);
  process_input(link);
}

void AsyncConnection::session_ready(const LinkRef& link, const HandshakeResult& result) {
  link->open = true;
  link_ = link;
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    if (client_side_) {
      peer_name_ = result.peer_name;
    } else if (!result.reconnected) {
      peer_name_ = result.peer_name;
      peer_addrs_ = result.peer_addrs;
    }
  }
  if (result.peer_features) peer_features_ = result.peer_features;
  backoff_ = std::chrono::nanoseconds(0);
  if (result.reconnected) {
    // Drop what the peer already has and resend the rest, in order, with their original seqs.
    while (!sent_.empty() && sent_.front()->seq_ <= result.peer_in_seq) {
      bump(msgr_.perf().msgs_acked);
      complete(sent_.front(), true);
      sent_.pop_front();
    }
    connect_seq_ = result.connect_seq;
    bump(msgr_.perf().sessions_reconnected);
    BYPASS_LOG(Debug, "msgr", "%s: session resumed, replaying %zu messages", describe().c_str(), sent_.size());
    try {
      for (auto& m : sent_) {
        write_message(link, m, true);
        bump(msgr_.perf().msgs_replayed);
      }
    } catch (const std::exception& e) {
      fault(link, std::string("replay failed: ") + e.what());
      return;
    }
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

void AsyncConnection::flush_queue() {
  std::deque<MessageRef> batch;
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    flush_scheduled_ = false;
    if (!link_ || !link_->open || link_->dead) return;
    batch.swap(out_queue_);
  }
  LinkRef link = link_;
  size_t written = 0;
  std::string error;
  try {
    while (written < batch.size() && !link->dead) write_message(link, batch[written++], false);
  } catch (const std::exception& e) {
    error = e.what();  // batch[written - 1] is already in sent_ and will be replayed
  }
  if (written < batch.size()) {
    // Not written: back to the front of the queue, in order, for the next link.
    std::lock_guard<std::mutex> guard(out_lock_);
    out_queue_.insert(out_queue_.begin(), batch.begin() + static_cast<std::ptrdiff_t>(written), batch.end());
  }
  if (!error.empty()) {
    fault(link, "cannot send: " + error);
    return;
  }
  flush_output(link);
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
  std::array<BufferList, 4> segments;
  h.encode(segments[0]);
  segments[1] = m->front_;
  segments[2] = m->middle_;
  segments[3] = m->data_;
  static constexpr uint16_t aligns[4] = {wire::kDefaultAlignment, wire::kDefaultAlignment,
                                         wire::kDefaultAlignment, wire::kPageAlignment};
  size_t before = link->outbuf.length();
  link->assembler->assemble(Tag::Message, segments, aligns, link->outbuf);
  bump(msgr_.perf().bytes_sent, link->outbuf.length() - before);
  bump(msgr_.perf().msgs_sent);
}

void AsyncConnection::send_control(const LinkRef& link, Tag tag, const BufferList& payload) {
  try {
    link->assembler->assemble_control(tag, payload, link->outbuf);
  } catch (const std::exception& e) {
    fault(link, std::string("cannot send ") + wire::tag_name(tag) + ": " + e.what());
  }
}

void AsyncConnection::maybe_send_ack(const LinkRef& link) {
  if (in_seq_ <= acked_in_seq_ || !link->open) return;
  BufferList payload;
  wire::encode(wire::AckFrame{in_seq_}, payload);
  acked_in_seq_ = in_seq_;
  send_control(link, Tag::Ack, payload);
}

void AsyncConnection::handle_ack(uint64_t seq) {
  while (!sent_.empty() && sent_.front()->seq_ <= seq) {
    bump(msgr_.perf().msgs_acked);
    complete(sent_.front(), true);
    sent_.pop_front();
  }
}

bool AsyncConnection::handle_frame(const LinkRef& link, wire::Frame& frame) {
  if (frame.aborted) return true;
  std::string payload;
  switch (frame.tag) {
    case Tag::Message:
      return handle_message(link, frame);
    case Tag::Ack:
      handle_ack(wire::decode_AckFrame(frame.segments[0].to_string()).seq);
      return true;
    case Tag::Keepalive2: {
      auto ka = wire::decode_Keepalive2Frame(frame.segments[0].to_string());
      BufferList reply;
      wire::encode(wire::Keepalive2AckFrame{ka.timestamp}, reply);
      send_control(link, Tag::Keepalive2Ack, reply);
      return true;
    }
    case Tag::Keepalive2Ack:
      wire::decode_Keepalive2AckFrame(frame.segments[0].to_string());
      bump(msgr_.perf().keepalive_acks_received);
      return true;
    default:
      fault(link, std::string("unexpected ") + wire::tag_name(frame.tag) + " frame on an open session");
      return false;
  }
}

bool AsyncConnection::handle_message(const LinkRef& link, wire::Frame& frame) {
  wire::MessageHeader2 h = wire::MessageHeader2::decode(frame.segments[0].to_string());
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
    bump(msgr_.perf().throttle_stalls);
    link->stalled = true;
    link->stalled_frame = std::move(frame);
    if (link->read_armed) {
      link->worker->center().delete_file_event(link->fd, kEventReadable);
      link->read_armed = false;
    }
    std::weak_ptr<AsyncConnection> weak = shared_from_this();
    link->worker->center().create_timer(kThrottleRetry, [weak, link] {
      if (auto con = weak.lock()) con->resume_reading(link);
    });
    return false;
  }
  in_seq_ = h.seq;
  in_seq_atomic_.store(in_seq_, std::memory_order_release);
  MessageRef m = msgr_.registry().create(h.type, h.version, h.compat_version);
  m->seq_ = h.seq;
  m->tid_ = h.tid;
  m->priority_ = h.priority;
  m->front_ = std::move(frame.segments[1]);
  m->middle_ = std::move(frame.segments[2]);
  m->data_ = std::move(frame.segments[3]);
  m->connection_ = shared_from_this();
  m->source_ = peer_name_;
  bump(msgr_.perf().msgs_received);
  std::shared_ptr<Throttle> tb = policy_.throttle_bytes, tm = policy_.throttle_messages;
  AsyncMessenger* msgr = &msgr_;
  auto release = [msgr, tb, tm, size] {
    msgr->dispatch_throttle().put(size);
    if (tb) tb->put(size);
    if (tm) tm->put(1);
  };
  try {
    m->decode_payload();
  } catch (const std::exception& e) {
    release();
    fault(link, "cannot decode message type " + std::to_string(h.type) + ": " + e.what());
    return false;
  }
  msgr_.deliver(m, std::move(release));
  return true;
}

void AsyncConnection::resume_reading(const LinkRef& link) {
  if (link->dead || !link->stalled) return;
  link->stalled = false;
  wire::Frame frame = std::move(link->stalled_frame);
  try {
    if (!handle_message(link, frame)) return;  // still short of budget (re-parked) or faulted
  } catch (const std::exception& e) {
    fault(link, std::string("bad frame: ") + e.what());
    return;
  }
  if (!link->read_armed && !link->dead) {
    auto self = shared_from_this();
    link->worker->center().create_file_event(link->fd, kEventReadable, [self, link](int, int) { self->on_readable(link); });
    link->read_armed = true;
  }
  process_input(link);
}

void AsyncConnection::keepalive_tick(const LinkRef& link) {
  link->keepalive_timer.reset();
  if (link->dead) return;
  auto now = Clock::now();
  auto timeout = msgr_.timings().keepalive_timeout;
  auto interval = msgr_.timings().keepalive_interval;
  if (timeout.count() > 0 && !link->stalled && now - link->last_rx > timeout) {
    bump(msgr_.perf().keepalive_timeouts);
    fault(link, "nothing received from the peer for " +
                    std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - link->last_rx).count()) +
                    " ms (ms.keepalive_timeout)");
    return;
  }
  if (interval.count() > 0 && link->open) {
    BufferList payload;
    wire::encode(wire::Keepalive2Frame{wire_now()}, payload);
    send_control(link, Tag::Keepalive2, payload);
    bump(msgr_.perf().keepalives_sent);
    if (link->dead) return;
    flush_output(link);
    if (link->dead) return;
  }
  auto period = interval.count() > 0 ? interval : timeout / 4;
  if (timeout.count() > 0 && timeout / 4 < period) period = timeout / 4;
  if (period < std::chrono::milliseconds(1)) period = std::chrono::milliseconds(1);
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  std::weak_ptr<Link> weak_link = link;
  link->keepalive_timer = link->worker->center().create_timer(period, [weak, weak_link] {
    auto con = weak.lock();
    auto l = weak_link.lock();
    if (con && l) con->keepalive_tick(l);
  });
}

// ---- faults ---------------------------------------------------------------------------------

void AsyncConnection::drop_link(const LinkRef& link) {
  if (link->dead) return;
  link->dead = true;
  EventCenter& center = link->worker->center();
  if (link->fd >= 0) {
    if (link->read_armed) center.delete_file_event(link->fd, kEventReadable);
    if (link->write_armed) center.delete_file_event(link->fd, kEventWritable);
  }
  link->read_armed = link->write_armed = false;
  if (link->keepalive_timer) center.cancel_timer(*link->keepalive_timer);
  link->keepalive_timer.reset();
  if (link->socket) link->socket.close();
  link->reconnect_target.reset();
  if (link_ == link) link_ = nullptr;
}

void AsyncConnection::fault(const LinkRef& link, const std::string& why) {
  if (link->dead) return;
  bool attached = link_ == link;
  bool was_open = link->open;
  bump(msgr_.perf().faults);
  BYPASS_LOG(Info, "msgr", "%s: fault: %s", describe().c_str(), why.c_str());
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    last_fault_ = why;
  }
  drop_link(link);
  if (!attached) return;
  connected_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    if (closed_) return;
  }
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
}

void AsyncConnection::schedule_reconnect() {
  if (msgr_.stopping()) return;
  auto lo = msgr_.timings().backoff_min, hi = msgr_.timings().backoff_max;
  backoff_ = backoff_.count() == 0 ? lo : std::min(hi, backoff_ * 2);
  std::weak_ptr<AsyncConnection> weak = shared_from_this();
  reconnect_timer_ = worker()->center().create_timer(backoff_, [weak] {
    if (auto con = weak.lock()) con->reconnect();
  });
}

void AsyncConnection::close(const std::string& why, bool notify_reset) {
  std::deque<MessageRef> queued;
  {
    std::lock_guard<std::mutex> guard(out_lock_);
    if (closed_) return;
    closed_ = true;
    queued.swap(out_queue_);
  }
  BYPASS_LOG(Debug, "msgr", "%s: closed: %s", describe().c_str(), why.c_str());
  connected_.store(false, std::memory_order_release);
  if (link_) drop_link(link_);
  if (reconnect_timer_) worker()->center().cancel_timer(*reconnect_timer_);
  reconnect_timer_.reset();
  for (auto& m : sent_) {
    bump(msgr_.perf().msgs_dropped);
    complete(m, false);
  }
  sent_.clear();
  for (auto& m : queued) {
    bump(msgr_.perf().msgs_dropped);
    complete(m, false);
  }
  auto self = shared_from_this();
  if (notify_reset) msgr_.notify(AsyncMessenger::Event::Reset, self);
  msgr_.forget(this);
}

}  // namespace bypass::msgr
