// Big-endian loads/stores and the address types shared by every header representation.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace bypass::inet {

inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

struct MacAddress {
  std::array<uint8_t, 6> bytes{};
  static MacAddress broadcast() { return {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}; }
  bool is_broadcast() const { return *this == broadcast(); }
  bool is_multicast() const { return bytes[0] & 1; }
  bool is_zero() const { return *this == MacAddress{}; }
  bool operator==(const MacAddress&) const = default;
  std::string to_string() const;
};

// Host byte order inside; converted at the wire boundary only.
struct Ipv4Address {
  uint32_t value = 0;
  static Ipv4Address from_octets(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return {static_cast<uint32_t>(a) << 24 | static_cast<uint32_t>(b) << 16 |
            static_cast<uint32_t>(c) << 8 | d};
  }
  bool is_zero() const { return value == 0; }
  bool is_broadcast() const { return value == 0xffffffffu; }
  bool operator==(const Ipv4Address&) const = default;
  auto operator<=>(const Ipv4Address&) const = default;
  std::string to_string() const;
};

// Network byte order inside (the 16 octets as they travel): nothing adds to or compares an IPv6
// address numerically, so it is never converted. Text forms go through inet_pton/inet_ntop (RFC 4291
// §2.2, RFC 5952), which is fine off the packet path (configuration, logs).
struct Ipv6Address {
  static constexpr size_t kLength = 16;
  std::array<uint8_t, kLength> bytes{};

  // nullopt unless `text` is an IPv6 address in RFC 4291 §2.2 text form (no brackets, no zone).
  static std::optional<Ipv6Address> from_string(std::string_view text);
  static Ipv6Address from_bytes(const uint8_t* p) {
    Ipv6Address a;
    std::memcpy(a.bytes.data(), p, kLength);
    return a;
  }
  void store(uint8_t* p) const { std::memcpy(p, bytes.data(), kLength); }
  // ff02::1 and ff02::2 (RFC 4291 §2.7.1): the link's nodes and routers.
  static Ipv6Address all_nodes() { return {{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}; }
  static Ipv6Address all_routers() { return {{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}}; }

  // :: (RFC 4291 §2.5.2): only ever a source, of a node that has no address yet (DAD, RFC 4862 §5.4).
  bool is_unspecified() const { return *this == Ipv6Address{}; }
  // ::1 (RFC 4291 §2.5.3).
  bool is_loopback() const { return *this == Ipv6Address{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}; }
  // ff00::/8 (RFC 4291 §2.7).
  bool is_multicast() const { return bytes[0] == 0xff; }
  // fe80::/10 (RFC 4291 §2.5.6).
  bool is_link_local_unicast() const { return bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80; }
  // ff02::1:ff00:0/104 (RFC 4291 §2.7.1): where this address's Neighbor Solicitations are sent.
  bool is_solicited_node_multicast() const {
    static constexpr uint8_t kPrefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};
    return std::memcmp(bytes.data(), kPrefix, sizeof(kPrefix)) == 0;
  }
  // RFC 4291 §2.7.1: the prefix ff02::1:ff00:0/104 followed by this address's low 24 bits, so that
  // the few addresses sharing them (one interface's, usually) share one multicast group.
  Ipv6Address solicited_node_multicast() const {
    Ipv6Address a{{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0}};
    std::memcpy(a.bytes.data() + 13, bytes.data() + 13, 3);
    return a;
  }
  // RFC 2464 §7: an IPv6 multicast packet goes to Ethernet 33:33 followed by the last four octets
  // of its destination. Meaningful only for a multicast address (is_multicast()).
  MacAddress multicast_mac() const { return {{0x33, 0x33, bytes[12], bytes[13], bytes[14], bytes[15]}}; }

  bool operator==(const Ipv6Address&) const = default;
  auto operator<=>(const Ipv6Address&) const = default;
  // RFC 5952 canonical text (inet_ntop): lower case, longest zero run as ::.
  std::string to_string() const;
};

}  // namespace bypass::inet
