#include "stack/rdma/rdma_connection.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "base/log.h"
#include "stack/rdma/rdma_socket.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {

namespace {

SocketAddress side_address(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  if ((peer ? getpeername(fd, sa, &len) : getsockname(fd, sa, &len)) != 0) return {};
  return SocketAddress::from_sockaddr(sa, len);
}

uint32_t random_psn() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return rng() & 0xffffff;  // PSNs are 24 bits (IBTA base transport header)
}

}  // namespace

RdmaConnection::RdmaConnection(RdmaWorker& worker, int side_fd, bool is_client,
                               RdmaServerSocket* server)
    : worker_(worker),
      side_fd_(side_fd),
      is_client_(is_client),
      server_(server),
      state_(is_client ? ConnState::Connecting : ConnState::Handshaking),
      recv_credits_(worker.tuning().rx_window),
      send_limit_(worker.tuning().chunk_size) {}

RdmaConnection::RdmaConnection(RdmaWorker& worker, rdma_cm_id* cm_id, bool is_client,
                               RdmaServerSocket* server)
    : RdmaConnection(worker, -1, is_client, server) {
  cm_id_ = cm_id;
  cm_channel_ = worker.cm_channel();
}

RdmaConnection::~RdmaConnection() {
  destroy_qp();
  close_side_channel();
  if (cm_id_ != nullptr) {
    cm_id_->context = nullptr;
    // The QP is ours (not rdma_create_qp's), so this only leaves the CM: DREQ if still connected.
    if (rdma_destroy_id(cm_id_) != 0) BYPASS_LOG(Warn, "rdma", "rdma_destroy_id: %s", strerror(errno));
    cm_id_ = nullptr;
  }
  if (event_id_ >= 0) {
    if (worker_.center().in_thread())
      worker_.center().delete_file_event(event_id_, kEventReadable | kEventWritable);
    worker_.poller().destroy_user_event(event_id_);
  }
}

int RdmaConnection::start(std::chrono::milliseconds connect_timeout) {
  event_id_ = worker_.poller().create_user_event();
  if (event_id_ < 0) return event_id_;
  qp_ = worker_.create_qp();
  if (qp_ == nullptr) return -ENOMEM;
  worker_.register_qp(this, qp_->qp_num);
  local_psn_ = random_psn();
  if (!worker_.tuning().use_srq) worker_.post_receives_for(this);
  std::weak_ptr<RdmaConnection> weak = weak_from_this();
  connect_timer_ = worker_.center().create_timer(connect_timeout, [weak] {
    if (auto self = weak.lock()) {
      self->connect_timer_ = 0;
      self->fail(-ETIMEDOUT, "connection setup timed out");
    }
  });
  if (cm_id_ != nullptr) return cm_start(connect_timeout);
  worker_.center().create_file_event(side_fd_, is_client_ ? kEventWritable : kEventReadable,
                                     [weak](int, int mask) {
                                       if (auto self = weak.lock()) self->on_side_channel(mask);
                                     });
  if (!is_client_) {
    local_ = side_address(side_fd_, false);
    peer_ = side_address(side_fd_, true);
  }
  return 0;
}

void RdmaConnection::set_state(ConnState next) {
  if (!transition_allowed(state_, next)) {
    BYPASS_LOG(Error, "rdma", "qp 0x%x: illegal transition %s -> %s", qp_num(), to_string(state_),
               to_string(next));
    return;
  }
  state_ = next;
}

// ---------------------------------------------------------------- side channel / handshake

void RdmaConnection::on_side_channel(int mask) {
  if (state_ == ConnState::Connecting && (mask & kEventWritable)) {
    side_connected();
  } else if (mask & kEventReadable) {
    side_readable();
  }
}

