// LossRecovery's operations outside the per-ACK path: entering fast recovery, the response to a
// retransmission timeout and F-RTO's verdicts on it.
#include "stack/inet/tcp_loss_recovery.h"

#include "stack/inet/tcp_rack.h"

namespace bypass::inet {

void LossRecovery::enter_fast_recovery(SeqNumber snd_max, uint32_t flight, TimePoint now) {
  in_recovery_ = true;
  recover_ = snd_max;
  congestion_->on_congestion_event(flight, now);
}

void LossRecovery::inflate_for_duplicate_acks(uint32_t mss) {
  congestion_->set_cwnd(congestion_->ssthresh() + kDupThresh * mss);
}

bool LossRecovery::on_timeout(SeqNumber snd_una, SeqNumber snd_max, uint32_t flight, TimePoint now) {
  const bool judge_spurious = !(rto_recovery_ && recover_ > snd_una);
  congestion_->on_timeout(flight, now);
  recover_ = snd_max;
  dupacks_ = 0;
  return judge_spurious;
}

bool LossRecovery::begin_timeout_recovery(bool judged_by_frto) {
  const bool reneged = sack_reneged_;
  sack_reneged_ = false;
  rto_recovery_ = true;
  if (judged_by_frto) in_recovery_ = false;
  return reneged;
}

bool LossRecovery::enter_timeout_recovery(SeqNumber snd_una, RackTlp& rack) {
  // Recovery ends once SND.UNA reaches the recovery point (RFC 6675 §5, RFC 6582 §3.2 step 3), a
  // test made when an ACK advances it. F-RTO's verdict comes after that test, on the same ACK:
  // when that ACK already covered the recovery point nothing is left to recover (with a
  // zero-window probe's octet in RACK's pipe, SACK recovery then sent nothing and no timer ran).
  if (!(snd_una < recover_)) {
    rto_recovery_ = false;
    return false;
  }
  rack.mark_all_lost();
  in_recovery_ = true;
  rto_recovery_ = true;
  return true;
}

void LossRecovery::undo_spurious_timeout(uint32_t cwnd, uint32_t ssthresh) {
  congestion_->restore(cwnd, ssthresh);
  rto_recovery_ = false;
}

}  // namespace bypass::inet
