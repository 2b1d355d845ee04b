// Parse/emit round trips and malformed-input rejection for every header representation.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "stack/inet/wire/arp.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/icmp.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {
namespace {

TEST(Checksum, Rfc1071Example) {
  // RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
  const uint8_t bytes[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  ChecksumAccumulator sum;
  sum.add(bytes, sizeof(bytes));
  EXPECT_EQ(sum.folded(), 0xddf2);
  EXPECT_EQ(internet_checksum(bytes, sizeof(bytes)), static_cast<uint16_t>(~0xddf2));
}

// The 64-bit fast path against the plain RFC 1071 loop: every length and start offset around
// the fast path's thresholds, random bytes, and all-0xff data (sums that wrap the most).
TEST(Checksum, WideSumMatchesWordByWordSum) {
  auto reference = [](const uint8_t* p, size_t len) {
    uint64_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (len & 1) sum += static_cast<uint32_t>(p[len - 1] << 8);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
  };
  std::vector<uint8_t> bytes(3000);
  uint64_t state = 12345;
  for (auto& b : bytes) b = static_cast<uint8_t>((state = state * 6364136223846793005ull + 1) >> 56);
  std::vector<uint8_t> ones(3000, 0xff);
  for (const auto* data : {&bytes, &ones}) {
    for (size_t start = 0; start < 9; ++start) {
      for (size_t len : {0, 1, 7, 8, 63, 64, 65, 71, 72, 127, 1448, 1449, 2047, 2990}) {
        ASSERT_EQ(internet_checksum(data->data() + start, len), reference(data->data() + start, len))
            << "start " << start << " len " << len;
        ChecksumAccumulator split;  // an odd first piece puts the fast path off the word grid
        const size_t first = std::min<size_t>(len, 3);
        split.add(data->data() + start, first);
        split.add(data->data() + start + first, len - first);
        ASSERT_EQ(split.finish(), reference(data->data() + start, len)) << "split, start " << start << " len " << len;
      }
    }
  }
}

TEST(Checksum, SegmentedBufferMatchesFlat) {
  std::vector<uint8_t> flat(1001);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<uint8_t>(i * 7 + 3);
  BufferList list;
  size_t cuts[] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 393};  // odd and even pieces
  size_t at = 0;
  for (size_t n : cuts) {
    list.append(BufferSegment::copy_of(flat.data() + at, n));
    at += n;
  }
  ASSERT_EQ(at, flat.size());
  ChecksumAccumulator seg;
  seg.add(list, 0, list.length());
  EXPECT_EQ(seg.finish(), internet_checksum(flat.data(), flat.size()));
  ChecksumAccumulator part;  // offset/length sub-range
  part.add(list, 7, 900);
  EXPECT_EQ(part.finish(), internet_checksum(flat.data() + 7, 900));
}

TEST(EthernetWire, RoundTripAndRejects) {
  EthernetHeader h{MacAddress::broadcast(), {{2, 0, 0, 0, 0, 9}}, 0x0800};
  uint8_t buf[EthernetHeader::kLength];
  h.emit(buf);
  EthernetHeader back;
  ASSERT_EQ(EthernetHeader::parse(buf, sizeof(buf), back), nullptr);
  EXPECT_EQ(back.destination, h.destination);
  EXPECT_EQ(back.source, h.source);
  EXPECT_EQ(back.ethertype, 0x0800);
  EXPECT_NE(EthernetHeader::parse(buf, 13, back), nullptr);
  store_be16(buf + 12, 0x0100);  // an 802.3 length, not an EtherType
  EXPECT_STREQ(EthernetHeader::parse(buf, sizeof(buf), back),
               "ethernet: 802.3 length field instead of an EtherType");
}

TEST(ArpWire, RoundTripAndRejects) {
  ArpPacket p{ArpPacket::kReply, {{2, 0, 0, 0, 0, 1}}, Ipv4Address::from_octets(10, 0, 0, 1),
              {{2, 0, 0, 0, 0, 2}}, Ipv4Address::from_octets(10, 0, 0, 2)};
  uint8_t buf[ArpPacket::kLength];
  p.emit(buf);
  ArpPacket back;
  ASSERT_EQ(ArpPacket::parse(buf, sizeof(buf), back), nullptr);
  EXPECT_EQ(back.operation, ArpPacket::kReply);
  EXPECT_EQ(back.sender_ip, p.sender_ip);
  EXPECT_EQ(back.target_mac, p.target_mac);
  EXPECT_NE(ArpPacket::parse(buf, 27, back), nullptr);
  uint8_t bad[ArpPacket::kLength];
  std::memcpy(bad, buf, sizeof(bad));
  bad[1] = 6;  // hardware type 6 (IEEE 802)
  EXPECT_STREQ(ArpPacket::parse(bad, sizeof(bad), back), "arp: hardware type is not Ethernet (1)");
  std::memcpy(bad, buf, sizeof(bad));
  bad[4] = 8;
  EXPECT_STREQ(ArpPacket::parse(bad, sizeof(bad), back), "arp: address lengths are not 6/4");
  std::memcpy(bad, buf, sizeof(bad));
  store_be16(bad + 6, 9);
  EXPECT_STREQ(ArpPacket::parse(bad, sizeof(bad), back), "arp: unknown operation");
}

class Ipv4Wire : public ::testing::Test {
 protected:
  void SetUp() override {
    h.total_length = 48;
    h.identification = 0x1234;
    h.flags_fragment = Ipv4Header::kFlagMoreFragments | 3;
    h.protocol = 6;
    h.source = Ipv4Address::from_octets(192, 168, 1, 1);
    h.destination = Ipv4Address::from_octets(192, 168, 1, 2);
    std::memset(buf, 0, sizeof(buf));
    h.emit(buf, true);
  }
  Ipv4Header h;
  uint8_t buf[48];
};

TEST_F(Ipv4Wire, RoundTrip) {
  Ipv4Header back;
  ASSERT_EQ(Ipv4Header::parse(buf, sizeof(buf), true, back), nullptr);
  EXPECT_EQ(back.total_length, 48);
  EXPECT_EQ(back.identification, 0x1234);
  EXPECT_TRUE(back.more_fragments());
  EXPECT_EQ(back.fragment_offset_bytes(), 24u);
  EXPECT_EQ(back.source, h.source);
  EXPECT_EQ(back.destination, h.destination);
  EXPECT_EQ(internet_checksum(buf, 20), 0);
}

TEST_F(Ipv4Wire, RejectsMalformed) {
  Ipv4Header back;
  EXPECT_STREQ(Ipv4Header::parse(buf, 19, true, back), "ipv4: packet shorter than the 20-byte header");
  EXPECT_STREQ(Ipv4Header::parse(buf, 40, true, back), "ipv4: total length beyond the end of the frame");
  buf[10] ^= 1;
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), true, back), "ipv4: bad header checksum");
  EXPECT_EQ(Ipv4Header::parse(buf, sizeof(buf), false, back), nullptr);  // offloaded: not checked
  SetUp();
  buf[0] = 0x65;
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), false, back), "ipv4: version is not 4");
  buf[0] = 0x44;
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), false, back), "ipv4: IHL below 5");
  buf[0] = 0x4f;
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), false, back), "ipv4: IHL beyond the end of the packet");
  buf[0] = 0x46;
  store_be16(buf + 2, 22);
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), false, back), "ipv4: total length smaller than the header");
  SetUp();
  buf[6] |= 0x80;
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), false, back), "ipv4: reserved flag bit set");
  SetUp();
  store_be16(buf + 6, 0x1fff);  // offset 65528 + 28 bytes > 65535
  EXPECT_STREQ(Ipv4Header::parse(buf, sizeof(buf), false, back), "ipv4: fragment extends beyond 65535 bytes");
}

