#include "stack/inet/timer_service.h"

namespace bypass::inet {

TimerService::TimerId VirtualTimerService::schedule(Duration delay, std::function<void()> callback) {
  if (delay < Duration::zero()) delay = Duration::zero();
  TimerId id = next_id_++;
  TimePoint at = now_ + delay;
  timers_.emplace(std::make_pair(at, id), std::move(callback));
  deadlines_.emplace(id, at);
  return id;
}

void VirtualTimerService::cancel(TimerId id) {
  auto it = deadlines_.find(id);
  if (it == deadlines_.end()) return;
  timers_.erase({it->second, id});
  deadlines_.erase(it);
}

bool VirtualTimerService::run_next() {
  if (timers_.empty()) return false;
  auto it = timers_.begin();
  now_ = it->first.first;
  auto callback = std::move(it->second);
  deadlines_.erase(it->first.second);
  timers_.erase(it);
  callback();
  return true;
}

void VirtualTimerService::advance(Duration span) {
  TimePoint until = now_ + span;
  while (!timers_.empty() && timers_.begin()->first.first <= until) run_next();
  now_ = until;
}

}  // namespace bypass::inet
