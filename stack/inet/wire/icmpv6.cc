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
  const IcmpView view(raw, kLength);
  out.type = view.type();
  out.code = view.code();
  out.checksum = view.checksum();
  out.rest = view.rest();
  return nullptr;
}

void Icmpv6Header::emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination,
                        const BufferList& body) const {
  const IcmpView view(out, kLength);
  view.set_type(type);
  view.set_code(code);
  view.set_checksum(0);
  view.set_rest(rest);
  ChecksumAccumulator sum;
  add_ipv6_pseudo_header(sum, source, destination, static_cast<uint32_t>(kLength + body.length()), kIpv6Icmpv6);
  sum.add(out, kLength);
  sum.add(body, 0, body.length());
  view.set_checksum(sum.finish());
}

const char* NdOptions::parse(const uint8_t* data, size_t len, NdOptions& out) {
  out = NdOptions{};
  size_t at = 0;
  while (at < len) {
    if (len - at < 2) return "nd: option truncated";
    const uint8_t* o = data + at;
    const uint8_t type = nd_option_field::Type::get(o);
    const size_t units = nd_option_field::Length::get(o);
    // §4.6: "Nodes MUST silently discard an ND packet that contains an option with length zero"
    // (it would also never advance this loop).
    if (units == 0) return "nd: option length zero";
    const size_t bytes = units * kUnit;
    if (bytes > len - at) return "nd: option runs past the end of the message";
    switch (type) {
      case kSourceLinkLayerAddress:
      case kTargetLinkLayerAddress: {
        if (units != kLinkLayerOptionUnits) return "nd: link-layer address option length is not 1";
        (type == kSourceLinkLayerAddress ? out.source_link_layer : out.target_link_layer) =
            nd_option_field::LinkLayerAddress::get(o);
        break;
      }
      case kPrefixInformation: {
        if (units != kPrefixOptionUnits) return "nd: prefix information option length is not 4";
        NdPrefixInformation p;
        p.prefix_length = nd_option_field::PrefixLength::get(o);
        if (p.prefix_length > kMaxPrefixLength) return "nd: prefix length above 128";
        p.on_link = nd_option_field::PrefixFlags::get(o) & kPrefixOnLink;
        p.autonomous = nd_option_field::PrefixFlags::get(o) & kPrefixAutonomous;
        p.valid_lifetime = nd_option_field::ValidLifetime::get(o);
        p.preferred_lifetime = nd_option_field::PreferredLifetime::get(o);
        p.prefix = nd_option_field::Prefix::get(o);
        if (out.prefix_count < kMaxPrefixes)
          out.prefixes[out.prefix_count++] = p;
        else if (out.prefixes_ignored < 255)
          ++out.prefixes_ignored;
        break;
      }
      case kMtu:
        if (units != kMtuOptionUnits) return "nd: MTU option length is not 1";
        out.mtu = nd_option_field::Mtu::get(o);
        break;
      default:
        break;  // unrecognized (Redirected Header among them): skipped by its length
    }
    at += bytes;
  }
  return nullptr;
}

void NdOptions::emit_link_layer(uint8_t* out, Type type, const MacAddress& mac) {
  nd_option_field::Type::set(out, type);
  nd_option_field::Length::set(out, kLinkLayerOptionUnits);
  nd_option_field::LinkLayerAddress::set(out, mac);
}

const char* RouterSolicitation::parse(const uint8_t* data, size_t len, RouterSolicitation& out) {
  if (len < kLength) return "nd: router solicitation shorter than 8 bytes";
  const IcmpView view(data, len);
  if (view.type() != Icmpv6Header::kRouterSolicitation) return "nd: not a router solicitation";
  out.code = view.code();
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

const char* RouterAdvertisement::parse(const uint8_t* data, size_t len, RouterAdvertisement& out) {
  if (len < kLength) return "nd: router advertisement shorter than 16 bytes";
  const IcmpView view(data, len);
  if (view.type() != Icmpv6Header::kRouterAdvertisement) return "nd: not a router advertisement";
  out.code = view.code();
  out.current_hop_limit = nd_field::CurrentHopLimit::get(data);
  out.managed = nd_field::RouterFlags::get(data) & kRaManaged;
  out.other = nd_field::RouterFlags::get(data) & kRaOther;
  out.router_lifetime = nd_field::RouterLifetime::get(data);
  out.reachable_time = nd_field::ReachableTime::get(data);
  out.retrans_timer = nd_field::RetransTimer::get(data);
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

const char* NeighborSolicitation::parse(const uint8_t* data, size_t len, NeighborSolicitation& out) {
  if (len < kLength) return "nd: neighbor solicitation shorter than 24 bytes";
  const IcmpView view(data, len);
  if (view.type() != Icmpv6Header::kNeighborSolicitation) return "nd: not a neighbor solicitation";
  out.code = view.code();
  out.target = nd_field::Target::get(data);  // after 4 reserved bytes
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

void NeighborSolicitation::emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination) const {
  const IcmpView view(out, emitted_length());
  view.set_type(Icmpv6Header::kNeighborSolicitation);
  view.set_code(code);
  view.set_checksum(0);
  view.set_rest(0);  // reserved
  nd_field::Target::set(out, target);
  if (options.source_link_layer)
    NdOptions::emit_link_layer(out + kLength, NdOptions::kSourceLinkLayerAddress, *options.source_link_layer);
  view.set_checksum(icmpv6_checksum(source, destination, out, emitted_length()));
}

const char* NeighborAdvertisement::parse(const uint8_t* data, size_t len, NeighborAdvertisement& out) {
  if (len < kLength) return "nd: neighbor advertisement shorter than 24 bytes";
  const IcmpView view(data, len);
  if (view.type() != Icmpv6Header::kNeighborAdvertisement) return "nd: not a neighbor advertisement";
  out.code = view.code();
  const uint32_t flags = nd_field::NeighborFlags::get(data);  // the rest of the word is reserved, ignored
  out.router = flags & kFlagRouter;
  out.solicited = flags & kFlagSolicited;
  out.override_flag = flags & kFlagOverride;
  out.target = nd_field::Target::get(data);
  return NdOptions::parse(data + kLength, len - kLength, out.options);
}

void NeighborAdvertisement::emit(uint8_t* out, const Ipv6Address& source, const Ipv6Address& destination) const {
  const IcmpView view(out, emitted_length());
  view.set_type(Icmpv6Header::kNeighborAdvertisement);
  view.set_code(code);
  view.set_checksum(0);
  nd_field::NeighborFlags::set(out, (router ? kFlagRouter : 0) | (solicited ? kFlagSolicited : 0) |
                                        (override_flag ? kFlagOverride : 0));
  nd_field::Target::set(out, target);
  if (options.target_link_layer)
    NdOptions::emit_link_layer(out + kLength, NdOptions::kTargetLinkLayerAddress, *options.target_link_layer);
  view.set_checksum(icmpv6_checksum(source, destination, out, emitted_length()));
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
