#include "stack/inet/wire/icmpv6.h"

#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

namespace {

// RFC 4861 §6.1, §7.1: ND messages are sent with Hop Limit 255 and a received one with any other
// value went through a router, i.e. came from off the link: it is discarded.
constexpr uint8_t kNdHopLimit = 255;
constexpr size_t kLinkLayerOptionUnits = 1;  // Ethernet (RFC 2464 §8): type, length, 6-byte MAC
constexpr size_t kPrefixOptionUnits = 4;     // RFC 4861 §4.6.2
constexpr size_t kMtuOptionUnits = 1;        // RFC 4861 §4.6.4
constexpr uint8_t kPrefixOnLink = 0x80;      // L
constexpr uint8_t kPrefixAutonomous = 0x40;  // A
constexpr uint8_t kRaManaged = 0x80;         // M
constexpr uint8_t kRaOther = 0x40;           // O
constexpr uint8_t kMaxPrefixLength = 128;

}  // namespace

uint16_t icmpv6_checksum(const Ipv6Address& source, const Ipv6Address& destination, const uint8_t* message,
                         size_t len) {
  ChecksumAccumulator sum;
  add_ipv6_pseudo_header(sum, source, destination, static_cast<uint32_t>(len), kIpv6Icmpv6);
  sum.add(message, len);
  return sum.finish();
}

const char* Icmpv6Header::parse(const BufferList& message, const Ipv6Address& source,
                                const Ipv6Address& destination, Icmpv6Header& out) {
  if (message.length() < kLength) return "icmpv6: message shorter than 8 bytes";
  uint8_t raw[kLength];
  message.copy_out(0, kLength, raw);
  ChecksumAccumulator sum;
  add_ipv6_pseudo_header(sum, source, destination, static_cast<uint32_t>(message.length()), kIpv6Icmpv6);
  sum.add(message, 0, message.length());
  if (sum.finish() != 0) return "icmpv6: bad checksum";
  out.type = raw[0];
  out.code = raw[1];
  out.checksum = load_be16(raw + 2);
  out.rest = load_be32(raw + 4);
  return nullptr;
}

void Icmpv6Header::emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination,
                        const BufferList& body) const {
  out[0] = type;
  out[1] = code;
  store_be16(out + 2, 0);
  store_be32(out + 4, rest);
  ChecksumAccumulator sum;
  add_ipv6_pseudo_header(sum, source, destination, static_cast<uint32_t>(kLength + body.length()), kIpv6Icmpv6);
  sum.add(out, kLength);
  sum.add(body, 0, body.length());
  store_be16(out + 2, sum.finish());
}

const char* NdOptions::parse(const uint8_t* data, size_t len, NdOptions& out) {
  out = NdOptions{};
  size_t at = 0;
  while (at < len) {
    if (len - at < 2) return "nd: option truncated";
    const uint8_t type = data[at];
    const size_t units = data[at + 1];
    // §4.6: "Nodes MUST silently discard an ND packet that contains an option with length zero"
    // (it would also never advance this loop).
    if (units == 0) return "nd: option length zero";
    const size_t bytes = units * kUnit;
    if (bytes > len - at) return "nd: option runs past the end of the message";
    const uint8_t* o = data + at;
    switch (type) {
      case kSourceLinkLayerAddress:
      case kTargetLinkLayerAddress: {
        if (units != kLinkLayerOptionUnits) return "nd: link-layer address option length is not 1";
        MacAddress mac;
        std::memcpy(mac.bytes.data(), o + 2, mac.bytes.size());
        (type == kSourceLinkLayerAddress ? out.source_link_layer : out.target_link_layer) = mac;
        break;
      }
      case kPrefixInformation: {
        if (units != kPrefixOptionUnits) return "nd: prefix information option length is not 4";
        NdPrefixInformation p;
        p.prefix_length = o[2];
        if (p.prefix_length > kMaxPrefixLength) return "nd: prefix length above 128";
        p.on_link = o[3] & kPrefixOnLink;
        p.autonomous = o[3] & kPrefixAutonomous;
        p.valid_lifetime = load_be32(o + 4);
        p.preferred_lifetime = load_be32(o + 8);
        p.prefix = Ipv6Address::from_bytes(o + 16);  // after 4 reserved bytes
        if (out.prefix_count < kMaxPrefixes)
          out.prefixes[out.prefix_count++] = p;
        else if (out.prefixes_ignored < 255)
          ++out.prefixes_ignored;
        break;
      }
      case kMtu:
        if (units != kMtuOptionUnits) return "nd: MTU option length is not 1";
        out.mtu = load_be32(o + 4);  // after 2 reserved bytes
        break;
      default:
        break;  // unrecognized (Redirected Header among them): skipped by its length
    }
    at += bytes;
  }
  return nullptr;
}

void NdOptions::emit_link_layer(uint8_t* out, Type type, const MacAddress& mac) {
  out[0] = type;
  out[1] = kLinkLayerOptionUnits;
  std::memcpy(out + 2, mac.bytes.data(), mac.bytes.size());
}

