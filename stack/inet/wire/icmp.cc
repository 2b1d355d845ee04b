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
  const IcmpView view(raw, kLength);
  out.type = view.type();
  out.code = view.code();
  out.checksum = view.checksum();
  out.rest = view.rest();
  return nullptr;
}

void IcmpHeader::emit(uint8_t* out, const BufferList& body) const {
  const IcmpView view(out, kLength);
  view.set_type(type);
  view.set_code(code);
  view.set_checksum(0);
  view.set_rest(rest);
  ChecksumAccumulator sum;
  sum.add(out, kLength);
  sum.add(body, 0, body.length());
  view.set_checksum(sum.finish());
}

}  // namespace bypass::inet
