// ICMPv6 (RFC 4443) and the Neighbor Discovery messages and options (RFC 4861 §4) IPv6 needs in
// place of ARP. Used by Icmpv6Layer and NeighborCache.
#pragma once

#include <cstddef>
#include <optional>

#include "base/buffer_list.h"
#include "stack/inet/wire/bytes.h"
#include "stack/inet/wire/icmp.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

// The Neighbor Discovery messages' fields after ICMPv6's type, code and checksum (RFC 4861 §4),
// and those of its options (§4.6). The first four bytes are read with IcmpView.
namespace nd_field {
using CurrentHopLimit = Field<4, 1>;  // Router Advertisement (§4.2)
using RouterFlags = Field<5, 1>;
using RouterLifetime = Field<6, 2>;
using ReachableTime = Field<8, 4>;
using RetransTimer = Field<12, 4>;
using NeighborFlags = Field<4, 4>;    // Neighbor Advertisement (§4.4): R, S, O, then reserved
using Target = Field<8, 16>;          // Neighbor Solicitation and Advertisement (§4.3, §4.4)
}  // namespace nd_field
namespace nd_option_field {
using Type = Field<0, 1>;
using Length = Field<1, 1>;            // in 8-octet units, type and length included
using LinkLayerAddress = Field<2, 6>;  // Source/Target Link-Layer Address on Ethernet (RFC 2464 §8)
using PrefixLength = Field<2, 1>;      // Prefix Information (§4.6.2)
using PrefixFlags = Field<3, 1>;
using ValidLifetime = Field<4, 4>;
using PreferredLifetime = Field<8, 4>;
using Prefix = Field<16, 16>;          // after 4 reserved bytes
using Mtu = Field<4, 4>;               // MTU (§4.6.4), after 2 reserved bytes
}  // namespace nd_option_field

struct Icmpv6Header {
  static constexpr size_t kLength = 8;
  // RFC 4443 §2.4 (c): an error message carries as much of the invoking packet as fits in the
  // minimum IPv6 MTU (RFC 8200 §5) with its own IPv6 header: 1280 - 40 bytes of ICMPv6 message.
  static constexpr size_t kMaxErrorMessage = Ipv6Header::kMinimumMtu - Ipv6Header::kLength;
  enum Type : uint8_t {
    kDestinationUnreachable = 1, kPacketTooBig = 2, kTimeExceeded = 3, kParameterProblem = 4,
    kEchoRequest = 128, kEchoReply = 129,
    kRouterSolicitation = 133, kRouterAdvertisement = 134, kNeighborSolicitation = 135,
    kNeighborAdvertisement = 136, kRedirect = 137,
  };
  enum UnreachableCode : uint8_t {  // RFC 4443 §3.1
    kNoRoute = 0, kAdministrativelyProhibited = 1, kBeyondScope = 2, kAddressUnreachable = 3,
    kPortUnreachable = 4,
  };
  enum TimeExceededCode : uint8_t { kHopLimitExceeded = 0, kReassemblyTimeExceeded = 1 };  // §3.3
  // Parameter Problem codes (§3.4): Ipv6ParameterProblem::Code.

  uint8_t type = 0;
  uint8_t code = 0;
  uint16_t checksum = 0;
  // Echo: identifier << 16 | sequence (§4.1, §4.2); Packet Too Big: the MTU (§3.2); Parameter
  // Problem: the pointer (§3.4); unused (0) in Destination Unreachable and Time Exceeded.
  uint32_t rest = 0;

  static Icmpv6Header echo(Type type, uint16_t identifier, uint16_t sequence) {
    return {type, 0, 0, static_cast<uint32_t>(identifier) << 16 | sequence};
  }
  static Icmpv6Header packet_too_big(uint32_t mtu) { return {kPacketTooBig, 0, 0, mtu}; }
  static Icmpv6Header parameter_problem(const Ipv6ParameterProblem& p) {
    return {kParameterProblem, p.code, 0, p.pointer};
  }
  uint16_t echo_identifier() const { return static_cast<uint16_t>(rest >> 16); }
  uint16_t echo_sequence() const { return static_cast<uint16_t>(rest); }
  uint32_t mtu() const { return rest; }
  uint32_t pointer() const { return rest; }
  // §2.1: types 0-127 are errors, which must never be answered with an error (§2.4 (e)).
  bool is_error() const { return type < 128; }

  // `message` is the whole ICMPv6 message; its checksum is verified over the pseudo-header of
  // `source` and `destination` (RFC 4443 §2.3, RFC 8200 §8.1) and the message.
  static const char* parse(const BufferList& message, const Ipv6Address& source,
                           const Ipv6Address& destination, Icmpv6Header& out);
  // Emits the header with the checksum computed over pseudo-header, header and `body`.
  void emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination,
            const BufferList& body) const;
};

// The checksum field's value for a contiguous ICMPv6 `message` whose checksum field holds 0
// (or 0 when verifying one that holds its checksum).
uint16_t icmpv6_checksum(const Ipv6Address& source, const Ipv6Address& destination, const uint8_t* message,
                         size_t len);

