// RdmaConnection: one RC queue pair, what set it up and tells of the peer's end, and the received
// segments waiting for the owner. Two set-up modes (rdma.connect_mode), one data path:
//  - tcp: a TCP side channel exchanges QpInfo and stays open, so the death of the peer process
//    is noticed as its EOF (this file's .cc);
//  - rdma_cm: librdmacm's CM exchanges QP number and PSN and resolves the path; our CmPrivateData
//    rides along; the peer's disconnect (or its process's death, which the kernel turns into a
//    disconnect) arrives as RDMA_CM_EVENT_DISCONNECTED (rdma_connection_cm.cc).
// Either way the QP is created on the worker's CQ and SRQ and, once in RTS, used the same way.
//
// Data path (rdma_connection_data.cc): every send is one SEND work request of at most
// rdma.chunk_size bytes (the size of the peer's receive chunks). Bytes already in registered
// memory are posted in place (zero-copy, the segment is held until the completion); others are
// copied into send chunks. A segment of at least rdma.rendezvous_threshold bytes goes as a
// rendezvous descriptor instead, and the peer pulls it with RDMA READ (rendezvous.h,
// rdma_connection_rendezvous.cc): received, it waits in the stream, in order, until its READs
// completed. shutdown() posts a
// zero-length SEND with immediate data kFinImmediate, which the peer reads as end of stream;
// close() waits for its sends to complete and for the peer to release every descriptor (it read
// them), then sends kCloseMarker on the side channel and closes it (rdma_cm mode: posts the FIN,
// waits likewise, then disconnects).
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
#include "stack/rdma/rendezvous.h"

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
  // Testing: sends `len` bytes as a rendezvous descriptor, as a forging peer would (no memory is
  // held for it). Returns 0 or -errno.
  int inject_descriptor(const uint8_t* bytes, size_t len);
  int event_id() const { return event_id_; }
  SocketAddress local_address() const { return local_; }
  SocketAddress peer_address() const { return peer_; }

  // ---- from the worker ----
  ConnState state() const { return state_; }
  uint32_t qp_num() const { return qp_ ? qp_->qp_num : 0; }
  ibv_qp* qp() { return qp_; }
  void on_receive(BufferSegment segment, bool fin);
  // A rendezvous descriptor arrived (the bytes of its SEND; the chunk is recycled afterwards).
  void on_descriptor(const uint8_t* bytes, size_t len);
  // The peer read the oldest `n` descriptors we sent: their memory is released.
  void on_released(uint32_t n);
  // What a completed work request of ours was (RdmaWorker's send slots).
  enum class WorkKind : uint8_t { Data, Credit, Release, Read };
  void on_send_complete(bool ok, ibv_wc_status status, WorkKind kind);
  // The peer returned `n` send credits (in a SEND's immediate data).
  void on_credits(uint32_t n);
  // The peer broke the protocol (what it sent is named in the log): a connection error.
  void fail_protocol(const char* why) { fail(-EPROTO, why); }
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
  // Destroys the QP; then no READ can reach our memory any more, so descriptors the peer did not
  // release let go of theirs.
  void destroy_qp();
  size_t descriptors_unreleased() const { return outbound_.outstanding(); }
  size_t reads_in_flight() const { return reads_count_; }

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
  // What a SEND is: data or a rendezvous descriptor (consumes a send credit, carries owed credits
  // back), our FIN, a zero-length credit return, or a zero-length release of descriptors.
  enum class SendKind { Data, Descriptor, Fin, Credit, Release };
  bool post_send(char* chunk, const char* data, uint32_t len, BufferSegment held, SendKind kind);
  // Send slots a data or descriptor SEND, or a READ, leaves free on the QP: the FIN's, a
  // credit-only message's and a release's.
  bool room_for_data() const;
  // Whether send() posts `len` bytes at `data` as they are (registered, long enough) or copies them.
  bool sent_in_place(const char* data, size_t len) const;
  // Something the owner can take now: ready bytes at the front of the stream.
  bool readable() const;
  // The common loop of read() and zero_copy_read() (rdma_connection_data.cc says how).
  template <class TakeReady, class TakeSegment>
  size_t drain_rx(size_t max_len, uint32_t& messages, TakeReady&& take_ready, TakeSegment&& take_segment);
  // The common end of read() and zero_copy_read(): `taken` of `wanted` bytes, `messages` consumed.
  ssize_t finish_read(size_t taken, size_t wanted, uint32_t messages);
  // One of our work requests completed (or a worker's send slot came back): post what waited.
  void after_send_room();
  // The end of the stream, or an error, is all that is left to read.
  bool at_end() const { return rx_.empty() && (fin_received_ || side_eof_); }
  void try_post_fin();
  // The owner consumed `n` received messages: owe them to the peer, and return them now when
  // enough are owed (see ReceiveCredits::credit_message_due).
  void consumed(uint32_t n);
  void try_post_credits();
  // Nothing to send until the peer returns credits (not a lack of slots or chunks).
  bool blocked_on_credits() const { return !send_credits_.can_send(); }
  void maybe_finish_drain();
  void close_side_channel();
  // ---- rendezvous (rdma_connection_rendezvous.cc) ----
  // Both ends' READ depths are known (QpInfo or CmPrivateData): ours is the smaller.
  void take_read_depth(uint8_t peer_depth);
  // Sends the segments at the front of `data` that are at least the threshold long as one
  // descriptor. Returns the bytes taken, 0 when the front cannot go that way (too short, borrowed
  // memory, no registration: send it two-sided), -1 when out of send room (try again later).
  ssize_t post_descriptor(BufferList& data);
  // Posts READs for received descriptors while the READ depth, send room and memory allow.
  void pump_reads();
  bool post_read(const RemoteRegion& piece, const BufferSegment& target, uint32_t lkey);
  void on_read_complete(bool ok, ibv_wc_status status);
  void try_post_release();
  void schedule_read_retry();
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
  // The received stream in order: chunks, and descriptors whose bytes arrive by READ.
  struct RxItem {
    BufferSegment segment;               // a received chunk's bytes (transfer null)
    InboundTransfer* transfer = nullptr;  // or a descriptor (inbound_)
  };
  std::deque<RxItem> rx_;
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
  // ---- rendezvous ----
  uint8_t read_depth_ = 0;            // READs in flight at most, either way; 0: no rendezvous
  OutboundTransfers outbound_;        // descriptors we sent that the peer has not released
  InboundTransfers inbound_;          // descriptors received, until the owner consumed them
  struct ReadInFlight {
    InboundTransfer* transfer = nullptr;
    RemoteRegion piece;
    BufferSegment target;                              // where it lands
    RegistrationCache::Entry* target_entry = nullptr;  // its registration, when not RegisteredMemory
  };
  ReadInFlight reads_[QpInfo::kMaxReadDepth];  // in posting order, which is completion order
  uint8_t reads_head_ = 0;
  uint8_t reads_count_ = 0;
  // Bytes READ (or being READ) that the owner has not taken yet: bounded (pump_reads), so a slow
  // reader cannot make one connection fill RegisteredMemory for the others.
  size_t read_ahead_bytes_ = 0;
  uint32_t releases_owed_ = 0;        // descriptors read, not yet released to the peer
  bool release_in_flight_ = false;    // at most one release message at a time
  uint64_t read_retry_timer_ = 0;     // memory for READ targets ran out
};

}  // namespace bypass::rdma
