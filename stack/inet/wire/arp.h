// ARP packet for IPv4 over Ethernet (RFC 826): hardware type 1, protocol 0x0800, lengths 6/4.
#pragma once

#include <cstddef>

#include "stack/inet/wire/field.h"

namespace bypass::inet {

// RFC 826 "Packet format", with Ethernet's 6-byte and IPv4's 4-byte addresses.
namespace arp_field {
using HardwareType = Field<0, 2>;
using ProtocolType = Field<2, 2>;
using HardwareLength = Field<4, 1>;
using ProtocolLength = Field<5, 1>;
using Operation = Field<6, 2>;
using SenderMac = Field<8, 6>;
using SenderIp = Field<14, 4>;
using TargetMac = Field<18, 6>;
using TargetIp = Field<24, 4>;
}  // namespace arp_field

template <typename Byte>
class ArpView : public HeaderView<Byte> {
 public:
  static constexpr size_t kPacketLength = arp_field::TargetIp::kEnd;
  ArpView(Byte* data, size_t size) : HeaderView<Byte>(data, size) {}

  const char* check_len() const {
    return this->size() < kPacketLength ? "arp: packet shorter than 28 bytes" : nullptr;
  }
  uint16_t hardware_type() const { return this->template get<arp_field::HardwareType>(); }
  uint16_t protocol_type() const { return this->template get<arp_field::ProtocolType>(); }
  uint8_t hardware_length() const { return this->template get<arp_field::HardwareLength>(); }
  uint8_t protocol_length() const { return this->template get<arp_field::ProtocolLength>(); }
  uint16_t operation() const { return this->template get<arp_field::Operation>(); }
  MacAddress sender_mac() const { return this->template get<arp_field::SenderMac>(); }
  Ipv4Address sender_ip() const { return {this->template get<arp_field::SenderIp>()}; }
  MacAddress target_mac() const { return this->template get<arp_field::TargetMac>(); }
  Ipv4Address target_ip() const { return {this->template get<arp_field::TargetIp>()}; }
  void set_hardware_type(uint16_t v) const { this->template set<arp_field::HardwareType>(v); }
  void set_protocol_type(uint16_t v) const { this->template set<arp_field::ProtocolType>(v); }
  void set_hardware_length(uint8_t v) const { this->template set<arp_field::HardwareLength>(v); }
  void set_protocol_length(uint8_t v) const { this->template set<arp_field::ProtocolLength>(v); }
  void set_operation(uint16_t v) const { this->template set<arp_field::Operation>(v); }
  void set_sender_mac(const MacAddress& v) const { this->template set<arp_field::SenderMac>(v); }
  void set_sender_ip(Ipv4Address v) const { this->template set<arp_field::SenderIp>(v.value); }
  void set_target_mac(const MacAddress& v) const { this->template set<arp_field::TargetMac>(v); }
  void set_target_ip(Ipv4Address v) const { this->template set<arp_field::TargetIp>(v.value); }
};

struct ArpPacket {
  static constexpr size_t kLength = ArpView<const uint8_t>::kPacketLength;
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
