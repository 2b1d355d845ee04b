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
      send_limit_(worker.tuning().chunk_size) {
  // A descriptor holds one of our credits until its bytes are consumed: the window bounds them.
  inbound_.reset(worker.tuning().rx_window);
}

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
  request.read_depth = worker_.read_depth();
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
    take_read_depth(info.read_depth);
    if (int rc = move_qp_to_rts(info); rc < 0) return rc;
    send_credits_.reset(info.rx_window);
    outbound_.reset(info.rx_window);
    QpInfo reply;
    reply.kind = QpInfo::Kind::Reply;
    reply.mtu = static_cast<uint8_t>(worker_.device().active_mtu());
    reply.qp_num = qp_num();
    reply.psn = local_psn_;
    reply.lid = worker_.device().lid();
    std::memcpy(reply.gid.data(), worker_.device().gid().raw, 16);
    reply.rx_window = recv_credits_.window();
    reply.read_depth = worker_.read_depth();
    return write_side(reply) ? 0 : -EPIPE;
  }
  if (is_client_ && info.kind == QpInfo::Kind::Reply) {
    take_read_depth(info.read_depth);
    if (int rc = move_qp_to_rts(info); rc < 0) return rc;
    send_credits_.reset(info.rx_window);
    outbound_.reset(info.rx_window);
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
  // The peer's READs of our descriptors' memory (rendezvous.h); at least 1, as verbs expects.
  attr.max_dest_rd_atomic = std::max<uint8_t>(read_depth_, 1);
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
  attr.max_rd_atomic = std::max<uint8_t>(read_depth_, 1);  // our READs in flight (pump_reads)
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
  // The peer may have sent before we learned that it is ready (its first SENDs can overtake its
  // Ready on the side channel): descriptors that came with them are read now.
  pump_reads();
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

void RdmaConnection::close() {
  if (owner_closed_) return;
  owner_closed_ = true;
  if (worker_.center().in_thread() && event_id_ >= 0)
    worker_.center().delete_file_event(event_id_, kEventReadable | kEventWritable);
  rx_.clear();  // received chunks go back to the receive queue
  inbound_.clear();  // and read payloads to RegisteredMemory; READs in flight drop theirs on completion
  if (connect_timer_ != 0) worker_.center().cancel_timer(connect_timer_);
  connect_timer_ = 0;
  if (read_retry_timer_ != 0) worker_.center().cancel_timer(read_retry_timer_);
  read_retry_timer_ = 0;
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

void RdmaConnection::maybe_finish_drain() {
  if (!owner_closed_ || state_ == ConnState::Destroyed) return;
  if (state_ == ConnState::Draining) {
    // Data still in flight. A credit-only message need not arrive: the peer may be gone already,
    // leaving it to retry until the transport gives up; moving the QP to error flushes it.
    if (sends_outstanding_ > (recv_credits_.credit_message_in_flight() ? 1u : 0u)) return;
    if (fin_wanted_ && !fin_sent_ && !side_eof_) return;  // waiting for a send slot
    // The peer still reads descriptors' memory: closing now would fail its READs.
    if (outbound_.outstanding() > 0 && !side_eof_) return;
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
  // No READ can reach our memory through this QP any more.
  worker_.descriptors_released(outbound_.outstanding());
  outbound_.release_all(&worker_.registration_cache());
}

void RdmaConnection::close_side_channel() {
  if (side_fd_ < 0) return;
  if (worker_.center().in_thread())
    worker_.center().delete_file_event(side_fd_, kEventReadable | kEventWritable);
  ::close(side_fd_);
  side_fd_ = -1;
}

}  // namespace bypass::rdma
