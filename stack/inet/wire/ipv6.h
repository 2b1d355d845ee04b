// IPv6 fixed header (RFC 8200 §3) and a bounded walk over its extension headers (RFC 8200 §4).
// Used by Ipv6Layer (ipv6_layer.h), which runs when the stack has an IPv6 address.
#pragma once

#include <cstddef>

#include "stack/inet/wire/field.h"

namespace bypass::inet {

// Next Header values (IANA "Assigned Internet Protocol Numbers", RFC 8200 §4.1 for the extension
// headers). The upper-layer ones share their numbers with IPv4's Protocol field.
enum Ipv6NextHeader : uint8_t {
  kIpv6HopByHop = 0,
  kIpv6Tcp = 6,
  kIpv6Udp = 17,
  kIpv6Routing = 43,
  kIpv6Fragment = 44,
  kIpv6Esp = 50,
  kIpv6Ah = 51,
  kIpv6Icmpv6 = 58,
  kIpv6NoNextHeader = 59,
  kIpv6DestinationOptions = 60,
};

// RFC 8200 §3: where each field of the fixed header lies.
namespace ipv6_field {
using VersionClassFlow = Field<0, 4>;
using Version = BitField<VersionClassFlow, 28, 0xf>;
using TrafficClass = BitField<VersionClassFlow, 20, 0xff>;
using FlowLabel = BitField<VersionClassFlow, 0, 0xfffff>;
using PayloadLength = Field<4, 2>;
using NextHeader = Field<6, 1>;
using HopLimit = Field<7, 1>;
using Source = Field<8, 16>;
using Destination = Field<24, 16>;
}  // namespace ipv6_field

// The two octets every extension header starts with (RFC 8200 §4.3-§4.6; the Fragment header's
// second octet is reserved) and the fields of those this stack reads.
namespace ipv6_extension_field {
using NextHeader = Field<0, 1>;
using HeaderExtLength = Field<1, 1>;  // 8-octet units after the first 8 (not in a Fragment header)
using RoutingType = Field<2, 1>;      // Routing header (§4.4)
using SegmentsLeft = Field<3, 1>;
using FragmentOffsetFlags = Field<2, 2>;  // Fragment header (§4.5): offset in the top 13 bits, M last
using FragmentIdentification = Field<4, 4>;
// An option in Hop-by-Hop or Destination Options (§4.2): type, then (but for Pad1) data length.
constexpr size_t kOptions = 2;  // where a Hop-by-Hop or Destination Options header's options start
using OptionType = Field<0, 1>;
using OptionDataLength = Field<1, 1>;
}  // namespace ipv6_extension_field

template <typename Byte>
class Ipv6View : public HeaderView<Byte> {
 public:
  static constexpr size_t kHeaderLength = ipv6_field::Destination::kEnd;
  Ipv6View(Byte* data, size_t size) : HeaderView<Byte>(data, size) {}

  // nullptr when the bytes hold an IPv6 header, otherwise what is wrong (the payload length is
  // checked by Ipv6Header::parse, which knows whether link padding may follow).
  const char* check_len() const {
    if (this->size() < kHeaderLength) return "ipv6: packet shorter than the 40-byte header";
    if (version() != 6) return "ipv6: version is not 6";
    return nullptr;
  }
  uint8_t version() const { return static_cast<uint8_t>(this->template get<ipv6_field::Version>()); }
  uint8_t traffic_class() const { return static_cast<uint8_t>(this->template get<ipv6_field::TrafficClass>()); }
  uint32_t flow_label() const { return this->template get<ipv6_field::FlowLabel>(); }
  uint16_t payload_length() const { return this->template get<ipv6_field::PayloadLength>(); }
  uint8_t next_header() const { return this->template get<ipv6_field::NextHeader>(); }
  uint8_t hop_limit() const { return this->template get<ipv6_field::HopLimit>(); }
  Ipv6Address source() const { return this->template get<ipv6_field::Source>(); }
  Ipv6Address destination() const { return this->template get<ipv6_field::Destination>(); }
  Byte* payload() const { return this->data() + kHeaderLength; }

