#include "stack/inet/wire/ipv6.h"

#include <arpa/inet.h>

namespace bypass::inet {

namespace {

namespace extension = ipv6_extension_field;
constexpr size_t kPayloadLengthField = ipv6_field::PayloadLength::kOffset;  // a Parameter Problem pointer
constexpr size_t kExtensionUnit = 8;       // Hdr Ext Len counts 8-octet units after the first 8
constexpr size_t kMaxPacket = 65535;       // largest payload without jumbograms (RFC 8200 §4.5)

// Option types with a meaning of their own to this walk (RFC 8200 §4.2).
constexpr uint8_t kOptionPad1 = 0;
constexpr uint8_t kOptionPadN = 1;

// The action bits of an unrecognized option's type (RFC 8200 §4.2): its two high-order bits.
enum OptionAction : uint8_t { kSkip = 0, kDiscard = 1, kDiscardAndTell = 2, kDiscardAndTellUnicast = 3 };

// Length in bytes of the extension header at `at` from its Hdr Ext Len (RFC 8200 §4.3, §4.4, §4.6).
size_t extension_length(const uint8_t* packet, size_t at) {
  return (size_t{extension::HeaderExtLength::get(packet + at)} + 1) * kExtensionUnit;
}

// The TLV-encoded options of a Hop-by-Hop or Destination Options header (RFC 8200 §4.2), at
// [begin, end) in the packet. No option is processed here; an unrecognized one (anything but Pad1
// and PadN) is skipped or refused by its action bits.
const char* walk_options(const uint8_t* packet, size_t begin, size_t end, const Ipv6Address& destination,
                         Ipv6Extensions& out) {
  size_t at = begin;
  while (at < end) {
    const uint8_t type = extension::OptionType::get(packet + at);
    if (type == kOptionPad1) {  // the one option without length or data
      ++at;
      continue;
    }
    if (end - at < 2) return "ipv6: option without a length byte";
    const size_t data_length = extension::OptionDataLength::get(packet + at);
    if (data_length > end - at - 2) return "ipv6: option runs past its header";
    if (type != kOptionPadN) {
      switch (type >> 6) {
        case kSkip:
          break;
        case kDiscard:
          return "ipv6: unrecognized option that asks for a silent discard";
        case kDiscardAndTellUnicast:
          // Told only when the destination was not a multicast address.
          if (destination.is_multicast()) return "ipv6: unrecognized option that asks for a discard";
          [[fallthrough]];
        case kDiscardAndTell:
          out.has_parameter_problem = true;
          out.parameter_problem = {Ipv6ParameterProblem::kUnrecognizedOption, static_cast<uint32_t>(at)};
          return "ipv6: unrecognized option that asks for a discard";
      }
    }
    at += 2 + data_length;
  }
  return nullptr;
}

}  // namespace

std::optional<Ipv6Address> Ipv6Address::from_string(std::string_view text) {
  char z[INET6_ADDRSTRLEN];  // inet_pton wants a terminated string; no address text is longer
  if (text.size() >= sizeof(z)) return std::nullopt;
  std::memcpy(z, text.data(), text.size());
  z[text.size()] = '\0';
  Ipv6Address a;
  if (inet_pton(AF_INET6, z, a.bytes.data()) != 1) return std::nullopt;
  return a;
}

std::string Ipv6Address::to_string() const {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, bytes.data(), text, sizeof(text)) == nullptr) return "?";
  return text;
}

const char* Ipv6Header::parse(const uint8_t* data, size_t len, Ipv6Header& out) {
  const Ipv6View view(data, len);
  if (const char* error = view.check_len()) return error;
  out.traffic_class = view.traffic_class();
  out.flow_label = view.flow_label();
  out.payload_length = view.payload_length();
  if (out.payload_length > len - kLength) return "ipv6: payload length beyond the end of the frame";
  out.next_header = view.next_header();
  out.hop_limit = view.hop_limit();
  out.source = view.source();
  out.destination = view.destination();
  return nullptr;
}

void Ipv6Header::emit(uint8_t* out) const {
  const Ipv6View view(out, kLength);
  view.set_version_class_flow(traffic_class, flow_label);
  view.set_payload_length(payload_length);
  view.set_next_header(next_header);
  view.set_hop_limit(hop_limit);
  view.set_source(source);
  view.set_destination(destination);
}

const char* Ipv6FragmentHeader::parse(const uint8_t* data, size_t len, Ipv6FragmentHeader& out) {
  if (len < kLength) return "ipv6: fragment header truncated";
  // RFC 8200 §4.5: both reserved fields are ignored on reception.
  out.next_header = extension::NextHeader::get(data);
  const uint16_t offset_flags = extension::FragmentOffsetFlags::get(data);
  out.offset_bytes = offset_flags & kOffsetMask;  // 13-bit count of 8-byte units, already times 8
  out.more_fragments = offset_flags & kMoreFragments;
  out.identification = extension::FragmentIdentification::get(data);
  return nullptr;
}

