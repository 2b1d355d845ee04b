// Offload negotiation: what a port can do, what the configuration asks for, and what is enabled.
//
// negotiate() is pure (no DPDK calls) so the fallback logic is tested against any capability set;
// Port feeds it the device's reported capabilities and programs the result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace bypass::pmd {

// One feature flag per offload the stack can use (the subset of DPDK's we act on).
struct OffloadFlags {
  bool rx_ipv4_checksum = false;
  bool rx_tcp_checksum = false;
  bool rx_udp_checksum = false;
  bool tx_ipv4_checksum = false;
  bool tx_tcp_checksum = false;
  bool tx_udp_checksum = false;
  bool tso = false;
  bool lro = false;
  bool rss = false;       // hardware RSS with our key and RETA
  bool multi_seg = false;  // tx of chained mbufs
  bool rx_scatter = false;  // rx into chained mbufs (frames larger than one mbuf)

  bool operator==(const OffloadFlags&) const = default;
  std::vector<std::string> names() const;  // "rx-ipv4-cksum", ...
};

struct DeviceCapabilities {
  uint64_t rx_offload_capa = 0;   // RTE_ETH_RX_OFFLOAD_*
  uint64_t tx_offload_capa = 0;   // RTE_ETH_TX_OFFLOAD_*
  uint64_t flow_type_rss_offloads = 0;
  uint16_t reta_size = 0;
  uint8_t hash_key_size = 0;
  uint16_t max_rx_queues = 1;
  uint16_t max_tx_queues = 1;
  OffloadFlags supported() const;
};

struct OffloadRequest {
  bool rx_checksum = true;
  bool tx_checksum = true;
  bool tso = true;
  bool lro = false;
  bool rss = true;
  bool multi_seg = true;
  static OffloadRequest from_config(const config::Config& config);
};

struct OffloadPlan {
  OffloadFlags supported;
  OffloadFlags enabled;
  uint64_t rx_offloads = 0;  // RTE_ETH_RX_OFFLOAD_* to configure
  uint64_t tx_offloads = 0;
  uint64_t rss_hf = 0;       // RTE_ETH_RSS_* hashed fields (0: no hardware RSS)
  std::vector<std::string> fallbacks;  // "tso: not supported by net_ring, segmenting in software"
};

// `queues` is the number of rx queues the port gets; RSS across one queue is pointless.
OffloadPlan negotiate(const DeviceCapabilities& caps, const OffloadRequest& request, uint16_t queues,
                      const std::string& driver);

}  // namespace bypass::pmd
