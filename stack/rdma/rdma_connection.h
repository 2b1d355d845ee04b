// RdmaConnection: one RC queue pair, what set it up and tells of the peer's end, and the received
// segments waiting for the owner. Two set-up modes (rdma.connect_mode), one data path:
//  - tcp: a TCP side channel exchanges QpInfo and stays open, so the death of the peer process
//    is noticed as its EOF (this file's .cc);
//  - rdma_cm: librdmacm's CM exchanges QP number and PSN and resolves the path; our CmPrivateData
//    rides along; the peer's disconnect (or its process's death, which the kernel turns into a
//    disconnect) arrives as RDMA_CM_EVENT_DISCONNECTED (rdma_connection_cm.cc).
// Either way the QP is created on the worker's CQ and SRQ and, once in RTS, used the same way.
//
// Data path: every send is one SEND work request of at most rdma.chunk_size bytes (the size of the
// peer's receive chunks). Bytes already in registered memory are posted in place (zero-copy, the
// segment is held until the completion); others are copied into send chunks. shutdown() posts a
// zero-length SEND with immediate data kFinImmediate, which the peer reads as end of stream;
// close() waits for its sends to complete, then sends kCloseMarker on the side channel and closes it
// (rdma_cm mode: posts the FIN, waits for it to complete, then disconnects).
// Flow control is per connection, by credits (flow_credits.h): the peer may send at most our
// advertised window of data messages ahead of what our owner consumed, so a connection whose owner
// stops reading holds at most its window of the worker's shared receive pool and the others keep
// receiving. Credits come back in the immediate data of data SENDs, or in a zero-length
// credit-only SEND. Below that, the RC transport's own backpressure remains: an empty receive
// queue makes the peer's HCA retry (RNR, infinitely).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "stack/network_stack.h"
#include "stack/rdma/cm_listener.h"
#include "stack/rdma/cm_private_data.h"
#include "stack/rdma/connection_state.h"
#include "stack/rdma/flow_credits.h"
#include "stack/rdma/handshake.h"

namespace bypass::rdma {

class RdmaWorker;
class RdmaServerSocket;

class RdmaConnection final : public CmEventTarget, public std::enable_shared_from_this<RdmaConnection> {
 public:
  // Sent on the side channel by close() once every send completed; the peer reads end of stream.
  static constexpr char kCloseMarker = 'F';

  // Takes ownership of `side_fd` (a non-blocking TCP socket, connected or connecting).
  RdmaConnection(RdmaWorker& worker, int side_fd, bool is_client, RdmaServerSocket* server);
  // rdma_cm mode: takes ownership of `cm_id` (on the worker's event channel). A client's id is
  // fresh (start() resolves set_peer_address()'s address); a server's comes from a connect request
  // (set_cm_request() first).
  RdmaConnection(RdmaWorker& worker, rdma_cm_id* cm_id, bool is_client, RdmaServerSocket* server);
  ~RdmaConnection();

  // Starts the set-up state machine. Side channel: the client waits for the TCP connect, then
  // sends Request; the server waits for the Request. rdma_cm: the client resolves the address;
  // the server accepts (or rejects) the request. Returns -errno when the QP or event id cannot be
  // created.
  int start(std::chrono::milliseconds connect_timeout);
  void set_peer_address(const SocketAddress& peer) { peer_ = peer; }
  void set_cm_request(const uint8_t* private_data, size_t len) {
    cm_request_.assign(private_data, private_data + len);
  }
  // An event on this connection's rdma_cm id.
  void on_cm_event(const CmEvent& event) override;

  // ---- owner's socket interface ----
  int is_connected() const;
  ssize_t read(char* buf, size_t len);
  ssize_t zero_copy_read(BufferList& out, size_t max_len);
  ssize_t send(BufferList& data);
  void shutdown();
  void close();
  // Testing (ms.inject_socket_failures): break the connection as a peer reset would.
  void inject_reset() { fail(-ECONNRESET, "injected failure (ms.inject_socket_failures)"); }
  int event_id() const { return event_id_; }
  SocketAddress local_address() const { return local_; }
  SocketAddress peer_address() const { return peer_; }

