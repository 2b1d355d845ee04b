// One TCP connection (RFC 9293 transmission control block) and its socket-level API.
//
// All methods run on the owning worker's thread. The application side is: send() (takes buffers
// without copying), read() (hands received buffers up without copying), shutdown_write(), close(),
// abort(), and an event handler called on readiness and state changes.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/buffer_list.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/ip_address.h"
#include "stack/inet/tcp_connection_owner.h"
#include "stack/inet/tcp_frto.h"
#include "stack/inet/tcp_loss_recovery.h"
#include "stack/inet/tcp_rack.h"
#include "stack/inet/tcp_reassembly.h"
#include "stack/inet/tcp_rtt_estimator.h"
#include "stack/inet/tcp_sack_scoreboard.h"
#include "stack/inet/wire/seq_number.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

class TcpLayer;
class TcpListener;

enum class TcpState {
  Closed, SynSent, SynReceived, Established, FinWait1, FinWait2, CloseWait, Closing, LastAck,
  TimeWait,
};
const char* to_string(TcpState state);

// A connection's addresses and ports; both addresses are of one family (IPv4 or IPv6). The two
// addresses come first and the two ports share the last word: 40 bytes (a port after each address
// padded it to 48), and equality is five word compares folded into one branch. The receive path
// compares a segment's tuple with GRO's held units and the connection table's slots, so this is
// what keeps the 16-byte addresses from slowing IPv4 down.
struct FourTuple {
  FourTuple() = default;
  FourTuple(const IpAddress& local, uint16_t local_port_number, const IpAddress& remote, uint16_t remote_port_number)
      : local_ip(local), remote_ip(remote), local_port(local_port_number), remote_port(remote_port_number) {}
  IpAddress local_ip;
  IpAddress remote_ip;
  uint16_t local_port = 0;
  uint16_t remote_port = 0;
  bool operator==(const FourTuple& other) const {
    const uint64_t address_difference = (local_ip.high_word() ^ other.local_ip.high_word()) |
                                        (local_ip.low_word() ^ other.local_ip.low_word()) |
                                        (remote_ip.high_word() ^ other.remote_ip.high_word()) |
                                        (remote_ip.low_word() ^ other.remote_ip.low_word());
    return (address_difference | static_cast<uint64_t>(ports() ^ other.ports())) == 0;
  }
  bool is_v6() const { return remote_ip.is_v6(); }
  // "local remote", each as endpoint_to_string ("[v6]:port" for IPv6).
  std::string to_string() const {
    return endpoint_to_string(local_ip, local_port) + " " + endpoint_to_string(remote_ip, remote_port);
  }

