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
constexpr size_t kSackBlockLength = 8;  // RFC 2018 §3: left and right edge, 4 bytes each
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
  namespace option = tcp_option_field;
  const TcpView view(data, len);
  if (const char* error = view.check_len()) return error;
  // Before any store to `out` (which may alias `data`), so check_len()'s reading of it is reused.
  out.header_length = static_cast<uint8_t>(view.header_length());
  out.source_port = view.src_port();
  out.destination_port = view.dst_port();
  out.seq = view.seq_number();
  out.ack = view.ack_number();
  out.flags = view.flags();
  out.window = view.window();
  out.checksum = view.checksum();
  out.urgent = view.urgent();
  out.options = TcpOptions{};
  // The layout nearly every established segment has, Linux's and ours: NOP, NOP, timestamps
  // (RFC 7323 Appendix A) and nothing else, read without walking the option list. The NOPs put
  // the timestamp option 2 bytes in.
  const uint8_t* p = view.options();
  if (out.header_length == kMinLength + kTimestampOnlyLength && load_be32(p) == kTimestampOnlyLead) {
    out.options.timestamp = std::make_pair(option::TimestampValue::get(p + 2), option::TimestampEcho::get(p + 2));
    return nullptr;
  }
  const uint8_t* end = data + out.header_length;
  while (p < end) {
    uint8_t kind = option::Kind::get(p);
    if (kind == kEnd) break;
    if (kind == kNop) {
      ++p;
      continue;
    }
    if (end - p < 2) return "tcp: option kind without a length byte";
    uint8_t olen = option::Length::get(p);
    if (olen < 2) return "tcp: option length below 2";
    if (olen > end - p) return "tcp: option runs past the header";
    switch (kind) {
      case kMss:
        if (olen != 4) return "tcp: MSS option length is not 4";
        out.options.mss = option::Mss::get(p);
        break;
      case kWindowScale:
        if (olen != 3) return "tcp: window scale option length is not 3";
        out.options.window_scale = option::WindowScale::get(p);
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
          const uint8_t* block = p + option::kSackBlocks + kSackBlockLength * i;
          out.options.sack_blocks[i].left = option::SackLeft::get(block);
          out.options.sack_blocks[i].right = option::SackRight::get(block);
        }
        break;
      }
      case kTimestamp:
        if (olen != 10) return "tcp: timestamp option length is not 10";
        out.options.timestamp = std::make_pair(option::TimestampValue::get(p), option::TimestampEcho::get(p));
        break;
      default:
        break;  // RFC 9293 §3.1: unknown options are skipped using their length
    }
    p += olen;
  }
  return nullptr;
}

void TcpHeader::emit(uint8_t* out) const {
  namespace option = tcp_option_field;
  const size_t hlen = emitted_length();
  const TcpView view(out, hlen);
  view.set_src_port(source_port);
  view.set_dst_port(destination_port);
  view.set_seq_number(seq);
  view.set_ack_number(ack);
  view.set_header_length(hlen);
  view.set_flags(flags);
  view.set_window(window);
  view.set_checksum(0);
  view.set_urgent(urgent);
  // Each option is padded with leading NOPs to a 4-byte boundary (RFC 7323 Appendix A's layout).
  uint8_t* p = view.options();
  auto begin_option = [&p](size_t nops, uint8_t kind, size_t length) {
    for (size_t i = 0; i < nops; ++i) *p++ = kNop;
    option::Kind::set(p, kind);
    option::Length::set(p, length);
  };
  if (options.mss) {
    begin_option(0, kMss, 4);
    option::Mss::set(p, *options.mss);
    p += 4;
  }
  if (options.window_scale) {
    begin_option(1, kWindowScale, 3);
    option::WindowScale::set(p, *options.window_scale);
    p += 3;
  }
  if (options.sack_permitted) {
    begin_option(2, kSackPermitted, 2);
    p += 2;
  }
  if (options.timestamp) {
    begin_option(2, kTimestamp, 10);
    option::TimestampValue::set(p, options.timestamp->first);
    option::TimestampEcho::set(p, options.timestamp->second);
    p += 10;
  }
  if (options.sack_count) {
    begin_option(2, kSack, 2 + kSackBlockLength * options.sack_count);
    p += option::kSackBlocks;
    for (size_t i = 0; i < options.sack_count; ++i) {
      option::SackLeft::set(p, options.sack_blocks[i].left.raw());
      option::SackRight::set(p, options.sack_blocks[i].right.raw());
      p += kSackBlockLength;
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
