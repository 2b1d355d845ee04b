#include "stack/dpdk/event_center_timer_service.h"

#include "stack/event_center.h"

namespace bypass {

inet::TimePoint EventCenterTimerService::now() const {
  // The loop's once-per-iteration reading: TCP asks for the time several times per segment.
  return std::chrono::duration_cast<inet::TimePoint>(center_.now().time_since_epoch());
}

inet::TimerService::TimerId EventCenterTimerService::schedule(inet::Duration delay,
                                                              std::function<void()> callback) {
  return center_.create_timer(delay, std::move(callback));
}

void EventCenterTimerService::cancel(TimerId id) { center_.cancel_timer(id); }

}  // namespace bypass
