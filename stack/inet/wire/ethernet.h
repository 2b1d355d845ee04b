// Ethernet II frame header (IEEE 802.3 with EtherType >= 0x0600). No VLAN tags: a tagged frame
// parses with ethertype 0x8100 and the stack drops it as an unsupported type.
#pragma once

#include <cstddef>

#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

enum class EtherType : uint16_t { Ipv4 = 0x0800, Arp = 0x0806, Vlan = 0x8100, Ipv6 = 0x86dd };

struct EthernetHeader {
  static constexpr size_t kLength = 14;
  MacAddress destination;
  MacAddress source;
  uint16_t ethertype = 0;

  // Returns nullptr on success, otherwise what was malformed.
  static const char* parse(const uint8_t* data, size_t len, EthernetHeader& out);
  void emit(uint8_t* out) const;
};

}  // namespace bypass::inet
