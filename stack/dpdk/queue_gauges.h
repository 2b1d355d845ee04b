// Where a dpdk worker's data waits, sampled now and then (every 100 ms, off the packet path): the
// bytes TCP holds unsent, unacknowledged and unread, the frames the device could not hand to a
// full TX ring, the mbufs out of the pool and the frames waiting in the RX ring. The
// sums over all samples go out as counters (queue_*; each divided by queue_samples is the mean),
// so a benchmark can put the messages in flight at scale against the stage they wait in.
#pragma once

#include <rte_mempool.h>

#include <cstdint>
#include <string_view>

#include "stack/dpdk/dpdk_device.h"
#include "stack/inet/tcp_layer.h"

namespace bypass {

struct QueueGauges {
  uint64_t samples = 0;
  uint64_t unsent_bytes = 0, unacknowledged_bytes = 0, unread_bytes = 0;
  uint64_t tx_backlog_frames = 0, mbufs_in_use = 0;
  uint64_t rx_ring_samples = 0, rx_ring_frames = 0;  // only where the driver counts its RX ring

  // One sample of every stage; walks the connections and the pool's per-lcore caches. `rx_queue`
  // is the worker's own queue of the port, or negative when it has none (frames come redirected).
  void sample(const inet::TcpLayer& tcp, const DpdkDevice& device, rte_mempool* pool, uint16_t port_id,
              int rx_queue);

  struct Field {
    std::string_view name;
    uint64_t QueueGauges::*value;
  };
  static constexpr Field kFields[] = {{"queue_samples", &QueueGauges::samples},
                                      {"queue_unsent_bytes", &QueueGauges::unsent_bytes},
                                      {"queue_unacknowledged_bytes", &QueueGauges::unacknowledged_bytes},
                                      {"queue_unread_bytes", &QueueGauges::unread_bytes},
                                      {"queue_tx_backlog_frames", &QueueGauges::tx_backlog_frames},
                                      {"queue_mbufs_in_use", &QueueGauges::mbufs_in_use},
                                      {"queue_rx_ring_samples", &QueueGauges::rx_ring_samples},
                                      {"queue_rx_ring_frames", &QueueGauges::rx_ring_frames}};
};

}  // namespace bypass
