// rdma_cm private data: round trip, fixed layout, IB CM zero padding accepted, and every malformed
// field named in the error.
#include "stack/rdma/cm_private_data.h"

#include <gtest/gtest.h>

#include <vector>

namespace bypass::rdma {
namespace {

using Kind = CmPrivateData::Kind;

CmPrivateData sample() {
  CmPrivateData d;
  d.kind = Kind::Accept;
  d.receive_chunk_size = 0x00012345;
  d.rx_window = 0x00010203;
  d.read_depth = 8;
  return d;
}

TEST(CmPrivateData, RoundTrips) {
  const auto wire = sample().encode();
  std::string error;
  auto back = CmPrivateData::decode(wire.data(), wire.size(), Kind::Accept, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, sample());
}

TEST(CmPrivateData, LayoutIsBigEndianAndFixed) {
  const auto w = sample().encode();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(w.data()), 4), "BYCM");
  EXPECT_EQ(w.size(), 16u);
  EXPECT_EQ(w[4], 3);
  EXPECT_EQ(w[5], 2);
  EXPECT_EQ(w[6], 8);
  EXPECT_EQ(w[7], 0);
  EXPECT_EQ(w[8], 0x00);
  EXPECT_EQ(w[9], 0x01);
  EXPECT_EQ(w[10], 0x23);
  EXPECT_EQ(w[11], 0x45);
  EXPECT_EQ(w[12], 0x00);
  EXPECT_EQ(w[13], 0x01);
  EXPECT_EQ(w[14], 0x02);
  EXPECT_EQ(w[15], 0x03);
}

TEST(CmPrivateData, AcceptsTheCmsZeroPadding) {
  // An IB CM REP carries 196 bytes of private data whatever the sender put there.
  const auto w = sample().encode();
  std::vector<uint8_t> padded(w.begin(), w.end());
  padded.resize(196, 0);
  std::string error;
  EXPECT_TRUE(CmPrivateData::decode(padded.data(), padded.size(), Kind::Accept, &error)) << error;
}

struct Corruption {
  size_t offset;
  uint8_t value;
  const char* expect;
};

TEST(CmPrivateData, NamesTheBadFieldAndOffset) {
  const Corruption cases[] = {
      {0, 'X', "rdma_cm private data: bad magic at offset 0 (not a Bypass RDMA peer?)"},
      {4, 9, "rdma_cm private data: unsupported version 9 at offset 4 (expected 3)"},
      {4, 2, "rdma_cm private data: unsupported version 2 at offset 4 (expected 3)"},
      {6, 17, "rdma_cm private data: read depth 17 at offset 6 is outside 0..16"},
      {5, 1, "rdma_cm private data: kind 1 (connect request) at offset 5, expected accept"},
      {5, 7, "rdma_cm private data: kind 7 (unknown) at offset 5, expected accept"},
      {8, 0x80, "rdma_cm private data: receive chunk size 2147558213 at offset 8 is outside "
                "4096..1073741824"},
      {12, 0x80, "rdma_cm private data: receive window 2147549699 at offset 12 is outside 1..1048576"},
  };
  for (const Corruption& c : cases) {
    auto w = sample().encode();
    w[c.offset] = c.value;
    std::string error;
    EXPECT_FALSE(CmPrivateData::decode(w.data(), w.size(), Kind::Accept, &error)) << c.offset;
    EXPECT_EQ(error, c.expect);
  }
}

TEST(CmPrivateData, ChunkBelowTheOptionsMinimumIsAnError) {
  CmPrivateData d = sample();
  d.receive_chunk_size = 4095;
  const auto w = d.encode();
  std::string error;
  EXPECT_FALSE(CmPrivateData::decode(w.data(), w.size(), Kind::Accept, &error));
  EXPECT_EQ(error, "rdma_cm private data: receive chunk size 4095 at offset 8 is outside 4096..1073741824");
  d.receive_chunk_size = 4096;
  const auto ok = d.encode();
  EXPECT_TRUE(CmPrivateData::decode(ok.data(), ok.size(), Kind::Accept, &error)) << error;
}

TEST(CmPrivateData, ShortOrMissingDataIsAnError) {
  const auto w = sample().encode();
  std::string error;
  EXPECT_FALSE(CmPrivateData::decode(w.data(), 15, Kind::Accept, &error));
  EXPECT_EQ(error, "rdma_cm private data: 15 bytes, expected at least 16");
  EXPECT_FALSE(CmPrivateData::decode(nullptr, 0, Kind::ConnectRequest, &error));
  EXPECT_EQ(error, "rdma_cm private data: 0 bytes, expected at least 16");
}

TEST(CmPrivateData, ZeroReceiveWindowIsAnError) {
  // A peer without flow control (or a zero window) would never let us send.
  CmPrivateData d = sample();
  d.rx_window = 0;
  const auto w = d.encode();
  std::string error;
  EXPECT_FALSE(CmPrivateData::decode(w.data(), w.size(), Kind::Accept, &error));
  EXPECT_EQ(error, "rdma_cm private data: receive window 0 at offset 12 is outside 1..1048576");
}

}  // namespace
}  // namespace bypass::rdma
