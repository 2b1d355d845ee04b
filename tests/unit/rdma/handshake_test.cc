// QP-info encoding: round trip, fixed layout, and every malformed field named in the error.
#include "stack/rdma/handshake.h"

#include <gtest/gtest.h>

#include <random>

namespace bypass::rdma {
namespace {

QpInfo sample() {
  QpInfo info;
  info.kind = QpInfo::Kind::Reply;
  info.mtu = 3;
  info.qp_num = 0x123456;
  info.psn = 0xabcdef;
  info.lid = 0x0102;
  for (int i = 0; i < 16; ++i) info.gid[i] = static_cast<uint8_t>(0xf0 + i);
  info.rx_window = 0x00010203;
  info.read_depth = 8;
  return info;
}

TEST(Handshake, RoundTrips) {
  const QpInfo info = sample();
  const auto wire = info.encode();
  std::string error;
  auto back = QpInfo::decode(wire.data(), wire.size(), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, info);
}

TEST(Handshake, LayoutIsBigEndianAndFixed) {
  const auto w = sample().encode();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(w.data()), 4), "BYRD");
  EXPECT_EQ(w[4], 3);
  EXPECT_EQ(w[5], 2);
  EXPECT_EQ(w[6], 3);
  EXPECT_EQ(w[7], 8);
  EXPECT_EQ(w[8], 0x00);
  EXPECT_EQ(w[9], 0x12);
  EXPECT_EQ(w[11], 0x56);
  EXPECT_EQ(w[13], 0xab);
  EXPECT_EQ(w[16], 0x01);
  EXPECT_EQ(w[17], 0x02);
  EXPECT_EQ(w[20], 0xf0);
  EXPECT_EQ(w[35], 0xff);
  EXPECT_EQ(w[36], 0x00);
  EXPECT_EQ(w[37], 0x01);
  EXPECT_EQ(w[38], 0x02);
  EXPECT_EQ(w[39], 0x03);
}

struct Corruption {
  size_t offset;
  uint8_t value;
  const char* expect;
};

TEST(Handshake, MalformedFieldsAreNamed) {
  const Corruption cases[] = {
      {0, 'X', "magic at offset 0"},       {4, 2, "version 2 at offset 4 (expected 3)"},
      {7, 17, "read depth 17 at offset 7 is outside 0..16"},
      {5, 0, "kind 0 at offset 5"},        {5, 9, "kind 9 at offset 5"},
      {6, 0, "MTU code 0 at offset 6"},    {6, 6, "MTU code 6 at offset 6"},
      {8, 0x01, "QP number 0x1123456 at offset 8"}, {12, 0x01, "PSN 0x1abcdef at offset 12"},
      {36, 0x80, "receive window 2147549699 at offset 36"},
  };
  for (const Corruption& c : cases) {
    auto wire = sample().encode();
    wire[c.offset] = c.value;
    std::string error;
    EXPECT_FALSE(QpInfo::decode(wire.data(), wire.size(), &error)) << c.expect;
    EXPECT_NE(error.find(c.expect), std::string::npos) << error;
  }
}

TEST(Handshake, ZeroQpNumberOnlyAllowedInReady) {
  QpInfo info = sample();
  info.qp_num = 0;
  std::string error;
  auto wire = info.encode();
  EXPECT_FALSE(QpInfo::decode(wire.data(), wire.size(), &error));
  info.kind = QpInfo::Kind::Ready;
  wire = info.encode();
  EXPECT_TRUE(QpInfo::decode(wire.data(), wire.size(), &error)) << error;
}

TEST(Handshake, ReceiveWindowRequiredExceptInReady) {
  QpInfo info = sample();
  info.rx_window = 0;
  std::string error;
  auto wire = info.encode();
  EXPECT_FALSE(QpInfo::decode(wire.data(), wire.size(), &error));
  EXPECT_NE(error.find("receive window 0 at offset 36 is outside 1..1048576"), std::string::npos) << error;
  info.kind = QpInfo::Kind::Ready;
  wire = info.encode();
  EXPECT_TRUE(QpInfo::decode(wire.data(), wire.size(), &error)) << error;
}

TEST(Handshake, WrongLengthIsRejected) {
  const auto wire = sample().encode();
  std::string error;
  EXPECT_FALSE(QpInfo::decode(wire.data(), wire.size() - 1, &error));
  EXPECT_NE(error.find("39 bytes, expected 40"), std::string::npos) << error;
  EXPECT_FALSE(QpInfo::decode(wire.data(), 0, &error));
}

TEST(Handshake, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    auto wire = sample().encode();
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) wire[rng() % wire.size()] = static_cast<uint8_t>(rng());
    std::string error;
    auto info = QpInfo::decode(wire.data(), wire.size(), &error);
    if (info) {
      ++accepted;
      EXPECT_LE(info->qp_num, 0xffffffu);
      EXPECT_GT(mtu_bytes(info->mtu), 0);
    } else {
      EXPECT_FALSE(error.empty());
    }
  }
  EXPECT_GT(accepted, 0);  // flips in the GID/reserved bytes still decode
}

TEST(Handshake, MtuCodes) {
  EXPECT_EQ(mtu_bytes(1), 256);
  EXPECT_EQ(mtu_bytes(3), 1024);
  EXPECT_EQ(mtu_bytes(5), 4096);
  EXPECT_EQ(mtu_bytes(0), 0);
  EXPECT_EQ(mtu_bytes(6), 0);
  EXPECT_NE(sample().describe().find("mtu 1024"), std::string::npos);
}

}  // namespace
}  // namespace bypass::rdma