  // ---- from the worker ----
  ConnState state() const { return state_; }
  uint32_t qp_num() const { return qp_ ? qp_->qp_num : 0; }
  ibv_qp* qp() { return qp_; }
  void on_receive(BufferSegment segment, bool fin);
  // `credit_only`: the completion of our credit-only message (flow_credits.h).
  void on_send_complete(bool ok, ibv_wc_status status, bool credit_only);
  // The peer returned `n` send credits (in a SEND's immediate data).
  void on_credits(uint32_t n);
  // Some send slot or chunk came back after this connection's send() returned -EAGAIN.
  void on_send_complete_room();
  // Per-QP receive mode: one of our posted receives came back (data or flushed). A closed
  // connection may be waiting for exactly that to be destroyed (see drained()).
  void on_receive_flushed() {
    --receives_posted_;
    if (owner_closed_) maybe_finish_drain();
  }
  void count_receive_posted() { ++receives_posted_; }
  uint32_t receives_posted() const { return receives_posted_; }
  // Called when the server that accepted this connection goes away before handing it out.
  void detach_server() { server_ = nullptr; }
  bool drained() const { return sends_outstanding_ == 0 && receives_posted_ == 0; }
  bool owner_closed() const { return owner_closed_; }
  void destroy_qp();

 private:
  void set_state(ConnState next);
  void fail(int error, const char* why);
  void on_side_channel(int mask);
  void side_connected();
  void side_readable();
  int handle_peer_info(const QpInfo& info);
  bool write_side(const QpInfo& info);
  int move_qp_to_rts(const QpInfo& remote);
  void move_qp_to_error();
  void established();
  void update_events();
  // What a SEND is: data (consumes a send credit, carries owed credits back), our FIN, or a
  // zero-length credit return.
  enum class SendKind { Data, Fin, Credit };
  bool post_send(char* chunk, const char* data, uint32_t len, BufferSegment held, SendKind kind);
  void try_post_fin();
  // The owner consumed `n` received messages: owe them to the peer, and return them now when
  // enough are owed (see ReceiveCredits::credit_message_due).
  void consumed(uint32_t n);
  void try_post_credits();
  // Nothing to send until the peer returns credits (not a lack of slots or chunks).
  bool blocked_on_credits() const { return !send_credits_.can_send(); }
  void maybe_finish_drain();
  void close_side_channel();
  // ---- rdma_cm mode (rdma_connection_cm.cc) ----
  int cm_start(std::chrono::milliseconds connect_timeout);
  void cm_route_resolved();
  void cm_accept_request();
  void cm_connect_response(const uint8_t* private_data, size_t len);
  bool cm_take_peer_limits(const uint8_t* private_data, size_t len, CmPrivateData::Kind expected);
  int cm_move_qp_to_rts();
  bool cm_on_our_device();
  void cm_peer_disconnected();
  void cm_disconnect();
  void cm_addresses();

  RdmaWorker& worker_;
  int side_fd_;
  bool is_client_;
  RdmaServerSocket* server_;
  int event_id_ = -1;
  ibv_qp* qp_ = nullptr;
  uint32_t local_psn_ = 0;
  ConnState state_;
  int error_ = 0;
  bool fin_sent_ = false;
  bool fin_wanted_ = false;
  bool fin_received_ = false;
  bool side_eof_ = false;  // the peer is gone: side-channel EOF, or (rdma_cm) its disconnect
  bool owner_closed_ = false;
  bool want_writable_ = false;
  uint32_t sends_outstanding_ = 0;
  uint32_t receives_posted_ = 0;
  uint8_t side_buf_[QpInfo::kWireSize] = {};
  size_t side_have_ = 0;
  std::deque<BufferSegment> rx_;
  size_t rx_bytes_ = 0;
  SendCredits send_credits_;      // set from the peer's advertised window at setup
  ReceiveCredits recv_credits_;   // our window: rdma.rx_window (RdmaTuning)
  uint64_t connect_timer_ = 0;
  uint64_t drain_timer_ = 0;
  SocketAddress local_, peer_;
  // The largest SEND the peer can receive: its receive chunk size (rdma_cm mode learns it from the
  // peer's private data; the side channel assumes both ends configured alike) and ours.
  size_t send_limit_;
  rdma_cm_id* cm_id_ = nullptr;
  CmChannel cm_channel_;              // keeps the id's channel open until the id is destroyed
  std::vector<uint8_t> cm_request_;   // server: the client's private data
  bool cm_disconnected_ = false;      // rdma_disconnect() called
};

}  // namespace bypass::rdma
