// A port's statistics: the device's own counters (rte_eth_stats, per queue where the driver keeps
// them, extended statistics by name) beside the per-worker software counters of the burst paths
// (redirected packets, a full tx queue) and the fault shims' decisions. Port::stats() and friends
// (pmd/port_stats.cc) gather them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "pmd/fault_shim.h"

namespace bypass::pmd {

// Per-worker software counters (written only by the worker; read relaxed by anyone).
struct alignas(64) WorkerCounters {
  std::atomic<uint64_t> rx_packets{0};
  std::atomic<uint64_t> tx_packets{0};
  std::atomic<uint64_t> redirected_out{0};   // handed to another worker's ring
  std::atomic<uint64_t> redirected_in{0};    // taken from this worker's ring
  std::atomic<uint64_t> redirect_drops{0};   // the owner's ring was full
  std::atomic<uint64_t> tx_full{0};          // offered to tx_burst but not taken (queue full); the caller decides
  void add(std::atomic<uint64_t>& c, uint64_t n) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
};

struct QueueStats {
  uint64_t packets = 0, bytes = 0, errors = 0;
};

struct PortStats {
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;
  std::vector<QueueStats> rx_queues, tx_queues;  // from the device (zero where the driver keeps none)
  struct Worker {
    uint64_t rx_packets, tx_packets, redirected_out, redirected_in, redirect_drops, tx_full;
  };
  std::vector<Worker> workers;
  FaultCounters rx_faults, tx_faults;  // summed over queues
};

struct Xstat {
  std::string name;
  uint64_t value;
};

}  // namespace bypass::pmd
