// TCP for one stack instance: the connection table, listeners (SYN backlog, accept queue, SYN
// cookies), demultiplexing, RST generation for segments that match nothing (RFC 9293 §3.10.7.1),
// ISN generation (RFC 6528), ephemeral ports, and the checksum on output and input. Over IPv4 and
// IPv6 alike: a connection's family is its tuple's (FourTuple::is_v6), a listener takes both.
#pragma once

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "stack/inet/device.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ipv4_layer.h"
#include "stack/inet/ipv6_layer.h"
#include "stack/inet/tcp_connection.h"
#include "stack/inet/tcp_connection_owner.h"
#include "stack/inet/tcp_gro.h"
#include "stack/inet/tuple_table.h"

namespace bypass::inet {

class TcpListener {
 public:
  explicit TcpListener(uint16_t port) : port_(port) {}
  uint16_t port() const { return port_; }
  // The next fully established connection, or nullptr.
  std::shared_ptr<TcpConnection> accept();
  size_t acceptable() const { return accept_queue_.size() - accept_head_; }
  size_t half_open() const { return half_open_; }
  void set_acceptable_handler(std::function<void()> handler) { handler_ = std::move(handler); }

 private:
  friend class TcpLayer;
  uint16_t port_;
  // FIFO: a vector and the index of its head, which keep their memory across connections (a
  // std::deque allocated a chunk every 32 connections).
  std::vector<std::shared_ptr<TcpConnection>> accept_queue_;
  size_t accept_head_ = 0;
  size_t half_open_ = 0;  // connections in SYN-RECEIVED
  bool closed_ = false;
  std::function<void()> handler_;
};

// A snapshot of one connection for diagnostics (bypass-pmd stack conns).
struct ConnectionInfo {
  FourTuple tuple;
  TcpState state = TcpState::Closed;
  uint32_t cwnd = 0, ssthresh = 0, mss = 0;
  Duration srtt{0}, rttvar{0}, rto{0};
  uint64_t retransmitted_segments = 0, timeouts = 0;
  uint64_t bytes_in = 0;   // received in order
  uint64_t bytes_out = 0;  // acknowledged by the peer
};

// Bytes all connections hold at one moment (TcpLayer::queued_bytes): a benchmark samples it to
// see where data waits at scale.
struct TcpQueuedBytes {
  uint64_t unsent = 0;         // written by the application, not sent yet
  uint64_t unacknowledged = 0; // sent, waiting for the peer's ACK
  uint64_t unread = 0;         // received in order, not read by the application yet
};

class TcpLayer final : public TcpConnectionOwner {
 public:
  // Returns true when an outgoing connection may use this tuple (e.g. the RSS hash of the tuple
  // lands on the calling worker's queue).
  using PortFilter = std::function<bool(const FourTuple&)>;

  TcpLayer(const InetSettings& settings, TimerService& timers, Ipv4Layer& ip, Ipv6Layer& ip6,
           NeighborCache& neighbors, PacketDevice& device, InetStats& stats, uint64_t secret_seed);
  ~TcpLayer();

  // nullptr when the port is already listened on. The listener takes SYNs of both families.
  std::shared_ptr<TcpListener> listen(uint16_t port);
  void stop_listening(const std::shared_ptr<TcpListener>& listener);
  // Active open; `local_port` 0 picks an ephemeral port. nullptr when no port or route is free
  // (an IPv6 remote without an IPv6 address of our own has no route).
  std::shared_ptr<TcpConnection> connect(IpAddress remote, uint16_t remote_port,
                                         uint16_t local_port = 0);
  void set_port_filter(PortFilter filter) { port_filter_ = std::move(filter); }

  // From Ipv4Layer. Between begin_burst() and end_burst() segments may be coalesced (tcp_gro.h,
  // with tcp.gro); end_burst() hands TCP what is still held. begin_burst() first lets the
  // connections that waited for the device's backlog send, in the order they came, while it stays
  // clear (wait_for_device).
  void receive(const Ipv4Header& ip, Packet&& packet);
  // From Ipv6Layer: `ip.payload_length` is the TCP segment's length (the pseudo-header's, RFC 8200
  // §8.1), whatever extension headers preceded it.
  void receive(const Ipv6Header& ip, Packet&& packet);
  void begin_burst();
  void end_burst();
  void on_unreachable(uint8_t code, uint16_t mtu, const Ipv4Header& quoted, const uint8_t* l4,
                      size_t l4_length);
  // From Icmpv6Layer: an ICMPv6 error about a packet we sent (Icmpv6Layer::ErrorReceiver).
  void on_icmpv6_error(const Icmpv6Header& error, const Ipv6Header& quoted, const uint8_t* after_header,
                       size_t length);
  // Icmpv6Layer::TcpQuoteValidator: the quoted segment is a connection's and its sequence number
  // is in flight, SND.UNA..SND.NXT (RFC 5927 §4.1).
  bool quote_in_flight(const Ipv6Header& quoted, const uint8_t* after_header, size_t length) const;

