// IPv6 (RFC 8200) for one stack instance: input validation, the extension-header walk with the
// Parameter Problems RFC 8200 §4 asks for, fragment reassembly (§4.5; a first fragment without the
// whole header chain is refused, RFC 7112 §5), dispatch to ICMPv6 and the
// upper layers, and output with next-hop selection (on-link by prefix, else the gateway; RFC 4861
// §5.2) through the neighbour cache, fragmenting at the source when asked and the path MTU
// (ipv6_path_mtu.h) is smaller than the datagram.
//
// A host, not a router: packets for other addresses are dropped, and the hop limit of a received
// packet is not examined (only forwarding decrements it; RFC 8200 §3). ND messages carry their
// own hop-limit rule (255), checked by the neighbour cache.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "stack/inet/device.h"
#include "stack/inet/icmpv6_layer.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ipv6_address_set.h"
#include "stack/inet/ipv6_path_mtu.h"
#include "stack/inet/ipv6_reassembly.h"
#include "stack/inet/neighbor_cache.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

// Bytes reserved at the front of every outgoing IPv6 frame's first segment for the Ethernet and
// IPv6 headers; the upper layer writes its own header right after them.
constexpr size_t kIpv6FrameHeadroom = EthernetHeader::kLength + Ipv6Header::kLength;

class Ipv6Layer {
 public:
  // `packet.data` starts at the upper-layer header. In `header`, next_header is the upper-layer
  // protocol and payload_length the upper-layer packet's length (what the pseudo-header of RFC
  // 8200 §8.1 covers), whatever extension headers came before.
  using UpperReceiver = std::function<void(const Ipv6Header&, Packet&&)>;

  Ipv6Layer(const InetSettings& settings, TimerService& timers, PacketDevice& device, NeighborCache& neighbors,
            Ipv6AddressSet& addresses, InetStats& stats);
  Ipv6Layer(const Ipv6Layer&) = delete;
  Ipv6Layer& operator=(const Ipv6Layer&) = delete;

  // `packet.data` is the IPv6 packet (after the Ethernet header); `link_source` its frame's
  // Ethernet source (Neighbor Discovery reports who probes for our address with it).
  void receive(Packet&& packet, const MacAddress& link_source = {});
  // Sends a packet from the address source_address() picks for `destination`. `frame` begins with
  // kIpv6FrameHeadroom reserved bytes followed by the upper-layer header and payload. Returns false
  // (and counts) when there is no route or no usable source address, or when the packet exceeds the
  // path MTU and `allow_fragment` is not set; otherwise a larger packet is fragmented (RFC 8200 §4.5).
  // A TCP segment the device cuts (TxOffload::segment_payload) may exceed the MTU up to
  // DeviceCapabilities::tx_large_segment_bytes.
  bool send(const Ipv6Address& destination, uint8_t next_header, Packet&& frame, bool allow_fragment = false) {
    return send_from(source_address(destination), destination, next_header, std::move(frame), allow_fragment);
  }
  // The same from `source`, which must be one of our preferred addresses (a reply goes from the
  // address it was sent to); the upper layer's checksum covers it, so it picks it first.
  bool send_from(const Ipv6Address& source, const Ipv6Address& destination, uint8_t next_header, Packet&& frame,
                 bool allow_fragment = false);
  // The source for a packet to `destination` (RFC 6724, simplified: the link-local address for
  // link-scope destinations, the configured one otherwise), :: when none is usable (tentative,
  // duplicated). Ipv6AddressSet::source_for().
  Ipv6Address source_address(const Ipv6Address& destination) const { return addresses_.source_for(destination); }
  // Our link-local address (fe80:: and the modified EUI-64 of the MAC, RFC 4291 §2.5.6, App. A).
  const Ipv6Address& link_local_address() const { return addresses_.link_local(); }
  // Where Duplicate Address Detection (RFC 4862 §5.4) stands for `ip`, if it is ours:
  // tentative, preferred or duplicated.
  std::optional<AddressState> address_state(const Ipv6Address& ip) const { return addresses_.address_state(ip); }
  // The neighbour a packet to `destination` goes to: itself when on-link (our prefix, link-local,
  // multicast), else the gateway. False when there is none.
  bool next_hop(const Ipv6Address& destination, Ipv6Address& hop) const;
  // The largest IPv6 packet (headers included) to send to `destination` without fragmenting.
  uint32_t path_mtu(const Ipv6Address& destination) const { return path_mtu_.get(destination, device_.mtu()); }
  // Whether a packet to `destination` is received in full: one of our preferred addresses, the
  // solicited-node group (RFC 4291 §2.7.1) of an address not duplicated, or all-nodes. (A packet to
  // a tentative address is received only if it is a Neighbor Solicitation or Advertisement,
  // RFC 4862 §5.4.)
  bool accepts_destination(const Ipv6Address& destination) const;
  // The same for the Ethernet group (RFC 2464 §7) of a frame's destination.
  bool accepts_link_group(const MacAddress& group) const { return addresses_.listens_to(group); }

  void set_tcp_receiver(UpperReceiver receiver) { tcp_receiver_ = std::move(receiver); }
  Icmpv6Layer& icmp() { return icmp_; }
  Ipv6PathMtu& path_mtu_table() { return path_mtu_; }
  Ipv6Reassembler& reassembler() { return reassembler_; }

 private:
  // `packet.data` is a whole IPv6 packet (fixed header first) of exactly 40 + payload_length bytes.
  // `reassembled`: built from fragments here, with a synthetic fixed header.
  // `link_source`: the frame's Ethernet source, zero for a reassembled packet.
  void process(const Ipv6Header& header, Packet&& packet, bool reassembled, const MacAddress& link_source);
  void reassemble(const Ipv6Header& header, const Ipv6Extensions& extensions, Packet&& packet);
  void deliver(Ipv6Header header, uint8_t protocol, size_t offset, Packet&& packet, const MacAddress& link_source);
  // The packet's bytes in one piece for the extension walk: its first segment when that holds them
  // all, else a copy in scratch_.
  const uint8_t* contiguous(const BufferList& packet);
  bool send_fragmented(const Ipv6Header& header, const Ipv6Address& hop, Packet&& frame, uint32_t mtu);

  const InetSettings& settings_;
  PacketDevice& device_;
  NeighborCache& neighbors_;
  Ipv6AddressSet& addresses_;
  InetStats& stats_;
  Ipv6Reassembler reassembler_;
  Ipv6PathMtu path_mtu_;
  Icmpv6Layer icmp_;
  uint32_t next_identification_ = 1;
  // Only packets with extension headers that arrived in several segments are copied here: sized
  // once for the largest packet, so the copy never allocates.
  std::unique_ptr<uint8_t[]> scratch_;
  UpperReceiver tcp_receiver_;
};

}  // namespace bypass::inet
