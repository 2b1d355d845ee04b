#include "stack/inet/wire/ethernet.h"

#include <cstdio>

namespace bypass::inet {

std::string MacAddress::to_string() const {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2],
                bytes[3], bytes[4], bytes[5]);
  return text;
}

std::string Ipv4Address::to_string() const {
  char text[16];
  std::snprintf(text, sizeof(text), "%u.%u.%u.%u", value >> 24, (value >> 16) & 0xff,
                (value >> 8) & 0xff, value & 0xff);
  return text;
}

const char* EthernetHeader::parse(const uint8_t* data, size_t len, EthernetHeader& out) {
  const EthernetView view(data, len);
  if (const char* error = view.check_len()) return error;
  out.destination = view.destination();
  out.source = view.source();
  out.ethertype = view.ethertype();
  if (out.ethertype < 0x0600) return "ethernet: 802.3 length field instead of an EtherType";
  return nullptr;
}

void EthernetHeader::emit(uint8_t* out) const {
  const EthernetView view(out, kLength);
  view.set_destination(destination);
  view.set_source(source);
  view.set_ethertype(ethertype);
}

}  // namespace bypass::inet
