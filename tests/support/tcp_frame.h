// A TCP segment in an Ethernet frame, of either family, read through the stack's wire views
// (stack/inet/wire): what tests look at instead of byte offsets.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack/inet/ip_address.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/ipv6.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet::test {

struct TcpFrame {
  bool ipv6 = false;
  IpAddress source, destination;
  size_t ip_offset = EthernetHeader::kLength;  // where the IP header starts in the frame
  size_t tcp_offset = 0;                       // where the TCP header starts in the frame
  size_t tcp_length = 0;                       // header and payload, as the IP header counts them
  TcpHeader header;
  size_t payload_length() const { return tcp_length - header.header_length; }
  // The IP packet's length, its header included.
  size_t ip_length() const { return tcp_offset - ip_offset + tcp_length; }
};

// nullptr with `out` filled when `frame` is an Ethernet frame carrying IPv4 or IPv6 (no extension
// headers) and a well-formed TCP header; otherwise why not. Checksums are not verified.
inline const char* parse_tcp_frame(const uint8_t* frame, size_t size, TcpFrame& out) {
  const EthernetView ethernet(frame, size);
  if (const char* error = ethernet.check_len()) return error;
  const uint8_t* ip = ethernet.payload();
  const size_t ip_size = size - EthernetHeader::kLength;
  out = TcpFrame{};
  if (ethernet.ethertype() == static_cast<uint16_t>(EtherType::Ipv4)) {
    const Ipv4View v4(ip, ip_size);
    if (const char* error = v4.check_len()) return error;
    if (v4.protocol() != static_cast<uint8_t>(IpProtocol::Tcp)) return "not TCP";
    if (v4.total_length() > ip_size || v4.total_length() < v4.header_length()) return "ipv4: bad total length";
    out.source = v4.source();
    out.destination = v4.destination();
    out.tcp_offset = EthernetHeader::kLength + v4.header_length();
    out.tcp_length = v4.total_length() - v4.header_length();
  } else if (ethernet.ethertype() == static_cast<uint16_t>(EtherType::Ipv6)) {
    const Ipv6View v6(ip, ip_size);
    if (const char* error = v6.check_len()) return error;
    if (v6.next_header() != kIpv6Tcp) return "not TCP";
    if (v6.payload_length() > ip_size - Ipv6Header::kLength) return "ipv6: bad payload length";
    out.ipv6 = true;
    out.source = v6.source();
    out.destination = v6.destination();
    out.tcp_offset = EthernetHeader::kLength + Ipv6Header::kLength;
    out.tcp_length = v6.payload_length();
  } else {
    return "not IP";
  }
  return TcpHeader::parse(frame + out.tcp_offset, out.tcp_length, out.header);
}

}  // namespace bypass::inet::test
