// TCP header (RFC 9293 §3.1) and the options this stack speaks: MSS (RFC 9293 §3.2), window
// scale and timestamps (RFC 7323 §2, §3), SACK-permitted and SACK blocks (RFC 2018 §2, §3).
#pragma once

#include <cstddef>
#include <optional>

#include "base/buffer_list.h"
#include "stack/inet/wire/field.h"
#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

enum TcpFlags : uint8_t {
  kTcpFin = 0x01, kTcpSyn = 0x02, kTcpRst = 0x04, kTcpPsh = 0x08, kTcpAck = 0x10, kTcpUrg = 0x20,
  kTcpEce = 0x40, kTcpCwr = 0x80,
};

struct SackBlock {
  SeqNumber left;   // first sequence number of the block
  SeqNumber right;  // sequence number just after the block
  bool operator==(const SackBlock&) const = default;
};

struct TcpOptions {
  std::optional<uint16_t> mss;
  std::optional<uint8_t> window_scale;
  bool sack_permitted = false;
  std::optional<std::pair<uint32_t, uint32_t>> timestamp;  // TSval, TSecr
  SackBlock sack_blocks[4];
  uint8_t sack_count = 0;

  // Bytes the options occupy when emitted, padded to a multiple of 4.
  size_t emitted_length() const;
};

// RFC 9293 §3.1: where each field of the fixed header lies.
namespace tcp_field {
using SourcePort = Field<0, 2>;
using DestinationPort = Field<2, 2>;
using Seq = Field<4, 4>;
using Ack = Field<8, 4>;
using DataOffsetByte = Field<12, 1>;
using DataOffset = BitField<DataOffsetByte, 4, 0xf>;  // header length in 32-bit words
using Flags = Field<13, 1>;
using Window = Field<14, 2>;
using Checksum = Field<16, 2>;
using Urgent = Field<18, 2>;
}  // namespace tcp_field

// An option other than End and NOP: kind, length (of the whole option), then its data
// (RFC 9293 §3.1, RFC 7323 §2.2 and §3.2, RFC 2018 §2 and §3).
namespace tcp_option_field {
using Kind = Field<0, 1>;
using Length = Field<1, 1>;
using Mss = Field<2, 2>;
using WindowScale = Field<2, 1>;
using TimestampValue = Field<2, 4>;
using TimestampEcho = Field<6, 4>;
constexpr size_t kSackBlocks = 2;  // the first SACK block's offset; each is 8 bytes
using SackLeft = Field<0, 4>;      // within a SACK block
using SackRight = Field<4, 4>;
}  // namespace tcp_option_field

template <typename Byte>
class TcpView : public HeaderView<Byte> {
 public:
  static constexpr size_t kFixedLength = tcp_field::Urgent::kEnd;
  TcpView(Byte* data, size_t size) : HeaderView<Byte>(data, size) {}

  // nullptr when the bytes hold the header its data offset announces, otherwise what is wrong.
  const char* check_len() const {
    if (this->size() < kFixedLength) return "tcp: segment shorter than the 20-byte header";
    if (header_length() < kFixedLength) return "tcp: data offset below 5";
    if (header_length() > this->size()) return "tcp: data offset beyond the end of the segment";
    return nullptr;
  }
  uint16_t src_port() const { return this->template get<tcp_field::SourcePort>(); }
  uint16_t dst_port() const { return this->template get<tcp_field::DestinationPort>(); }
  SeqNumber seq_number() const { return SeqNumber(this->template get<tcp_field::Seq>()); }
  SeqNumber ack_number() const { return SeqNumber(this->template get<tcp_field::Ack>()); }
  size_t header_length() const { return size_t{this->template get<tcp_field::DataOffset>()} * 4; }
  uint8_t flags() const { return this->template get<tcp_field::Flags>(); }
  bool has(uint8_t flag) const { return flags() & flag; }
  uint16_t window() const { return this->template get<tcp_field::Window>(); }
  uint16_t checksum() const { return this->template get<tcp_field::Checksum>(); }
  uint16_t urgent() const { return this->template get<tcp_field::Urgent>(); }
  Byte* options() const { return this->data() + kFixedLength; }
  Byte* payload() const { return this->data() + header_length(); }

  void set_src_port(uint16_t v) const { this->template set<tcp_field::SourcePort>(v); }
  void set_dst_port(uint16_t v) const { this->template set<tcp_field::DestinationPort>(v); }
  void set_seq_number(SeqNumber v) const { this->template set<tcp_field::Seq>(v.raw()); }
  void set_ack_number(SeqNumber v) const { this->template set<tcp_field::Ack>(v.raw()); }
  // `length` in bytes, a multiple of 4; the reserved bits after it are cleared.
  void set_header_length(size_t length) const { this->template set<tcp_field::DataOffsetByte>(length / 4 << 4); }
  void set_flags(uint8_t v) const { this->template set<tcp_field::Flags>(v); }
  void set_window(uint16_t v) const { this->template set<tcp_field::Window>(v); }
  void set_checksum(uint16_t v) const { this->template set<tcp_field::Checksum>(v); }
  void set_urgent(uint16_t v) const { this->template set<tcp_field::Urgent>(v); }
};

struct TcpHeader {
  static constexpr size_t kMinLength = TcpView<const uint8_t>::kFixedLength;
  static constexpr size_t kMaxLength = 60;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  SeqNumber seq;
  SeqNumber ack;
  uint8_t header_length = kMinLength;  // data offset in bytes
  uint8_t flags = 0;
  uint16_t window = 0;
  uint16_t checksum = 0;
  uint16_t urgent = 0;
  TcpOptions options;

  bool has(uint8_t flag) const { return flags & flag; }

  // `data`/`len`: the header bytes available (at least the full header). Options are validated:
  // a length byte below 2, running past the header, or wrong for a fixed-size option is rejected.
  static const char* parse(const uint8_t* data, size_t len, TcpHeader& out);
  // Header length in bytes for these options.
  size_t emitted_length() const { return kMinLength + options.emitted_length(); }
  // Writes header and options with the checksum field 0; the caller fills it (software or offload).
  void emit(uint8_t* out) const;
};

// Sum of the IPv4 pseudo-header (RFC 9293 §3.1): source, destination, zero, protocol, TCP length.
uint16_t tcp_pseudo_header_sum(Ipv4Address source, Ipv4Address destination, size_t tcp_length);
// Full checksum over pseudo-header and `segment` (header + payload, checksum field included).
uint16_t tcp_checksum(Ipv4Address source, Ipv4Address destination, const BufferList& segment);
// The same over the IPv6 pseudo-header (RFC 9293 §3.1 defers to RFC 8200 §8.1 for IPv6).
uint16_t tcp_pseudo_header_sum(const Ipv6Address& source, const Ipv6Address& destination, size_t tcp_length);
uint16_t tcp_checksum(const Ipv6Address& source, const Ipv6Address& destination, const BufferList& segment);

}  // namespace bypass::inet