 private:
  uint32_t ports() const { return uint32_t{local_port} << 16 | remote_port; }
};
static_assert(sizeof(FourTuple) == 40, "two 16-byte addresses and one word of ports");
struct FourTupleHash {
  size_t operator()(const FourTuple& t) const {
    // The low words hold an IPv4 address (with the constant mapped prefix) or an IPv6 address's
    // interface identifier; the high words are zero for IPv4. Rotating the remote word apart from
    // the local one keeps the IPv4 mix what it was (both addresses in one 64-bit word), at the
    // cost of two loads and two XORs for the high words.
    uint64_t a = t.local_ip.low_word() ^ std::rotl(t.remote_ip.low_word(), 32) ^
                 t.local_ip.high_word() ^ std::rotl(t.remote_ip.high_word(), 16);
    uint64_t b = uint64_t{t.local_port} << 16 | t.remote_port;
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

enum TcpEvent : int {
  kTcpReadable = 1,    // data or end-of-stream to read
  kTcpWritable = 2,    // send buffer has room
  kTcpConnected = 4,   // handshake finished
  kTcpClosed = 8,      // connection is gone (closed, reset, timed out); see error()
};

enum class TcpError { None, Refused, Reset, TimedOut, Unreachable };

// A received segment after header parsing, as the connection sees it.
struct TcpSegment {
  TcpHeader header;
  BufferList payload;
  // Wire segments this one stands for: more than 1 when receive coalescing (tcp_gro.h) or the
  // device (LRO) merged consecutive segments (the receive counters count them; delayed ACKs count
  // bytes, process_text()).
  uint16_t segments = 1;
  uint32_t length() const {
    return static_cast<uint32_t>(payload.length()) + header.has(kTcpSyn) + header.has(kTcpFin);
  }
};

class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  using EventHandler = std::function<void(int events)>;

  TcpConnection(TcpConnectionOwner& owner, const FourTuple& tuple, const TcpSettings& settings);
  ~TcpConnection();

  // ---- socket API ----
  // Queue data; takes up to the free send-buffer space from the front of `data` (shared, no copy)
  // and returns the bytes taken.
  size_t send(BufferList& data);
  // Zero-copy receive of up to `max` in-order bytes.
  BufferList read(size_t max = SIZE_MAX);
  size_t readable_bytes() const { return receive_queue_.length(); }
  // True once the peer's FIN has been received and all data before it read.
  bool end_of_stream() const { return fin_received_ && receive_queue_.empty(); }
  size_t send_space() const;
  void shutdown_write();   // send FIN after queued data
  void close();            // shutdown both directions (RST if unread data, RFC 9293 §3.10.4)
  void abort();            // RST now
  void set_event_handler(EventHandler handler) { handler_ = std::move(handler); }
  // Per-connection Nagle switch (the socket's TCP_NODELAY is its negation); starts as tcp.nagle.
  // Turning it off sends what it held back at once, like Linux's TCP_NODELAY (tcp(7)).
  void set_nagle(bool on);
  bool nagle() const { return nagle_; }

  TcpState state() const { return state_; }
  TcpError error() const { return error_; }
  const FourTuple& tuple() const { return tuple_; }
  bool established() const { return state_ == TcpState::Established; }

  // ---- introspection for tests and diagnostics ----
  uint32_t cwnd() const { return recovery_.congestion().cwnd(); }
  uint32_t ssthresh() const { return recovery_.congestion().ssthresh(); }
  uint32_t send_mss() const { return mss_; }
  SeqNumber initial_send_sequence() const { return iss_; }
  uint32_t peer_window() const { return snd_wnd_; }
  uint8_t send_window_shift() const { return snd_wscale_; }
  uint8_t receive_window_shift() const { return rcv_wscale_; }
  bool timestamps_enabled() const { return ts_enabled_; }
  bool sack_enabled() const { return sack_enabled_; }
  Duration rto() const { return rto_; }
  Duration srtt() const { return rtt_.srtt(); }
  Duration rttvar() const { return rtt_.rttvar(); }
  uint64_t retransmitted_bytes() const { return retransmitted_bytes_; }
  uint64_t retransmitted_segments() const { return retransmitted_segments_; }
  // Payload bytes the peer acknowledged / we received in order (64-bit: sequence numbers wrap).
  uint64_t bytes_acked() const { return bytes_acked_; }
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t timeouts() const { return timeouts_; }
  bool in_recovery() const { return recovery_.in_recovery(); }
  // One line with the sequence-space and recovery state (sequence numbers relative to ISS/IRS),
  // for diagnosing a stalled connection.
  std::string describe() const;

 private:
  friend class TcpLayer;  // opens connections and hands them segments and ICMP reports
  // Test-only (tests/unit/inet/tcp_state_builder.h): puts a connection straight into any state.
  friend class TcpTestAccess;

  // Open paths, called by TcpLayer.
  void open_active();
  void open_passive(const TcpSegment& syn, SeqNumber iss);
  void open_from_cookie(const TcpSegment& ack, SeqNumber iss, uint16_t mss);
  void on_segment(TcpSegment&& segment);
  // A validated report that `mtu` is the path MTU: lowers the SMSS and, when it shrank, resends
  // the flight in smaller segments.
  void on_path_mtu(uint16_t mtu);
  // Sets path_mtu_ (at most the link MTU) and the effective SMSS from it.
  void set_path_mtu(uint16_t mtu);
  // IPv6: caps the SMSS at the destination's path MTU as Ipv6Layer enforces it (see the .cc).
  void follow_destination_mtu();
  void on_unreachable();
  // IP header bytes in front of every segment: 20 (IPv4 without options) or 40 (IPv6).
  uint32_t ip_header_length() const { return tuple_.is_v6() ? 40u : 20u; }
  // IPv6: the upper-layer reachability hint to the neighbour cache, rate-limited.
  void confirm_reachability(TimePoint now);
  static constexpr Duration kReachabilityHintInterval = std::chrono::seconds(1);

  // Receive processing (RFC 9293 §3.10.7).
  void on_segment_syn_sent(TcpSegment& segment);
  bool acceptable(const TcpSegment& segment) const;
  bool process_ack(const TcpSegment& segment);
  // process_ack's steps, in order (RFC 9293 §3.10.7.4 fifth).
  bool ack_acceptable(SeqNumber ack);
  bool update_send_window(const TcpHeader& h);
  bool advance_send_unacknowledged(const TcpHeader& h, TimePoint now);
  void sample_rtt_from_ack(const TcpHeader& h, TimePoint now);
  void on_new_data_acked(SeqNumber ack, uint32_t acked, uint32_t flight_before_ack, SeqNumber data_end,
                         TimePoint now);
  bool on_our_fin_acked();
  void update_rack(const TcpHeader& h, bool dsack, TimePoint now);
  void process_text(TcpSegment& segment);
  void process_fin();
  void update_ts_recent(const TcpSegment& segment);
  void negotiate_options(const TcpOptions& peer);
  void insert_out_of_order(SeqNumber seq, BufferList&& data, bool fin);
  // Moves now-contiguous data to the receive queue; returns whether an in-order FIN was reached.
  bool drain_out_of_order_fin(bool fin);

  // Send side.
  void output();
  bool send_next_hole();
  void transmit(SeqNumber seq, uint8_t flags, BufferList payload, bool retransmission = false);
  void send_ack();
  // The sequence number for a segment without data, SYN or FIN (see send_ack()).
  SeqNumber next_new_sequence() const;
  void send_challenge_ack();
  void send_rst(SeqNumber seq);
  void schedule_ack(bool immediate);
  bool take_quick_ack() { return quick_acks_ > 0 && quick_acks_-- > 0; }
  uint32_t receive_window() const;
  void update_advertised_window();
  SeqNumber send_end() const { return data_start_ + static_cast<uint32_t>(send_buffer_.length()); }
  bool fin_sent() const { return fin_queued_ && snd_max_ > send_end(); }
  void build_sack_blocks(TcpOptions& options, bool with_duplicate) const;
  uint32_t flight_size() const { return snd_max_ - snd_una_; }
  uint32_t pipe() const { return rack_.pipe(); }
  uint32_t payload_limit() const;
  // Resends one segment from `start` (at most up to `stop`, a FIN included when [start, stop)
  // reaches it); returns where the resent range ends.
  SeqNumber retransmit_range(SeqNumber start, SeqNumber stop);
  // Answers an unacceptable segment with an ACK, rate-limited (see tcp.invalid_ack_ratelimit).
  void send_out_of_window_ack(const TcpSegment& segment);

  // Loss recovery (RFC 6675 with RACK-TLP, RFC 8985; F-RTO, RFC 5682): what LossRecovery
  // decides, carried out with the timers, RACK, the scoreboard and the send path
  // (tcp_connection_recovery.cc).
  CongestionControl& congestion() { return recovery_.congestion(); }
  void detect_losses(TimePoint now);
  void maybe_enter_recovery(TimePoint now);
  void enter_rto_recovery();  // after a timeout that was not spurious: resend every unSACKed segment
  void on_spurious_timeout_verdict(SpuriousTimeoutDetector::Verdict verdict);
  void on_reorder_timeout();
  bool may_probe() const;
  void arm_loss_probe();
  void on_loss_probe();
  // Payload for the next segment from snd_nxt: one SMSS (`mss_limit`) at most, or, where the
  // device cuts large segments, up to ~64 KiB of whole SMSS units; 0 to wait for the next ACK
  // (tcp_large_segments.cc). `room`: what `window` leaves beyond the data in flight.
  uint32_t segment_length(uint32_t avail, uint32_t window, uint32_t room, uint32_t mss_limit,
                          bool retransmission) const;

  // Timers.
  void on_retransmission_timeout();
  void on_persist_timeout();
  void expire_orphan();
  void on_keepalive_timeout();
  void restart_rto();
  void sample_rtt(Duration rtt);
  uint32_t ts_now() const;

  void enter_state(TcpState state);
  void enter_time_wait();
  void terminate(TcpError error);
  void notify(int events);

  TcpConnectionOwner& owner_;  // TcpLayer, seen through the narrow interface
  // A passive open until it is established: the listener whose accept queue takes it (a field,
  // not a side table, so a SYN costs no extra allocation).
  std::weak_ptr<TcpListener> half_open_listener_;
  FourTuple tuple_;
  const TcpSettings& settings_;
  TcpState state_ = TcpState::Closed;
  TcpError error_ = TcpError::None;
  EventHandler handler_;
  bool passive_ = false;
  bool nagle_;
  bool user_closed_ = false;

  // Send sequence space (RFC 9293 §3.3.1).
  SeqNumber iss_, snd_una_, snd_nxt_;
  SeqNumber snd_max_;          // highest sequence sent + 1 (snd_nxt rewinds on timeout)
  uint32_t snd_wnd_ = 0, max_snd_wnd_ = 0;
  SeqNumber snd_wl1_, snd_wl2_;
  SeqNumber data_start_;      // sequence number of send_buffer_'s first byte
  BufferList send_buffer_;    // unacknowledged and unsent data
  BufferList::Position send_position_;  // where the last segment was cut from send_buffer_
  bool fin_queued_ = false;
  bool waiting_for_device_ = false;  // in the owner's wait_for_device() list
  uint32_t mss_ = 536;        // SMSS: payload per full segment (options for timestamps excluded)
  uint16_t peer_mss_ = 536;   // RFC 9293 §3.7.1 default
  uint16_t path_mtu_ = 1500;
  TimePoint last_reachability_hint_{-kReachabilityHintInterval};
  uint8_t snd_wscale_ = 0, rcv_wscale_ = 0;
  bool wscale_ok_ = false;     // both sides sent the window scale option
  uint32_t ts_offset_ = 0;    // RFC 7323 §5.4: per-connection random timestamp offset
  bool ts_enabled_ = false, sack_enabled_ = false;
  uint32_t ts_recent_ = 0;
  SeqNumber last_ack_sent_;

  // Receive sequence space.
  SeqNumber irs_, rcv_nxt_;
  SeqNumber rcv_adv_;          // right edge of the window we advertised
  BufferList receive_queue_;
  ReassemblyQueue out_of_order_;
  SackBlock duplicate_block_{};           // RFC 2883 D-SACK to report; empty when left == right
  bool fin_received_ = false;
  static constexpr uint32_t kQuickAcks = 16;  // as Linux's TCP_MAX_QUICKACKS
  uint32_t quick_acks_ = 0;               // segments still to ACK at once (see process_text())

  // Retransmission (RFC 6298) and loss recovery (RFC 5681, 6582, 6675, 8985, 5682).
  RttEstimator rtt_;
  Duration rto_;
  int backoff_ = 0;
  uint32_t ts_at_last_rto_ = 0;  // TSval clock at the last RTO (timeouts_ != 0); older echoes: no RTT sample
  SeqNumber timed_seq_;           // Karn's algorithm when timestamps are off
  TimePoint timed_at_{-1};
  LossRecovery recovery_;        // the recovery state and the congestion controller
  SackScoreboard scoreboard_;
  RackTlp rack_;
  SpuriousTimeoutDetector frto_;
  TimePoint last_out_of_window_ack_{-1};
  uint64_t retransmitted_bytes_ = 0;
  uint64_t retransmitted_segments_ = 0;
  uint64_t bytes_acked_ = 0, bytes_received_ = 0;
  uint64_t timeouts_ = 0;
  int keepalive_probes_sent_ = 0;
  int persist_backoff_ = 0;
  int unanswered_probes_ = 0;  // zero-window probes since the peer last sent an acceptable ACK

  DeadlineTimer rto_timer_;
  DeadlineTimer delack_timer_;
  DeadlineTimer persist_timer_;
  DeadlineTimer keepalive_timer_;
  DeadlineTimer time_wait_timer_;
  DeadlineTimer reorder_timer_;  // RACK's reordering window (RFC 8985 §6.2 step 5)
  DeadlineTimer probe_timer_;    // TLP's probe timeout (RFC 8985 §7.2)
};

}  // namespace bypass::inet
