// Congestion control: the window arithmetic of NewReno (RFC 5681, RFC 6582) and CUBIC
// (RFC 9438). Loss detection is RACK's and the connection's, recovery bookkeeping LossRecovery's
// (tcp_loss_recovery.h, which owns the controller); these classes only
// decide cwnd and ssthresh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "stack/inet/inet_options.h"
#include "stack/inet/timer_service.h"

namespace bypass::inet {

class CongestionControl {
 public:
  explicit CongestionControl(uint32_t mss);
  virtual ~CongestionControl() = default;

  uint32_t cwnd() const { return cwnd_; }
  uint32_t ssthresh() const { return ssthresh_; }
  uint32_t mss() const { return mss_; }
  bool in_slow_start() const { return cwnd_ < ssthresh_; }
  void set_mss(uint32_t mss) { mss_ = mss; }
  // The connection is established with `mss`: the initial window (RFC 5681 §3.1, RFC 6928) for
  // it. Called once, before any other event, so the object made with the connection serves
  // (no second allocation per connection).
  void start(uint32_t mss);

  // New data acknowledged outside loss recovery.
  void on_ack(uint32_t acked, TimePoint now, Duration srtt);
  // Loss detected by duplicate ACKs / SACK (entering fast recovery): ssthresh and cwnd shrink.
  virtual void on_congestion_event(uint32_t flight, TimePoint now) = 0;
  // Retransmission timeout (RFC 5681 §3.1 eq. 4; cwnd becomes the loss window of 1 SMSS).
  virtual void on_timeout(uint32_t flight, TimePoint now);
  // Recovery finished with a full ACK (RFC 6582 §3.2 step 3): cwnd = ssthresh.
  void on_recovery_exit() { cwnd_ = ssthresh_; }
  // Temporary adjustments during NewReno fast recovery without SACK (RFC 6582 §3.2).
  void set_cwnd(uint32_t cwnd) { cwnd_ = cwnd < mss_ ? mss_ : cwnd; }
  // Undo of a response found needless (a spurious timeout, RFC 5682 / RFC 4015 §3): the window
  // as it was before.
  void restore(uint32_t cwnd, uint32_t ssthresh) {
    set_cwnd(cwnd);
    ssthresh_ = ssthresh;
  }

 protected:
  // Congestion avoidance growth for `acked` bytes.
  virtual void grow_in_avoidance(uint32_t acked, TimePoint now, Duration srtt) = 0;

  uint32_t mss_;
  uint32_t cwnd_;
  uint32_t ssthresh_ = UINT32_MAX / 2;  // RFC 5681 §3.1: arbitrarily high initially
  uint32_t avoidance_credit_ = 0;        // bytes acked since the last one-MSS increase
};

class NewReno : public CongestionControl {
 public:
  using CongestionControl::CongestionControl;
  void on_congestion_event(uint32_t flight, TimePoint now) override;

 protected:
  void grow_in_avoidance(uint32_t acked, TimePoint now, Duration srtt) override;
};

class Cubic : public CongestionControl {
 public:
  using CongestionControl::CongestionControl;
  void on_congestion_event(uint32_t flight, TimePoint now) override;
  void on_timeout(uint32_t flight, TimePoint now) override;
  double w_max_segments() const { return w_max_; }

 protected:
  void grow_in_avoidance(uint32_t acked, TimePoint now, Duration srtt) override;

 private:
  static constexpr double kBeta = 0.7;  // RFC 9438 §4.6 beta_cubic
  static constexpr double kC = 0.4;     // RFC 9438 §5 C
  void reduce(TimePoint now);

  double w_max_ = 0;          // segments, window before the last reduction
  double w_last_max_ = 0;     // for fast convergence (RFC 9438 §4.7)
  double k_ = 0;              // seconds
  double w_est_ = 0;          // Reno-friendly estimate, segments (RFC 9438 §4.3)
  TimePoint epoch_start_{-1};
};

std::unique_ptr<CongestionControl> make_congestion_control(CongestionAlgorithm algorithm,
                                                           uint32_t mss);

// One connection's congestion control held inside the connection: storage sized for the largest
// algorithm, so opening a connection allocates nothing for it (make_congestion_control did, once
// per connection).
class InlineCongestionControl {
 public:
  InlineCongestionControl(CongestionAlgorithm algorithm, uint32_t mss) {
    if (algorithm == CongestionAlgorithm::Cubic) control_ = new (storage_) Cubic(mss);
    else control_ = new (storage_) NewReno(mss);
  }
  ~InlineCongestionControl() { control_->~CongestionControl(); }
  InlineCongestionControl(const InlineCongestionControl&) = delete;
  InlineCongestionControl& operator=(const InlineCongestionControl&) = delete;

  CongestionControl* operator->() { return control_; }
  const CongestionControl* operator->() const { return control_; }
  CongestionControl& operator*() { return *control_; }
  const CongestionControl& operator*() const { return *control_; }
  explicit operator bool() const { return true; }

 private:
  alignas(Cubic) alignas(NewReno) std::byte storage_[sizeof(Cubic) > sizeof(NewReno) ? sizeof(Cubic) : sizeof(NewReno)];
  CongestionControl* control_;
};

}  // namespace bypass::inet
