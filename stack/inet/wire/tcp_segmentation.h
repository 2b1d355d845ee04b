// Cutting one large TCP segment over IPv4 or IPv6 (TxOffload::segment_payload) into frames that fit
// the MTU, as a TSO NIC does. Every frame repeats the large frame's Ethernet, IP and TCP headers;
// its IPv4 total length, identification (one more per frame) and header checksum, or its IPv6
// payload length, and its TCP sequence number are its own; PSH and FIN, which mark the end of the
// data (RFC 9293 §3.1, §3.9.1), stay on the last frame only, as in Linux's tcp_gso_segment.
// Options (timestamps, SACK blocks) are repeated unchanged, as TSO repeats them.
//
// Pure code: stack/dpdk's copy into mbufs (software segmentation on ports without TSO) and the
// test wire both cut with it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stack/inet/packet.h"

namespace bypass::inet {

class TcpSegmentCutter {
 public:
  // Ethernet, IPv4 with options or IPv6 with up to 20 bytes of extension headers, TCP with options.
  static constexpr size_t kMaxHeaderLength = 14 + 60 + 60;

  // `headers`: the large frame's first l2 + l3 + l4 bytes (lengths from `tx`); `payload_length`:
  // the TCP payload bytes after them. Returns an empty cutter (frames() == 0) for headers the
  // stack would never write (lengths out of range): the caller then sends the frame as it is.
  TcpSegmentCutter(const uint8_t* headers, const TxOffload& tx, size_t payload_length);

  size_t header_length() const { return header_length_; }
  size_t frames() const { return frames_; }
  size_t payload_offset(size_t index) const { return index * segment_; }
  size_t payload_length(size_t index) const;

  // Writes frame `index`'s headers to `out` (header_length() bytes): the IPv4 checksum complete
  // (IPv6 has none), the TCP checksum field holding this frame's pseudo-header sum (of its family),
  // so that a sum over its TCP header and payload completes it (what RTE_MBUF_F_TX_TCP_CKSUM
  // expects, or the copy that sums).
  void write_headers(size_t index, uint8_t* out) const;

 private:
  const uint8_t* headers_;
  size_t l2_ = 0, l3_ = 0, l4_ = 0;
  size_t header_length_ = 0;
  size_t payload_length_ = 0;
  size_t segment_ = 1;
  size_t frames_ = 0;
  bool ipv6_ = false;  // the IP header's version is 6
};

}  // namespace bypass::inet