void RdmaConnection::side_connected() {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(side_fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return fail(-err, "side-channel connect failed");
  set_state(ConnState::Handshaking);
  local_ = side_address(side_fd_, false);
  peer_ = side_address(side_fd_, true);
  worker_.center().delete_file_event(side_fd_, kEventWritable);
  std::weak_ptr<RdmaConnection> weak = weak_from_this();
  worker_.center().create_file_event(side_fd_, kEventReadable, [weak](int, int mask) {
    if (auto self = weak.lock()) self->on_side_channel(mask);
  });
  QpInfo request;
  request.kind = QpInfo::Kind::Request;
  request.mtu = static_cast<uint8_t>(worker_.device().active_mtu());
  request.qp_num = qp_num();
  request.psn = local_psn_;
  request.lid = worker_.device().lid();
  std::memcpy(request.gid.data(), worker_.device().gid().raw, 16);
  request.rx_window = recv_credits_.window();
  write_side(request);
}

bool RdmaConnection::write_side(const QpInfo& info) {
  const auto bytes = info.encode();
  // 40 bytes into a fresh socket's empty send buffer: a short write means the socket is broken.
  const ssize_t n = ::send(side_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(bytes.size())) {
    fail(n < 0 ? -errno : -EPROTO, "side-channel write failed");
    return false;
  }
  return true;
}

void RdmaConnection::side_readable() {
  for (int rounds = 0; rounds < 16 && side_fd_ >= 0; ++rounds) {
    const ssize_t n = ::recv(side_fd_, side_buf_ + side_have_, sizeof(side_buf_) - side_have_, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      // The peer's process closed the side channel or died. Anything it sent before, including
      // its FIN, is already in our CQ (its sends completed before it closed), so poll first.
      worker_.center().delete_file_event(side_fd_, kEventReadable | kEventWritable);
      side_eof_ = true;
      side_have_ = 0;
      worker_.poll_completions();
      if (state_ == ConnState::Established && fin_received_) {
        update_events();
        return;
      }
      if (state_ == ConnState::Draining && fin_received_) return maybe_finish_drain();
      return fail(state_ == ConnState::Handshaking ? -ECONNREFUSED : -ECONNRESET,
                  n < 0 ? "side channel error" : "peer closed the side channel");
    }
    if (state_ == ConnState::Established || state_ == ConnState::Draining) {
      for (ssize_t i = 0; i < n; ++i) {
        if (side_buf_[side_have_ + static_cast<size_t>(i)] != static_cast<uint8_t>(kCloseMarker))
          return fail(-EPROTO, "unexpected bytes on the side channel after setup");
      }
      // The peer closed after all its sends completed: take in what they delivered, then EOF.
      worker_.poll_completions();
      fin_received_ = true;
      side_eof_ = true;  // no more sends: the peer's QP is going away
      update_events();
      continue;
    }
    side_have_ += static_cast<size_t>(n);
    if (side_have_ < sizeof(side_buf_)) continue;
    side_have_ = 0;
    std::string error;
    auto info = QpInfo::decode(side_buf_, sizeof(side_buf_), &error);
    if (!info) {
      BYPASS_LOG(Warn, "rdma", "%s from %s", error.c_str(), peer_.to_string().c_str());
      return fail(-EPROTO, "malformed handshake");
    }
    if (handle_peer_info(*info) < 0) return;
  }
}

int RdmaConnection::handle_peer_info(const QpInfo& info) {
  BYPASS_LOG(Debug, "rdma", "qp 0x%x got %s", qp_num(), info.describe().c_str());
  if (state_ != ConnState::Handshaking) {
    fail(-EPROTO, "handshake message in the wrong state");
    return -EPROTO;
  }
  if (!is_client_ && info.kind == QpInfo::Kind::Request) {
    if (int rc = move_qp_to_rts(info); rc < 0) return rc;
    send_credits_.reset(info.rx_window);
    QpInfo reply;
    reply.kind = QpInfo::Kind::Reply;
    reply.mtu = static_cast<uint8_t>(worker_.device().active_mtu());
    reply.qp_num = qp_num();
    reply.psn = local_psn_;
    reply.lid = worker_.device().lid();
    std::memcpy(reply.gid.data(), worker_.device().gid().raw, 16);
    reply.rx_window = recv_credits_.window();
    return write_side(reply) ? 0 : -EPIPE;
  }
  if (is_client_ && info.kind == QpInfo::Kind::Reply) {
    if (int rc = move_qp_to_rts(info); rc < 0) return rc;
    send_credits_.reset(info.rx_window);
    QpInfo ready;
    ready.kind = QpInfo::Kind::Ready;
    ready.mtu = static_cast<uint8_t>(worker_.device().active_mtu());
    if (!write_side(ready)) return -EPIPE;
    established();
    return 0;
  }
  if (!is_client_ && info.kind == QpInfo::Kind::Ready && qp_ != nullptr && qp_->state == IBV_QPS_RTS) {
    established();
    if (server_ != nullptr) server_->connection_ready(this);
    return 0;
  }
  fail(-EPROTO, "unexpected handshake message");
  return -EPROTO;
}

int RdmaConnection::move_qp_to_rts(const QpInfo& remote) {
  RdmaDevice& dev = worker_.device();
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(std::min<int>(dev.active_mtu(), remote.mtu));
  attr.dest_qp_num = remote.qp_num;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;  // 0.64 ms between receiver-not-ready retries
  attr.ah_attr.dlid = remote.lid;
  attr.ah_attr.port_num = dev.port();
  static const uint8_t zero[16] = {};
  if (dev.is_ethernet() || std::memcmp(remote.gid.data(), zero, 16) != 0) {
    // RoCE addresses by GID: a global route header is mandatory.
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev.gid_index());
    attr.ah_attr.grh.hop_limit = 64;
  }
  int rc = ibv_modify_qp(qp_, &attr,
                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                             IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) {
    BYPASS_LOG(Warn, "rdma", "qp 0x%x -> RTR failed: %s (peer %s)", qp_num(), strerror(rc),
               remote.describe().c_str());
    fail(-rc, "cannot move QP to RTR");
    return -rc;
  }
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  // rdma.ack_timeout and rdma.retry_count: by default 67 ms per transport retry, 7 retries, so a
  // dead peer is declared after ~0.5 s of silence.
  attr.timeout = worker_.tuning().ack_timeout_exponent;
  attr.retry_cnt = worker_.tuning().retry_count;
  attr.rnr_retry = 7;   // 7 = retry forever: an empty receive queue is backpressure, not an error
  attr.sq_psn = local_psn_;
  attr.max_rd_atomic = 1;
  rc = ibv_modify_qp(qp_, &attr,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) {
    fail(-rc, "cannot move QP to RTS");
    return -rc;
  }
  return 0;
}

