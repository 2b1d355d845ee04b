// IPv4 (RFC 791, host requirements RFC 1122 §3) and ICMP (RFC 792) for one stack instance:
// header validation, reassembly, routing to a gateway outside the netmask, echo replies, and
// destination-unreachable messages handed to the transport (path MTU, refused connections).
#pragma once

#include <functional>

#include "stack/inet/arp_resolver.h"
#include "stack/inet/device.h"
#include "stack/inet/ip_reassembly.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmp.h"
#include "stack/inet/wire/ipv4.h"

namespace bypass::inet {

// Bytes reserved at the front of every outgoing IPv4 frame's first segment for the Ethernet and
// IPv4 headers; the transport writes its own header right after them.
constexpr size_t kFrameHeadroom = EthernetHeader::kLength + Ipv4Header::kMinLength;

class Ipv4Layer {
 public:
  // `packet.data` starts at the transport header; the IPv4 header is passed alongside.
  using TransportReceiver = std::function<void(const Ipv4Header&, Packet&&)>;
  // An ICMP destination-unreachable about a datagram we sent: code, next-hop MTU (code 4), and the
  // quoted original IPv4 header plus at least 8 bytes of its transport header.
  using UnreachableReceiver =
      std::function<void(uint8_t code, uint16_t mtu, const Ipv4Header& quoted, const uint8_t* l4,
                         size_t l4_length)>;

  // An ICMP echo reply addressed to us: `message` is the whole ICMP message (checksum verified).
  using EchoReplyReceiver = std::function<void(const Ipv4Header&, const IcmpHeader&, const BufferList& message)>;

  Ipv4Layer(const InetSettings& settings, TimerService& timers, PacketDevice& device,
            ArpResolver& arp, InetStats& stats);

  // `packet.data` is the IPv4 datagram (after the Ethernet header).
  void receive(Packet&& packet);
  // Send a datagram. `frame` begins with kFrameHeadroom reserved bytes followed by the transport
  // header and payload. Returns false (and counts) when there is no route, or when the datagram
  // exceeds the MTU with `dont_fragment` set; otherwise larger datagrams are fragmented.
  bool send(Ipv4Address destination, IpProtocol protocol, Packet&& frame, bool dont_fragment = true);
  bool next_hop(Ipv4Address destination, Ipv4Address& hop) const;

  void set_tcp_receiver(TransportReceiver receiver) { tcp_receiver_ = std::move(receiver); }
  void set_unreachable_receiver(UnreachableReceiver receiver) { unreachable_ = std::move(receiver); }
  void set_echo_reply_receiver(EchoReplyReceiver receiver) { echo_reply_ = std::move(receiver); }
  IpReassembler& reassembler() { return reassembler_; }

 private:
  void deliver(const Ipv4Header& header, Packet&& packet);
  bool send_fragmented(Ipv4Address destination, Ipv4Address hop, IpProtocol protocol, Packet&& frame);
  void receive_icmp(const Ipv4Header& header, Packet&& packet);

  const InetSettings& settings_;
  PacketDevice& device_;
  ArpResolver& arp_;
  InetStats& stats_;
  IpReassembler reassembler_;
  uint16_t next_identification_ = 1;
  TransportReceiver tcp_receiver_;
  UnreachableReceiver unreachable_;
  EchoReplyReceiver echo_reply_;
};

}  // namespace bypass::inet