TEST(IcmpWire, RoundTripAndRejects) {
  BufferList body;
  body.append_copy("ping payload!");
  IcmpHeader h{IcmpHeader::kEchoRequest, 0, 0, 0xabcd0001};
  uint8_t head[IcmpHeader::kLength];
  h.emit(head, body);
  BufferList message;
  message.append(BufferSegment::copy_of(head, sizeof(head)));
  message.append(body);
  IcmpHeader back;
  ASSERT_EQ(IcmpHeader::parse(message, back), nullptr);
  EXPECT_EQ(back.type, IcmpHeader::kEchoRequest);
  EXPECT_EQ(back.rest, 0xabcd0001u);
  std::string corrupted = message.to_string();
  corrupted[9] ^= 0x40;
  BufferList bad;
  bad.append_copy(corrupted);
  EXPECT_STREQ(IcmpHeader::parse(bad, back), "icmp: bad checksum");
  BufferList shorty;
  shorty.append_copy("abc");
  EXPECT_STREQ(IcmpHeader::parse(shorty, back), "icmp: message shorter than 8 bytes");
}

TEST(TcpWire, RoundTripWithAllOptions) {
  TcpHeader h;
  h.source_port = 1234;
  h.destination_port = 80;
  h.seq = 0xfffffff0;
  h.ack = 77;
  h.flags = kTcpSyn | kTcpAck;
  h.window = 65535;
  h.options.mss = 1460;
  h.options.window_scale = 7;
  h.options.sack_permitted = true;
  h.options.timestamp = std::make_pair(111u, 222u);
  uint8_t buf[TcpHeader::kMaxLength];
  ASSERT_LE(h.emitted_length(), sizeof(buf));
  h.emit(buf);
  TcpHeader back;
  ASSERT_EQ(TcpHeader::parse(buf, h.emitted_length(), back), nullptr);
  EXPECT_EQ(back.header_length, h.emitted_length());
  EXPECT_EQ(back.seq, h.seq);
  EXPECT_EQ(back.ack, h.ack);
  EXPECT_EQ(back.flags, h.flags);
  EXPECT_EQ(back.options.mss, 1460);
  EXPECT_EQ(back.options.window_scale, 7);
  EXPECT_TRUE(back.options.sack_permitted);
  EXPECT_EQ(back.options.timestamp, std::make_pair(111u, 222u));

  TcpHeader data;
  data.flags = kTcpAck;
  data.options.timestamp = std::make_pair(5u, 6u);
  data.options.sack_count = 3;
  data.options.sack_blocks[0] = {100, 200};
  data.options.sack_blocks[1] = {300, 400};
  data.options.sack_blocks[2] = {0xfffffff0, 16};
  data.emit(buf);
  ASSERT_EQ(TcpHeader::parse(buf, data.emitted_length(), back), nullptr);
  ASSERT_EQ(back.options.sack_count, 3);
  EXPECT_EQ(back.options.sack_blocks[2], (SackBlock{0xfffffff0, 16}));
}