const char* RouterSolicitation::parse(const uint8_t* data, size_t len, RouterSolicitation& out) {
  if (len < kLength) return "nd: router solicitation shorter than 8 bytes";
  if (data[0] != Icmpv6Header::kRouterSolicitation) return "nd: not a router solicitation";
  out.code = data[1];
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

const char* RouterAdvertisement::parse(const uint8_t* data, size_t len, RouterAdvertisement& out) {
  if (len < kLength) return "nd: router advertisement shorter than 16 bytes";
  if (data[0] != Icmpv6Header::kRouterAdvertisement) return "nd: not a router advertisement";
  out.code = data[1];
  out.current_hop_limit = data[4];
  out.managed = data[5] & kRaManaged;
  out.other = data[5] & kRaOther;
  out.router_lifetime = load_be16(data + 6);
  out.reachable_time = load_be32(data + 8);
  out.retrans_timer = load_be32(data + 12);
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

const char* NeighborSolicitation::parse(const uint8_t* data, size_t len, NeighborSolicitation& out) {
  if (len < kLength) return "nd: neighbor solicitation shorter than 24 bytes";
  if (data[0] != Icmpv6Header::kNeighborSolicitation) return "nd: not a neighbor solicitation";
  out.code = data[1];
  out.target = Ipv6Address::from_bytes(data + 8);  // after 4 reserved bytes
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

void NeighborSolicitation::emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination) const {
  out[0] = Icmpv6Header::kNeighborSolicitation;
  out[1] = code;
  store_be16(out + 2, 0);
  store_be32(out + 4, 0);
  target.store(out + 8);
  if (options.source_link_layer)
    NdOptions::emit_link_layer(out + kLength, NdOptions::kSourceLinkLayerAddress, *options.source_link_layer);
  store_be16(out + 2, icmpv6_checksum(source, destination, out, emitted_length()));
}

const char* NeighborAdvertisement::parse(const uint8_t* data, size_t len, NeighborAdvertisement& out) {
  if (len < kLength) return "nd: neighbor advertisement shorter than 24 bytes";
  if (data[0] != Icmpv6Header::kNeighborAdvertisement) return "nd: not a neighbor advertisement";
  out.code = data[1];
  const uint32_t flags = load_be32(data + 4);  // the rest of the word is reserved, ignored
  out.router = flags & kFlagRouter;
  out.solicited = flags & kFlagSolicited;
  out.override_flag = flags & kFlagOverride;
  out.target = Ipv6Address::from_bytes(data + 8);
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

void NeighborAdvertisement::emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination) const {
  out[0] = Icmpv6Header::kNeighborAdvertisement;
  out[1] = code;
  store_be16(out + 2, 0);
  store_be32(out + 4, (router ? kFlagRouter : 0) | (solicited ? kFlagSolicited : 0) |
                          (override_flag ? kFlagOverride : 0));
  target.store(out + 8);
  if (options.target_link_layer)
    NdOptions::emit_link_layer(out + kLength, NdOptions::kTargetLinkLayerAddress, *options.target_link_layer);
  store_be16(out + 2, icmpv6_checksum(source, destination, out, emitted_length()));
}

const char* validate_router_solicitation(const Ipv6Header& ip, size_t icmp_length, const RouterSolicitation& rs) {
  // RFC 4861 §6.1.1.
  if (ip.hop_limit != kNdHopLimit) return "nd: router solicitation hop limit is not 255";
  if (rs.code != 0) return "nd: router solicitation code is not 0";
  if (icmp_length < RouterSolicitation::kLength) return "nd: router solicitation shorter than 8 bytes";
  if (ip.source.is_unspecified() && rs.options.source_link_layer)
    return "nd: router solicitation from :: carries a source link-layer address";
  return nullptr;
}

const char* validate_router_advertisement(const Ipv6Header& ip, size_t icmp_length, const RouterAdvertisement& ra) {
  // RFC 4861 §6.1.2: routers advertise from their link-local address (§6.2.3), which is how a
  // host tells routers apart across renumbering.
  if (!ip.source.is_link_local_unicast()) return "nd: router advertisement source is not link-local";
  if (ip.hop_limit != kNdHopLimit) return "nd: router advertisement hop limit is not 255";
  if (ra.code != 0) return "nd: router advertisement code is not 0";
  if (icmp_length < RouterAdvertisement::kLength) return "nd: router advertisement shorter than 16 bytes";
  return nullptr;
}

const char* validate_neighbor_solicitation(const Ipv6Header& ip, size_t icmp_length, const NeighborSolicitation& ns) {
  // RFC 4861 §7.1.1.
  if (ip.hop_limit != kNdHopLimit) return "nd: neighbor solicitation hop limit is not 255";
  if (ns.code != 0) return "nd: neighbor solicitation code is not 0";
  if (icmp_length < NeighborSolicitation::kLength) return "nd: neighbor solicitation shorter than 24 bytes";
  if (ns.target.is_multicast()) return "nd: neighbor solicitation target is multicast";
  // From :: it is Duplicate Address Detection (RFC 4862 §5.4.2): sent to the target's
  // solicited-node group, and with no link-layer address, since no neighbor may cache one for ::.
  if (ip.source.is_unspecified()) {
    if (!ip.destination.is_solicited_node_multicast())
      return "nd: neighbor solicitation from :: not to a solicited-node multicast address";
    if (ns.options.source_link_layer)
      return "nd: neighbor solicitation from :: carries a source link-layer address";
  }
  return nullptr;
}

const char* validate_neighbor_advertisement(const Ipv6Header& ip, size_t icmp_length,
                                            const NeighborAdvertisement& na) {
  // RFC 4861 §7.1.2.
  if (ip.hop_limit != kNdHopLimit) return "nd: neighbor advertisement hop limit is not 255";
  if (na.code != 0) return "nd: neighbor advertisement code is not 0";
  if (icmp_length < NeighborAdvertisement::kLength) return "nd: neighbor advertisement shorter than 24 bytes";
  if (na.target.is_multicast()) return "nd: neighbor advertisement target is multicast";
  // A multicast advertisement is unsolicited by definition (§7.2.6): only a reply to one
  // solicitation, sent to its source, may say Solicited.
  if (ip.destination.is_multicast() && na.solicited)
    return "nd: neighbor advertisement to a multicast address has the solicited flag";
  return nullptr;
}

}  // namespace bypass::inet
