// F-RTO (RFC 5682 §2): tells a spurious retransmission timeout (the ACKs were only late) from a
// real one by what the two ACKs after the timeout acknowledge, so the congestion response of a
// spurious one can be undone (the response of RFC 4015 §3: cwnd and ssthresh as before).
#pragma once

#include <cstdint>

#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

class SpuriousTimeoutDetector {
 public:
  enum class Verdict {
    None,          // not detecting
    SendNewData,   // step 2b: the first ACK advanced the window: send up to two new segments
    Spurious,      // step 3b: the second ACK acknowledged new data too: undo
    Conventional,  // steps 2a / 3a: a real loss: recover as after any timeout
  };

  // Step 1, at a timeout: remembers the window to restore; `retransmitted_end` is where the
  // resent first segment ends, `recover` SND.MAX. Not started while an earlier timeout's
  // recovery is unfinished (RFC 5682 §2.1 step 1).
  void start(uint32_t cwnd, uint32_t ssthresh, SeqNumber retransmitted_end, SeqNumber recover);
  void stop() { step_ = Step::Idle; }
  bool active() const { return step_ != Step::Idle; }
  // One ACK while active: `advanced` whether it moved SND.UNA to `ack`, `duplicate` whether it is
  // a duplicate ACK.
  Verdict on_ack(SeqNumber ack, bool advanced, bool duplicate);
  // After SendNewData: no new segment could be sent (step 2b's exception).
  void no_new_data() { step_ = Step::Idle; }
  uint32_t saved_cwnd() const { return saved_cwnd_; }
  uint32_t saved_ssthresh() const { return saved_ssthresh_; }

 private:
  enum class Step { Idle, AwaitFirstAck, AwaitSecondAck };
  Step step_ = Step::Idle;
  uint32_t saved_cwnd_ = 0, saved_ssthresh_ = 0;
  SeqNumber retransmitted_end_, recover_;
};

}  // namespace bypass::inet
