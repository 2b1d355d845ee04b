// A packet as the stack sees it: the bytes (a BufferList, so the data can live in foreign memory
// such as an mbuf) plus offload metadata exchanged with the device.
#pragma once

#include <cstdint>

#include "base/buffer_list.h"

namespace bypass::inet {

enum class RxChecksum : uint8_t { Unknown, Good, Bad };

struct TxOffload {
  bool ipv4_checksum = false;  // NIC computes the IPv4 header checksum (field left 0)
  bool tcp_checksum = false;   // NIC finishes the TCP checksum (field holds the pseudo-header sum)
  uint8_t l2_length = 0;
  uint8_t l3_length = 0;
  uint8_t l4_length = 0;
  // A TCP segment larger than the MTU (DeviceCapabilities::tx_large_segment_bytes): the device cuts
  // its payload into pieces of this many bytes, each with the headers repeated (TSO's tso_segsz).
  // The IPv4 total length (or IPv6 payload length) covers the whole segment and the TCP checksum
  // field holds the family's pseudo-header sum without the length (DPDK's TSO convention). 0: send
  // the frame as it is.
  uint16_t segment_payload = 0;
};

struct Packet {
  BufferList data;
  TxOffload tx;                                 // set by the stack on transmit
  RxChecksum rx_ip_checksum = RxChecksum::Unknown;  // set by the device on receive
  RxChecksum rx_l4_checksum = RxChecksum::Unknown;
  // Set by the device when it merged consecutive TCP segments into this frame (LRO): the payload
  // size of each, so TCP can count the wire segments the frame stands for. 0: not merged.
  uint16_t rx_lro_segment_size = 0;
  // Set by the IP layer on a datagram it reassembled from fragments (never coalesced further).
  bool rx_reassembled = false;

  Packet() = default;
  explicit Packet(BufferList bytes) : data(std::move(bytes)) {}
};

}  // namespace bypass::inet
