#include "stack/inet/tcp_rtt_estimator.h"

#include <algorithm>

namespace bypass::inet {

void RttEstimator::sample(Duration rtt) {
  if (rtt < Duration::zero()) return;
  // RFC 6298 §2.2 and §2.3 (alpha = 1/8, beta = 1/4).
  if (!has_sample_) {
    srtt_ = rtt;
    rttvar_ = rtt / 2;
    min_rtt_ = rtt;
    has_sample_ = true;
    return;
  }
  Duration delta = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
  rttvar_ = (3 * rttvar_ + delta) / 4;
  srtt_ = (7 * srtt_ + rtt) / 8;
  min_rtt_ = std::min(min_rtt_, rtt);
}

Duration RttEstimator::rto(Duration floor, Duration ceiling) const {
  const Duration granularity = std::chrono::milliseconds(1);  // the timestamp clock's tick
  return std::clamp(srtt_ + std::max(granularity, 4 * rttvar_), floor, ceiling);
}

}  // namespace bypass::inet
