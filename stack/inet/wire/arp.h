// ARP packet for IPv4 over Ethernet (RFC 826): hardware type 1, protocol 0x0800, lengths 6/4.
#pragma once

#include <cstddef>

#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

struct ArpPacket {
  static constexpr size_t kLength = 28;
  enum Operation : uint16_t { kRequest = 1, kReply = 2 };
  uint16_t operation = kRequest;
  MacAddress sender_mac;
  Ipv4Address sender_ip;
  MacAddress target_mac;
  Ipv4Address target_ip;

  static const char* parse(const uint8_t* data, size_t len, ArpPacket& out);
  void emit(uint8_t* out) const;
};

}  // namespace bypass::inet
