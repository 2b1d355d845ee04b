// ICMPv4 header (RFC 792): type, code, checksum and the 4-byte "rest of header".
#pragma once

#include <cstddef>

#include "base/buffer_list.h"
#include "stack/inet/wire/field.h"

namespace bypass::inet {

// RFC 792 (and RFC 4443 §2.1 for ICMPv6, which keeps the layout): type, code, checksum and a
// 4-byte word whose meaning depends on the type.
namespace icmp_field {
using Type = Field<0, 1>;
using Code = Field<1, 1>;
using Checksum = Field<2, 2>;
using Rest = Field<4, 4>;
using EchoIdentifier = Field<4, 2>;  // echo request and reply
using EchoSequence = Field<6, 2>;
using NextHopMtu = Field<6, 2>;      // destination unreachable, fragmentation needed (RFC 1191 §4)
}  // namespace icmp_field

// An ICMP or ICMPv6 message header: the two share it.
template <typename Byte>
class IcmpView : public HeaderView<Byte> {
 public:
  static constexpr size_t kHeaderLength = icmp_field::Rest::kEnd;
  IcmpView(Byte* data, size_t size) : HeaderView<Byte>(data, size) {}

  const char* check_len() const {
    return this->size() < kHeaderLength ? "icmp: message shorter than 8 bytes" : nullptr;
  }
  uint8_t type() const { return this->template get<icmp_field::Type>(); }
  uint8_t code() const { return this->template get<icmp_field::Code>(); }
  uint16_t checksum() const { return this->template get<icmp_field::Checksum>(); }
  uint32_t rest() const { return this->template get<icmp_field::Rest>(); }
  uint16_t echo_identifier() const { return this->template get<icmp_field::EchoIdentifier>(); }
  uint16_t echo_sequence() const { return this->template get<icmp_field::EchoSequence>(); }
  Byte* payload() const { return this->data() + kHeaderLength; }
  void set_type(uint8_t v) const { this->template set<icmp_field::Type>(v); }
  void set_code(uint8_t v) const { this->template set<icmp_field::Code>(v); }
  void set_checksum(uint16_t v) const { this->template set<icmp_field::Checksum>(v); }
  void set_rest(uint32_t v) const { this->template set<icmp_field::Rest>(v); }
};

struct IcmpHeader {
  static constexpr size_t kLength = IcmpView<const uint8_t>::kHeaderLength;
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
