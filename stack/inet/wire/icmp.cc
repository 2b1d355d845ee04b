#include "stack/inet/wire/icmp.h"

#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

const char* IcmpHeader::parse(const BufferList& message, IcmpHeader& out) {
  if (message.length() < kLength) return "icmp: message shorter than 8 bytes";
  uint8_t raw[kLength];
  message.copy_out(0, kLength, raw);
  ChecksumAccumulator sum;
  sum.add(message, 0, message.length());
  if (sum.finish() != 0) return "icmp: bad checksum";
  out.type = raw[0];
  out.code = raw[1];
  out.checksum = load_be16(raw + 2);
  out.rest = load_be32(raw + 4);
  return nullptr;
}

void IcmpHeader::emit(uint8_t* out, const BufferList& body) const {
  out[0] = type;
  out[1] = code;
  store_be16(out + 2, 0);
  store_be32(out + 4, rest);
  ChecksumAccumulator sum;
  sum.add(out, kLength);
  sum.add(body, 0, body.length());
  store_be16(out + 2, sum.finish());
}

}  // namespace bypass::inet
