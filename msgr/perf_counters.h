// Messenger perf counters: relaxed atomics bumped on worker threads, dumped as JSON.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace bypass::msgr {

struct PerfCounters {
#define BYPASS_MSGR_COUNTERS(X) \
  X(msgs_sent)                  \
  X(msgs_received)              \
  X(bytes_sent)                 \
  X(bytes_received)             \
  X(msgs_acked)                 \
  X(acks_sent)                  \
  X(msgs_dropped)               \
  X(msgs_replayed)              \
  X(duplicates_dropped)         \
  X(connections_opened)         \
  X(connections_accepted)       \
  X(sessions_reconnected)       \
  X(sessions_reset)             \
  X(sessions_expired)           \
  X(faults)                     \
  X(keepalives_sent)            \
  X(keepalive_acks_received)    \
  X(keepalive_timeouts)         \
  X(throttle_stalls)            \
  X(handshake_failures)         \
  X(cephx_auth_renewals)        \
  X(cephx_auth_renewals_served) \
  X(links_secure)
#define BYPASS_DECLARE(name) std::atomic<uint64_t> name{0};
  BYPASS_MSGR_COUNTERS(BYPASS_DECLARE)
#undef BYPASS_DECLARE

  // Calls visit(name, value) for every counter, in declaration order.
  template <typename Visit>
  void for_each(Visit&& visit) const {
#define BYPASS_VISIT(name) visit(#name, name.load(std::memory_order_relaxed));
    BYPASS_MSGR_COUNTERS(BYPASS_VISIT)
#undef BYPASS_VISIT
  }
};

inline void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace bypass::msgr