TEST(TcpWire, ChecksumVerifiesToZero) {
  TcpHeader h;
  h.source_port = 1;
  h.destination_port = 2;
  h.flags = kTcpAck;
  uint8_t buf[20];
  h.emit(buf);
  BufferList segment;
  segment.append(BufferSegment::copy_of(buf, sizeof(buf)));
  segment.append_copy("odd-length payload");
  Ipv4Address s = Ipv4Address::from_octets(1, 2, 3, 4), d = Ipv4Address::from_octets(5, 6, 7, 8);
  uint16_t sum = tcp_checksum(s, d, segment);
  std::string bytes = segment.to_string();
  store_be16(reinterpret_cast<uint8_t*>(bytes.data()) + 16, sum);
  BufferList filled;
  filled.append_copy(bytes);
  EXPECT_EQ(tcp_checksum(s, d, filled), 0);
}

// A 20-byte header followed by `options`, with the data offset covering them.
std::vector<uint8_t> with_options(std::vector<uint8_t> options) {
  while (options.size() % 4) options.push_back(0);
  std::vector<uint8_t> seg(20 + options.size(), 0);
  seg[12] = static_cast<uint8_t>(((20 + options.size()) / 4) << 4);
  std::memcpy(seg.data() + 20, options.data(), options.size());
  return seg;
}

