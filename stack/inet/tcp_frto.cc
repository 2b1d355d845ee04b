#include "stack/inet/tcp_frto.h"

#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

void SpuriousTimeoutDetector::start(uint32_t cwnd, uint32_t ssthresh, SeqNumber retransmitted_end,
                                    SeqNumber recover) {
  step_ = Step::AwaitFirstAck;
  saved_cwnd_ = cwnd;
  saved_ssthresh_ = ssthresh;
  retransmitted_end_ = retransmitted_end;
  recover_ = recover;
}

SpuriousTimeoutDetector::Verdict SpuriousTimeoutDetector::on_ack(SeqNumber ack, bool advanced,
                                                                  bool duplicate) {
  switch (step_) {
    case Step::Idle:
      return Verdict::None;
    case Step::AwaitFirstAck:
      if (!advanced && !duplicate) return Verdict::None;  // a window update: wait for the next
      // Step 2a: a duplicate ACK, one that covers the whole flight, or one that does not cover
      // the retransmitted segment: the timeout was real (or cannot be told apart).
      if (duplicate || ack >= recover_ || ack < retransmitted_end_) {
        step_ = Step::Idle;
        return Verdict::Conventional;
      }
      step_ = Step::AwaitSecondAck;
      return Verdict::SendNewData;  // step 2b
    case Step::AwaitSecondAck:
      if (!advanced && !duplicate) return Verdict::None;
      step_ = Step::Idle;
      // Step 3b: segments never retransmitted were acknowledged: the originals arrived.
      return advanced ? Verdict::Spurious : Verdict::Conventional;
  }
  return Verdict::None;
}

}  // namespace bypass::inet
