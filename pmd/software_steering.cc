#include "pmd/software_steering.h"

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include <span>

namespace bypass::pmd {

namespace {

// IPv6 as NICs hash it (RTE_ETH_RSS_NONFRAG_IPV6_TCP/UDP, RTE_ETH_RSS_IPV6): TCP or UDP hashes its
// 4-tuple, anything else (a fragment, ICMPv6) the two addresses only, so all of a fragmented
// datagram and the neighbour discovery between two hosts land on one worker. Hop-by-Hop, Routing
// and Destination Options headers before TCP are stepped over (ipv6_upper_layer), so a segment
// that carries one stays with its flow.
unsigned ipv6_owner(const RssSteering& steering, const rte_mbuf* pkt) {
  uint8_t copy[sizeof(rte_ipv6_hdr)];
  const auto* ip6 = static_cast<const rte_ipv6_hdr*>(rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(copy), copy));
  if (!ip6) return kKeepOnReceiver;
  const std::span<const uint8_t, 16> src(ip6->src_addr, 16), dst(ip6->dst_addr, 16);
  if (const auto upper = ipv6_upper_layer(pkt); upper && (upper->protocol == IPPROTO_TCP || upper->protocol == IPPROTO_UDP)) {
    uint8_t ports_copy[4];
    const auto* ports = static_cast<const uint8_t*>(rte_pktmbuf_read(pkt, upper->offset, 4, ports_copy));
    if (ports)
      return steering.worker_for_ipv6(src, dst, static_cast<uint16_t>(ports[0] << 8 | ports[1]),
                                      static_cast<uint16_t>(ports[2] << 8 | ports[3]));
  }
  return steering.worker_for_ipv6_addresses(src, dst);
}

}  // namespace

std::optional<Ipv6UpperLayer> ipv6_upper_layer(const rte_mbuf* pkt) {
  uint8_t copy[sizeof(rte_ipv6_hdr)];
  const auto* ip6 = static_cast<const rte_ipv6_hdr*>(rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(copy), copy));
  if (!ip6 || (ip6->vtc_flow & rte_cpu_to_be_32(0xf0000000u)) != rte_cpu_to_be_32(0x60000000u)) return std::nullopt;
  uint8_t protocol = ip6->proto;
  uint32_t offset = RTE_ETHER_HDR_LEN + sizeof(rte_ipv6_hdr);
  // RFC 8200 §4: these three share the layout next header, length in 8-octet units less one. A
  // bounded walk: a chain longer than this is an attack or nonsense, hashed on addresses.
  constexpr int kMaxExtensionHeaders = 8;
  for (int i = 0; i < kMaxExtensionHeaders; ++i) {
    if (protocol != IPPROTO_HOPOPTS && protocol != IPPROTO_ROUTING && protocol != IPPROTO_DSTOPTS)
      return Ipv6UpperLayer{protocol, offset};
    uint8_t header_copy[2];
    const auto* header = static_cast<const uint8_t*>(rte_pktmbuf_read(pkt, offset, 2, header_copy));
    if (!header) return std::nullopt;
    protocol = header[0];
    offset += (header[1] + 1u) * 8u;
  }
  return std::nullopt;
}

std::optional<uint16_t> tcp_destination_port(const rte_mbuf* pkt) {
  uint8_t copy[RTE_ETHER_HDR_LEN + sizeof(rte_ipv4_hdr)];
  const auto* eth = static_cast<const rte_ether_hdr*>(rte_pktmbuf_read(pkt, 0, RTE_ETHER_HDR_LEN, copy));
  if (!eth) return std::nullopt;
  uint32_t offset = 0;
  if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
    const auto* ip = static_cast<const rte_ipv4_hdr*>(
        rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(rte_ipv4_hdr), copy + RTE_ETHER_HDR_LEN));
    if (!ip || ip->next_proto_id != IPPROTO_TCP || (ip->version_ihl & 0x0f) < 5) return std::nullopt;
    // A later fragment carries payload where the ports would be.
    if (rte_be_to_cpu_16(ip->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK) return std::nullopt;
    offset = RTE_ETHER_HDR_LEN + (ip->version_ihl & 0x0f) * 4u;
  } else if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
    const auto upper = ipv6_upper_layer(pkt);
    if (!upper || upper->protocol != IPPROTO_TCP) return std::nullopt;
    offset = upper->offset;
  } else {
    return std::nullopt;
  }
  uint8_t ports_copy[4];
  const auto* ports = static_cast<const uint8_t*>(rte_pktmbuf_read(pkt, offset, 4, ports_copy));
  if (!ports) return std::nullopt;
  return static_cast<uint16_t>(ports[2] << 8 | ports[3]);
}

unsigned worker_by_headers(const RssSteering& steering, const rte_mbuf* pkt) {
  // Ethernet + IPv4 (no options needed for the addresses) + the first 4 bytes of TCP/UDP.
  uint8_t copy[RTE_ETHER_HDR_LEN + 60 + 4];
  const auto* eth = static_cast<const rte_ether_hdr*>(rte_pktmbuf_read(pkt, 0, RTE_ETHER_HDR_LEN, copy));
  if (eth && eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) return ipv6_owner(steering, pkt);
  if (!eth || eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) return kKeepOnReceiver;
  const auto* ip = static_cast<const rte_ipv4_hdr*>(
      rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(rte_ipv4_hdr), copy + RTE_ETHER_HDR_LEN));
  if (!ip) return kKeepOnReceiver;
  const uint32_t src = rte_be_to_cpu_32(ip->src_addr), dst = rte_be_to_cpu_32(ip->dst_addr);
  const uint16_t fragment = rte_be_to_cpu_16(ip->fragment_offset);
  const bool fragmented = (fragment & RTE_IPV4_HDR_OFFSET_MASK) || (fragment & RTE_IPV4_HDR_MF_FLAG);
  const unsigned header_len = (ip->version_ihl & 0x0f) * 4u;
  if (!fragmented && (ip->next_proto_id == IPPROTO_TCP || ip->next_proto_id == IPPROTO_UDP) && header_len >= 20) {
    uint8_t ports_copy[4];
    const auto* ports = static_cast<const uint8_t*>(
        rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN + header_len, 4, ports_copy));
    if (ports) {
      const uint16_t sport = static_cast<uint16_t>(ports[0] << 8 | ports[1]);
      const uint16_t dport = static_cast<uint16_t>(ports[2] << 8 | ports[3]);
      return steering.worker_for_ipv4(src, dst, sport, dport);
    }
  }
  // Fragments and other protocols hash on the addresses only, as NICs do (RTE_ETH_RSS_IPV4).
  return steering.worker_for_ipv4_addresses(src, dst);
}


}  // namespace bypass::pmd
