// Ethernet II frame header (IEEE 802.3 with EtherType >= 0x0600). No VLAN tags: a tagged frame
// parses with ethertype 0x8100 and the stack drops it as an unsupported type.
#pragma once

#include <cstddef>

#include "stack/inet/wire/field.h"

namespace bypass::inet {

enum class EtherType : uint16_t { Ipv4 = 0x0800, Arp = 0x0806, Vlan = 0x8100, Ipv6 = 0x86dd };

// IEEE 802.3 §3.1.1 (Ethernet II): where each field of the 14-byte header lies.
namespace ethernet_field {
using Destination = Field<0, 6>;
using Source = Field<6, 6>;
using EtherType = Field<12, 2>;
}  // namespace ethernet_field

// The Ethernet header in `data` (Byte: uint8_t to write, const uint8_t to read).
template <typename Byte>
class EthernetView : public HeaderView<Byte> {
 public:
  static constexpr size_t kHeaderLength = ethernet_field::EtherType::kEnd;
  EthernetView(Byte* data, size_t size) : HeaderView<Byte>(data, size) {}

  // nullptr when the bytes hold the header, otherwise what is wrong.
  const char* check_len() const {
    return this->size() < kHeaderLength ? "ethernet: frame shorter than the 14-byte header" : nullptr;
  }
  MacAddress destination() const { return this->template get<ethernet_field::Destination>(); }
  MacAddress source() const { return this->template get<ethernet_field::Source>(); }
  uint16_t ethertype() const { return this->template get<ethernet_field::EtherType>(); }
  Byte* payload() const { return this->data() + kHeaderLength; }
  void set_destination(const MacAddress& mac) const { this->template set<ethernet_field::Destination>(mac); }
  void set_source(const MacAddress& mac) const { this->template set<ethernet_field::Source>(mac); }
  void set_ethertype(uint16_t type) const { this->template set<ethernet_field::EtherType>(type); }
};

struct EthernetHeader {
  static constexpr size_t kLength = EthernetView<const uint8_t>::kHeaderLength;
  MacAddress destination;
  MacAddress source;
  uint16_t ethertype = 0;

  // Returns nullptr on success, otherwise what was malformed.
  static const char* parse(const uint8_t* data, size_t len, EthernetHeader& out);
  void emit(uint8_t* out) const;
};

}  // namespace bypass::inet
