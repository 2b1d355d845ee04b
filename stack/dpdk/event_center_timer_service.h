// The inet stack's clock and timers on a worker's EventCenter: glue, so stack/inet never sees
// the event loop.
#pragma once

#include "stack/inet/timer_service.h"

namespace bypass {

class EventCenter;

// Backed by EventCenter::create_timer / cancel_timer, and EventCenter::now() (steady_clock, read once
// per loop iteration).
class EventCenterTimerService : public inet::TimerService {
 public:
  explicit EventCenterTimerService(EventCenter& center) : center_(center) {}
  inet::TimePoint now() const override;
  TimerId schedule(inet::Duration delay, std::function<void()> callback) override;
  void cancel(TimerId id) override;

 private:
  EventCenter& center_;
};

}  // namespace bypass
