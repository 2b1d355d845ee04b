// One connection's loss recovery: whether it is recovering and from what, and the congestion
// controller whose window recovery shrinks and regrows (as smoltcp's and Fuchsia netstack3's
// congestion/recovery objects do). It owns the recovery state of RFC 5681 §3.2 (duplicate ACKs,
// fast retransmit and recovery), RFC 6582 (NewReno's "recover"), RFC 6675 (RecoveryPoint), RFC 6298
// §5 (recovery after a timeout) and RFC 2018 §8 (SACK reneging). RACK-TLP (tcp_rack.h) and the SACK
// scoreboard stay objects of their own, handed in where an operation needs them; segments are sent
// by the connection, which asks this object what to do. RFC 6675's HighRxt is not kept: NextSeg
// takes the first segment RACK marked lost and clears the mark when it is resent (tcp_output.cc
// send_next_hole), which is what HighRxt's rule (1) guards against resending twice.
//
// The operations on every ACK are defined here, inline: process_ack inlines them (a call each
// cost the per-segment path instructions, callgrind).
#pragma once

#include <cstdint>

#include "stack/inet/congestion.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/tcp_sack_scoreboard.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

class RackTlp;

class LossRecovery {
 public:
  static constexpr uint32_t kDupThresh = SackScoreboard::kDupThresh;  // RFC 6675 §2, RFC 5681 §3.2

  LossRecovery(CongestionAlgorithm algorithm, uint32_t mss) : congestion_(algorithm, mss) {}

  CongestionControl& congestion() { return *congestion_; }
  const CongestionControl& congestion() const { return *congestion_; }
  // Fast recovery (RFC 5681 §3.2, RFC 6675 §5) or the recovery after a timeout (RFC 6298 §5 with
  // RFC 6675 §5.1) is under way.
  bool in_recovery() const { return in_recovery_; }
  // The current or last recovery followed a timeout, and SND.UNA has not passed its recovery
  // point yet: slow start regrows the window, there is no fast-recovery exit.
  bool after_timeout() const { return rto_recovery_; }
  // Something is being repaired (fast or timeout recovery): RACK must look at the flight.
  bool repairing() const { return in_recovery_ || rto_recovery_; }
  SeqNumber recovery_point() const { return recover_; }    // RFC 6582 "recover", RFC 6675 RecoveryPoint
  uint32_t duplicate_acks() const { return dupacks_; }

  // The connection's initial send sequence number is chosen: RFC 6582 §3.2 step 1, "recover"
  // starts at it.
  void start(SeqNumber iss) { recover_ = iss; }

  // ---- on each ACK (RFC 9293 §3.10.7.4 fifth) ----

  // A duplicate ACK (RFC 5681 §2). In NewReno recovery without SACK it inflates the window by
  // one SMSS (RFC 6582 §3.2 step 4).
  void on_duplicate_ack(bool sack_enabled, uint32_t mss) {
    ++dupacks_;
    if (in_recovery_ && !sack_enabled) congestion_->set_cwnd(congestion_->cwnd() + mss);
  }

  // The ACK stopped at the left edge of SACKed data (the scoreboard's first block starts at
  // SND.UNA): the receiver dropped what it SACKed (RFC 2018 §8 reneging, detected as Linux's
  // tcp_check_sack_reneging does); the next timeout forgets SACKs.
  void on_sack_reneging() { sack_reneged_ = true; }

  // What an ACK of new data asks of the connection.
  enum class AckOutcome { None, RetransmitNextHole };
  // New data acknowledged up to `ack` (`acked` bytes; `flight_before_ack` was in flight). Grows
  // the window (RFC 5681 §3.1; only while cwnd limits the flight, RFC 7661 §4.1) or advances
  // recovery: a full ACK ends it (RFC 6582 §3.2 step 3, RFC 6675 §5); a partial ACK without SACK
  // deflates the window and asks for the next hole to be resent (RFC 6582 §3.2 step 5).
  AckOutcome on_new_data_acked(SeqNumber ack, uint32_t acked, uint32_t flight_before_ack, bool sack_enabled,
                               uint32_t mss, TimePoint now, Duration srtt) {
    if (in_recovery_) {
      // After a timeout the window regrows by slow start (RFC 5681 §3.1) while the holes are
      // resent; its end does not set cwnd to ssthresh as fast recovery's does.
      if (rto_recovery_) congestion_->on_ack(acked, now, srtt);
      if (ack >= recover_) {
        in_recovery_ = false;  // full ACK
        if (!rto_recovery_) congestion_->on_recovery_exit();
        rto_recovery_ = false;
        dupacks_ = 0;
      } else if (!sack_enabled) {
        // Partial ACK: deflate by the amount acknowledged, add back one SMSS.
        const uint32_t cwnd = congestion_->cwnd();
        congestion_->set_cwnd((cwnd > acked ? cwnd - acked : 0) + (acked >= mss ? mss : 0));
        return AckOutcome::RetransmitNextHole;
      }
    } else {
      dupacks_ = 0;
      if (rto_recovery_ && ack >= recover_) rto_recovery_ = false;
      // Grow only while the window is what limits sending (RFC 7661 §4.1 "validated" cwnd): an
      // application-limited flow must not inflate cwnd without bound.
      if (flight_before_ack * 2 >= congestion_->cwnd()) congestion_->on_ack(acked, now, srtt);
    }
    return AckOutcome::None;
  }

