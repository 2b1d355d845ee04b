// Encoding of Ceph's identity types and primitive codecs, checked against hand-derived bytes.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include "msgr/entity.h"
#include "msgr/wire/codec.h"
#include "msgr/wire/message_header.h"

namespace bypass::msgr {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

TEST(Crc32c, MatchesCephReferenceValues) {
  // Values from Ceph's src/test/common/test_crc32c.cc (ceph_crc32c has no implicit inversion).
  EXPECT_EQ(4119623852u, crc32c(0, "foo bar baz", 11));
  EXPECT_EQ(881700046u, crc32c(1234, "foo bar baz", 11));
  EXPECT_EQ(2360230088u, crc32c(0, "whiz bang boom", 14));
  EXPECT_EQ(3743019208u, crc32c(5678, "whiz bang boom", 14));
}

TEST(EntityAddr, EncodesMsgr2Ipv4AsCephDoes) {
  EntityAddr addr;
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:3300/7", &addr));
  BufferList bl;
  wire::Encoder enc(bl);
  addr.encode(enc);
  // marker 1 | v1 compat1 | len 28 | type 2 | nonce 7 | sockaddr len 16 | family 2 (le16) |
  // port 3300 big-endian | 127.0.0.1 | 8 zero bytes
  EXPECT_EQ(hex(bl.to_string()),
            "01" "01" "01" "1c000000" "02000000" "07000000" "10000000" "0200" "0ce4" "7f000001"
            "0000000000000000");
  std::string bytes = bl.to_string();
  wire::Decoder dec(bytes, "test");
  EntityAddr back = EntityAddr::decode(dec);
  EXPECT_TRUE(dec.at_end());
  EXPECT_EQ(back, addr);
  EXPECT_EQ(back.to_string(), "v2:127.0.0.1:3300/7");
}

TEST(EntityAddr, Ipv6AndBlankRoundTrip) {
  for (const char* text : {"v2:[::1]:6800/42", "any:[fe80::1]:1/0", "v1:10.1.2.3:6789/99"}) {
    EntityAddr addr;
    ASSERT_TRUE(EntityAddr::parse(text, &addr)) << text;
    BufferList bl;
    wire::Encoder enc(bl);
    addr.encode(enc);
    std::string bytes = bl.to_string();
    wire::Decoder dec(bytes, "test");
    EXPECT_EQ(EntityAddr::decode(dec), addr) << text;
    EXPECT_EQ(addr.to_string(), text);
  }
  EntityAddr blank;  // TYPE_NONE, no sockaddr: encodes a zero sockaddr length
  BufferList bl;
  wire::Encoder enc(bl);
  blank.encode(enc);
  EXPECT_EQ(bl.length(), 1u + 6u + 12u);
  std::string bytes = bl.to_string();
  wire::Decoder dec(bytes, "test");
  EXPECT_EQ(EntityAddr::decode(dec), blank);
}

TEST(EntityAddr, RejectsMalformed) {
  const char* bad[] = {"", "v2:", "1.2.3.4", "v2:1.2.3.4:99999", "v2:1.2.3.4:1/x", "[::1:5", "v2:host:1"};
  for (const char* text : bad) {
    EntityAddr addr;
    EXPECT_FALSE(EntityAddr::parse(text, &addr)) << text;
  }
  // Truncations of a valid encoding all throw DecodeError, never read past the end.
  EntityAddr addr;
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:3300/7", &addr));
  BufferList bl;
  wire::Encoder enc(bl);
  addr.encode(enc);
  std::string bytes = bl.to_string();
  for (size_t n = 0; n < bytes.size(); ++n) {
    wire::Decoder dec(std::string_view(bytes).substr(0, n), "test");
    EXPECT_THROW(EntityAddr::decode(dec), wire::DecodeError) << n;
  }
  // Wrong sockaddr length for the family.
  std::string evil = bytes;
  evil[15] = 0x08;  // sockaddr len 8 (but AF_INET needs 16)
  wire::Decoder dec(evil, "test");
  EXPECT_THROW(EntityAddr::decode(dec), wire::DecodeError);
}

TEST(EntityAddrVec, RoundTripAndSingleAddrCompat) {
  EntityAddrVec vec;
  vec.addrs.resize(2);
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:3300/0", &vec.addrs[0]));
  ASSERT_TRUE(EntityAddr::parse("v1:127.0.0.1:6789/0", &vec.addrs[1]));
  BufferList bl;
  wire::Encoder enc(bl);
  vec.encode(enc);
  std::string bytes = bl.to_string();
  EXPECT_EQ(bytes[0], 2);
  wire::Decoder dec(bytes, "test");
  EXPECT_EQ(EntityAddrVec::decode(dec), vec);
  EXPECT_EQ(vec.to_string(), "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]");

  // A bare entity_addr_t (marker 1) decodes as a one-element vector.
  BufferList single;
  wire::Encoder enc1(single);
  vec.addrs[0].encode(enc1);
  std::string sbytes = single.to_string();
  wire::Decoder dec1(sbytes, "test");
  EntityAddrVec one = EntityAddrVec::decode(dec1);
  ASSERT_EQ(one.addrs.size(), 1u);
  EXPECT_EQ(one.addrs[0], vec.addrs[0]);

  // A huge claimed count is rejected before any allocation.
  std::string evil("\x02\xff\xff\xff\x7f", 5);
  wire::Decoder dec2(evil, "test");
  EXPECT_THROW(EntityAddrVec::decode(dec2), wire::DecodeError);
}

TEST(EntityName, ParseFormatEncode) {
  EntityName name;
  ASSERT_TRUE(EntityName::parse("osd.12", &name));
  EXPECT_EQ(name.type, EntityType::Osd);
  EXPECT_EQ(name.num, 12);
  EXPECT_EQ(name.to_string(), "osd.12");
  EXPECT_FALSE(EntityName::parse("disk.1", &name));
  EXPECT_FALSE(EntityName::parse("osd.", &name));
  EXPECT_FALSE(EntityName::parse("osd", &name));
  BufferList bl;
  wire::Encoder enc(bl);
  EntityName{EntityType::Client, 4127}.encode(enc);
  EXPECT_EQ(hex(bl.to_string()), "08" "1f10000000000000");
}

TEST(MessageHeader2, Is41BytesAndRoundTrips) {
  wire::MessageHeader2 h;
  h.seq = 0x0102030405060708ull;
  h.tid = 99;
  h.type = 0x13;
  h.priority = 127;
  h.version = 3;
  h.data_off = 4096;
  h.ack_seq = 17;
  h.flags = 1;
  h.compat_version = 2;
  BufferList bl;
  h.encode(bl);
  ASSERT_EQ(bl.length(), wire::kMessageHeader2Size);
  std::string bytes = bl.to_string();
  EXPECT_EQ(hex(bytes.substr(0, 8)), "0807060504030201");
  EXPECT_EQ(wire::MessageHeader2::decode(bytes), h);
  EXPECT_THROW(wire::MessageHeader2::decode(bytes.substr(0, 40)), wire::DecodeError);
  EXPECT_THROW(wire::MessageHeader2::decode(bytes + "x"), wire::DecodeError);
}

TEST(Decoder, ErrorsNameFieldAndOffset) {
  wire::Decoder dec(std::string_view("\x01\x02", 2), "THING");
  try {
    dec.u32("width");
    FAIL() << "expected DecodeError";
  } catch (const wire::DecodeError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("THING"), std::string::npos) << what;
    EXPECT_NE(what.find("width"), std::string::npos) << what;
    EXPECT_NE(what.find("offset 0"), std::string::npos) << what;
  }
}

TEST(Versioned, SkipsUnknownTrailingFieldsAndRejectsNewCompat) {
  BufferList bl;
  wire::Encoder enc(bl);
  {
    wire::VersionedEncode v(enc, 3, 1);
    enc.u32(5);
    enc.u32(6);  // a field a v1 decoder does not know
  }
  enc.u8(0xaa);
  std::string bytes = bl.to_string();
  wire::Decoder dec(bytes, "test");
  {
    wire::VersionedDecode v(dec, 1, "thing");
    EXPECT_EQ(v.version(), 3);
    EXPECT_EQ(dec.u32("a"), 5u);
  }
  EXPECT_EQ(dec.u8("after"), 0xaa);
  bytes[1] = 2;  // compat 2 > understood 1
  wire::Decoder dec2(bytes, "test");
  EXPECT_THROW(wire::VersionedDecode(dec2, 1, "thing"), wire::DecodeError);
}

}  // namespace
}  // namespace bypass::msgr
