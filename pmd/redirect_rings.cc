#include "pmd/redirect_rings.h"

#include <rte_errno.h>

#include <atomic>

#include "base/log.h"
#include "pmd/error.h"

namespace bypass::pmd {

RedirectRings::RedirectRings(uint16_t port_id, const std::string& label, unsigned workers, unsigned size,
                             int numa_socket, uint16_t max_burst)
    : workers_(workers) {
  // Ring names are global to the process: a generation tells apart the rings of a port reopened.
  static std::atomic<unsigned> generation{0};
  const unsigned gen = generation++;
  for (unsigned w = 0; w < workers; ++w) {
    const std::string ring_name = "bpr" + std::to_string(port_id) + "_" + std::to_string(w) + "_" +
                                  std::to_string(gen);
    rte_ring* ring = rte_ring_create(ring_name.c_str(), size, numa_socket, RING_F_SC_DEQ);
    if (!ring) {
      // The port's node has no memory left: a ring elsewhere works, each redirect crossing the interconnect.
      ring = rte_ring_create(ring_name.c_str(), size, SOCKET_ID_ANY, RING_F_SC_DEQ);
      if (ring)
        BYPASS_LOG(Warn, "pmd", "%s: redirect ring %s: no room on NUMA node %d (the port's), created on node %d",
                   label.c_str(), ring_name.c_str(), numa_socket, ring->memzone->socket_id);
    }
    if (!ring) {
      const std::string reason = rte_strerror(rte_errno);
      for (rte_ring* made : rings_) rte_ring_free(made);  // no destructor runs for a throwing constructor
      throw PmdError(label + ": cannot create redirect ring: " + reason +
                     " (lower dpdk.redirect_ring or raise dpdk.memory)");
    }
    rings_.push_back(ring);
  }
  staging_.resize(size_t{workers} * workers);
  for (auto& s : staging_) s.reserve(max_burst);
}

RedirectRings::~RedirectRings() {
  for (rte_ring* ring : rings_) {
    rte_mbuf* m = nullptr;
    while (rte_ring_dequeue(ring, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
    rte_ring_free(ring);
  }
}

uint16_t RedirectRings::hand_over(unsigned worker, rte_mbuf** pkts, uint16_t count, OwnerFunction owner,
                                  void* owner_context, WorkerCounters& counters) {
  const unsigned workers = workers_;
  std::vector<rte_mbuf*>* staging = &staging_[size_t{worker} * workers];
  uint16_t kept = 0;
  for (uint16_t i = 0; i < count; ++i) {
    const unsigned target = owner(pkts[i], owner_context);
    if (target >= workers || target == worker)
      pkts[kept++] = pkts[i];
    else
      staging[target].push_back(pkts[i]);
  }
  for (unsigned target = 0; target < workers; ++target) {
    auto& batch = staging[target];
    if (batch.empty()) continue;
    const unsigned sent = rte_ring_mp_enqueue_burst(rings_[target], reinterpret_cast<void**>(batch.data()),
                                                    static_cast<unsigned>(batch.size()), nullptr);
    counters.add(counters.redirected_out, sent);
    if (sent < batch.size()) {
      counters.add(counters.redirect_drops, batch.size() - sent);
      rte_pktmbuf_free_bulk(batch.data() + sent, static_cast<unsigned>(batch.size() - sent));
    }
    batch.clear();
  }
  return kept;
}

}  // namespace bypass::pmd
