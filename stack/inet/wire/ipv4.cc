#include "stack/inet/wire/ipv4.h"

#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

const char* Ipv4Header::parse(const uint8_t* data, size_t len, bool verify_checksum,
                              Ipv4Header& out) {
  const Ipv4View view(data, len);
  if (const char* error = view.check_len()) return error;
  out.header_length = static_cast<uint8_t>(view.header_length());
  out.tos = view.tos();
  out.total_length = view.total_length();
  if (out.total_length < out.header_length) return "ipv4: total length smaller than the header";
  if (out.total_length > len) return "ipv4: total length beyond the end of the frame";
  out.identification = view.identification();
  out.flags_fragment = view.flags_fragment();
  if (out.flags_fragment & kFlagReserved) return "ipv4: reserved flag bit set";
  out.ttl = view.ttl();
  out.protocol = view.protocol();
  out.checksum = view.checksum();
  out.source = view.source();
  out.destination = view.destination();
  if (verify_checksum && internet_checksum(data, out.header_length) != 0)
    return "ipv4: bad header checksum";
  if (out.fragment_offset_bytes() + out.payload_length() > 65535)
    return "ipv4: fragment extends beyond 65535 bytes";
  return nullptr;
}

void Ipv4Header::emit(uint8_t* out, bool compute_checksum) const {
  const Ipv4View view(out, kMinLength);
  view.set_version_and_header_length(kMinLength);
  view.set_tos(tos);
  view.set_total_length(total_length);
  view.set_identification(identification);
  view.set_flags_fragment(flags_fragment);
  view.set_ttl(ttl);
  view.set_protocol(protocol);
  view.set_checksum(0);
  view.set_source(source);
  view.set_destination(destination);
  if (compute_checksum) view.set_checksum(internet_checksum(out, kMinLength));
}

}  // namespace bypass::inet
