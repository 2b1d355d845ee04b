// TcpConnection's loss recovery: when to enter it and what counts as lost. SACK-based recovery
// (RFC 6675) with RACK-TLP's time-based loss marks (RFC 8985, tcp_rack.h), NewReno's dupack rule
// without SACK (RFC 6582), and F-RTO's verdict on a timeout (RFC 5682, tcp_frto.h).
#include "stack/inet/tcp_connection.h"

#include <algorithm>

#include "base/log.h"
#include "stack/inet/tcp_layer.h"

namespace bypass::inet {

namespace {
constexpr uint32_t kDupThresh = SackScoreboard::kDupThresh;
}  // namespace

void TcpConnection::detect_losses(TimePoint now) {
  // RFC 6675's DupThresh rule for first transmissions, RACK (RFC 8985 §6.2) for everything,
  // retransmissions included; RACK may ask to look again once a reordering window has passed.
  rack_.mark_lost_by_dupthresh(scoreboard_, mss_);
  const Duration wait = rack_.detect_loss(now, in_recovery_);
  if (wait > Duration::zero()) reorder_timer_.set_after(wait);
}

void TcpConnection::maybe_enter_recovery(TimePoint now) {
  // Enter loss recovery (RFC 5681 §3.2 / RFC 6582 §3.2 step 2 / RFC 6675 §5 step 4): after
  // DupThresh duplicate ACKs, or when SACK shows a segment lost (RFC 6675 IsLost, RFC 8985
  // RACK). Duplicate ACKs alone do not when this ACK does not cover the previous recovery point.
  const bool sack_loss = sack_enabled_ && rack_.has_lost();
  if (in_recovery_ || !(snd_max_ > snd_una_)) return;
  if (!sack_loss && !(dupacks_ >= kDupThresh && snd_una_ >= recover_)) return;
  in_recovery_ = true;
  recover_ = snd_max_;
  ++layer_.stats().tcp_fast_retransmits;
  cc_->on_congestion_event(flight_size(), now);
  rack_.cancel_probe();
  probe_timer_.clear();
  high_rxt_ = snd_una_;
  rto_timer_.set_after(rto_);
  if (sack_enabled_) {
    // output() resends what is marked lost, first segment first (RFC 6675 §5 step 4.2).
    if (!rack_.has_lost()) rack_.mark_lost(snd_una_);
    return;
  }
  uint32_t len = std::min<uint32_t>(mss_, send_end() - snd_una_);
  if (len) {
    transmit(snd_una_, kTcpAck, send_buffer_.sub(snd_una_ - data_start_, len, send_position_), true);
    high_rxt_ = snd_una_ + len;
  } else if (fin_sent()) {
    transmit(snd_una_, kTcpAck | kTcpFin, {}, true);
  }
  cc_->set_cwnd(cc_->ssthresh() + 3 * mss_);  // RFC 6582 step 2
}

void TcpConnection::on_reorder_timeout() {
  if (!sack_enabled_ || frto_.active() || snd_una_ == snd_max_) return;
  const TimePoint now = layer_.timers().now();
  detect_losses(now);
  maybe_enter_recovery(now);
  output();
}

void TcpConnection::enter_rto_recovery() {
  // Recovery ends once SND.UNA reaches the recovery point (RFC 6675 §5, RFC 6582 §3.2 step 3), a
  // test made when an ACK advances it. F-RTO's verdict comes after that test, on the same ACK:
  // when that ACK already covered the recovery point nothing is left to recover, and recovery
  // entered then would never end (found by the inet fuzzer: with a zero-window probe's octet in
  // RACK's pipe, SACK recovery then sent nothing and no timer ran).
  if (!(snd_una_ < recover_)) {
    rto_recovery_ = false;
    return;
  }
  // RFC 6675 §5.1 and RFC 8985 §6.3: every segment not SACKed counts as lost and is resent as
  // cwnd regrows; what the peer SACKed is not sent again.
  rack_.mark_all_lost();
  in_recovery_ = true;
  rto_recovery_ = true;
  high_rxt_ = snd_una_;
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
      cc_->set_cwnd(flight_size() + 2 * mss_);
      return;
    case SpuriousTimeoutDetector::Verdict::Spurious:
      // Step 3b: the originals arrived; undo the response (RFC 4015 §3) and the backoff.
      ++layer_.stats().tcp_spurious_timeouts;
      cc_->restore(frto_.saved_cwnd(), frto_.saved_ssthresh());
      rto_ = rtt_.rto(settings_.rto_min, settings_.rto_max);
      rto_recovery_ = false;
      return;
    case SpuriousTimeoutDetector::Verdict::Conventional:
      return enter_rto_recovery();
  }
}

}  // namespace bypass::inet
