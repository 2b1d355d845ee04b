#include "stack/dpdk/queue_gauges.h"

#include <rte_ethdev.h>

namespace bypass {

void QueueGauges::sample(const inet::TcpLayer& tcp, const DpdkDevice& device, rte_mempool* pool, uint16_t port_id,
                         int rx_queue) {
  ++samples;
  const inet::TcpQueuedBytes bytes = tcp.queued_bytes();
  unsent_bytes += bytes.unsent;
  unacknowledged_bytes += bytes.unacknowledged;
  unread_bytes += bytes.unread;
  tx_backlog_frames += device.backlog();
  if (pool != nullptr) mbufs_in_use += rte_mempool_in_use_count(pool);
  // Negative when the driver does not count its ring (-ENOTSUP: virtio-user, memif). The queue
  // must exist: the release build of rte_eth_rx_queue_count does not check it.
  const int ring = rx_queue < 0 ? -1 : rte_eth_rx_queue_count(port_id, static_cast<uint16_t>(rx_queue));
  if (ring >= 0) {
    ++rx_ring_samples;
    rx_ring_frames += static_cast<uint64_t>(ring);
  }
}

}  // namespace bypass