void Ipv6FragmentHeader::emit(uint8_t* out) const {
  extension::NextHeader::set(out, next_header);
  extension::HeaderExtLength::set(out, 0);  // reserved in a Fragment header
  extension::FragmentOffsetFlags::set(out, (offset_bytes & kOffsetMask) | (more_fragments ? kMoreFragments : 0));
  extension::FragmentIdentification::set(out, identification);
}

const char* walk_ipv6_extensions(const uint8_t* packet, size_t len, const Ipv6Header& header,
                                 Ipv6Extensions& out) {
  out = Ipv6Extensions{};
  const size_t end = Ipv6Header::kLength + header.payload_length;
  if (end > len) return "ipv6: payload length beyond the end of the packet";
  size_t at = Ipv6Header::kLength;
  uint8_t next = header.next_header;
  for (;;) {
    if (next != kIpv6HopByHop && next != kIpv6DestinationOptions && next != kIpv6Routing &&
        next != kIpv6Fragment) {
      out.upper_protocol = next;
      out.upper_offset = at;
      return nullptr;
    }
    static_assert(Ipv6Extensions::kMaxHeaders == 8, "the error text below names the bound");
    if (out.header_count == Ipv6Extensions::kMaxHeaders) return "ipv6: more than 8 extension headers";
    // Every extension header starts with Next Header and Hdr Ext Len (RFC 8200 §4.3-§4.6; the
    // Fragment header's second octet is reserved, its length fixed) and is at least 8 bytes.
    if (end - at < kExtensionUnit) return "ipv6: extension header truncated";
    const size_t length = next == kIpv6Fragment ? Ipv6FragmentHeader::kLength : extension_length(packet, at);
    if (length > end - at) return "ipv6: extension header runs past the payload";
    switch (next) {
      case kIpv6HopByHop:
        // RFC 8200 §4.1: Hop-by-Hop may only come straight after the IPv6 header.
        if (out.header_count != 0) return "ipv6: hop-by-hop options header not first";
        [[fallthrough]];
      case kIpv6DestinationOptions:
        if (const char* e = walk_options(packet, at + extension::kOptions, at + length, header.destination, out)) return e;
        break;
      case kIpv6Routing:
        // RFC 8200 §4.4: no Routing Type is implemented here (type 0 is deprecated, RFC 5095). An
        // unrecognized type is ignored when Segments Left is 0; otherwise the packet is discarded
        // and the source told, pointing at the Routing Type.
        if (extension::SegmentsLeft::get(packet + at) != 0) {
          out.has_parameter_problem = true;
          out.parameter_problem = {Ipv6ParameterProblem::kErroneousHeaderField,
                                   static_cast<uint32_t>(at + extension::RoutingType::kOffset)};
          return "ipv6: routing header of an unrecognized type with segments left";
        }
        break;
      case kIpv6Fragment: {
        // RFC 8200 §4.1: each extension header occurs at most once (Destination Options twice).
        if (out.has_fragment) return "ipv6: more than one fragment header";
        Ipv6FragmentHeader& f = out.fragment;
        Ipv6FragmentHeader::parse(packet + at, end - at, f);  // length checked above
        out.has_fragment = true;
        out.fragment_header_offset = at;
        const size_t fragment_bytes = end - at - Ipv6FragmentHeader::kLength;
        // RFC 8200 §4.5: a fragment that is not the last must be a multiple of 8 bytes long, and
        // no fragment may reach beyond 65535 bytes of reassembled payload; both are answered
        // with a Parameter Problem of code 0 pointing at the field at fault.
        if (f.more_fragments && fragment_bytes % 8 != 0) {
          out.has_parameter_problem = true;
          out.parameter_problem = {Ipv6ParameterProblem::kErroneousHeaderField, kPayloadLengthField};
          return "ipv6: fragment with M set is not a multiple of 8 bytes";
        }
        // The reassembled payload: the unfragmentable part (without this header), then the data.
        if (at - Ipv6Header::kLength + f.offset_bytes + fragment_bytes > kMaxPacket) {
          out.has_parameter_problem = true;
          out.parameter_problem = {Ipv6ParameterProblem::kErroneousHeaderField,
                                   static_cast<uint32_t>(at + extension::FragmentOffsetFlags::kOffset)};
          return "ipv6: fragment extends beyond 65535 bytes";
        }
        ++out.header_count;
        if (!f.is_atomic()) {
          // What follows is one piece of the fragmentable part: reassembly walks it later.
          out.upper_protocol = f.next_header;
          out.upper_offset = at + Ipv6FragmentHeader::kLength;
          out.upper_protocol_field = at;
          return nullptr;
        }
        // RFC 6946 §4: an atomic fragment is processed as a whole packet.
        next = f.next_header;
        out.upper_protocol_field = at;
        at += Ipv6FragmentHeader::kLength;
        continue;
      }
    }
    ++out.header_count;
    next = extension::NextHeader::get(packet + at);
    out.upper_protocol_field = at;  // every extension header's Next Header is its first octet
    at += length;
  }
}

}  // namespace bypass::inet
