#include "stack/inet/wire/arp.h"

namespace bypass::inet {

namespace {
constexpr uint16_t kHardwareEthernet = 1;
constexpr uint16_t kProtocolIpv4 = 0x0800;
}  // namespace

const char* ArpPacket::parse(const uint8_t* data, size_t len, ArpPacket& out) {
  const ArpView view(data, len);
  if (const char* error = view.check_len()) return error;
  if (view.hardware_type() != kHardwareEthernet) return "arp: hardware type is not Ethernet (1)";
  if (view.protocol_type() != kProtocolIpv4) return "arp: protocol type is not IPv4";
  if (view.hardware_length() != 6 || view.protocol_length() != 4) return "arp: address lengths are not 6/4";
  out.operation = view.operation();
  if (out.operation != kRequest && out.operation != kReply) return "arp: unknown operation";
  out.sender_mac = view.sender_mac();
  out.sender_ip = view.sender_ip();
  out.target_mac = view.target_mac();
  out.target_ip = view.target_ip();
  return nullptr;
}

void ArpPacket::emit(uint8_t* out) const {
  const ArpView view(out, kLength);
  view.set_hardware_type(kHardwareEthernet);
  view.set_protocol_type(kProtocolIpv4);
  view.set_hardware_length(6);
  view.set_protocol_length(4);
  view.set_operation(operation);
  view.set_sender_mac(sender_mac);
  view.set_sender_ip(sender_ip);
  view.set_target_mac(target_mac);
  view.set_target_ip(target_ip);
}

}  // namespace bypass::inet
