// The Neighbor Discovery messages this host sends (RFC 4861 §4.3, §4.4), framed for the device.
// Shared by the neighbour cache (address resolution, unreachability probes, answers to
// solicitations) and the address set (Duplicate Address Detection probes, announcements).
#pragma once

#include "stack/inet/device.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/packet.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

// An Ethernet + IPv6 frame carrying `message` from `source` to `destination` with hop limit 255
// (RFC 4861 §7.1: a receiver can tell it never left the link). Its first 14 bytes are left for the
// Ethernet header (transmit_ipv6_frame).
Packet nd_frame(const Ipv6Address& source, const Ipv6Address& destination, const NeighborSolicitation& message);
Packet nd_frame(const Ipv6Address& source, const Ipv6Address& destination, const NeighborAdvertisement& message);

// Our advertisement of `target`, one of our addresses (RFC 4861 §7.2.4): Override set, since it is
// not an anycast address, and our link-layer address `mac` in a Target Link-Layer Address option.
NeighborAdvertisement advertisement_of_ours(const Ipv6Address& target, const MacAddress& mac, bool solicited);

// Fills the 14 bytes reserved at the front of `frame` with the Ethernet header of an IPv6 frame to
// `destination` from the device's MAC, counts it and hands it to the device. Inline: every IPv6
// packet the neighbour cache sends passes here.
inline void transmit_ipv6_frame(PacketDevice& device, InetStats& stats, const MacAddress& destination, Packet&& frame) {
  EthernetHeader eth{destination, device.mac(), static_cast<uint16_t>(EtherType::Ipv6)};
  eth.emit(reinterpret_cast<uint8_t*>(frame.data.segments().front().data()));
  ++stats.tx_frames;
  device.transmit(std::move(frame));
}

}  // namespace bypass::inet
