// TCP header (RFC 9293 §3.1) and the options this stack speaks: MSS (RFC 9293 §3.2), window
// scale and timestamps (RFC 7323 §2, §3), SACK-permitted and SACK blocks (RFC 2018 §2, §3).
#pragma once

#include <cstddef>
#include <optional>

#include "base/buffer_list.h"
#include "stack/inet/wire/bytes.h"
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

struct TcpHeader {
  static constexpr size_t kMinLength = 20;
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