void RdmaConnection::established() {
  if (connect_timer_ != 0) worker_.center().cancel_timer(connect_timer_);
  connect_timer_ = 0;
  set_state(ConnState::Established);
  update_events();
}

// ---------------------------------------------------------------- owner interface

int RdmaConnection::is_connected() const {
  switch (state_) {
    case ConnState::Connecting:
    case ConnState::Handshaking: return 0;
    case ConnState::Failed: return error_;
    default: return 1;
  }
}

void RdmaConnection::update_events() {
  if (event_id_ < 0) return;
  int ready = 0;
  if (rx_bytes_ > 0 || fin_received_ || side_eof_ || state_ == ConnState::Failed) ready |= kEventReadable;
  // A sender waiting for room or credits from a peer that is gone is told too: send() says EPIPE.
  if ((state_ == ConnState::Established && (!want_writable_ || side_eof_)) || state_ == ConnState::Failed)
    ready |= kEventWritable;
  if (ready) worker_.poller().notify(event_id_, ready);
  const int not_ready = (kEventReadable | kEventWritable) & ~ready;
  if (not_ready) worker_.poller().clear(event_id_, not_ready);
}

ssize_t RdmaConnection::read(char* buf, size_t len) {
  size_t copied = 0;
  uint32_t messages = 0;
  while (copied < len && !rx_.empty()) {
    BufferSegment& seg = rx_.front();
    const size_t n = std::min(len - copied, seg.length());
    std::memcpy(buf + copied, seg.data(), n);
    copied += n;
    if (n == seg.length()) {
      rx_.pop_front();  // the chunk goes back to the receive queue
      ++messages;
    } else {
      seg.trim_front(n);
    }
  }
  rx_bytes_ -= copied;
  if (messages > 0) consumed(messages);
  if (copied > 0 || len == 0) {
    update_events();
    return static_cast<ssize_t>(copied);
  }
  if (fin_received_) return 0;
  if (state_ == ConnState::Failed) return error_;
  if (side_eof_) return -ECONNRESET;
  update_events();
  return -EAGAIN;
}

