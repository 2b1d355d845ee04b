// IPv4 header (RFC 791). Options are length-checked and skipped; we never emit any.
#pragma once

#include <cstddef>

#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

enum class IpProtocol : uint8_t { Icmp = 1, Tcp = 6, Udp = 17 };

struct Ipv4Header {
  static constexpr size_t kMinLength = 20;
  static constexpr size_t kMaxLength = 60;
  static constexpr uint16_t kFlagDontFragment = 0x4000;
  static constexpr uint16_t kFlagMoreFragments = 0x2000;
  static constexpr uint16_t kOffsetMask = 0x1fff;

  uint8_t header_length = kMinLength;  // bytes (IHL * 4)
  uint8_t tos = 0;
  uint16_t total_length = 0;
  uint16_t identification = 0;
  uint16_t flags_fragment = 0;  // flags in the top 3 bits, offset in 8-byte units below
  uint8_t ttl = 64;
  uint8_t protocol = 0;
  uint16_t checksum = 0;
  Ipv4Address source;
  Ipv4Address destination;

  bool more_fragments() const { return flags_fragment & kFlagMoreFragments; }
  bool dont_fragment() const { return flags_fragment & kFlagDontFragment; }
  size_t fragment_offset_bytes() const { return static_cast<size_t>(flags_fragment & kOffsetMask) * 8; }
  bool is_fragment() const { return more_fragments() || (flags_fragment & kOffsetMask) != 0; }
  size_t payload_length() const { return total_length - header_length; }

  // `len` is the bytes available after the link header (may include link padding beyond
  // total_length). With `verify_checksum` a header whose checksum does not sum to zero is rejected.
  static const char* parse(const uint8_t* data, size_t len, bool verify_checksum, Ipv4Header& out);
  // Writes a 20-byte header. With `compute_checksum` false the field is left 0 for the NIC.
  void emit(uint8_t* out, bool compute_checksum) const;
};

}  // namespace bypass::inet
