#include "pmd/offloads.h"

#include <rte_ethdev.h>

namespace bypass::pmd {

std::vector<std::string> OffloadFlags::names() const {
  std::vector<std::string> out;
  const std::pair<bool, const char*> all[] = {
      {rx_ipv4_checksum, "rx-ipv4-cksum"}, {rx_tcp_checksum, "rx-tcp-cksum"}, {rx_udp_checksum, "rx-udp-cksum"},
      {tx_ipv4_checksum, "tx-ipv4-cksum"}, {tx_tcp_checksum, "tx-tcp-cksum"}, {tx_udp_checksum, "tx-udp-cksum"},
      {tso, "tso"}, {lro, "lro"}, {rss, "rss"}, {multi_seg, "tx-multi-seg"}, {rx_scatter, "rx-scatter"}};
  for (const auto& [on, name] : all)
    if (on) out.emplace_back(name);
  return out;
}

OffloadFlags DeviceCapabilities::supported() const {
  OffloadFlags f;
  f.rx_ipv4_checksum = rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
  f.rx_tcp_checksum = rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
  f.rx_udp_checksum = rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  f.tx_ipv4_checksum = tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
  f.tx_tcp_checksum = tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
  f.tx_udp_checksum = tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  f.tso = tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO;
  f.lro = rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_LRO;
  // RSS we can steer needs hashing of IPv4 TCP and UDP, a settable key and a RETA.
  f.rss = (flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_TCP) && reta_size > 0 && hash_key_size > 0;
  f.multi_seg = tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  f.rx_scatter = rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER;
  return f;
}

OffloadRequest OffloadRequest::from_config(const config::Config& config) {
  OffloadRequest r;
  r.rx_checksum = config.get_bool("dpdk.rx_checksum");
  r.tx_checksum = config.get_bool("dpdk.tx_checksum");
  r.tso = config.get_bool("dpdk.tso");
  r.lro = config.get_bool("dpdk.lro");
  r.rss = config.get_bool("dpdk.rss");
  r.multi_seg = config.get_bool("dpdk.multi_seg");
  return r;
}

OffloadPlan negotiate(const DeviceCapabilities& caps, const OffloadRequest& request, uint16_t queues,
                      const std::string& driver) {
  OffloadPlan plan;
  plan.supported = caps.supported();
  const OffloadFlags& s = plan.supported;
  OffloadFlags& e = plan.enabled;
  auto decide = [&](bool requested, bool supported, const char* what, const char* fallback) {
    if (!requested) return false;
    if (!supported) plan.fallbacks.push_back(std::string(what) + ": not supported by " + driver + ", " + fallback);
    return supported;
  };
  e.rx_ipv4_checksum = decide(request.rx_checksum, s.rx_ipv4_checksum, "rx-ipv4-cksum", "verified in software");
  e.rx_tcp_checksum = decide(request.rx_checksum, s.rx_tcp_checksum, "rx-tcp-cksum", "verified in software");
  e.rx_udp_checksum = decide(request.rx_checksum, s.rx_udp_checksum, "rx-udp-cksum", "verified in software");
  e.tx_ipv4_checksum = decide(request.tx_checksum, s.tx_ipv4_checksum, "tx-ipv4-cksum", "computed in software");
  e.tx_tcp_checksum = decide(request.tx_checksum, s.tx_tcp_checksum, "tx-tcp-cksum", "computed in software");
  e.tx_udp_checksum = decide(request.tx_checksum, s.tx_udp_checksum, "tx-udp-cksum", "computed in software");
  e.multi_seg = decide(request.multi_seg, s.multi_seg, "tx-multi-seg", "chains are linearised before tx");
  // TSO hands the NIC one large chained frame whose TCP checksums it fills in per segment. The
  // IPv4 header checksum it may not offload (virtio has no such offload: its TSO recomputes the
  // header itself), so the stack writes it then.
  // DPDK 22.11's net_tap segments with librte_gso but refuses a frame whose Ethernet, IPv4 and
  // TCP headers plus tso_segsz exceed the MTU (it counts the Ethernet header against it), so a
  // full-MSS segment never leaves and blocks the queue behind it: segment in software there.
  const bool tap_tso_broken = driver == "net_tap";
  const bool tso_possible = s.tso && e.multi_seg && e.tx_tcp_checksum && !tap_tso_broken;
  e.tso = decide(request.tso, tso_possible, "tso",
                 tap_tso_broken ? "refuses full-MSS segments in DPDK 22.11, segmenting in software"
                 : s.tso       ? "needs tx-multi-seg and tx-tcp-cksum, segmenting in software"
                               : "segmenting in software");
  e.lro = decide(request.lro, s.lro, "lro", "segments are delivered one by one");
  // Scatter lets LRO and jumbo frames arrive as chains; enable whenever offered.
  e.rx_scatter = s.rx_scatter;
  if (request.rss && queues > 1) {
    e.rss = decide(true, s.rss, "rss", "flows are steered to workers by the software redirect ring");
  } else if (request.rss && s.rss) {
    e.rss = false;  // one queue: nothing to spread, software steering picks the worker
  }

  if (e.rx_ipv4_checksum) plan.rx_offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
  if (e.rx_tcp_checksum) plan.rx_offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
  if (e.rx_udp_checksum) plan.rx_offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  if (e.lro) plan.rx_offloads |= RTE_ETH_RX_OFFLOAD_TCP_LRO;
  if (e.rx_scatter) plan.rx_offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
  if (e.rss && (caps.rx_offload_capa & RTE_ETH_RX_OFFLOAD_RSS_HASH)) plan.rx_offloads |= RTE_ETH_RX_OFFLOAD_RSS_HASH;
  if (e.tx_ipv4_checksum) plan.tx_offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
  if (e.tx_tcp_checksum) plan.tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
  if (e.tx_udp_checksum) plan.tx_offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  if (e.tso) plan.tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
  if (e.multi_seg) plan.tx_offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (e.rss)
    plan.rss_hf = caps.flow_type_rss_offloads &
                  (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_IPV6 |
                   RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP);
  return plan;
}

}  // namespace bypass::pmd
