#include "stack/inet/wire/tcp.h"

#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

namespace {
enum OptionKind : uint8_t {
  kEnd = 0, kNop = 1, kMss = 2, kWindowScale = 3, kSackPermitted = 4, kSack = 5, kTimestamp = 8,
};
// NOP, NOP, kind 8 (timestamps), length 10: the 12 option bytes RFC 7323 Appendix A recommends.
constexpr size_t kTimestampOnlyLength = 12;
constexpr uint32_t kTimestampOnlyLead = uint32_t{kNop} << 24 | uint32_t{kNop} << 16 | uint32_t{kTimestamp} << 8 | 10;
// TCP's number as IPv6 Next Header in the pseudo-header (the same as IPv4's Protocol).
constexpr uint8_t kTcpProtocol = 6;
}  // namespace

size_t TcpOptions::emitted_length() const {
  size_t n = 0;
  if (mss) n += 4;
  if (window_scale) n += 4;         // NOP + 3
  if (sack_permitted) n += 4;       // NOP NOP + 2 (or shares padding with timestamps)
  if (timestamp) n += 12;           // NOP NOP + 10
  if (sack_count) n += 4 + 8 * size_t{sack_count};  // NOP NOP + 2 + 8n
  return n;
}

const char* TcpHeader::parse(const uint8_t* data, size_t len, TcpHeader& out) {
  if (len < kMinLength) return "tcp: segment shorter than the 20-byte header";
  out.source_port = load_be16(data);
  out.destination_port = load_be16(data + 2);
  out.seq = load_be32(data + 4);
  out.ack = load_be32(data + 8);
  out.header_length = static_cast<uint8_t>((data[12] >> 4) * 4);
  if (out.header_length < kMinLength) return "tcp: data offset below 5";
  if (out.header_length > len) return "tcp: data offset beyond the end of the segment";
  out.flags = data[13];
  out.window = load_be16(data + 14);
  out.checksum = load_be16(data + 16);
  out.urgent = load_be16(data + 18);
  out.options = TcpOptions{};
  // The layout nearly every established segment has, Linux's and ours: NOP, NOP, timestamps
  // (RFC 7323 Appendix A) and nothing else, read without walking the option list.
  if (out.header_length == kMinLength + kTimestampOnlyLength && load_be32(data + kMinLength) == kTimestampOnlyLead) {
    out.options.timestamp = std::make_pair(load_be32(data + kMinLength + 4), load_be32(data + kMinLength + 8));
    return nullptr;
  }
  const uint8_t* p = data + kMinLength;
  const uint8_t* end = data + out.header_length;
  while (p < end) {
    uint8_t kind = p[0];
    if (kind == kEnd) break;
    if (kind == kNop) {
      ++p;
      continue;
    }
    if (end - p < 2) return "tcp: option kind without a length byte";
    uint8_t olen = p[1];
    if (olen < 2) return "tcp: option length below 2";
    if (olen > end - p) return "tcp: option runs past the header";
    switch (kind) {
      case kMss:
        if (olen != 4) return "tcp: MSS option length is not 4";
        out.options.mss = load_be16(p + 2);
        break;
      case kWindowScale:
        if (olen != 3) return "tcp: window scale option length is not 3";
        out.options.window_scale = p[2];
        break;
      case kSackPermitted:
        if (olen != 2) return "tcp: SACK-permitted option length is not 2";
        out.options.sack_permitted = true;
        break;
      case kSack: {
        if ((olen - 2) % 8 != 0 || olen == 2) return "tcp: SACK option length is not 2+8n";
        size_t count = (olen - 2) / 8;
        if (count > 4) return "tcp: more than 4 SACK blocks";
        out.options.sack_count = static_cast<uint8_t>(count);
        for (size_t i = 0; i < count; ++i) {
          out.options.sack_blocks[i].left = load_be32(p + 2 + 8 * i);
          out.options.sack_blocks[i].right = load_be32(p + 6 + 8 * i);
        }
        break;
      }
      case kTimestamp:
        if (olen != 10) return "tcp: timestamp option length is not 10";
        out.options.timestamp = std::make_pair(load_be32(p + 2), load_be32(p + 6));
        break;
      default:
        break;  // RFC 9293 §3.1: unknown options are skipped using their length
    }
    p += olen;
  }
  return nullptr;
}

void TcpHeader::emit(uint8_t* out) const {
  size_t hlen = emitted_length();
  store_be16(out, source_port);
  store_be16(out + 2, destination_port);
  store_be32(out + 4, seq.raw());
  store_be32(out + 8, ack.raw());
  out[12] = static_cast<uint8_t>((hlen / 4) << 4);
  out[13] = flags;
  store_be16(out + 14, window);
  store_be16(out + 16, 0);
  store_be16(out + 18, urgent);
  uint8_t* p = out + kMinLength;
  if (options.mss) {
    p[0] = kMss; p[1] = 4;
    store_be16(p + 2, *options.mss);
    p += 4;
  }
  if (options.window_scale) {
    p[0] = kNop; p[1] = kWindowScale; p[2] = 3; p[3] = *options.window_scale;
    p += 4;
  }
  if (options.sack_permitted) {
    p[0] = kNop; p[1] = kNop; p[2] = kSackPermitted; p[3] = 2;
    p += 4;
  }
  if (options.timestamp) {
    p[0] = kNop; p[1] = kNop; p[2] = kTimestamp; p[3] = 10;
    store_be32(p + 4, options.timestamp->first);
    store_be32(p + 8, options.timestamp->second);
    p += 12;
  }
  if (options.sack_count) {
    p[0] = kNop; p[1] = kNop; p[2] = kSack; p[3] = static_cast<uint8_t>(2 + 8 * options.sack_count);
    p += 4;
    for (size_t i = 0; i < options.sack_count; ++i) {
      store_be32(p, options.sack_blocks[i].left.raw());
      store_be32(p + 4, options.sack_blocks[i].right.raw());
      p += 8;
    }
  }
}

uint16_t tcp_pseudo_header_sum(Ipv4Address source, Ipv4Address destination, size_t tcp_length) {
  ChecksumAccumulator sum;
  sum.add_u32(source.value);
  sum.add_u32(destination.value);
  sum.add_u16(6);
  sum.add_u16(static_cast<uint16_t>(tcp_length));
  return sum.folded();
}

uint16_t tcp_checksum(Ipv4Address source, Ipv4Address destination, const BufferList& segment) {
  ChecksumAccumulator sum;
  sum.add_u32(source.value);
  sum.add_u32(destination.value);
  sum.add_u16(6);
  sum.add_u16(static_cast<uint16_t>(segment.length()));
  sum.add(segment, 0, segment.length());
  return sum.finish();
}

uint16_t tcp_pseudo_header_sum(const Ipv6Address& source, const Ipv6Address& destination, size_t tcp_length) {
  return ipv6_pseudo_header_sum(source, destination, static_cast<uint32_t>(tcp_length), kTcpProtocol);
}

uint16_t tcp_checksum(const Ipv6Address& source, const Ipv6Address& destination, const BufferList& segment) {
  ChecksumAccumulator sum;
  add_ipv6_pseudo_header(sum, source, destination, static_cast<uint32_t>(segment.length()), kTcpProtocol);
  sum.add(segment, 0, segment.length());
  return sum.finish();
}

}  // namespace bypass::inet
