// TcpConnection's timers: RTT samples and the retransmission timeout (RFC 6298), the tail loss
// probe (RFC 8985 §7), zero-window probes (RFC 9293 §3.8.6.1), keepalives (RFC 1122 §4.2.3.6),
// and the timestamp clock (RFC 7323 §5.4).
#include "stack/inet/tcp_connection.h"

#include <algorithm>

#include "base/log.h"

namespace bypass::inet {

uint32_t TcpConnection::ts_now() const {
  // 1 ms per tick (RFC 7323 §5.4 allows 1 ms to 1 s), offset per connection.
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(owner_.timers().now()).count();
  return static_cast<uint32_t>(ms) + ts_offset_;
}

void TcpConnection::sample_rtt(Duration rtt) {
  rtt_.sample(rtt);
  // RFC 6298 §2.4 floor (configurable, default 200 ms) and §2.5 ceiling.
  rto_ = rtt_.rto(settings_.rto_min, settings_.rto_max);
}

void TcpConnection::on_retransmission_timeout() {
  ++owner_.stats().tcp_timeouts;
  ++timeouts_;
  ++backoff_;
  ts_at_last_rto_ = ts_now();
  rto_ = std::min(rto_ * 2, settings_.rto_max);  // RFC 6298 §5.5
  if (state_ == TcpState::SynSent || state_ == TcpState::SynReceived) {
    if (backoff_ > settings_.max_syn_retransmissions) return terminate(TcpError::TimedOut);
    transmit(iss_, state_ == TcpState::SynSent ? kTcpSyn : kTcpSyn | kTcpAck, {}, true);
    timed_at_ = TimePoint{-1};  // Karn: no sample from a retransmitted SYN
    rto_timer_.set_after(rto_);
    return;
  }
  if (snd_una_ == snd_max_) return;
  if (backoff_ > settings_.max_retransmissions) {
    send_rst(next_new_sequence());  // see send_ack()
    return terminate(TcpError::TimedOut);
  }
  // RFC 5681 §3.1 eq. 4 and RFC 6582 §4: collapse the window, remember the recovery point.
  const uint32_t cwnd_before = cwnd(), ssthresh_before = ssthresh();
  const bool judge_spurious = recovery_.on_timeout(snd_una_, snd_max_, flight_size(), owner_.timers().now());
  timed_at_ = TimePoint{-1};
  if (sack_enabled_) {
    rack_.cancel_probe();
    probe_timer_.clear();
    frto_.stop();
    // RFC 6675 §5.1: the scoreboard survives the timeout, so only holes are resent; unless the
    // receiver reneged on its SACKs (RFC 2018 §8), when they are discarded.
    if (recovery_.begin_timeout_recovery(judge_spurious)) {
      scoreboard_.clear();
      rack_.forget_sacks();
    }
    if (judge_spurious) {
      // RFC 5682 §2.1 step 1: resend the first unacknowledged segment only, then let the next
      // two ACKs tell whether the timeout was spurious.
      const SeqNumber sent_to = retransmit_range(snd_una_, snd_una_ + payload_limit());
      frto_.start(cwnd_before, ssthresh_before, sent_to, recovery_.recovery_point());
    } else {
      enter_rto_recovery();
      output();
    }
    rto_timer_.set_after(rto_);  // RFC 6298 §5.6
    return;
  }
  recovery_.abandon_fast_recovery();
  scoreboard_.clear();
  snd_nxt_ = snd_una_;  // go back N: resend from the first unacknowledged octet (RFC 6298 §5.4)
  output();
  rto_timer_.set_after(rto_);  // RFC 6298 §5.6
}

bool TcpConnection::may_probe() const {
  // RFC 8985 §7.2 probes outside recovery, with data in flight and no probe outstanding. Here also
  // in recovery once nothing more may be sent (the lost segments are resent or cwnd is full): at
  // the windows of two or three segments that heavy loss leaves, a flight whose retransmissions
  // or ACKs are all lost has nothing left to elicit an ACK, and would wait for the RTO.
  const bool can_send_more = rack_.has_lost() && pipe() + mss_ <= cwnd();
  // Not while the RTO backs off (the path may be down) nor against a zero window (the persist
  // timer probes that).
  return sack_enabled_ && !(recovery_.in_recovery() && can_send_more) && !frto_.active() && !rack_.probe_outstanding() &&
         snd_una_ != snd_max_ && backoff_ == 0 && snd_wnd_ != 0;
}

void TcpConnection::arm_loss_probe() {
  // A probe goes out if the flight falls silent for a PTO (RFC 8985 §7.2); not when the RTO
  // would come first.
  if (!may_probe()) {
    probe_timer_.clear();
    return;
  }
  // §7.2 adds the peer's delayed ACK to a flight of one segment, because only then may the
  // receiver hold its ACK. A receiver must ACK only every second full-sized segment (RFC 9293
  // §3.8.6.3, RFC 5681 §4.2), so it may hold it for any flight under two: a request of a few KiB
  // whose reply (carrying the ACK) is slow would otherwise draw a needless probe once the
  // reply takes 2 SRTT, which a server queueing for a thousand connections often does.
  const bool receiver_may_delay_ack = flight_size() < 2 * mss_;
  const Duration pto = RackTlp::probe_timeout(rtt_.srtt(), rtt_.has_sample(), receiver_may_delay_ack);
  if (rto_timer_.pending() && owner_.timers().now() + pto >= rto_timer_.deadline()) {
    probe_timer_.clear();
    return;
  }
  probe_timer_.set_after(pto);
}

void TcpConnection::on_loss_probe() {
  if (!may_probe()) return;
  if (state_ != TcpState::Established && state_ != TcpState::CloseWait && state_ != TcpState::FinWait1 &&
      state_ != TcpState::Closing && state_ != TcpState::LastAck)
    return;
  // RFC 8985 §7.3: resend the most recently sent segment (its last SMSS) so the ACK it elicits,
  // with SACK, shows RACK what of the tail was lost; in recovery, the first segment marked lost.
  // (A probe in recovery resends the oldest unacknowledged segment, the one the RTO would.)
  if (recovery_.in_recovery() && !rack_.has_lost()) rack_.mark_lost(snd_una_);
  if (tuple_.is_v6()) follow_destination_mtu();  // the last SMSS below is the path's current one
  if (rack_.has_lost()) {
    if (!send_next_hole()) return;
  } else {
    const SentSegment* last = rack_.last();
    if (!last) return;
    const SeqNumber data_end = seq_min(last->end, send_end());
    SeqNumber start = last->start;
    if (start < data_end && data_end - start > payload_limit()) start = data_end - payload_limit();
    if (retransmit_range(start, last->end) == start) return;
  }
  ++owner_.stats().tcp_loss_probes;
  rack_.on_probe_sent(snd_max_);
  rto_timer_.set_after(rto_);  // §7.3: the RTO follows the probe
}

void TcpConnection::on_persist_timeout() {
  // Nothing to probe with once every octet is out: a timer armed before our FIN may fire after
  // it was sent and acknowledged (FIN-WAIT-2, snd_nxt one past the data), found by the fuzzer.
  if (snd_wnd_ != 0 || snd_nxt_ != snd_una_ || snd_nxt_ >= send_end()) return output();
  // A receiver may keep its window closed for as long as it answers the probes (RFC 9293
  // §3.8.6.1, RFC 1122 §4.2.2.17); one that stops answering is gone, and probing it forever would
  // hold the connection (and its unsent data) for good. Give up as the retransmission timer does.
  if (unanswered_probes_ >= settings_.max_retransmissions) {
    send_rst(next_new_sequence());
    return terminate(TcpError::TimedOut);
  }
  ++unanswered_probes_;
  // RFC 9293 §3.8.6.1: probe the zero window with one octet of new data; back off (RFC 1122
  // §4.2.2.17) until the window opens.
  transmit(snd_nxt_, kTcpAck, send_buffer_.sub(snd_nxt_ - data_start_, 1, send_position_));
  snd_max_ = seq_max(snd_max_, snd_nxt_ + 1);
  ++persist_backoff_;
  persist_timer_.set_after(std::min(rto_ * (int64_t{1} << std::min(persist_backoff_, 16)), settings_.rto_max));
}

void TcpConnection::on_keepalive_timeout() {
  if (state_ != TcpState::Established && state_ != TcpState::CloseWait &&
      state_ != TcpState::FinWait2)
    return;
  if (keepalive_probes_sent_ >= settings_.keepalive_probes) {
    send_rst(next_new_sequence());  // see send_ack()
    return terminate(TcpError::TimedOut);
  }
  // RFC 9293 §3.8.4 / RFC 1122 §4.2.3.6: SEG.SEQ = SND.NXT - 1 with no data elicits an ACK.
  ++keepalive_probes_sent_;
  transmit(snd_una_ - 1, kTcpAck, {});
  keepalive_timer_.set_after(settings_.keepalive_interval);
}

}  // namespace bypass::inet
