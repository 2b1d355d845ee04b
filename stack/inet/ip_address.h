// An IPv4 or IPv6 address as one value, for what does not care which family it is (the TCP 4-tuple,
// the connection table, diagnostics). IPv4 is held in IPv4-mapped form (::ffff:a.b.c.d, RFC 4291
// §2.5.5.2), so equality is two 64-bit compares for either family and the family needs no tag:
// the mapped prefix never appears on the wire as a real IPv6 source or destination (RFC 4291
// §2.5.5.2, RFC 6890), and Ipv6Layer never hands TCP such an address.
#pragma once

#include <bit>
#include <compare>
#include <cstdint>
#include <cstring>
#include <string>

#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

class IpAddress {
 public:
  // 0.0.0.0 (an IPv4 address, as the tuple's fields were before IPv6).
  IpAddress() : IpAddress(Ipv4Address{}) {}
  // Implicit on purpose: every IPv4 caller (connect(ip_of(2), 80)) keeps compiling unchanged.
  IpAddress(Ipv4Address v4) {  // NOLINT(google-explicit-constructor)
    // Written in place, not through a 16-byte scratch copy: this runs for every IPv4 segment
    // received (its tuple) and the compiler left the copy in.
    words_[0] = 0;
    std::memcpy(octets() + 8, &kMappedPrefix, sizeof(kMappedPrefix));
    store_be32(octets() + 12, v4.value);
  }
  IpAddress(const Ipv6Address& v6) { std::memcpy(words_, v6.bytes.data(), sizeof(words_)); }  // NOLINT

  bool is_v4() const { return words_[0] == 0 && low_prefix() == kMappedPrefix; }
  bool is_v6() const { return !is_v4(); }
  // Meaningful for an IPv4 address only.
  Ipv4Address v4() const { return Ipv4Address{load_be32(octets() + 12)}; }
  // The 16 octets (an IPv4-mapped address for IPv4).
  Ipv6Address v6() const {
    Ipv6Address a;
    std::memcpy(a.bytes.data(), words_, sizeof(words_));
    return a;
  }
  // The two halves in memory order, for hashing (not numeric values: byte order is the machine's).
  uint64_t high_word() const { return words_[0]; }
  uint64_t low_word() const { return words_[1]; }

  bool operator==(const IpAddress& other) const {
    return words_[0] == other.words_[0] && words_[1] == other.words_[1];
  }
  // Octet order (off the packet path: sorting for diagnostics). IPv4 sorts among itself numerically.
  std::strong_ordering operator<=>(const IpAddress& other) const {
    const int c = std::memcmp(words_, other.words_, sizeof(words_));
    return c < 0 ? std::strong_ordering::less : c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal;
  }
  // Dotted quad for IPv4, RFC 5952 text for IPv6.
  std::string to_string() const { return is_v4() ? v4().to_string() : v6().to_string(); }

 private:
  // Octets 8..11 of the mapped form (00 00 ff ff) read in memory order.
  static constexpr uint32_t kMappedPrefix =
      std::endian::native == std::endian::little ? 0xffff0000u : 0x0000ffffu;
  uint8_t* octets() { return reinterpret_cast<uint8_t*>(words_); }
  const uint8_t* octets() const { return reinterpret_cast<const uint8_t*>(words_); }
  uint32_t low_prefix() const {
    uint32_t prefix;
    std::memcpy(&prefix, octets() + 8, sizeof(prefix));
    return prefix;
  }

  uint64_t words_[2];  // the 16 octets in network order
};

// "a.b.c.d:port", or "[v6]:port" for IPv6 (RFC 5952 §6).
inline std::string endpoint_to_string(const IpAddress& address, uint16_t port) {
  return address.is_v4() ? address.to_string() + ":" + std::to_string(port)
                         : "[" + address.to_string() + "]:" + std::to_string(port);
}

}  // namespace bypass::inet
