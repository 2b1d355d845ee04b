// ICMPv4 header (RFC 792): type, code, checksum and the 4-byte "rest of header".
#pragma once

#include <cstddef>

#include "base/buffer_list.h"
#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

struct IcmpHeader {
  static constexpr size_t kLength = 8;
  enum Type : uint8_t { kEchoReply = 0, kDestinationUnreachable = 3, kEchoRequest = 8, kTimeExceeded = 11 };
  enum UnreachableCode : uint8_t {
    kNetUnreachable = 0, kHostUnreachable = 1, kProtocolUnreachable = 2, kPortUnreachable = 3,
    kFragmentationNeeded = 4,
  };
  uint8_t type = 0;
  uint8_t code = 0;
  uint16_t checksum = 0;
  uint32_t rest = 0;  // echo: identifier << 16 | sequence; frag-needed: next-hop MTU in low 16 bits

  // `message` is the whole ICMP message (header + body); its checksum is verified over all of it.
  static const char* parse(const BufferList& message, IcmpHeader& out);
  // Emits the header with the checksum computed over header + `body`.
  void emit(uint8_t* out, const BufferList& body) const;
};

}  // namespace bypass::inet
