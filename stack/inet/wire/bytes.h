// Big-endian loads/stores and the address types shared by every header representation.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

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

}  // namespace bypass::inet