  // RFC 8985 §7.4.2: the ACK of a loss probe showed that the probe repaired a tail loss, which
  // calls for the congestion response recovery would have made (none when recovery made it).
  void on_tail_loss_repaired(uint32_t flight, TimePoint now) {
    if (!in_recovery_) congestion_->on_congestion_event(flight, now);
  }

  // Fast retransmit's entry test (RFC 5681 §3.2 step 2, RFC 6582 §3.2 step 2, RFC 6675 §5 step
  // 4): data in flight, not already recovering, and either SACK shows a segment lost (RFC 6675
  // IsLost, RFC 8985 RACK: `sack_loss`) or DupThresh duplicate ACKs arrived and this ACK covers
  // the previous recovery point (so one loss episode is not answered twice).
  bool should_enter_fast_recovery(bool sack_loss, SeqNumber snd_una, SeqNumber snd_max) const {
    if (in_recovery_ || !(snd_max > snd_una)) return false;
    return sack_loss || (dupacks_ >= kDupThresh && snd_una >= recover_);
  }

  // ---- cold operations (tcp_loss_recovery.cc) ----

  // Enters fast recovery (RFC 6675 §5 step 4, RFC 6582 §3.2 step 2): the recovery point is
  // SND.MAX, ssthresh and cwnd shrink.
  void enter_fast_recovery(SeqNumber snd_max, uint32_t flight, TimePoint now);
  // NewReno without SACK, once the first segment is resent: cwnd = ssthresh + 3 SMSS (RFC 6582
  // §3.2 step 2, the duplicate ACKs' segments have left the network).
  void inflate_for_duplicate_acks(uint32_t mss);

  // A retransmission timeout with data in flight (RFC 5681 §3.1 eq. 4, RFC 6582 §4, RFC 6298 §5):
  // cwnd collapses, the recovery point becomes SND.MAX, duplicate ACKs count afresh. Returns
  // whether F-RTO may judge this timeout (RFC 5682 §2.1 step 1: not while an earlier timeout's
  // recovery is unfinished).
  bool on_timeout(SeqNumber snd_una, SeqNumber snd_max, uint32_t flight, TimePoint now);
  // After on_timeout with SACK: recovery follows a timeout. `judged_by_frto`: F-RTO resends one
  // segment and waits for its verdict (RFC 5682 §2.1), no recovery yet. Returns whether the
  // receiver reneged on its SACKs since the last timeout (RFC 2018 §8): the caller then forgets
  // them, so the holes it no longer holds are resent too.
  bool begin_timeout_recovery(bool judged_by_frto);
  // After on_timeout without SACK: go-back-N (RFC 6298 §5.4) ends any fast recovery.
  void abandon_fast_recovery() { in_recovery_ = false; }
  // Recovery after a timeout that was not spurious (RFC 6675 §5.1, RFC 8985 §6.3): every segment
  // not SACKed counts as lost (`rack` marks them). False when SND.UNA already reached the recovery
  // point: nothing is left to recover, and recovery entered then would never end (found by the
  // inet fuzzer).
  bool enter_timeout_recovery(SeqNumber snd_una, RackTlp& rack);
  // F-RTO found the timeout spurious (RFC 5682 §2.1 step 3b): the window as it was before the
  // timeout (RFC 4015 §3), and no recovery after it.
  void undo_spurious_timeout(uint32_t cwnd, uint32_t ssthresh);
  // F-RTO's step 2b: up to two new segments, whatever cwnd says.
  void allow_two_new_segments(uint32_t flight, uint32_t mss) { congestion_->set_cwnd(flight + 2 * mss); }

 private:
  InlineCongestionControl congestion_;
  uint32_t dupacks_ = 0;
  bool in_recovery_ = false;
  bool rto_recovery_ = false;   // the recovery follows a timeout: slow start, no fast-recovery exit
  bool sack_reneged_ = false;   // an ACK stopped at SACKed data: the next timeout forgets SACKs
  SeqNumber recover_;           // RFC 6582 "recover" / RFC 6675 RecoveryPoint
};

}  // namespace bypass::inet
