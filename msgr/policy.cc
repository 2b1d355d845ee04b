#include "msgr/policy.h"

namespace bypass::msgr {

bool Throttle::try_take(uint64_t amount) {
  if (max_ == 0) {
    current_.fetch_add(amount, std::memory_order_relaxed);
    return true;
  }
  uint64_t cur = current_.load(std::memory_order_relaxed);
  do {
    // An item larger than the whole budget still passes when nothing else is held, so one big
    // message cannot wedge the connection forever.
    if (cur != 0 && cur + amount > max_) return false;
  } while (!current_.compare_exchange_weak(cur, cur + amount, std::memory_order_acq_rel));
  return true;
}

void Throttle::put(uint64_t amount) { current_.fetch_sub(amount, std::memory_order_acq_rel); }

}  // namespace bypass::msgr
