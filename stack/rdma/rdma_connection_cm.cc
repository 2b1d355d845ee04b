// RdmaConnection's rdma_cm set-up and teardown (rdma.connect_mode: rdma_cm). The QP is ours
// (created on the worker's CQ and SRQ like in the side-channel mode); the CM only connects it:
//
//   client  rdma_resolve_addr -> ADDR_RESOLVED -> rdma_resolve_route -> ROUTE_RESOLVED ->
//           rdma_connect (REQ: our QP number, PSN, CmPrivateData) -> CONNECT_RESPONSE (REP) ->
//           QP to RTR/RTS with rdma_init_qp_attr -> rdma_establish (RTU) -> Established
//   server  CONNECT_REQUEST -> QP to RTR/RTS -> rdma_accept (REP) -> ESTABLISHED (RTU) -> handed out
//
// Because the QP is not rdma_create_qp's, librdmacm reports CONNECT_RESPONSE instead of moving
// the QP itself, and never touches the QP on DISCONNECTED either: that is this file's job.
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "stack/rdma/rdma_connection.h"
#include "stack/rdma/rdma_socket.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {

namespace {

int timeout_ms(std::chrono::milliseconds timeout) {
  return static_cast<int>(std::clamp<int64_t>(timeout.count(), 100, 60'000));
}

SocketAddress address_of(const sockaddr* sa) {
  if (sa == nullptr) return {};
  return SocketAddress::from_sockaddr(sa, sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
}

bool is_loopback(const SocketAddress& a) {
  if (a.is_ipv4()) return (a.ipv4_host_order() >> 24) == 127;
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a.sockaddr_ptr());
  return a.family() == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

}  // namespace

int RdmaConnection::cm_start(std::chrono::milliseconds connect_timeout) {
  cm_id_->context = static_cast<CmEventTarget*>(this);
  if (!is_client_) {
    cm_accept_request();
    return 0;
  }
  // The source address picks the device. Left to the kernel, a destination that is one of this
  // host's addresses resolves through lo onto the device owning that address, not necessarily
  // ours; an IPv4-mapped GID (RoCE v2 over IPv4) names our netdev's address, so start there.
  sockaddr_in source{};
  const uint8_t* gid = worker_.device().gid().raw;
  static constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  const bool from_gid = peer_.is_ipv4() && std::memcmp(gid, kV4MappedPrefix, 12) == 0;
  if (from_gid) {
    source.sin_family = AF_INET;
    std::memcpy(&source.sin_addr, gid + 12, 4);
  }
  if (rdma_resolve_addr(cm_id_, from_gid ? reinterpret_cast<sockaddr*>(&source) : nullptr,
                        const_cast<sockaddr*>(peer_.sockaddr_ptr()), timeout_ms(connect_timeout)) != 0) {
    const int err = errno;
    fail(-err, "rdma_resolve_addr failed");
    return -err;
  }
  return 0;
}

void RdmaConnection::cm_addresses() {
  local_ = address_of(rdma_get_local_addr(cm_id_));
  peer_ = address_of(rdma_get_peer_addr(cm_id_));
}

bool RdmaConnection::cm_on_our_device() {
  // The id is bound to the device that owns the route; our QP, CQ and buffers live on the stack's
  // rdma.device and port. A QP cannot move between devices: refuse clearly.
  RdmaDevice& dev = worker_.device();
  const char* name = cm_id_->verbs ? ibv_get_device_name(cm_id_->verbs->device) : "(none)";
  if (cm_id_->verbs != nullptr && dev.name() == name && cm_id_->port_num == dev.port()) return true;
  BYPASS_LOG(Warn, "rdma", "rdma_cm: %s routes over %s port %u, but this stack uses rdma.device %s port %u",
             peer_.to_string().c_str(), name, cm_id_->port_num, dev.name().c_str(), dev.port());
  return false;
}

bool RdmaConnection::cm_take_peer_limits(const uint8_t* private_data, size_t len,
                                         CmPrivateData::Kind expected) {
  std::string error;
  auto peer = CmPrivateData::decode(private_data, len, expected, &error);
  if (!peer) {
    BYPASS_LOG(Warn, "rdma", "%s from %s", error.c_str(), peer_.to_string().c_str());
    return false;
  }
  send_limit_ = std::min<size_t>(worker_.tuning().chunk_size, peer->receive_chunk_size);
  send_credits_.reset(peer->rx_window);
  outbound_.reset(peer->rx_window);
  take_read_depth(peer->read_depth);
  return true;
}

int RdmaConnection::cm_move_qp_to_rts() {
  // The CM knows the path, the peer's QP number and PSN: it fills in RTR and RTS; our tuning
  // (RNR timer, ACK timeout, retries) goes on top, as in move_qp_to_rts().
  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = IBV_QPS_RTR;
  if (rdma_init_qp_attr(cm_id_, &attr, &mask) != 0) return -errno;
  attr.min_rnr_timer = 12;  // 0.64 ms between receiver-not-ready retries
  // READ depths as both ends agreed in CmPrivateData (rendezvous.h), as in move_qp_to_rts().
  attr.max_dest_rd_atomic = std::max<uint8_t>(read_depth_, 1);
  mask |= IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC;
  if (int rc = ibv_modify_qp(qp_, &attr, mask); rc != 0) return -rc;
  attr = {};
  mask = 0;
  attr.qp_state = IBV_QPS_RTS;
  if (rdma_init_qp_attr(cm_id_, &attr, &mask) != 0) return -errno;
  attr.timeout = worker_.tuning().ack_timeout_exponent;
  attr.retry_cnt = worker_.tuning().retry_count;
  attr.rnr_retry = 7;  // retry forever: an empty receive queue is backpressure, not an error
  attr.max_rd_atomic = std::max<uint8_t>(read_depth_, 1);
  mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  if (int rc = ibv_modify_qp(qp_, &attr, mask); rc != 0) return -rc;
  return 0;
}

namespace {

rdma_conn_param conn_param(const RdmaTuning& tuning, uint8_t read_depth, uint32_t qp_num,
                           const std::array<uint8_t, CmPrivateData::kWireSize>& data) {
  rdma_conn_param p{};
  p.private_data = data.data();
  p.private_data_len = static_cast<uint8_t>(data.size());
  // The CM's view of the READ depths; the QP's own come from CmPrivateData (cm_move_qp_to_rts).
  p.responder_resources = std::max<uint8_t>(read_depth, 1);
  p.initiator_depth = std::max<uint8_t>(read_depth, 1);
  p.retry_count = tuning.retry_count;
  p.rnr_retry_count = 7;
  p.srq = tuning.use_srq ? 1 : 0;
  p.qp_num = qp_num;
  return p;
}

}  // namespace

void RdmaConnection::cm_route_resolved() {
  if (state_ != ConnState::Connecting) return;
  cm_addresses();
  if (!cm_on_our_device()) return fail(-ENETUNREACH, "route is not on rdma.device");
  CmPrivateData mine;
  mine.kind = CmPrivateData::Kind::ConnectRequest;
  mine.receive_chunk_size = static_cast<uint32_t>(worker_.tuning().chunk_size);
  mine.rx_window = recv_credits_.window();
  mine.read_depth = worker_.read_depth();
  const auto data = mine.encode();
  rdma_conn_param param = conn_param(worker_.tuning(), mine.read_depth, qp_num(), data);
  set_state(ConnState::Handshaking);
  if (rdma_connect(cm_id_, &param) != 0) fail(-errno, "rdma_connect failed");
}

void RdmaConnection::cm_accept_request() {
  cm_addresses();
  if (!cm_on_our_device()) {
    rdma_reject(cm_id_, nullptr, 0);
    return fail(-ENETUNREACH, "request arrived on another device");
  }
  if (!cm_take_peer_limits(cm_request_.data(), cm_request_.size(), CmPrivateData::Kind::ConnectRequest)) {
    rdma_reject(cm_id_, nullptr, 0);
    return fail(-EPROTO, "malformed connect request");
  }
  cm_request_.clear();
  if (int rc = cm_move_qp_to_rts(); rc < 0) {
    rdma_reject(cm_id_, nullptr, 0);
    return fail(rc, "cannot move QP to RTS");
  }
  CmPrivateData mine;
  mine.kind = CmPrivateData::Kind::Accept;
  mine.receive_chunk_size = static_cast<uint32_t>(worker_.tuning().chunk_size);
  mine.rx_window = recv_credits_.window();
  mine.read_depth = worker_.read_depth();
  const auto data = mine.encode();
  rdma_conn_param param = conn_param(worker_.tuning(), read_depth_, qp_num(), data);
  if (rdma_accept(cm_id_, &param) != 0) fail(-errno, "rdma_accept failed");
  // Established on RDMA_CM_EVENT_ESTABLISHED: the client's QP is in RTS by then.
}

void RdmaConnection::cm_connect_response(const uint8_t* private_data, size_t len) {
  if (state_ != ConnState::Handshaking) return;
  if (!cm_take_peer_limits(private_data, len, CmPrivateData::Kind::Accept)) {
    rdma_reject(cm_id_, nullptr, 0);
    return fail(-EPROTO, "malformed accept");
  }
  if (int rc = cm_move_qp_to_rts(); rc < 0) {
    rdma_reject(cm_id_, nullptr, 0);
    return fail(rc, "cannot move QP to RTS");
  }
  if (rdma_establish(cm_id_) != 0) return fail(-errno, "rdma_establish failed");
  established();
}

void RdmaConnection::on_cm_event(const CmEvent& event) {
  const rdma_cm_event_type type = event.type;
  const int status = event.status;
  BYPASS_LOG(Debug, "rdma", "qp 0x%x %s: %s (status %d)", qp_num(), to_string(state_),
             rdma_event_str(type), status);
  if (state_ == ConnState::Destroyed) return;
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (state_ == ConnState::Connecting && rdma_resolve_route(cm_id_, 2000) != 0)
        fail(-errno, "rdma_resolve_route failed");
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return cm_route_resolved();
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
      return cm_connect_response(event.private_data.data(), event.private_data.size());
    case RDMA_CM_EVENT_ESTABLISHED:
      if (is_client_ || state_ != ConnState::Handshaking) return;
      established();
      if (server_ != nullptr) server_->connection_ready(this);
      return;
    case RDMA_CM_EVENT_DISCONNECTED: return cm_peer_disconnected();
    case RDMA_CM_EVENT_REJECTED:
      // No listener on that port, or the server refused our request (see its log).
      return fail(-ECONNREFUSED, "rejected by the peer's CM");
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
      BYPASS_LOG(Warn, "rdma", "rdma_cm: no RDMA path to %s (%s: %s)%s", peer_.to_string().c_str(),
                 rdma_event_str(type), strerror(status < 0 ? -status : EHOSTUNREACH),
                 is_loopback(peer_) ? "; RoCE cannot route loopback addresses: use the address "
                                       "of the RDMA device's netdev" : "");
      return fail(status < 0 ? status : -EHOSTUNREACH, rdma_event_str(type));
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      return fail(status < 0 ? status : -ETIMEDOUT, rdma_event_str(type));
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return fail(-ENODEV, "device removed");
    default: return;  // TIMEWAIT_EXIT, ADDR_CHANGE: nothing to do
  }
}

void RdmaConnection::cm_peer_disconnected() {
  // The peer disconnected (or its process died and the kernel did it): whatever it sent before,
  // including its FIN, completed on our side first, so take it in before deciding EOF or reset.
  worker_.poll_completions();
  side_eof_ = true;
  cm_disconnect();     // answer with our DREP
  move_qp_to_error();  // our unsent work flushes instead of retrying against a QP that is gone
  if (state_ == ConnState::Established && fin_received_) return update_events();
  if (state_ == ConnState::Draining) return maybe_finish_drain();
  fail(state_ == ConnState::Handshaking ? -ECONNREFUSED : -ECONNRESET, "peer disconnected");
}

void RdmaConnection::cm_disconnect() {
  if (cm_id_ == nullptr || cm_disconnected_) return;
  if (state_ == ConnState::Connecting) return;  // nothing sent to the peer's CM yet
  cm_disconnected_ = true;
  // Errors only mean there was no connection to leave (a request still resolving, say).
  (void)rdma_disconnect(cm_id_);
}

}  // namespace bypass::rdma
