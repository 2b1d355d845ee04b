// The software redirect: when the hardware does not put each flow on its owner's queue (fewer
// queues than workers, no RSS, rte_flow isolation), the worker that polled a frame hands it to the
// worker owning its flow (the port's OwnerFunction decides) through that worker's ring: one ring
// per worker, multi-producer (any poller), single consumer (its owner).
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pmd/port_stats.h"
#include "pmd/software_steering.h"

namespace bypass::pmd {

class RedirectRings {
 public:
  // A ring of `size` entries (a power of two) per worker on NUMA node `numa_socket`, or on any node
  // (warned) when that one has no room. `max_burst`: the most packets one hand_over() sorts.
  // Throws PmdError naming the options to change. `label` names the port in messages.
  RedirectRings(uint16_t port_id, const std::string& label, unsigned workers, unsigned size, int numa_socket,
                uint16_t max_burst);
  ~RedirectRings();  // frees the packets still in the rings
  RedirectRings(const RedirectRings&) = delete;
  RedirectRings& operator=(const RedirectRings&) = delete;

  unsigned workers() const { return workers_; }

  // Up to `count` packets other workers handed to `worker`. Only from `worker`'s thread, or once
  // every worker has stopped polling (the ring's one consumer).
  uint16_t take(unsigned worker, rte_mbuf** pkts, uint16_t count) {
    return static_cast<uint16_t>(rte_ring_sc_dequeue_burst(rings_[worker], reinterpret_cast<void**>(pkts), count, nullptr));
  }

  // Sorts the `count` packets at `pkts` that `worker` received from its queue: those `owner`
  // gives to `worker` (or to no worker: kKeepOnReceiver) are kept, in order, at the front of
  // `pkts`, and their number returned; the others are enqueued on their owners' rings, counted in
  // `counters` as redirected_out, or freed and counted as redirect_drops when a ring is full.
  uint16_t hand_over(unsigned worker, rte_mbuf** pkts, uint16_t count, OwnerFunction owner, void* owner_context,
                     WorkerCounters& counters);

 private:
  unsigned workers_;
  std::vector<rte_ring*> rings_;                 // one per worker
  std::vector<std::vector<rte_mbuf*>> staging_;  // [poller * workers + owner]: packets bound for another worker
};

}  // namespace bypass::pmd
