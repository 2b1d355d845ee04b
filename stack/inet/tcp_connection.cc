#include "stack/inet/tcp_connection.h"

#include <algorithm>

#include "base/log.h"

namespace bypass::inet {

const char* to_string(TcpState state) {
  switch (state) {
    case TcpState::Closed: return "CLOSED";
    case TcpState::SynSent: return "SYN-SENT";
    case TcpState::SynReceived: return "SYN-RECEIVED";
    case TcpState::Established: return "ESTABLISHED";
    case TcpState::FinWait1: return "FIN-WAIT-1";
    case TcpState::FinWait2: return "FIN-WAIT-2";
    case TcpState::CloseWait: return "CLOSE-WAIT";
    case TcpState::Closing: return "CLOSING";
    case TcpState::LastAck: return "LAST-ACK";
    case TcpState::TimeWait: return "TIME-WAIT";
  }
  return "?";
}

TcpConnection::TcpConnection(TcpConnectionOwner& owner, const FourTuple& tuple, const TcpSettings& settings)
    : owner_(owner), tuple_(tuple), settings_(settings), nagle_(settings.nagle), rto_(settings.rto_initial),
      recovery_(settings.congestion, 536),
      rto_timer_(owner.timers(), [this] { auto self = shared_from_this(); on_retransmission_timeout(); }),
      delack_timer_(owner.timers(),
                    [this] {
                      auto self = shared_from_this();
                      // Held for the device (wait_for_device): a pure ACK would queue behind the
                      // same backlog as the data that carries it once the backlog cleared
                      // (TcpLayer::resume_device_waiters re-arms this when nothing goes then).
                      if (waiting_for_device_) return;
                      ++owner_.stats().tcp_delayed_acks_sent;
                      send_ack();
                    }),
      persist_timer_(owner.timers(), [this] { auto self = shared_from_this(); on_persist_timeout(); }),
      keepalive_timer_(owner.timers(), [this] { auto self = shared_from_this(); on_keepalive_timeout(); }),
      time_wait_timer_(owner.timers(), [this] { auto self = shared_from_this(); terminate(TcpError::None); }),
      reorder_timer_(owner.timers(), [this] { auto self = shared_from_this(); on_reorder_timeout(); }),
      probe_timer_(owner.timers(), [this] { auto self = shared_from_this(); on_loss_probe(); }) {
  path_mtu_ = owner.path_mtu(tuple);
  uint8_t max_shift = std::min<uint8_t>(settings.max_window_shift, 14);
  while (rcv_wscale_ < max_shift && (settings.rcv_buffer >> rcv_wscale_) > 65535) ++rcv_wscale_;
}

TcpConnection::~TcpConnection() = default;

// ---------------------------------------------------------------- socket API

size_t TcpConnection::send_space() const {
  if (fin_queued_ || state_ == TcpState::Closed || state_ == TcpState::TimeWait) return 0;
  return send_buffer_.length() >= settings_.snd_buffer ? 0 : settings_.snd_buffer - send_buffer_.length();
}

void TcpConnection::set_nagle(bool on) {
  const bool releases_held_data = nagle_ && !on;
  nagle_ = on;
  if (releases_held_data) output();  // output() itself checks the state may send
}

size_t TcpConnection::send(BufferList& data) {
  if (state_ != TcpState::Established && state_ != TcpState::CloseWait &&
      state_ != TcpState::SynSent && state_ != TcpState::SynReceived)
    return 0;
  size_t take = std::min(send_space(), data.length());
  if (take == 0) return 0;
  data.splice_front(take, send_buffer_);
  output();
  return take;
}

BufferList TcpConnection::read(size_t max) {
  BufferList out;
  size_t take = std::min(max, receive_queue_.length());
  if (take == 0) return out;
  size_t window_before = receive_window();
  receive_queue_.splice_front(take, out);
  update_advertised_window();
  // Tell the peer when the window reopens noticeably (RFC 9293 §3.8.6.2.2): from below one MSS,
  // or by at least half the buffer.
  size_t window_after = receive_window();
  if (state_ != TcpState::Closed && state_ != TcpState::SynSent &&
      window_after > window_before &&
      (window_before < mss_ || window_after - window_before >= settings_.rcv_buffer / 2)) {
    ++owner_.stats().tcp_window_updates_sent;
    send_ack();
  }
  return out;
}

void TcpConnection::shutdown_write() {
  if (fin_queued_) return;
  switch (state_) {
    case TcpState::SynSent:
      return terminate(TcpError::None);
    case TcpState::SynReceived:
      fin_queued_ = true;  // sent once established (RFC 9293 §3.10.4)
      return;
    case TcpState::Established:
      fin_queued_ = true;
      enter_state(TcpState::FinWait1);
      break;
    case TcpState::CloseWait:
      fin_queued_ = true;
      enter_state(TcpState::LastAck);
      break;
    default:
      return;
  }
  output();
}

void TcpConnection::close() {
  user_closed_ = true;
  if (!receive_queue_.empty()) return abort();  // RFC 9293 §3.10.4, RFC 2525 §2.17
  if (state_ == TcpState::FinWait2) return expire_orphan();
  shutdown_write();
}

// RFC 9293 lets FIN-WAIT-2 last until the peer closes. Once the application has closed too,
// nobody can read what would still arrive, so (as Linux's tcp_fin_timeout) the connection waits
// for the peer's FIN only so long; the FIN moves it to TIME-WAIT, which re-arms this timer.
void TcpConnection::expire_orphan() { time_wait_timer_.set_after(settings_.fin_wait2_timeout); }

void TcpConnection::abort() {
  if (state_ == TcpState::Closed) return;
  // The reset carries the sequence number the peer expects next (see send_ack()).
  if (state_ != TcpState::SynSent && state_ != TcpState::TimeWait) send_rst(next_new_sequence());
  terminate(TcpError::None);
}

// ---------------------------------------------------------------- opening

void TcpConnection::open_active() {
  iss_ = owner_.generate_iss(tuple_);
  ts_offset_ = iss_.raw() * 2654435761u;
  snd_una_ = snd_nxt_ = snd_max_ = iss_;
  data_start_ = iss_ + 1;
  recovery_.start(iss_);
  enter_state(TcpState::SynSent);
  transmit(iss_, kTcpSyn, {});
  snd_nxt_ = snd_max_ = iss_ + 1;
  rto_timer_.set_after(rto_);
}

void TcpConnection::open_passive(const TcpSegment& syn, SeqNumber iss) {
  passive_ = true;
  iss_ = iss;
  ts_offset_ = iss_.raw() * 2654435761u;
  snd_una_ = snd_nxt_ = snd_max_ = iss_;
  data_start_ = iss_ + 1;
  recovery_.start(iss_);
  irs_ = syn.header.seq;
  rcv_nxt_ = irs_ + 1;
  negotiate_options(syn.header.options);
  snd_wnd_ = max_snd_wnd_ = syn.header.window;  // never scaled in a SYN (RFC 7323 §2.2)
  snd_wl1_ = syn.header.seq;
  enter_state(TcpState::SynReceived);
  transmit(iss_, kTcpSyn | kTcpAck, {});
  snd_nxt_ = snd_max_ = iss_ + 1;
  rto_timer_.set_after(rto_);
}

void TcpConnection::open_from_cookie(const TcpSegment& ack, SeqNumber iss, uint16_t mss) {
  // RFC 4987 §3.6: the cookie carried only the MSS, so no window scaling, SACK or timestamps.
  passive_ = true;
  iss_ = iss;
  snd_una_ = snd_nxt_ = snd_max_ = iss_ + 1;
  data_start_ = iss_ + 1;
  recovery_.start(iss_);
  irs_ = ack.header.seq - 1;
  rcv_nxt_ = ack.header.seq;
  TcpOptions peer;
  peer.mss = mss;
  negotiate_options(peer);
  snd_wnd_ = max_snd_wnd_ = ack.header.window;
  snd_wl1_ = ack.header.seq;
  snd_wl2_ = ack.header.ack;
  rcv_adv_ = rcv_nxt_ + std::min<size_t>(settings_.rcv_buffer, 65535);
  congestion().start(mss_);
  enter_state(TcpState::Established);
}

void TcpConnection::negotiate_options(const TcpOptions& peer) {
  peer_mss_ = peer.mss && *peer.mss >= 64 ? *peer.mss : 536;  // RFC 9293 §3.7.1 default
  wscale_ok_ = settings_.window_scale && peer.window_scale.has_value();
  if (wscale_ok_) {
    snd_wscale_ = std::min<uint8_t>(*peer.window_scale, 14);  // RFC 7323 §2.3
  } else {
    snd_wscale_ = 0;
    rcv_wscale_ = 0;
  }
  sack_enabled_ = settings_.sack && peer.sack_permitted;
  ts_enabled_ = settings_.timestamps && peer.timestamp.has_value();
  if (ts_enabled_) ts_recent_ = peer.timestamp->first;
  on_path_mtu(path_mtu_);
}

void TcpConnection::on_path_mtu(uint16_t mtu) {
  if (mtu < 68) return;
  bool shrinking = mtu < path_mtu_;
  set_path_mtu(mtu);
  if (shrinking && snd_una_ < snd_nxt_ && state_ != TcpState::SynSent) {
    // RFC 1191 §6.5, RFC 8201 §5.4: resend what was too big, in smaller pieces.
    snd_nxt_ = snd_una_;
    output();
  }
}

void TcpConnection::follow_destination_mtu() {
  // Icmpv6Layer lowers the destination's path MTU (ipv6_path_mtu.h) for a Packet Too Big that
  // validated against another connection to the same destination, or that quoted a packet of
  // ours which TCP cannot check (an echo reply); Ipv6Layer then refuses anything larger. New
  // segments and retransmissions (output(), retransmit_range(), on_loss_probe()) follow it so none
  // is dropped locally (a black hole until the entry expires); only a
  // Packet Too Big about this connection (TcpLayer::on_icmpv6_error) resends its flight.
  // The table never goes below 1280 (RFC 8201 §4), which bounds what a forged one can do.
  const uint32_t mtu = owner_.path_mtu(tuple_);
  if (mtu < path_mtu_) set_path_mtu(static_cast<uint16_t>(mtu));
}

void TcpConnection::set_path_mtu(uint16_t mtu) {
  path_mtu_ = std::min<uint16_t>(mtu, owner_.mtu());
  // RFC 9293 §3.7.1: Eff.snd.MSS = min(SendMSS + 20, MMS_S) - TCP header - IP header options,
  // MMS_S being the path MTU less the IP header: 20 bytes for IPv4, 40 for IPv6 (RFC 8200 §5:
  // an IPv6 segment's MSS is the path MTU less 60).
  uint32_t effective = std::min<uint32_t>(peer_mss_ + 20u, path_mtu_ - ip_header_length()) - 20u;
  if (ts_enabled_) effective -= 12;  // timestamps ride on every segment
  mss_ = std::max<uint32_t>(effective, 48);
  congestion().set_mss(mss_);
}

void TcpConnection::confirm_reachability(TimePoint now) {
  // RFC 4861 §7.3.1: new data acknowledged proves the path (and so the first hop) works; telling
  // the neighbour cache spares it the probes of unreachability detection. Once per interval, not
  // per ACK: the cache needs the hint only once per ReachableTime (30 s by default).
  if (now - last_reachability_hint_ < kReachabilityHintInterval) return;
  last_reachability_hint_ = now;
  owner_.confirm_reachable(tuple_.remote_ip);
}

void TcpConnection::on_unreachable() {
  // RFC 1122 §4.2.3.9: port/protocol unreachable is a hard error; abort a connection attempt.
  if (state_ == TcpState::SynSent) terminate(TcpError::Unreachable);
}

// ---------------------------------------------------------------- input

void TcpConnection::on_segment(TcpSegment&& seg) {
  auto self = shared_from_this();
  const TcpHeader& h = seg.header;
  if (settings_.keepalive && state_ != TcpState::SynSent) {
    keepalive_probes_sent_ = 0;
    keepalive_timer_.set_after(settings_.keepalive_idle);
  }
  if (state_ == TcpState::Closed) return;
  if (state_ == TcpState::SynSent) return on_segment_syn_sent(seg);

  // Our SYN-ACK was lost and the peer repeats its SYN: answer with the SYN-ACK again.
  if (state_ == TcpState::SynReceived && h.has(kTcpSyn) && !h.has(kTcpAck) && h.seq == irs_) {
    transmit(iss_, kTcpSyn | kTcpAck, {});
    return;
  }
  // A retransmitted FIN in TIME-WAIT: acknowledge and restart the 2 MSL wait (RFC 9293 §3.10.7.4).
  if (state_ == TcpState::TimeWait && h.has(kTcpFin) && !h.has(kTcpRst) &&
      h.seq + seg.length() == rcv_nxt_) {
    send_ack();
    time_wait_timer_.set_after(2 * settings_.msl);
    return;
  }
  // PAWS, RFC 7323 §5.3 R1: a segment older than TS.Recent is a duplicate from a past wrap.
  if (ts_enabled_ && h.options.timestamp && !h.has(kTcpRst) &&
      timestamp_before(h.options.timestamp->first, ts_recent_)) {
    ++owner_.stats().tcp_dropped_paws;
    send_out_of_window_ack(seg);
    return;
  }
  // RFC 9293 §3.10.7.4 first: sequence number acceptability.
  if (!acceptable(seg)) {
    ++owner_.stats().tcp_dropped_out_of_window;
    // RFC 5961 §4.2 (RFC 9293 §3.10.7.4 fourth): a SYN gets a challenge ACK "irrespective of the
    // sequence number", so an off-path SYN flood is answered within the §7 rate limit too.
    if (h.has(kTcpSyn) && !h.has(kTcpRst)) return send_challenge_ack();
    if (!h.has(kTcpRst)) send_out_of_window_ack(seg);
    // With a zero window no segment is acceptable, "but special allowance should be made to
    // accept valid ACKs" (same section): a segment at RCV.NXT (a window probe, a retransmission)
    // carries the peer's acknowledgement of our data, and the peer's pure ACKs may be lost or
    // out of sequence. Dropping it whole can leave our send buffer full for good while our
    // application waits for room before it reads (an echo): keep its ACK, drop its text.
    if (receive_window() != 0 || h.seq != rcv_nxt_ || !h.has(kTcpAck) || h.has(kTcpRst) || h.has(kTcpSyn))
      return;
    seg.payload.clear();
    seg.header.flags = static_cast<uint8_t>(seg.header.flags & ~kTcpFin);
  }
  // Second: RST, with RFC 5961 §3.2: exact match resets, anything else in window is challenged.
  if (h.has(kTcpRst)) {
    ++owner_.stats().tcp_rst_received;
    if (h.seq != rcv_nxt_) return send_challenge_ack();
    ++owner_.stats().tcp_connections_reset;
    return terminate(state_ == TcpState::SynReceived && !passive_ ? TcpError::Refused
                                                                 : TcpError::Reset);
  }
  // Fourth: SYN in a synchronized state, RFC 5961 §4.2: challenge ACK, never a reset.
  if (h.has(kTcpSyn)) return send_challenge_ack();
  if (!h.has(kTcpAck)) return;  // fifth: segments without ACK are dropped
  update_ts_recent(seg);

  if (state_ == TcpState::SynReceived) {
    if (!(snd_una_ < h.ack && h.ack <= snd_max_)) {
      send_rst(h.ack);  // RFC 9293 §3.10.7.4: unacceptable ACK in SYN-RECEIVED
      return;
    }
    snd_wnd_ = static_cast<uint32_t>(h.window) << snd_wscale_;
    max_snd_wnd_ = std::max(max_snd_wnd_, snd_wnd_);
    snd_wl1_ = h.seq;
    snd_wl2_ = h.ack;
    congestion().start(mss_);
    enter_state(TcpState::Established);
    ++owner_.stats().tcp_connections_established;
    owner_.on_established(*this);
    notify(kTcpConnected | kTcpWritable);
    // RFC 9293 §3.10.4: a close in SYN-RECEIVED is processed on entering ESTABLISHED, before
    // this segment's text and FIN (a FIN here then finds FIN-WAIT-1 and leads to CLOSING).
    if (fin_queued_) enter_state(TcpState::FinWait1);
  }
  if (!process_ack(seg)) return;
  if (state_ == TcpState::Closed) return;

  // Seventh and eighth: text and FIN, accepted only while the peer may still send.
  if (state_ == TcpState::Established || state_ == TcpState::FinWait1 ||
      state_ == TcpState::FinWait2) {
    if (!seg.payload.empty() || h.has(kTcpFin)) process_text(seg);
  }
  output();
}

void TcpConnection::on_segment_syn_sent(TcpSegment& seg) {
  // RFC 9293 §3.10.7.3.
  const TcpHeader& h = seg.header;
  if (h.has(kTcpAck) && (h.ack <= iss_ || h.ack > snd_max_)) {
    if (!h.has(kTcpRst)) send_rst(h.ack);
    return;
  }
  if (h.has(kTcpRst)) {
    if (h.has(kTcpAck)) {
      ++owner_.stats().tcp_rst_received;
      terminate(TcpError::Refused);
    }
    return;
  }
  if (!h.has(kTcpSyn)) return;
  irs_ = h.seq;
  rcv_nxt_ = irs_ + 1;
  // Our SYN offered an unscaled window (RFC 7323 §2.2); its right edge starts here.
  rcv_adv_ = rcv_nxt_ + static_cast<uint32_t>(std::min<size_t>(settings_.rcv_buffer, 65535));
  negotiate_options(h.options);
  snd_wnd_ = max_snd_wnd_ = h.window;  // unscaled in a SYN
  snd_wl1_ = h.seq;
  snd_wl2_ = h.ack;
  if (h.has(kTcpAck)) {
    if (ts_enabled_ && h.options.timestamp->second != 0)
      sample_rtt(std::chrono::milliseconds(ts_now() - h.options.timestamp->second));
    else if (backoff_ == 0 && timed_at_ >= TimePoint::zero())
      sample_rtt(owner_.timers().now() - timed_at_);
    snd_una_ = h.ack;
    snd_nxt_ = seq_max(snd_nxt_, snd_una_);
    rto_timer_.clear();
    backoff_ = 0;
    congestion().start(mss_);
    enter_state(TcpState::Established);
    ++owner_.stats().tcp_connections_established;
    update_advertised_window();
    send_ack();
    notify(kTcpConnected | kTcpWritable);
    if (fin_queued_) enter_state(TcpState::FinWait1);
    output();
    return;
  }
  // Simultaneous open (RFC 9293 §3.5, figure 8): answer with SYN-ACK and wait for its ACK.
  enter_state(TcpState::SynReceived);
  transmit(iss_, kTcpSyn | kTcpAck, {});
}

bool TcpConnection::acceptable(const TcpSegment& seg) const {
  // RFC 9293 §3.10.7.4, the four cases of the acceptability test.
  uint32_t len = seg.length();
  uint32_t wnd = receive_window();
  SeqNumber seq = seg.header.seq;
  if (len == 0) return wnd == 0 ? seq == rcv_nxt_ : seq_in(seq, rcv_nxt_, rcv_nxt_ + wnd);
  if (wnd == 0) return false;
  return seq_in(seq, rcv_nxt_, rcv_nxt_ + wnd) || seq_in(seq + len - 1, rcv_nxt_, rcv_nxt_ + wnd);
}

void TcpConnection::update_ts_recent(const TcpSegment& seg) {
  // RFC 7323 §4.3 (2): remember TSval of the segment that covers Last.ACK.sent.
  if (!ts_enabled_ || !seg.header.options.timestamp) return;
  uint32_t tsval = seg.header.options.timestamp->first;
  if (!timestamp_before(tsval, ts_recent_) && seg.header.seq <= last_ack_sent_) ts_recent_ = tsval;
}

// RFC 9293 §3.10.7.4 fifth, the ACK field, in its steps (each inlined into process_ack, the only
// caller: as calls they cost the per-segment path 35 instructions, callgrind): acceptability, the send window, the SACK
// scoreboard, then SND.UNA's advance (with RTT, recovery and our FIN acknowledged) or a duplicate
// ACK, then RACK-TLP and F-RTO, then loss detection. False: the segment goes no further (it was
// answered and dropped, or the connection closed).
bool TcpConnection::process_ack(const TcpSegment& seg) {
  const TcpHeader& h = seg.header;
  const SeqNumber ack = h.ack;
  if (!ack_acceptable(ack)) return false;
  const bool window_changed = update_send_window(h);
  if (sack_enabled_ && h.options.sack_count) scoreboard_.update(h.options, snd_una_, snd_max_);
  // RFC 2883 §4: a first SACK block at or below the ACK reports a duplicate (D-SACK).
  const bool dsack = h.options.sack_count && h.options.sack_blocks[0].right <= ack;
  const bool advanced = ack > snd_una_;
  bool duplicate = false;
  TimePoint now = owner_.timers().now();

  if (advanced) {
    if (!advance_send_unacknowledged(h, now)) return false;
  } else if (ack == snd_una_ && snd_max_ > snd_una_ && seg.payload.empty() &&
             !h.has(kTcpSyn) && !h.has(kTcpFin) && !window_changed && snd_wnd_ != 0) {
    // Duplicate ACK as defined in RFC 5681 §2.
    duplicate = true;
    recovery_.on_duplicate_ack(sack_enabled_, mss_);
  }

  if (sack_enabled_) update_rack(h, dsack, now);
  if (frto_.active()) on_spurious_timeout_verdict(frto_.on_ack(ack, advanced, duplicate));
  if (state_ == TcpState::SynReceived || frto_.active()) return true;
  // Nothing SACKed, no recovery and no probe under way: nothing was resent, so every segment in
  // flight left after those just delivered and none can be overtaken (an in-order flow skips the
  // walk over its flight).
  if (sack_enabled_ && (!scoreboard_.empty() || recovery_.repairing() || rack_.probe_outstanding()))
    detect_losses(now);
  maybe_enter_recovery(now);
  return true;
}

// RFC 9293 §3.10.7.4 fifth / RFC 5961 §5.2: acceptable ACKs lie in
// [SND.UNA - MAX.SND.WND, SND.NXT]; outside it, answer with an ACK and drop.
[[gnu::always_inline]] inline bool TcpConnection::ack_acceptable(SeqNumber ack) {
  if (ack > snd_max_) {
    send_ack();
    return false;
  }
  if (ack < snd_una_ - max_snd_wnd_) {
    send_challenge_ack();
    return false;
  }
  unanswered_probes_ = 0;  // the peer is alive: it may keep its window closed (RFC 9293 §3.8.6.1)
  return true;
}

// RFC 9293 §3.10.7.4 fifth: SND.WND is taken from the newest segment (SND.WL1, SND.WL2 keep an
// old one from reopening it). Returns whether the window changed; an open one stops the persist
// timer (§3.8.6.1).
[[gnu::always_inline]] inline bool TcpConnection::update_send_window(const TcpHeader& h) {
  const uint32_t old_window = snd_wnd_;
  if (snd_wl1_ < h.seq || (snd_wl1_ == h.seq && snd_wl2_ <= h.ack)) {
    snd_wnd_ = static_cast<uint32_t>(h.window) << snd_wscale_;
    max_snd_wnd_ = std::max(max_snd_wnd_, snd_wnd_);
    snd_wl1_ = h.seq;
    snd_wl2_ = h.ack;
  }
  if (snd_wnd_ != 0) {
    persist_timer_.clear();
    persist_backoff_ = 0;
  }
  return snd_wnd_ != old_window;
}

// RFC 9293 §3.10.7.4 fifth, SND.UNA < SEG.ACK =< SND.NXT: "set SND.UNA <- SEG.ACK", releasing
// what it acknowledged, with the RTT sample, recovery's progress, the retransmission timer and,
// when our FIN is acknowledged, the state change. False when that closed the connection.
[[gnu::always_inline]] inline bool TcpConnection::advance_send_unacknowledged(const TcpHeader& h, TimePoint now) {
  const SeqNumber ack = h.ack;
  const uint32_t acked = ack - snd_una_;
  const uint32_t flight_before_ack = snd_nxt_ - snd_una_;
  sample_rtt_from_ack(h, now);
  backoff_ = 0;
  const SeqNumber data_end = send_end();
  const SeqNumber data_acked_to = seq_min(ack, data_end);
  if (data_acked_to > data_start_) {
    bytes_acked_ += data_acked_to - data_start_;
    send_position_.shift(send_buffer_.trim_front(data_acked_to - data_start_), data_acked_to - data_start_);
    data_start_ = data_acked_to;
  }
  const bool fin_acked = fin_queued_ && ack == data_end + 1;
  snd_una_ = ack;
  if (tuple_.is_v6()) confirm_reachability(now);
  if (snd_nxt_ < snd_una_) snd_nxt_ = snd_una_;
  scoreboard_.advance(snd_una_);
  if (!scoreboard_.empty() && scoreboard_.blocks().front().left == snd_una_) recovery_.on_sack_reneging();
  on_new_data_acked(ack, acked, flight_before_ack, data_end, now);
  // RFC 6298 §5.2/5.3: stop the timer when all is acknowledged, otherwise restart it.
  if (snd_una_ == snd_max_) rto_timer_.clear();
  else rto_timer_.set_after(rto_);
  if (send_space() > 0) notify(kTcpWritable);
  return !fin_acked || on_our_fin_acked();
}

// RTT (RFC 6298 §3 with Karn's rule; RFC 7323 §4 when timestamps are on). Karn's rule carries
// over to timestamps: an echo older than the last retransmission timeout is the TSval of a
// segment sent before it (the receiver echoes TS.Recent when a retransmission repeats data it
// already has, RFC 7323 §4.3), and the sample would span the whole backoff. Taken, it inflated
// SRTT to seconds and RTO to its ceiling under 10 % loss.
[[gnu::always_inline]] inline void TcpConnection::sample_rtt_from_ack(const TcpHeader& h, TimePoint now) {
  if (ts_enabled_ && h.options.timestamp && h.options.timestamp->second != 0 &&
      !(timeouts_ != 0 && timestamp_before(h.options.timestamp->second, ts_at_last_rto_))) {
    sample_rtt(std::chrono::milliseconds(static_cast<int32_t>(ts_now() - h.options.timestamp->second)));
  } else if (!ts_enabled_ && timed_at_ >= TimePoint::zero() && h.ack > timed_seq_) {
    sample_rtt(now - timed_at_);
    timed_at_ = TimePoint{-1};
  }
}

// The congestion controller and recovery on an ACK of new data (LossRecovery::on_new_data_acked);
// a partial ACK in NewReno recovery without SACK resends the next hole (RFC 6582 §3.2 step 5).
[[gnu::always_inline]] inline void TcpConnection::on_new_data_acked(SeqNumber ack, uint32_t acked, uint32_t flight_before_ack,
                                      SeqNumber data_end, TimePoint now) {
  if (recovery_.on_new_data_acked(ack, acked, flight_before_ack, sack_enabled_, mss_, now, rtt_.srtt()) !=
      LossRecovery::AckOutcome::RetransmitNextHole)
    return;
  const uint32_t len = std::min<uint32_t>(mss_, data_end - snd_una_);
  if (len) transmit(snd_una_, kTcpAck, send_buffer_.sub(0, len, send_position_), true);
  rto_timer_.set_after(rto_);
}

// RFC 9293 §3.10.7.4 fifth, our FIN acknowledged: FIN-WAIT-1 -> FIN-WAIT-2, CLOSING -> TIME-WAIT,
// LAST-ACK -> CLOSED (false: the connection is gone).
[[gnu::always_inline]] inline bool TcpConnection::on_our_fin_acked() {
  if (state_ == TcpState::FinWait1) {
    enter_state(TcpState::FinWait2);
    if (user_closed_) expire_orphan();
  } else if (state_ == TcpState::Closing) {
    enter_time_wait();
  } else if (state_ == TcpState::LastAck) {
    terminate(TcpError::None);
    return false;
  }
  return true;
}

// RACK's record of what the ACK delivered (RFC 8985 §6.2) and TLP's verdict on a probe.
[[gnu::always_inline]] inline void TcpConnection::update_rack(const TcpHeader& h, bool dsack, TimePoint now) {
  std::optional<uint32_t> tsecr;
  if (ts_enabled_ && h.options.timestamp && h.options.timestamp->second != 0) tsecr = h.options.timestamp->second;
  rack_.on_ack(snd_una_, scoreboard_, now, tsecr);
  // RFC 8985 §7.4.2: the ACK of a loss probe that no D-SACK calls a duplicate means the probe
  // repaired a tail loss, which calls for the congestion response recovery would have made.
  if (rack_.probe_repaired_loss(h.ack, dsack)) recovery_.on_tail_loss_repaired(flight_size(), now);
}

void TcpConnection::process_text(TcpSegment& seg) {
  SeqNumber seq = seg.header.seq;
  BufferList& data = seg.payload;
  bool fin = seg.header.has(kTcpFin);
  SeqNumber fin_seq = seq + static_cast<uint32_t>(data.length());
  // RFC 2883: report data we already had, so the sender can tell a needless retransmission.
  if (sack_enabled_ && seq < rcv_nxt_ && !data.empty()) duplicate_block_ = {seq, seq_min(fin_seq, rcv_nxt_)};
  // Trim what we already have (RFC 9293 §3.10.7.4: process only the part in the window).
  if (seq < rcv_nxt_) {
    uint32_t old = rcv_nxt_ - seq;
    if (old >= data.length()) data.clear();
    else data.trim_front(old);
    seq = rcv_nxt_;
    if (fin && fin_seq < rcv_nxt_) fin = false;
  }
  SeqNumber right = rcv_nxt_ + receive_window();
  if (seq + static_cast<uint32_t>(data.length()) > right) {
    data.truncate((seq < right) ? right - seq : 0);
    fin = false;
  }
  // A duplicate or out-of-order segment means the sender is recovering from a loss: ACK each of
  // its next segments at once (Linux's quick-ACK mode), so one lost ACK cannot stall its window.
  if ((data.empty() && !fin) || seq != rcv_nxt_) quick_acks_ = kQuickAcks;
  if (data.empty() && !fin) return schedule_ack(true);  // a duplicate: ACK at once (RFC 5681 §4.2)
  if (seq != rcv_nxt_) {
    insert_out_of_order(seq, std::move(data), fin);
    return schedule_ack(true);  // out of order: immediate duplicate ACK carrying SACK
  }
  bool had_gap = !out_of_order_.empty();
  rcv_nxt_ += static_cast<uint32_t>(data.length());
  bytes_received_ += data.length();
  if (!user_closed_) receive_queue_.append(std::move(data));
  bool fin_now = fin;
  if (had_gap) fin_now = drain_out_of_order_fin(fin_now);
  if (fin_now) process_fin();
  notify(kTcpReadable);
  if (had_gap || fin_now || !settings_.delayed_ack || take_quick_ack()) return schedule_ack(true);
  // RFC 9293 §3.8.6.3 (SHLD-19): an ACK for at least every second full-sized segment "or 2*RMSS
  // bytes of new data". Counting bytes covers both, a coalesced unit (GRO, LRO) as its wire
  // segments, and a stream of short segments, which a count of full-sized ones never acknowledged
  // before the delayed-ACK timer. mss_ (the smaller of both sides' MSS, less the options every
  // segment carries) stands for RMSS: a full-sized segment of the peer's is at least that long.
  if (rcv_nxt_ - last_ack_sent_ >= 2 * mss_) return send_ack();
  if (!delack_timer_.pending()) delack_timer_.set_after(settings_.delayed_ack_timeout);
}

void TcpConnection::insert_out_of_order(SeqNumber seq, BufferList&& data, bool fin) {
  out_of_order_.insert(seq, std::move(data), fin);
}

bool TcpConnection::drain_out_of_order_fin(bool fin) {
  return out_of_order_.drain(rcv_nxt_, fin, user_closed_ ? nullptr : &receive_queue_, bytes_received_);
}

void TcpConnection::process_fin() {
  // RFC 9293 §3.10.7.4 eighth: the FIN occupies one sequence number.
  rcv_nxt_ += 1;
  fin_received_ = true;
  switch (state_) {
    case TcpState::Established:
      enter_state(TcpState::CloseWait);
      break;
    case TcpState::FinWait1:
      enter_state(TcpState::Closing);  // our FIN is not acknowledged yet (simultaneous close)
      break;
    case TcpState::FinWait2:
      enter_time_wait();
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------- state

void TcpConnection::enter_state(TcpState state) {
  BYPASS_LOG(Debug, "tcp", "%u -> %s %s -> %s", tuple_.local_port,
             endpoint_to_string(tuple_.remote_ip, tuple_.remote_port).c_str(), to_string(state_),
             to_string(state));
  state_ = state;
  if (state == TcpState::Established && settings_.keepalive)
    keepalive_timer_.set_after(settings_.keepalive_idle);
}

void TcpConnection::enter_time_wait() {
  enter_state(TcpState::TimeWait);
  rto_timer_.clear();
  persist_timer_.clear();
  keepalive_timer_.clear();
  reorder_timer_.clear();
  probe_timer_.clear();
  time_wait_timer_.set_after(2 * settings_.msl);  // RFC 9293 §3.4.2
  notify(kTcpReadable);
}

void TcpConnection::terminate(TcpError error) {
  if (state_ == TcpState::Closed) return;
  enter_state(TcpState::Closed);
  error_ = error;
  rto_timer_.clear();
  delack_timer_.clear();
  persist_timer_.clear();
  keepalive_timer_.clear();
  time_wait_timer_.clear();
  reorder_timer_.clear();
  probe_timer_.clear();
  send_buffer_.clear();
  send_position_ = {};
  out_of_order_.clear();
  rack_.clear();
  owner_.on_closed(*this);
  notify(kTcpClosed | kTcpReadable | kTcpWritable);
}

std::string TcpConnection::describe() const {
  const auto ms = [](Duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  std::string out = tuple_.to_string() + " " + to_string(state_);
  out += " snd_una=" + std::to_string(snd_una_ - iss_) + " snd_nxt=" + std::to_string(snd_nxt_ - iss_) +
         " snd_max=" + std::to_string(snd_max_ - iss_) +
         " send_end=" + std::to_string(send_end() - iss_) +
         " fin_queued=" + std::to_string(fin_queued_) + " snd_wnd=" + std::to_string(snd_wnd_);
  out += " cwnd=" + std::to_string(cwnd()) + " ssthresh=" + std::to_string(ssthresh());
  out += " in_recovery=" + std::to_string(recovery_.in_recovery()) +
         " recover=" + std::to_string(recovery_.recovery_point() - iss_) +
         " sack_blocks=" + std::to_string(scoreboard_.size()) + " lost_marked=" + std::to_string(rack_.has_lost()) + " dupacks=" + std::to_string(recovery_.duplicate_acks()) +
         " rto=" + ms(rto_) + "ms backoff=" + std::to_string(backoff_) +
         " rto_timer=" + std::to_string(rto_timer_.pending()) +
         " persist_timer=" + std::to_string(persist_timer_.pending());
  out += " rcv_nxt=" + std::to_string(rcv_nxt_ - irs_) +
         " readable=" + std::to_string(receive_queue_.length()) +
         " out_of_order=" + std::to_string(out_of_order_.size()) +
         " fin_received=" + std::to_string(fin_received_);
  return out;
}

void TcpConnection::notify(int events) {
  if (handler_) handler_(events);
}

}  // namespace bypass::inet