TEST(TcpWire, RejectsMalformed) {
  TcpHeader back;
  std::vector<uint8_t> seg(20, 0);
  EXPECT_STREQ(TcpHeader::parse(seg.data(), 19, back), "tcp: segment shorter than the 20-byte header");
  seg[12] = 4 << 4;
  EXPECT_STREQ(TcpHeader::parse(seg.data(), 20, back), "tcp: data offset below 5");
  seg[12] = 6 << 4;
  EXPECT_STREQ(TcpHeader::parse(seg.data(), 20, back), "tcp: data offset beyond the end of the segment");
  struct Case {
    std::vector<uint8_t> options;
    const char* error;
  } cases[] = {
      {{2, 0, 0, 0}, "tcp: option length below 2"},
      {{2, 1, 0, 0}, "tcp: option length below 2"},
      {{1, 1, 1, 2}, "tcp: option kind without a length byte"},
      {{2, 8, 5, 0}, "tcp: option runs past the header"},
      {{2, 3, 5, 1}, "tcp: MSS option length is not 4"},
      {{3, 4, 5, 1}, "tcp: window scale option length is not 3"},
      {{4, 3, 0, 1}, "tcp: SACK-permitted option length is not 2"},
      {{5, 6, 0, 0, 0, 0, 1, 1}, "tcp: SACK option length is not 2+8n"},
      {{8, 8, 0, 0, 0, 0, 0, 0}, "tcp: timestamp option length is not 10"},
  };
  for (const Case& c : cases) {
    auto bytes = with_options(c.options);
    EXPECT_STREQ(TcpHeader::parse(bytes.data(), bytes.size(), back), c.error);
  }
  // Unknown options are skipped by length; EOL ends the list even if garbage follows.
  auto ok = with_options({99, 4, 0xaa, 0xbb, 2, 4, 0x05, 0xb4, 0, 77, 0, 0});
  ASSERT_EQ(TcpHeader::parse(ok.data(), ok.size(), back), nullptr);
  EXPECT_EQ(back.options.mss, 1460);
}

// NOP NOP timestamps, the layout of nearly every established segment, parses (on its short path)
// to what the same option in another layout gives, leaves nothing of an earlier parse behind, and
// a lead word that only resembles it still gets the full walk's errors.
TEST(TcpWire, TimestampOnlyLayoutMatchesTheGeneralWalk) {
  TcpHeader back;
  TcpHeader with_sack;
  with_sack.flags = kTcpAck;
  with_sack.options.mss = 536;
  with_sack.options.sack_count = 1;
  with_sack.options.sack_blocks[0] = {1, 2};
  uint8_t buf[TcpHeader::kMaxLength];
  with_sack.emit(buf);
  ASSERT_EQ(TcpHeader::parse(buf, with_sack.emitted_length(), back), nullptr);
  ASSERT_EQ(back.options.sack_count, 1);

  auto usual = with_options({1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0xaa, 0xbb, 0xcc, 0xdd});
  ASSERT_EQ(usual.size(), 32u);
  ASSERT_EQ(TcpHeader::parse(usual.data(), usual.size(), back), nullptr);
  EXPECT_EQ(back.header_length, 32);
  EXPECT_EQ(back.options.timestamp, std::make_pair(0x11223344u, 0xaabbccddu));
  EXPECT_EQ(back.options.sack_count, 0);
  EXPECT_FALSE(back.options.mss.has_value());

  TcpHeader walked;
  auto other = with_options({8, 10, 0x11, 0x22, 0x33, 0x44, 0xaa, 0xbb, 0xcc, 0xdd, 1, 1});
  ASSERT_EQ(TcpHeader::parse(other.data(), other.size(), walked), nullptr);
  EXPECT_EQ(walked.options.timestamp, back.options.timestamp);

  auto wrong_length = with_options({1, 1, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_STREQ(TcpHeader::parse(wrong_length.data(), wrong_length.size(), back),
               "tcp: timestamp option length is not 10");
  auto longer = with_options({1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 2, 4, 0x05, 0xb4});
  ASSERT_EQ(TcpHeader::parse(longer.data(), longer.size(), back), nullptr);
  EXPECT_EQ(back.options.mss, 1460) << "options after the timestamps are read";
  EXPECT_EQ(back.options.timestamp, std::make_pair(1u, 2u));
}

}  // namespace
}  // namespace bypass::inet
