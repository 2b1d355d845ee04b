#include "stack/inet/wire/ipv4.h"

#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

const char* Ipv4Header::parse(const uint8_t* data, size_t len, bool verify_checksum,
                              Ipv4Header& out) {
  if (len < kMinLength) return "ipv4: packet shorter than the 20-byte header";
  if (data[0] >> 4 != 4) return "ipv4: version is not 4";
  out.header_length = static_cast<uint8_t>((data[0] & 0x0f) * 4);
  if (out.header_length < kMinLength) return "ipv4: IHL below 5";
  if (out.header_length > len) return "ipv4: IHL beyond the end of the packet";
  out.tos = data[1];
  out.total_length = load_be16(data + 2);
  if (out.total_length < out.header_length) return "ipv4: total length smaller than the header";
  if (out.total_length > len) return "ipv4: total length beyond the end of the frame";
  out.identification = load_be16(data + 4);
  out.flags_fragment = load_be16(data + 6);
  if (out.flags_fragment & 0x8000) return "ipv4: reserved flag bit set";
  out.ttl = data[8];
  out.protocol = data[9];
  out.checksum = load_be16(data + 10);
  out.source.value = load_be32(data + 12);
  out.destination.value = load_be32(data + 16);
  if (verify_checksum && internet_checksum(data, out.header_length) != 0)
    return "ipv4: bad header checksum";
  if (out.fragment_offset_bytes() + out.payload_length() > 65535)
    return "ipv4: fragment extends beyond 65535 bytes";
  return nullptr;
}

void Ipv4Header::emit(uint8_t* out, bool compute_checksum) const {
  out[0] = 0x45;
  out[1] = tos;
  store_be16(out + 2, total_length);
  store_be16(out + 4, identification);
  store_be16(out + 6, flags_fragment);
  out[8] = ttl;
  out[9] = protocol;
  store_be16(out + 10, 0);
  store_be32(out + 12, source.value);
  store_be32(out + 16, destination.value);
  if (compute_checksum) store_be16(out + 10, internet_checksum(out, kMinLength));
}

}  // namespace bypass::inet
