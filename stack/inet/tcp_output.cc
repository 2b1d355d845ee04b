// TcpConnection's send side: what the next segment carries (RFC 9293 §3.8.6 window management,
// Nagle's algorithm RFC 9293 §3.7.4, large segments tcp_large_segments.cc), retransmission of
// holes (RFC 6675 §5 NextSeg), ACKs (RFC 9293 §3.10.7.4, delayed ACKs RFC 5681 §4.2, SACK and
// D-SACK blocks RFC 2018, RFC 2883), resets and challenge ACKs (RFC 5961).
#include "stack/inet/tcp_connection.h"

#include <algorithm>

#include "base/log.h"

namespace bypass::inet {

uint32_t TcpConnection::payload_limit() const {
  uint32_t limit = mss_;
  if (sack_enabled_ && !out_of_order_.empty()) {
    size_t blocks = std::min<size_t>(out_of_order_.size(), ts_enabled_ ? 3 : 4);
    limit -= static_cast<uint32_t>(4 + 8 * blocks);
  }
  return limit;
}

bool TcpConnection::send_next_hole() {
  // RFC 6675 §4 NextSeg rule (1), with the segments RACK (RFC 8985 §6.2) or the DupThresh rule
  // marked lost: the first one, less what is SACKed.
  const SentSegment* lost = rack_.first_lost();
  if (!lost) return false;
  const SeqNumber start = scoreboard_.skip_sacked(lost->start);
  if (!(start < lost->end)) return false;
  const SeqNumber sent_to = retransmit_range(start, scoreboard_.next_sacked(start, lost->end));
  return sent_to != start;
}

SeqNumber TcpConnection::retransmit_range(SeqNumber start, SeqNumber stop) {
  // A retransmission resends octets already sent (RFC 9293 §3.8.1, RFC 6298 §5.4), never octets
  // past SND.MAX: those were never offered to the peer's window and would go out uncounted (RACK
  // would then hold them in flight for good; found by the inet stack fuzzer).
  // Sized to the destination's current path MTU, as output() sizes new data: the loss probe and
  // the RTO come here directly, and a segment sized to an SMSS the path no longer carries would be
  // refused by Ipv6Layer (RFC 8201 §5.4: retransmit in smaller packets).
  if (tuple_.is_v6()) follow_destination_mtu();
  const SeqNumber data_end = seq_min(seq_min(stop, send_end()), snd_max_);
  const uint32_t len = (start < data_end) ? std::min<uint32_t>(payload_limit(), data_end - start) : 0;
  const bool fin = fin_sent() && start + len == send_end() && stop > send_end();
  if (len == 0 && !fin) return start;
  transmit(start, fin ? kTcpAck | kTcpFin : kTcpAck, send_buffer_.sub(start - data_start_, len, send_position_), true);
  if (!rto_timer_.pending()) rto_timer_.set_after(rto_);
  return start + len + (fin ? 1 : 0);
}

void TcpConnection::output() {
  if (state_ != TcpState::Established && state_ != TcpState::CloseWait &&
      state_ != TcpState::FinWait1 && state_ != TcpState::Closing && state_ != TcpState::LastAck)
    return;
  if (tuple_.is_v6()) follow_destination_mtu();
  bool sack_recovery = recovery_.in_recovery() && sack_enabled_;
  for (int guard = 0; guard < 1 << 16; ++guard) {
    if (sack_recovery) {
      // RFC 6675 §5 (C): send while cwnd - pipe >= 1 SMSS.
      uint32_t in_pipe = pipe();
      if (in_pipe + mss_ > cwnd()) break;
      if (send_next_hole()) continue;
    }
    SeqNumber data_end = send_end();
    if (snd_nxt_ > data_end) break;  // everything including our FIN is out
    uint32_t avail = data_end - snd_nxt_;
    uint32_t in_flight = snd_nxt_ - snd_una_;
    if (avail == 0) {
      if (fin_queued_ && snd_nxt_ == data_end) {
        transmit(snd_nxt_, kTcpAck | kTcpFin, {}, snd_nxt_ < snd_max_);
        snd_nxt_ += 1;
        snd_max_ = seq_max(snd_max_, snd_nxt_);
        if (!rto_timer_.pending()) rto_timer_.set_after(rto_);
      }
      break;
    }
    uint32_t window = sack_recovery ? snd_wnd_ : std::min(cwnd(), snd_wnd_);
    uint32_t room = window > in_flight ? window - in_flight : 0;
    uint32_t limit = payload_limit();
    bool retransmission = snd_nxt_ < snd_max_;
    uint32_t len = segment_length(avail, window, room, limit, retransmission);  // tcp_large_segments.cc
    if (len == 0) {
      // Zero window with nothing in flight: probe it (RFC 9293 §3.8.6.1).
      if (snd_wnd_ == 0 && in_flight == 0 && !persist_timer_.pending())
        persist_timer_.set_after(std::min(rto_ * (int64_t{1} << std::min(persist_backoff_, 16)), settings_.rto_max));
      break;
    }
    if (len < limit) {
      // Sender silly-window avoidance (RFC 9293 §3.8.6.2.1) and Nagle (RFC 9293 §3.7.4): a
      // short segment goes out only if nothing is outstanding, unless it ends the queued data
      // and Nagle is off.
      bool ends_data = len == avail;
      if (in_flight > 0 && (!ends_data || nagle_)) break;
    }
    uint8_t flags = kTcpAck;
    if (len == avail) flags |= kTcpPsh;
    bool with_fin = fin_queued_ && len == avail;
    if (with_fin) flags |= kTcpFin;
    if (!retransmission && owner_.segment_output().device_backlogged()) {
      // The device's queue is full and it holds refused frames: new data waits here, in the send
      // buffer, where nothing is built or copied yet, instead of in frames that go cold behind
      // the refused ones (16 MiB of them at 1,024 connections x 16 KiB in flight).
      if (!waiting_for_device_) {
        waiting_for_device_ = true;
        owner_.wait_for_device(*this);
      }
      break;
    }
    if (!retransmission && !ts_enabled_ && timed_at_ < TimePoint::zero()) {
      timed_seq_ = snd_nxt_;
      timed_at_ = owner_.timers().now();
    }
    transmit(snd_nxt_, flags, send_buffer_.sub(snd_nxt_ - data_start_, len, send_position_), retransmission);
    snd_nxt_ += len + (with_fin ? 1 : 0);
    snd_max_ = seq_max(snd_max_, snd_nxt_);
    if (!rto_timer_.pending()) rto_timer_.set_after(rto_);
  }
  arm_loss_probe();
}

void TcpConnection::build_sack_blocks(TcpOptions& options, bool with_duplicate) const {
  // RFC 2883 §4: a D-SACK block first; then the out-of-order data (RFC 2018 §4).
  if (with_duplicate) options.sack_blocks[options.sack_count++] = duplicate_block_;
  out_of_order_.sack_blocks(options, ts_enabled_ ? 3 : 4);
}

void TcpConnection::transmit(SeqNumber seq, uint8_t flags, BufferList payload, bool retransmission) {
  TcpHeader h;
  h.source_port = tuple_.local_port;
  h.destination_port = tuple_.remote_port;
  h.seq = seq;
  h.flags = flags;
  if (flags & kTcpAck) h.ack = rcv_nxt_;
  if (flags & kTcpSyn) {
    rcv_adv_ = rcv_nxt_ + static_cast<uint32_t>(std::min<size_t>(settings_.rcv_buffer, 65535));
    h.window = static_cast<uint16_t>(std::min<size_t>(settings_.rcv_buffer, 65535));
    bool active = !(flags & kTcpAck);
    // RFC 9293 §3.7.1 / RFC 8200 §5: what fits one packet less the IP and TCP headers; over IPv6
    // the path MTU already known for the destination (ipv6_path_mtu.h) less 60.
    h.options.mss = static_cast<uint16_t>(tuple_.is_v6() ? path_mtu_ - 60u : owner_.mtu() - 40u);
    if (active ? settings_.window_scale : wscale_ok_) h.options.window_scale = rcv_wscale_;
    if (active ? settings_.sack : sack_enabled_) h.options.sack_permitted = true;
    if (active ? settings_.timestamps : ts_enabled_)
      h.options.timestamp = std::make_pair(ts_now(), active ? 0u : ts_recent_);
  } else {
    if (!(flags & kTcpRst)) update_advertised_window();
    uint32_t window = (flags & kTcpRst) ? 0 : rcv_adv_ - rcv_nxt_;
    h.window = static_cast<uint16_t>(std::min<uint32_t>(window >> rcv_wscale_, 65535));
    if (ts_enabled_ && !(flags & kTcpRst)) h.options.timestamp = std::make_pair(ts_now(), ts_recent_);
    // A D-SACK block (RFC 2883) rides on the pure ACK that answers the duplicate.
    const bool with_duplicate = duplicate_block_.left != duplicate_block_.right && payload.empty();
    if (sack_enabled_ && (flags & kTcpAck) && (!out_of_order_.empty() || with_duplicate))
      build_sack_blocks(h.options, with_duplicate);
    if (with_duplicate) duplicate_block_ = {};
  }
  if (flags & kTcpAck) {
    last_ack_sent_ = rcv_nxt_;
    delack_timer_.clear();
  }
  if (sack_enabled_ && !(flags & (kTcpSyn | kTcpRst)))  // RACK's record (RFC 8985 §6.1)
    rack_.on_transmit(seq, seq + static_cast<uint32_t>(payload.length()) + ((flags & kTcpFin) ? 1 : 0),
                      owner_.timers().now(), h.options.timestamp ? h.options.timestamp->first : 0);
  if (retransmission) {
    ++owner_.stats().tcp_retransmitted_segments;
    ++retransmitted_segments_;
    retransmitted_bytes_ += payload.length();
  }
  // A payload beyond one segment (segment_length()) is cut by the device at the SMSS of this
  // moment, SACK blocks included.
  const uint32_t limit = payload_limit();
  const uint16_t cut = payload.length() > limit ? static_cast<uint16_t>(limit) : 0;
  owner_.segment_output().send(tuple_, h, std::move(payload), cut);
}

void TcpConnection::send_ack() {
  if (state_ == TcpState::Closed || state_ == TcpState::SynSent) return;
  // A retransmission timeout rewinds snd_nxt_ to snd_una_, yet the peer may hold everything up to
  // snd_max_: an ACK carrying the rewound sequence number lies left of its window, so it drops
  // it (RFC 9293 section 3.10.7.4) and answers with an ACK of its own, equally old once its own
  // timer fired. Both sides then trade ACKs without end and neither ever learns what the other
  // received. So a pure ACK carries the first new sequence number, snd_max_ (as BSD's
  // tcp_output does), except for the octet of an unanswered zero-window probe, which the peer
  // did not take.
  ++owner_.stats().tcp_pure_acks_sent;  // here, not in transmit(): no cost per data segment
  transmit(next_new_sequence(), kTcpAck, {});
}

SeqNumber TcpConnection::next_new_sequence() const {
  const bool probing = snd_wnd_ == 0 && persist_backoff_ > 0;
  const SeqNumber next = probing ? snd_nxt_ : snd_max_;
  // Never right of the peer's window (as Linux's tcp_acceptable_seq): when the window closed on
  // data we had already sent (and the peer dropped), a segment at snd_max_ is unacceptable to a
  // receiver whose window is zero (RFC 9293 §3.10.7.4: only SEG.SEQ = RCV.NXT is), so it drops
  // every ACK we send, SACK blocks included, and repairs our receive holes only by timeouts that
  // back off without end. The right edge, SND.UNA + SND.WND, is always acceptable.
  const SeqNumber right_edge = snd_una_ + snd_wnd_;
  return (next > right_edge) ? right_edge : next;
}

void TcpConnection::send_challenge_ack() {
  if (!owner_.allow_challenge_ack()) return;  // RFC 5961 §7 rate limit
  ++owner_.stats().tcp_challenge_acks;
  send_ack();
}

void TcpConnection::send_out_of_window_ack(const TcpSegment& seg) {
  // As Linux's tcp_oow_rate_limited: a segment with data is answered (its sender needs our ACK to
  // learn what arrived); one without may be half of an ACK loop, so at most one per interval.
  // A resend of data we hold entirely lies left of the window: report it (RFC 2883 D-SACK), so
  // the sender sees the retransmission (a loss probe, say) was needless.
  const SeqNumber seq = seg.header.seq, end = seq + static_cast<uint32_t>(seg.payload.length());
  if (sack_enabled_ && seq != end && end <= rcv_nxt_) duplicate_block_ = {seq, end};
  const Duration interval = settings_.invalid_ack_ratelimit;
  if (seg.payload.empty() && interval > Duration::zero()) {
    const TimePoint now = owner_.timers().now();
    if (last_out_of_window_ack_ >= TimePoint::zero() && now - last_out_of_window_ack_ < interval) {
      ++owner_.stats().tcp_out_of_window_acks_limited;
      return;
    }
    last_out_of_window_ack_ = now;
  }
  send_ack();
}

void TcpConnection::send_rst(SeqNumber seq) {
  ++owner_.stats().tcp_rst_sent;
  transmit(seq, kTcpRst, {});
}

void TcpConnection::schedule_ack(bool immediate) {
  if (immediate || !settings_.delayed_ack) return send_ack();
  if (!delack_timer_.pending()) delack_timer_.set_after(settings_.delayed_ack_timeout);
}

uint32_t TcpConnection::receive_window() const {
  return (rcv_adv_ > rcv_nxt_) ? rcv_adv_ - rcv_nxt_ : 0;
}

void TcpConnection::update_advertised_window() {
  size_t queued = receive_queue_.length();
  size_t space = settings_.rcv_buffer > queued ? settings_.rcv_buffer - queued : 0;
  space = std::min<size_t>(space, size_t{65535} << rcv_wscale_);
  space = (space >> rcv_wscale_) << rcv_wscale_;  // representable in the scaled field
  SeqNumber new_edge = rcv_nxt_ + static_cast<uint32_t>(space);
  if (!(new_edge > rcv_adv_)) return;  // never shrink the window (RFC 9293 §3.8.6.2.2)
  // Receiver silly-window avoidance (RFC 9293 §3.8.6.2.2): move the right edge only by at least
  // min(half the buffer, one MSS).
  uint32_t step = static_cast<uint32_t>(std::min<size_t>(settings_.rcv_buffer / 2, mss_));
  if (new_edge - rcv_adv_ >= step || space == settings_.rcv_buffer) rcv_adv_ = new_edge;
}

}  // namespace bypass::inet
