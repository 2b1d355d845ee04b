// IPv4 header (RFC 791). Options are length-checked and skipped; we never emit any.
#pragma once

#include <cstddef>

#include "stack/inet/wire/field.h"

namespace bypass::inet {

enum class IpProtocol : uint8_t { Icmp = 1, Tcp = 6, Udp = 17 };

// RFC 791 §3.1: where each field of the fixed header lies.
namespace ipv4_field {
using VersionIhl = Field<0, 1>;
using Version = BitField<VersionIhl, 4, 0xf>;
using Ihl = BitField<VersionIhl, 0, 0xf>;  // header length in 32-bit words
using Tos = Field<1, 1>;
using TotalLength = Field<2, 2>;
using Identification = Field<4, 2>;
using FlagsFragment = Field<6, 2>;  // flags in the top 3 bits, offset in 8-byte units below
using Ttl = Field<8, 1>;
using Protocol = Field<9, 1>;
using Checksum = Field<10, 2>;
using Source = Field<12, 4>;
using Destination = Field<16, 4>;
}  // namespace ipv4_field

template <typename Byte>
class Ipv4View : public HeaderView<Byte> {
 public:
  static constexpr size_t kFixedLength = ipv4_field::Destination::kEnd;
  Ipv4View(Byte* data, size_t size) : HeaderView<Byte>(data, size) {}

  // nullptr when the bytes hold an IPv4 header whose IHL fits in them, otherwise what is wrong.
  const char* check_len() const {
    if (this->size() < kFixedLength) return "ipv4: packet shorter than the 20-byte header";
    if (version() != 4) return "ipv4: version is not 4";
    if (header_length() < kFixedLength) return "ipv4: IHL below 5";
    if (header_length() > this->size()) return "ipv4: IHL beyond the end of the packet";
    return nullptr;
  }
  uint8_t version() const { return static_cast<uint8_t>(this->template get<ipv4_field::Version>()); }
  size_t header_length() const { return size_t{this->template get<ipv4_field::Ihl>()} * 4; }
  uint8_t tos() const { return this->template get<ipv4_field::Tos>(); }
  uint16_t total_length() const { return this->template get<ipv4_field::TotalLength>(); }
  uint16_t identification() const { return this->template get<ipv4_field::Identification>(); }
  uint16_t flags_fragment() const { return this->template get<ipv4_field::FlagsFragment>(); }
  uint8_t ttl() const { return this->template get<ipv4_field::Ttl>(); }
  uint8_t protocol() const { return this->template get<ipv4_field::Protocol>(); }
  uint16_t checksum() const { return this->template get<ipv4_field::Checksum>(); }
  Ipv4Address source() const { return {this->template get<ipv4_field::Source>()}; }
  Ipv4Address destination() const { return {this->template get<ipv4_field::Destination>()}; }
  Byte* payload() const { return this->data() + header_length(); }

  // Sets version 4 and the IHL for `length` bytes (a multiple of 4).
  void set_version_and_header_length(size_t length) const {
    this->template set<ipv4_field::VersionIhl>(4u << 4 | length / 4);
  }
  void set_tos(uint8_t v) const { this->template set<ipv4_field::Tos>(v); }
  void set_total_length(uint16_t v) const { this->template set<ipv4_field::TotalLength>(v); }
  void set_identification(uint16_t v) const { this->template set<ipv4_field::Identification>(v); }
  void set_flags_fragment(uint16_t v) const { this->template set<ipv4_field::FlagsFragment>(v); }
  void set_ttl(uint8_t v) const { this->template set<ipv4_field::Ttl>(v); }
  void set_protocol(uint8_t v) const { this->template set<ipv4_field::Protocol>(v); }
  void set_checksum(uint16_t v) const { this->template set<ipv4_field::Checksum>(v); }
  void set_source(Ipv4Address v) const { this->template set<ipv4_field::Source>(v.value); }
  void set_destination(Ipv4Address v) const { this->template set<ipv4_field::Destination>(v.value); }
};

struct Ipv4Header {
  static constexpr size_t kMinLength = Ipv4View<const uint8_t>::kFixedLength;
  static constexpr size_t kMaxLength = 60;
  static constexpr uint16_t kFlagReserved = 0x8000;
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