ssize_t RdmaConnection::zero_copy_read(BufferList& out, size_t max_len) {
  size_t moved = 0;
  uint32_t messages = 0;
  while (moved < max_len && !rx_.empty()) {
    BufferSegment& seg = rx_.front();
    if (seg.length() <= max_len - moved) {
      moved += seg.length();
      out.append(std::move(seg));
      rx_.pop_front();
      ++messages;
    } else {
      const size_t n = max_len - moved;
      out.append(seg.sub(0, n));
      seg.trim_front(n);
      moved += n;
    }
  }
  rx_bytes_ -= moved;
  // The owner holds these chunks now: they left the window (the pool's other users are bounded by
  // their own windows, the owner by what it chooses to keep).
  if (messages > 0) consumed(messages);
  if (moved > 0 || max_len == 0) {
    update_events();
    return static_cast<ssize_t>(moved);
  }
  if (fin_received_) return 0;
  if (state_ == ConnState::Failed) return error_;
  if (side_eof_) return -ECONNRESET;
  update_events();
  return -EAGAIN;
}

ssize_t RdmaConnection::send(BufferList& data) {
  if (state_ == ConnState::Failed) return error_;
  if (state_ == ConnState::Connecting || state_ == ConnState::Handshaking) return -EAGAIN;
  if (state_ != ConnState::Established || fin_sent_ || fin_wanted_ || side_eof_) return -EPIPE;
  const size_t max_message = send_limit_;
  const uint32_t depth = worker_.tuning().qp_depth;
  size_t accepted = 0;
  // Two send slots per QP stay free: the FIN's and a credit-only message's. Every data SEND takes
  // one of the peer's credits.
  while (!data.empty() && send_credits_.can_send() && sends_outstanding_ + 2 < depth &&
         worker_.send_budget_left() > 1) {
    const BufferSegment& front = data.segments().front();
    const size_t piece = std::min(front.length(), max_message);
    if (piece > 0 && worker_.lkey_for(front.data(), piece) != 0) {
      // Already registered (a received chunk being forwarded, say): post it in place.
      if (!post_send(nullptr, front.data(), static_cast<uint32_t>(piece), front.sub(0, piece),
                     SendKind::Data))
        break;
      data.trim_front(piece);
      accepted += piece;
      continue;
    }
    char* chunk = worker_.tx_pool().get();
    if (chunk == nullptr) break;
    // Copy unregistered segments into the chunk, stopping at a registered one (sent in place).
    size_t fill = 0;
    for (const BufferSegment& seg : data.segments()) {
      if (fill == max_message) break;
      if (fill > 0 && worker_.lkey_for(seg.data(), seg.length()) != 0) break;
      const size_t n = std::min(seg.length(), max_message - fill);
      std::memcpy(chunk + fill, seg.data(), n);
      fill += n;
      if (n < seg.length()) break;
    }
    if (!post_send(chunk, chunk, static_cast<uint32_t>(fill), {}, SendKind::Data)) break;
    data.trim_front(fill);
    accepted += fill;
  }
  if (state_ == ConnState::Failed && accepted == 0) return error_;
  if (accepted == 0 && !data.empty()) {
    want_writable_ = true;
    worker_.count_send_eagain();
    // Out of credits: on_credits() wakes us. Out of slots or chunks: a completion does.
    if (!blocked_on_credits()) worker_.wait_for_send_room(this);
    update_events();
    return -EAGAIN;
  }
  return static_cast<ssize_t>(accepted);
}

bool RdmaConnection::post_send(char* chunk, const char* data, uint32_t len, BufferSegment held,
                               SendKind kind) {
  const int64_t slot = worker_.acquire_send_slot(this, chunk, std::move(held), kind == SendKind::Credit);
  if (slot < 0) {
    if (chunk) worker_.tx_pool().put(chunk);
    return false;
  }
  // Immediate data (flow_credits.h): the FIN's marker, or what we owe the peer. A data SEND with
  // nothing owed stays a plain SEND.
  uint32_t imm = 0;
  bool with_imm = true;
  if (kind == SendKind::Fin) {
    imm = kFinImmediate;
  } else {
    const uint32_t returned = recv_credits_.take();
    imm = credit_immediate(returned);
    with_imm = returned > 0 || kind == SendKind::Credit;
  }
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(data);
  sge.length = len;
  sge.lkey = len > 0 ? worker_.lkey_for(data, len) : 0;
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(slot);
  wr.sg_list = len > 0 ? &sge : nullptr;
  wr.num_sge = len > 0 ? 1 : 0;
  wr.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
  wr.imm_data = htonl(imm);
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, &wr, &bad);
  if (rc != 0) {
    worker_.cancel_send_slot(slot);
    fail(-rc, "ibv_post_send failed");
    return false;
  }
  ++sends_outstanding_;
  if (kind == SendKind::Data) send_credits_.consume();
  if (kind == SendKind::Credit) recv_credits_.credit_message_posted();
  return true;
}

