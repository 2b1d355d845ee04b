#include "stack/inet/wire/tcp_segmentation.h"

#include <algorithm>
#include <cstring>

#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/ipv6.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

TcpSegmentCutter::TcpSegmentCutter(const uint8_t* headers, const TxOffload& tx, size_t payload_length)
    : headers_(headers), l2_(tx.l2_length), l3_(tx.l3_length), l4_(tx.l4_length),
      header_length_(l2_ + l3_ + l4_), payload_length_(payload_length) {
  if (tx.segment_payload == 0 || l3_ < Ipv4Header::kMinLength || l4_ < TcpHeader::kMinLength ||
      header_length_ > kMaxHeaderLength)
    return;
  ipv6_ = Ipv6View(headers + l2_, l3_).version() == 6;  // the version field, first in both headers
  if (ipv6_ && l3_ < Ipv6Header::kLength) return;
  segment_ = tx.segment_payload;
  frames_ = std::max<size_t>(1, (payload_length + segment_ - 1) / segment_);
}

size_t TcpSegmentCutter::payload_length(size_t index) const {
  const size_t offset = payload_offset(index);
  return offset >= payload_length_ ? 0 : std::min(segment_, payload_length_ - offset);
}

void TcpSegmentCutter::write_headers(size_t index, uint8_t* out) const {
  std::memcpy(out, headers_, header_length_);
  const size_t length = payload_length(index);
  const bool last = index + 1 == frames_;
  uint8_t* ip = out + l2_;
  const TcpView tcp(ip + l3_, l4_);
  tcp.set_seq_number(tcp.seq_number() + static_cast<uint32_t>(payload_offset(index)));
  if (!last) tcp.set_flags(static_cast<uint8_t>(tcp.flags() & ~(kTcpFin | kTcpPsh)));
  if (ipv6_) {
    // RFC 8200 §3: the Payload Length counts what follows the fixed header (extension headers
    // too); there is no identification nor header checksum to patch.
    const Ipv6View ipv6(ip, l3_);
    ipv6.set_payload_length(static_cast<uint16_t>(l3_ - Ipv6Header::kLength + l4_ + length));
    tcp.set_checksum(tcp_pseudo_header_sum(ipv6.source(), ipv6.destination(), l4_ + length));
    return;
  }
  const Ipv4View ipv4(ip, l3_);
  ipv4.set_total_length(static_cast<uint16_t>(l3_ + l4_ + length));
  ipv4.set_identification(static_cast<uint16_t>(ipv4.identification() + index));
  ipv4.set_checksum(0);
  ipv4.set_checksum(internet_checksum(ip, l3_));
  tcp.set_checksum(tcp_pseudo_header_sum(ipv4.source(), ipv4.destination(), l4_ + length));
}

}  // namespace bypass::inet
