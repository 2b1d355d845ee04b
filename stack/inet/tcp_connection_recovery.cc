// TcpConnection's side of loss recovery: what counts as lost and what is resent. The recovery
// state and the window arithmetic are LossRecovery's (tcp_loss_recovery.h); here they meet the
// timers, the send path, SACK-based loss marks (RFC 6675) with RACK-TLP's time-based ones (RFC
// 8985, tcp_rack.h), NewReno's retransmission without SACK (RFC 6582) and F-RTO's verdict on a
// timeout (RFC 5682, tcp_frto.h).
#include "stack/inet/tcp_connection.h"

#include <algorithm>

#include "base/log.h"

namespace bypass::inet {

void TcpConnection::detect_losses(TimePoint now) {
  // RFC 6675's DupThresh rule for first transmissions, RACK (RFC 8985 §6.2) for everything,
  // retransmissions included; RACK may ask to look again once a reordering window has passed.
  rack_.mark_lost_by_dupthresh(scoreboard_, mss_);
  const Duration wait = rack_.detect_loss(now, recovery_.in_recovery());
  if (wait > Duration::zero()) reorder_timer_.set_after(wait);
}

void TcpConnection::maybe_enter_recovery(TimePoint now) {
  // Fast retransmit and recovery (RFC 5681 §3.2, RFC 6582 §3.2 step 2, RFC 6675 §5 step 4).
  if (!recovery_.should_enter_fast_recovery(sack_enabled_ && rack_.has_lost(), snd_una_, snd_max_)) return;
  recovery_.enter_fast_recovery(snd_max_, flight_size(), now);
  ++owner_.stats().tcp_fast_retransmits;
  rack_.cancel_probe();
  probe_timer_.clear();
  rto_timer_.set_after(rto_);
  if (sack_enabled_) {
    // output() resends what is marked lost, first segment first (RFC 6675 §5 step 4.2).
    if (!rack_.has_lost()) rack_.mark_lost(snd_una_);
    return;
  }
  uint32_t len = std::min<uint32_t>(mss_, send_end() - snd_una_);
  if (len) {
    transmit(snd_una_, kTcpAck, send_buffer_.sub(snd_una_ - data_start_, len, send_position_), true);
  } else if (fin_sent()) {
    transmit(snd_una_, kTcpAck | kTcpFin, {}, true);
  }
  recovery_.inflate_for_duplicate_acks(mss_);
}

void TcpConnection::on_reorder_timeout() {
  if (!sack_enabled_ || frto_.active() || snd_una_ == snd_max_) return;
  const TimePoint now = owner_.timers().now();
  detect_losses(now);
  maybe_enter_recovery(now);
  output();
}

void TcpConnection::enter_rto_recovery() {
  // RFC 6675 §5.1 and RFC 8985 §6.3: every segment not SACKed counts as lost and is resent as
  // cwnd regrows (output()); what the peer SACKed is not sent again.
  recovery_.enter_timeout_recovery(snd_una_, rack_);
}

void TcpConnection::on_spurious_timeout_verdict(SpuriousTimeoutDetector::Verdict verdict) {
  switch (verdict) {
    case SpuriousTimeoutDetector::Verdict::None:
      return;
    case SpuriousTimeoutDetector::Verdict::SendNewData:
      // RFC 5682 §2.1 step 2b: up to two new segments, whatever cwnd says; without new data to
      // send (or room in the peer's window) the timeout cannot be judged: recover as usual.
      if (send_end() == snd_max_ || snd_wnd_ <= flight_size()) {
        frto_.no_new_data();
        return enter_rto_recovery();
      }
      recovery_.allow_two_new_segments(flight_size(), mss_);
      return;
    case SpuriousTimeoutDetector::Verdict::Spurious:
      // Step 3b: the originals arrived; undo the response (RFC 4015 §3) and the backoff.
      ++owner_.stats().tcp_spurious_timeouts;
      recovery_.undo_spurious_timeout(frto_.saved_cwnd(), frto_.saved_ssthresh());
      rto_ = rtt_.rto(settings_.rto_min, settings_.rto_max);
      return;
    case SpuriousTimeoutDetector::Verdict::Conventional:
      return enter_rto_recovery();
  }
}

}  // namespace bypass::inet