void RdmaConnection::shutdown() {
  if (state_ != ConnState::Established || fin_sent_) return;
  fin_wanted_ = true;
  try_post_fin();
}

void RdmaConnection::try_post_fin() {
  if (!fin_wanted_ || fin_sent_ || qp_ == nullptr || side_eof_) return;
  if (sends_outstanding_ >= worker_.tuning().qp_depth) return;  // a completion retries
  if (worker_.send_budget_left() == 0) {
    // Other connections hold every send slot; with none of ours in flight no completion of ours
    // would retry, so ask for the worker's next one.
    worker_.wait_for_send_room(this);
    return;
  }
  if (post_send(nullptr, nullptr, 0, {}, SendKind::Fin)) {
    fin_sent_ = true;
    fin_wanted_ = false;
  }
}

void RdmaConnection::consumed(uint32_t n) {
  recv_credits_.on_consumed(n);
  try_post_credits();
}

void RdmaConnection::try_post_credits() {
  // Nothing to return to a peer that sends no more (its FIN or close arrived, or it is gone), nor
  // from a connection being closed or failed.
  if (!recv_credits_.credit_message_due() || state_ != ConnState::Established || fin_received_ ||
      side_eof_ || qp_ == nullptr)
    return;
  // The FIN's slot stays free; a completion of ours retries (on_send_complete).
  if (sends_outstanding_ + 1 >= worker_.tuning().qp_depth) return;
  if (worker_.send_budget_left() == 0) {
    worker_.wait_for_send_room(this);  // as try_post_fin: no completion of ours may be pending
    return;
  }
  post_send(nullptr, nullptr, 0, {}, SendKind::Credit);
}

void RdmaConnection::on_credits(uint32_t n) {
  if (!send_credits_.add(n)) return fail(-EPROTO, "peer returned more credits than it was given");
  if (want_writable_ && state_ == ConnState::Established && send_credits_.can_send()) {
    want_writable_ = false;
    update_events();
  }
}

void RdmaConnection::close() {
  if (owner_closed_) return;
  owner_closed_ = true;
  if (worker_.center().in_thread() && event_id_ >= 0)
    worker_.center().delete_file_event(event_id_, kEventReadable | kEventWritable);
  rx_.clear();  // received chunks go back to the receive queue
  rx_bytes_ = 0;
  if (connect_timer_ != 0) worker_.center().cancel_timer(connect_timer_);
  connect_timer_ = 0;
  if (state_ == ConnState::Established) {
    // Side channel: the end of stream travels on it (see maybe_finish_drain): an RDMA FIN would
    // need the peer's QP alive to be acknowledged, and with both ends closing at once it often is
    // not, leaving the send to time out. rdma_cm: the FIN goes first and the disconnect only after
    // it completed; a peer closing at the same time disconnects us, which flushes our FIN at once
    // (no timeout), and its own end of stream had completed before its disconnect.
    fin_wanted_ = cm_id_ != nullptr;
    set_state(ConnState::Draining);
    try_post_fin();
    std::weak_ptr<RdmaConnection> weak = weak_from_this();
    drain_timer_ = worker_.center().create_timer(worker_.tuning().drain_timeout, [weak] {
      if (auto self = weak.lock()) {
        self->drain_timer_ = 0;
        self->fail(-ETIMEDOUT, "close did not drain in time");
      }
    });
  } else if (state_ == ConnState::Connecting || state_ == ConnState::Handshaking) {
    set_state(ConnState::Draining);
    move_qp_to_error();
  }
  maybe_finish_drain();
}

void RdmaConnection::fail(int error, const char* why) {
  if (state_ == ConnState::Failed || state_ == ConnState::Destroyed) return;
  BYPASS_LOG(Debug, "rdma", "qp 0x%x %s -> failed: %s (%s)", qp_num(), to_string(state_), why,
             strerror(-error));
  set_state(ConnState::Failed);
  error_ = error;
  if (connect_timer_ != 0) worker_.center().cancel_timer(connect_timer_);
  connect_timer_ = 0;
  if (drain_timer_ != 0) worker_.center().cancel_timer(drain_timer_);
  drain_timer_ = 0;
  if (side_fd_ >= 0) worker_.center().delete_file_event(side_fd_, kEventReadable | kEventWritable);
  move_qp_to_error();
  cm_disconnect();  // the peer learns at once instead of from its retries running out
  update_events();
  if (server_ != nullptr && !owner_closed_) {
    RdmaServerSocket* server = server_;
    server_ = nullptr;
    server->connection_failed(this);  // not handed out yet: the server drops it
  }
  maybe_finish_drain();
}

