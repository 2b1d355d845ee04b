// Software steering: which worker owns a received frame when the hardware did not say (no RSS
// hash on the mbuf: a device without RSS, or rte_flow isolation spreading flows its own way). The
// frame's headers are read here, just far enough for the tuple NICs hash (RTE_ETH_RSS_*), and
// hashed with the port's key and RETA (RssSteering), so software and hardware agree.
//
// Its own parser, not stack/inet/wire's: pmd/ sits below stack/ (tools -> msgr -> stack -> pmd),
// and this one reads at most a few bytes of an mbuf (rte_pktmbuf_read, no copy of the frame)
// where the stack validates whole packets.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <optional>

#include "pmd/toeplitz.h"

namespace bypass::pmd {

// Decides which worker owns a received packet. Return a worker index, or kKeepOnReceiver to keep
// the packet on the worker that polled it (ARP, non-IP). Called on the receiving worker's thread.
using OwnerFunction = unsigned (*)(const rte_mbuf* pkt, void* context);
inline constexpr unsigned kKeepOnReceiver = ~0u;

// The worker owning `pkt` by its headers under `steering`: an IPv4 or IPv6 TCP/UDP frame by its
// 4-tuple, a fragment or another protocol by its two addresses (as NICs hash them), anything else
// (ARP) kKeepOnReceiver.
unsigned worker_by_headers(const RssSteering& steering, const rte_mbuf* pkt);

// Where an Ethernet + IPv6 frame's upper-layer header starts, past any Hop-by-Hop, Routing and
// Destination Options headers (RFC 8200 §4.1 order); `protocol` is what comes there (a Fragment
// header, 44, ends the walk). nullopt: not IPv6, truncated, or a chain longer than 8 headers.
struct Ipv6UpperLayer {
  uint8_t protocol;
  uint32_t offset;  // from the start of the frame
};
std::optional<Ipv6UpperLayer> ipv6_upper_layer(const rte_mbuf* pkt);

// The TCP destination port of an Ethernet + IPv4 or IPv6 frame (IPv6 past the extension headers
// ipv6_upper_layer steps over); nullopt for anything else, IPv4 non-first fragments included.
std::optional<uint16_t> tcp_destination_port(const rte_mbuf* pkt);

}  // namespace bypass::pmd