// Prefix Information (RFC 4861 §4.6.2).
struct NdPrefixInformation {
  uint8_t prefix_length = 0;
  bool on_link = false;     // L
  bool autonomous = false;  // A
  uint32_t valid_lifetime = 0;
  uint32_t preferred_lifetime = 0;
  Ipv6Address prefix;
};

// The options of an ND message (RFC 4861 §4.6) this stack may use; others are skipped (§4.6:
// "Receivers MUST silently ignore any options they do not recognize"). Link-layer addresses are
// Ethernet's (RFC 2464 §8: an option of length 1).
struct NdOptions {
  static constexpr size_t kUnit = 8;  // option lengths count 8-octet units, type and length included
  static constexpr size_t kMaxPrefixes = 4;
  enum Type : uint8_t {
    kSourceLinkLayerAddress = 1, kTargetLinkLayerAddress = 2, kPrefixInformation = 3,
    kRedirectedHeader = 4, kMtu = 5,
  };

  std::optional<MacAddress> source_link_layer;
  std::optional<MacAddress> target_link_layer;
  std::optional<uint32_t> mtu;
  NdPrefixInformation prefixes[kMaxPrefixes];
  uint8_t prefix_count = 0;
  uint8_t prefixes_ignored = 0;  // Prefix Information options beyond kMaxPrefixes

  // `data` is the option area: what follows the message's fixed part, to the end of the message.
  static const char* parse(const uint8_t* data, size_t len, NdOptions& out);
  // Writes a link-layer address option (8 bytes) of `type` at `out`.
  static void emit_link_layer(uint8_t* out, Type type, const MacAddress& mac);
};

// The fixed parts (RFC 4861 §4.1-§4.4), each with the ICMPv6 type and code ahead of it. `parse`
// reads a whole ICMPv6 message whose checksum the caller verified (Icmpv6Header::parse).
struct RouterSolicitation {  // §4.1: only parsed, to be validated and ignored by a host
  static constexpr size_t kLength = 8;
  uint8_t code = 0;
  NdOptions options;
  static const char* parse(const uint8_t* data, size_t len, RouterSolicitation& out);
};

struct RouterAdvertisement {  // §4.2: parsed so a host can ignore it safely (no SLAAC yet)
  static constexpr size_t kLength = 16;
  uint8_t code = 0;
  uint8_t current_hop_limit = 0;
  bool managed = false;  // M
  bool other = false;    // O
  uint16_t router_lifetime = 0;  // seconds
  uint32_t reachable_time = 0;   // milliseconds
  uint32_t retrans_timer = 0;    // milliseconds
  NdOptions options;
  static const char* parse(const uint8_t* data, size_t len, RouterAdvertisement& out);
};

struct NeighborSolicitation {  // §4.3
  static constexpr size_t kLength = 24;
  uint8_t code = 0;
  Ipv6Address target;
  NdOptions options;  // emit writes options.source_link_layer only

  static const char* parse(const uint8_t* data, size_t len, NeighborSolicitation& out);
  size_t emitted_length() const { return kLength + (options.source_link_layer ? NdOptions::kUnit : 0); }
  // Writes emitted_length() bytes, checksum included.
  void emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination) const;
};

struct NeighborAdvertisement {  // §4.4
  static constexpr size_t kLength = 24;
  static constexpr uint32_t kFlagRouter = 0x80000000;
  static constexpr uint32_t kFlagSolicited = 0x40000000;
  static constexpr uint32_t kFlagOverride = 0x20000000;
  uint8_t code = 0;
  bool router = false;
  bool solicited = false;
  bool override_flag = false;
  Ipv6Address target;
  NdOptions options;  // emit writes options.target_link_layer only

  static const char* parse(const uint8_t* data, size_t len, NeighborAdvertisement& out);
  size_t emitted_length() const { return kLength + (options.target_link_layer ? NdOptions::kUnit : 0); }
  void emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination) const;
};

// The receive-side validity checks of RFC 4861 §6.1.1, §6.1.2, §7.1.1 and §7.1.2 that the wire
// alone decides: `ip` is the carrying packet's header, `icmp_length` the ICMPv6 message's length
// (from the IP payload length). The checksum is Icmpv6Header::parse's, option lengths are
// NdOptions::parse's. A message that fails is discarded silently.
const char* validate_router_solicitation(const Ipv6Header& ip, size_t icmp_length, const RouterSolicitation& rs);
const char* validate_router_advertisement(const Ipv6Header& ip, size_t icmp_length, const RouterAdvertisement& ra);
const char* validate_neighbor_solicitation(const Ipv6Header& ip, size_t icmp_length, const NeighborSolicitation& ns);
const char* validate_neighbor_advertisement(const Ipv6Header& ip, size_t icmp_length,
                                            const NeighborAdvertisement& na);

}  // namespace bypass::inet