// ---------------------------------------------------------------- completions and teardown

void RdmaConnection::on_receive(BufferSegment segment, bool fin) {
  if (owner_closed_) return;  // dropping the segment returns its chunk
  if (!segment.empty()) {
    if (!recv_credits_.on_message()) return fail(-EPROTO, "peer overran our receive window");
    rx_bytes_ += segment.length();
    rx_.push_back(std::move(segment));
  }
  if (fin) fin_received_ = true;
  update_events();
}

void RdmaConnection::on_send_complete(bool ok, ibv_wc_status status, bool credit_only) {
  --sends_outstanding_;
  if (credit_only) recv_credits_.credit_message_completed();
  // A credit return that failed because the peer had finished sending (and closed) is no error
  // of the stream: the peer needed no more credits.
  const bool harmless = credit_only && (fin_received_ || side_eof_ || owner_closed_);
  if (!ok && status != IBV_WC_WR_FLUSH_ERR && !harmless) {
    fail(-ECONNRESET, ibv_wc_status_str(status));
  }
  if (want_writable_ && state_ == ConnState::Established && !blocked_on_credits()) {
    want_writable_ = false;
    update_events();
  }
  try_post_fin();
  try_post_credits();
  maybe_finish_drain();
}

void RdmaConnection::on_send_complete_room() {
  if (fin_wanted_ && !fin_sent_) {
    try_post_fin();
    maybe_finish_drain();
  }
  try_post_credits();
  if (!want_writable_ || blocked_on_credits()) return;
  want_writable_ = false;
  update_events();
}

void RdmaConnection::maybe_finish_drain() {
  if (!owner_closed_ || state_ == ConnState::Destroyed) return;
  if (state_ == ConnState::Draining) {
    // Data still in flight. A credit-only message need not arrive: the peer may be gone already,
    // leaving it to retry until the transport gives up; moving the QP to error flushes it.
    if (sends_outstanding_ > (recv_credits_.credit_message_in_flight() ? 1u : 0u)) return;
    if (fin_wanted_ && !fin_sent_ && !side_eof_) return;  // waiting for a send slot
    // Everything we sent was acknowledged by the peer's HCA: it is in the peer's CQ, which the
    // peer polls before it acts on the side channel (or on our disconnect). So the close marker
    // (or disconnect), then EOF, follow the data in order.
    cm_disconnect();
    if (side_fd_ >= 0 && !side_eof_ && qp_ != nullptr && qp_->state == IBV_QPS_RTS) {
      const char marker = kCloseMarker;
      (void)::send(side_fd_, &marker, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    move_qp_to_error();  // flushes per-QP receives
  } else if (state_ != ConnState::Failed) {
    return;
  }
  if (!drained()) return;
  if (drain_timer_ != 0) worker_.center().cancel_timer(drain_timer_);
  drain_timer_ = 0;
  set_state(ConnState::Destroyed);
  worker_.retire(this);
}

void RdmaConnection::move_qp_to_error() {
  if (qp_ == nullptr || qp_->state == IBV_QPS_ERR || qp_->state == IBV_QPS_RESET) return;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (int rc = ibv_modify_qp(qp_, &attr, IBV_QP_STATE); rc != 0)
    BYPASS_LOG(Warn, "rdma", "qp 0x%x -> ERR failed: %s", qp_num(), strerror(rc));
}

void RdmaConnection::destroy_qp() {
  if (qp_ == nullptr) return;
  if (int rc = ibv_destroy_qp(qp_); rc != 0)
    BYPASS_LOG(Error, "rdma", "ibv_destroy_qp failed: %s", strerror(rc));
  qp_ = nullptr;
}

void RdmaConnection::close_side_channel() {
  if (side_fd_ < 0) return;
  if (worker_.center().in_thread())
    worker_.center().delete_file_event(side_fd_, kEventReadable | kEventWritable);
  ::close(side_fd_);
  side_fd_ = -1;
}

}  // namespace bypass::rdma