  size_t connection_count() const { return connections_.size(); }
  // Connections not yet closed in both directions (every state but TIME-WAIT; closed ones leave
  // the table). A process that stops its stack before this reaches zero takes them away from the
  // peer, which then retransmits into the void: a userspace stack has no kernel to finish a close.
  size_t unfinished_connections() const;
  // Connections holding data or a FIN the peer has not acknowledged yet: what a stack that stops
  // cleanly waits for (NetworkStack::stop(), ms.shutdown_linger).
  size_t unacknowledged_connections() const;
  // A walk over every connection: for sampling now and then, never per segment.
  TcpQueuedBytes queued_bytes() const;
  void for_each_connection(const std::function<void(const TcpConnection&)>& visit) const {
    connections_.for_each([&](const FourTuple&, const std::shared_ptr<TcpConnection>& c) { visit(*c); });
  }
  // Every connection in the table (including TIME_WAIT), ordered by local then remote address.
  std::vector<ConnectionInfo> connections() const;
  // Ports with a listener, ascending.
  std::vector<uint16_t> listening_ports() const;
  std::shared_ptr<TcpConnection> find(const FourTuple& tuple) const;

  // ---- TcpConnectionOwner (tcp_connection_owner.h): what a TcpConnection asks of its layer ----
  // IPv6: the destination's path MTU (ipv6_path_mtu.h).
  uint32_t path_mtu(const FourTuple& tuple) const override;
  void confirm_reachable(const IpAddress& remote) override;
  void on_established(TcpConnection& connection) override;
  void on_closed(TcpConnection& connection) override;
  void wait_for_device(TcpConnection& connection) override;
  bool allow_challenge_ack() override;
  SeqNumber generate_iss(const FourTuple& tuple) const override;
  uint16_t mtu() const override { return device_.mtu(); }
  const TcpSettings& settings() const { return settings_.tcp; }

 private:
  // Header parsing and the checks shared by both families, after the checksum; hands the segment
  // to GRO. `coalescable`: the IP layer allows merging it (tcp_gro.h).
  void receive_verified(const IpAddress& source, const IpAddress& destination, Packet&& packet,
                        bool coalescable);
  // The connection whose in-flight segment an ICMPv6 error quotes (quote_in_flight), else nullptr.
  std::shared_ptr<TcpConnection> quoted_connection(const Ipv6Header& quoted, const uint8_t* after_header,
                                                   size_t length) const;
  // Our address of the family of `remote`.
  IpAddress local_address(const IpAddress& remote) const;
  // A parsed segment (or coalesced unit) to its connection or listener.
  void dispatch(const FourTuple& tuple, TcpSegment&& segment);
  // `iss`: the initial send sequence number if the SYN gets a connection (not a cookie).
  void listen_syn(TcpListener& listener, const FourTuple& tuple, TcpSegment&& segment, SeqNumber iss);
  // A SYN that reopens a connection in TIME-WAIT: true when it was taken (the old incarnation is gone).
  bool reopen_from_time_wait(TcpConnection& old, const FourTuple& tuple, TcpSegment& segment);
  bool accept_cookie(TcpListener& listener, const FourTuple& tuple, TcpSegment& segment);
  uint32_t make_cookie(const FourTuple& tuple, uint32_t peer_seq, uint32_t counter,
                       uint8_t mss_index) const;
  void send_reset_for(const FourTuple& tuple, const TcpSegment& segment);
  uint64_t keyed_hash(const FourTuple& tuple, uint64_t extra) const;

  const InetSettings& settings_;
  Ipv4Layer& ip_;
  Ipv6Layer& ip6_;
  NeighborCache& neighbors_;
  PacketDevice& device_;
  TcpSegmentOutput output_path_;  // the base class's segment_output()
  uint64_t secret_[2];
  TupleTable<std::shared_ptr<TcpConnection>> connections_;
  std::unordered_map<uint16_t, std::shared_ptr<TcpListener>> listeners_;
  std::vector<std::shared_ptr<TcpConnection>> graveyard_;  // destroyed outside their own callbacks
  TimerService::TimerId reaper_ = 0;
  PortFilter port_filter_;
  uint32_t next_ephemeral_ = 0;
  TimePoint challenge_window_start_{0};
  size_t challenge_acks_in_window_ = 0;
  TcpGro gro_;
  // Connections holding new data until the device's backlog clears (wait_for_device), oldest
  // from device_waiters_head_ on; the vector keeps its capacity, so waiting allocates nothing
  // once it has grown.
  std::vector<std::weak_ptr<TcpConnection>> device_waiters_;
  size_t device_waiters_head_ = 0;
  void resume_device_waiters();
};

}  // namespace bypass::inet
