#include "stack/inet/congestion.h"

#include <algorithm>
#include <cmath>

namespace bypass::inet {

namespace {
// RFC 5681 §3.1 eq. 1 / RFC 6928: initial window of min(10*MSS, max(2*MSS, 14600)).
uint32_t initial_window(uint32_t mss) { return std::min(10 * mss, std::max(2 * mss, 14600u)); }
// The most one ACK of a coalesced unit covers (TcpGro's and Linux GRO's 64 KiB unit).
constexpr uint32_t kLargestCoalescedAck = 64 * 1024;
}  // namespace

CongestionControl::CongestionControl(uint32_t mss) : mss_(mss), cwnd_(initial_window(mss)) {}

void CongestionControl::start(uint32_t mss) {
  mss_ = mss;
  cwnd_ = initial_window(mss);
}

void CongestionControl::on_ack(uint32_t acked, TimePoint now, Duration srtt) {
  if (in_slow_start()) {
    // RFC 5681 §3.1 with appropriate byte counting (RFC 3465). RFC 3465 §2.2's limit L = 2*SMSS
    // per ACK assumes a receiver that acknowledges every second segment; receivers that coalesce
    // (GRO and LRO, Linux's and ours: tcp_gro.h) acknowledge a whole unit of up to 64 KiB at once,
    // and with L = 2*SMSS slow start against them would grow by 2 segments per 44 instead of
    // doubling each round trip. So, as Linux's tcp_slow_start, count what such an ACK covers, up
    // to the largest coalesced unit.
    cwnd_ += std::min(acked, std::max(kLargestCoalescedAck, 2 * mss_));
    if (cwnd_ > ssthresh_) cwnd_ = std::max(ssthresh_, mss_);
    return;
  }
  grow_in_avoidance(acked, now, srtt);
}

void CongestionControl::on_timeout(uint32_t flight, TimePoint) {
  ssthresh_ = std::max(flight / 2, 2 * mss_);  // RFC 5681 §3.1 eq. 4
  cwnd_ = mss_;
  avoidance_credit_ = 0;
}

void NewReno::on_congestion_event(uint32_t flight, TimePoint) {
  ssthresh_ = std::max(flight / 2, 2 * mss_);  // RFC 5681 §3.2 step 2
  cwnd_ = ssthresh_;
  avoidance_credit_ = 0;
}

void NewReno::grow_in_avoidance(uint32_t acked, TimePoint, Duration) {
  // RFC 5681 §3.1: about one SMSS per RTT, counted in acknowledged bytes.
  avoidance_credit_ += acked;
  if (avoidance_credit_ >= cwnd_) {
    avoidance_credit_ -= cwnd_;
    cwnd_ += mss_;
  }
}

void Cubic::reduce(TimePoint now) {
  double cwnd_segments = double(cwnd_) / mss_;
  // RFC 9438 §4.7 fast convergence.
  if (cwnd_segments < w_last_max_) {
    w_last_max_ = cwnd_segments;
    w_max_ = cwnd_segments * (1.0 + kBeta) / 2.0;
  } else {
    w_last_max_ = cwnd_segments;
    w_max_ = cwnd_segments;
  }
  epoch_start_ = now;
  // RFC 9438 §4.2 eq. 2: K = cbrt(W_max * (1 - beta) / C).
  k_ = std::cbrt(w_max_ * (1.0 - kBeta) / kC);
}

void Cubic::on_congestion_event(uint32_t flight, TimePoint now) {
  reduce(now);
  // RFC 9438 §4.6: ssthresh = cwnd * beta_cubic (we use the flight size, like RFC 5681).
  ssthresh_ = std::max(static_cast<uint32_t>(std::max(flight, cwnd_) * kBeta), 2 * mss_);
  cwnd_ = ssthresh_;
  w_est_ = double(cwnd_) / mss_;
}

void Cubic::on_timeout(uint32_t flight, TimePoint now) {
  reduce(now);
  ssthresh_ = std::max(static_cast<uint32_t>(std::max(flight, cwnd_) * kBeta), 2 * mss_);
  cwnd_ = mss_;
  epoch_start_ = TimePoint{-1};  // RFC 9438 §4.8: the next avoidance phase starts a new epoch
}

void Cubic::grow_in_avoidance(uint32_t acked, TimePoint now, Duration srtt) {
  double cwnd_segments = double(cwnd_) / mss_;
  if (epoch_start_ < TimePoint::zero()) {
    // Avoidance begins without a preceding reduction (after slow start or a timeout).
    epoch_start_ = now;
    w_max_ = std::max(w_max_, cwnd_segments);
    k_ = std::cbrt(std::max(0.0, w_max_ - cwnd_segments) / kC);
    w_est_ = cwnd_segments;
  }
  double t = std::chrono::duration<double>(now - epoch_start_).count();
  double rtt = std::chrono::duration<double>(srtt).count();
  auto w_cubic = [&](double at) { return kC * std::pow(at - k_, 3) + w_max_; };  // eq. 1
  // RFC 9438 §4.3: Reno-friendly estimate grows by alpha_cubic per window of ACKed segments.
  constexpr double kAlpha = 3.0 * (1.0 - kBeta) / (1.0 + kBeta);
  w_est_ += kAlpha * (double(acked) / mss_) / cwnd_segments;
  double target;
  if (w_cubic(t) < w_est_) {
    target = w_est_;  // Reno-friendly region
  } else {
    // §4.4/4.5: aim for W_cubic(t + RTT), clamped to [cwnd, 1.5 cwnd].
    target = std::clamp(w_cubic(t + rtt), cwnd_segments, 1.5 * cwnd_segments);
  }
  if (target > cwnd_segments) {
    double increase = (target - cwnd_segments) / cwnd_segments * (double(acked) / mss_);
    avoidance_credit_ += static_cast<uint32_t>(increase * mss_);
    if (avoidance_credit_ >= 1) {
      cwnd_ += avoidance_credit_;
      avoidance_credit_ = 0;
    }
  }
}

std::unique_ptr<CongestionControl> make_congestion_control(CongestionAlgorithm algorithm,
                                                           uint32_t mss) {
  if (algorithm == CongestionAlgorithm::Cubic) return std::make_unique<Cubic>(mss);
  return std::make_unique<NewReno>(mss);
}

}  // namespace bypass::inet
