// Round-trip time estimation for the retransmission timer (RFC 6298), plus the minimum RTT that
// RACK's reordering window is scaled from (RFC 8985 §6.2 step 4).
#pragma once

#include "stack/inet/timer_service.h"

namespace bypass::inet {

class RttEstimator {
 public:
  // One RTT measurement (RFC 6298 §2.2, §2.3). Negative samples (a clock that stepped back, a
  // forged echo) are ignored.
  void sample(Duration rtt);
  bool has_sample() const { return has_sample_; }
  Duration srtt() const { return srtt_; }
  Duration rttvar() const { return rttvar_; }
  Duration min_rtt() const { return min_rtt_; }
  // RTO = SRTT + max(G, 4 RTTVAR) (RFC 6298 §2.3), clamped to [floor, ceiling] (§2.4, §2.5).
  Duration rto(Duration floor, Duration ceiling) const;

 private:
  Duration srtt_{0}, rttvar_{0}, min_rtt_{0};
  bool has_sample_ = false;
};

}  // namespace bypass::inet
