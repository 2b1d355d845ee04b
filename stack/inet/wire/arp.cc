#include "stack/inet/wire/arp.h"

namespace bypass::inet {

const char* ArpPacket::parse(const uint8_t* data, size_t len, ArpPacket& out) {
  if (len < kLength) return "arp: packet shorter than 28 bytes";
  if (load_be16(data) != 1) return "arp: hardware type is not Ethernet (1)";
  if (load_be16(data + 2) != 0x0800) return "arp: protocol type is not IPv4";
  if (data[4] != 6 || data[5] != 4) return "arp: address lengths are not 6/4";
  out.operation = load_be16(data + 6);
  if (out.operation != kRequest && out.operation != kReply) return "arp: unknown operation";
  std::memcpy(out.sender_mac.bytes.data(), data + 8, 6);
  out.sender_ip.value = load_be32(data + 14);
  std::memcpy(out.target_mac.bytes.data(), data + 18, 6);
  out.target_ip.value = load_be32(data + 24);
  return nullptr;
}

void ArpPacket::emit(uint8_t* out) const {
  store_be16(out, 1);
  store_be16(out + 2, 0x0800);
  out[4] = 6;
  out[5] = 4;
  store_be16(out + 6, operation);
  std::memcpy(out + 8, sender_mac.bytes.data(), 6);
  store_be32(out + 14, sender_ip.value);
  std::memcpy(out + 18, target_mac.bytes.data(), 6);
  store_be32(out + 24, target_ip.value);
}

}  // namespace bypass::inet