  // Version 6 with this traffic class and flow label (the first 32-bit word).
  void set_version_class_flow(uint8_t traffic_class, uint32_t flow_label) const {
    this->template set<ipv6_field::VersionClassFlow>(uint32_t{6} << 28 | uint32_t{traffic_class} << 20 |
                                                     (flow_label & 0xfffff));
  }
  void set_payload_length(uint16_t v) const { this->template set<ipv6_field::PayloadLength>(v); }
  void set_next_header(uint8_t v) const { this->template set<ipv6_field::NextHeader>(v); }
  void set_hop_limit(uint8_t v) const { this->template set<ipv6_field::HopLimit>(v); }
  void set_source(const Ipv6Address& v) const { this->template set<ipv6_field::Source>(v); }
  void set_destination(const Ipv6Address& v) const { this->template set<ipv6_field::Destination>(v); }
};

struct Ipv6Header {
  static constexpr size_t kLength = Ipv6View<const uint8_t>::kHeaderLength;
  static constexpr uint8_t kVersion = 6;
  static constexpr uint32_t kFlowLabelMask = 0xfffff;
  // RFC 8200 §5: every link an IPv6 packet crosses carries at least 1280 bytes.
  static constexpr size_t kMinimumMtu = 1280;

  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;      // 20 bits
  uint16_t payload_length = 0;  // bytes after this header, extension headers included
  uint8_t next_header = 0;
  uint8_t hop_limit = 64;
  Ipv6Address source;
  Ipv6Address destination;

  // `len` is the bytes available after the link header, which may hold link padding beyond the
  // payload length. A payload length of 0 is taken literally: jumbograms (RFC 2675, Hop-by-Hop
  // Jumbo Payload option) are not supported, and a Hop-by-Hop header then fails the walk below.
  static const char* parse(const uint8_t* data, size_t len, Ipv6Header& out);
  // Writes the 40-byte header.
  void emit(uint8_t* out) const;
};

// The Fragment header (RFC 8200 §4.5).
struct Ipv6FragmentHeader {
  static constexpr size_t kLength = 8;
  static constexpr uint16_t kOffsetMask = 0xfff8;  // offset in 8-byte units, in the top 13 bits
  static constexpr uint16_t kMoreFragments = 0x0001;

  uint8_t next_header = 0;
  uint16_t offset_bytes = 0;  // a multiple of 8
  bool more_fragments = false;
  uint32_t identification = 0;

  // RFC 6946: offset 0 without M is an "atomic fragment", to be processed as a whole packet.
  bool is_atomic() const { return offset_bytes == 0 && !more_fragments; }
  static const char* parse(const uint8_t* data, size_t len, Ipv6FragmentHeader& out);
  void emit(uint8_t* out) const;
};

// What the sender of a packet is to be told with an ICMPv6 Parameter Problem (RFC 4443 §3.4): the
// code and the offset, from the start of the IPv6 header, of the octet at fault.
struct Ipv6ParameterProblem {
  enum Code : uint8_t {
    kErroneousHeaderField = 0, kUnrecognizedNextHeader = 1, kUnrecognizedOption = 2,
    kIncompleteHeaderChain = 3,  // RFC 7112 §5: a first fragment without the whole header chain
  };
  uint8_t code = 0;
  uint32_t pointer = 0;
};

struct Ipv6Extensions {
  // Headers walked before giving up. RFC 8200 §4 sets no limit, and RFC 8883 defines the ICMPv6
  // errors of nodes that discard packets over such processing limits. Every header is at least 8
  // bytes, so the walk always ends, but a 64 KiB chain of empty Destination Options would otherwise
  // cost thousands of steps per packet.
  static constexpr size_t kMaxHeaders = 8;

  uint8_t upper_protocol = 0;  // Next Header of the last header walked (kIpv6NoNextHeader: none)
  size_t upper_offset = 0;     // where that protocol's bytes start, from the start of the IPv6 header
  // Where the octet holding upper_protocol is, from the start of the IPv6 header: the Parameter
  // Problem pointer for an unrecognized Next Header (RFC 8200 §4, code 1).
  size_t upper_protocol_field = ipv6_field::NextHeader::kOffset;
  uint8_t header_count = 0;    // extension headers walked
  bool has_fragment = false;
  Ipv6FragmentHeader fragment;     // valid with has_fragment
  size_t fragment_header_offset = 0;  // where the Fragment header starts (end of the unfragmentable part)
  // Set together with an error when RFC 8200 asks for an ICMPv6 Parameter Problem to the source
  // (the caller sends it, subject to RFC 4443 §2.4 (e): not for a multicast destination unless
  // the option type says so, and rate limited); otherwise the packet is dropped silently.
  bool has_parameter_problem = false;
  Ipv6ParameterProblem parameter_problem;
};

// Walks the extension headers of `packet` (the IPv6 header and its payload, `header` parsed from
// it; bytes beyond 40 + payload_length are ignored). Hop-by-Hop and Destination Options are read
// option by option (§4.2 action bits), Routing and Fragment checked and skipped; the walk stops at
// the first other Next Header value (the upper layer, or one the caller does not know: RFC 8200 §4
// has it answer with a Parameter Problem of code 1 if so), or at a Fragment header that is not
// atomic (what follows is a fragment of the rest, for reassembly).
const char* walk_ipv6_extensions(const uint8_t* packet, size_t len, const Ipv6Header& header,
                                 Ipv6Extensions& out);

}  // namespace bypass::inet
