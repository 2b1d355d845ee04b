// Test packets built in mbufs: Ethernet + IPv4 + UDP, Ethernet + IPv6 + a TCP/UDP port pair or
// another next header, and ARP.
#pragma once

#include <rte_arp.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <cstring>

namespace bypass::pmd::testing_packets {

inline rte_mbuf* udp_packet(rte_mempool* pool, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                            uint16_t payload = 18) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (!m) return nullptr;
  const uint16_t len = static_cast<uint16_t>(sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr) + payload);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(m, len));
  std::memset(eth, 0, len);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(len - sizeof(rte_ether_hdr)));
  ip->src_addr = rte_cpu_to_be_32(src);
  ip->dst_addr = rte_cpu_to_be_32(dst);
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(ip + 1);
  udp->src_port = rte_cpu_to_be_16(sport);
  udp->dst_port = rte_cpu_to_be_16(dport);
  udp->dgram_len = rte_cpu_to_be_16(static_cast<uint16_t>(sizeof(rte_udp_hdr) + payload));
  return m;
}

inline uint16_t udp_source_port(const rte_mbuf* m) {
  const auto* udp = rte_pktmbuf_mtod_offset(m, const rte_udp_hdr*, sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr));
  return rte_be_to_cpu_16(udp->src_port);
}

// Ethernet + IPv6 (RFC 8200) with `next_header` after the fixed header; for TCP (6) and UDP (17)
// the ports follow, for anything else (a Fragment header 44, ICMPv6 58) 8 zero bytes.
inline rte_mbuf* ipv6_packet(rte_mempool* pool, const uint8_t (&src)[16], const uint8_t (&dst)[16], uint8_t next_header,
                             uint16_t sport = 0, uint16_t dport = 0) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (!m) return nullptr;
  constexpr uint16_t kPayload = 20;
  const uint16_t len = sizeof(rte_ether_hdr) + sizeof(rte_ipv6_hdr) + kPayload;
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(m, len));
  std::memset(eth, 0, len);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
  auto* ip6 = reinterpret_cast<rte_ipv6_hdr*>(eth + 1);
  ip6->vtc_flow = rte_cpu_to_be_32(6u << 28);
  ip6->payload_len = rte_cpu_to_be_16(kPayload);
  ip6->proto = next_header;
  ip6->hop_limits = 64;
  std::memcpy(ip6->src_addr, src, 16);
  std::memcpy(ip6->dst_addr, dst, 16);
  auto* ports = reinterpret_cast<uint8_t*>(ip6 + 1);
  if (next_header == IPPROTO_TCP || next_header == IPPROTO_UDP) {
    ports[0] = uint8_t(sport >> 8), ports[1] = uint8_t(sport), ports[2] = uint8_t(dport >> 8), ports[3] = uint8_t(dport);
  }
  return m;
}

inline rte_mbuf* arp_packet(rte_mempool* pool) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  if (!m) return nullptr;
  const uint16_t len = sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr);
  auto* eth = reinterpret_cast<rte_ether_hdr*>(rte_pktmbuf_append(m, len));
  std::memset(eth, 0, len);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
  return m;
}

}  // namespace bypass::pmd::testing_packets
