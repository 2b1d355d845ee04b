// Rendezvous without verbs: the descriptor's wire format (round trip, layout, every malformed field
// named, random bytes never crash), the receiver's cutting of descriptors into READ pieces in
// stream order, and the sender's release bookkeeping.
#include "stack/rdma/rendezvous.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace bypass::rdma {
namespace {

Descriptor sample() {
  Descriptor d;
  d.count = 2;
  d.regions[0] = {0x00007f0011223344ull, 0xa1b2c3d4u, 65536};
  d.regions[1] = {0x1000, 0x5, 3};
  return d;
}

std::vector<uint8_t> wire_of(const Descriptor& d) {
  std::vector<uint8_t> w(d.wire_size());
  d.encode(w.data());
  return w;
}

TEST(RendezvousDescriptor, RoundTrips) {
  const auto w = wire_of(sample());
  Descriptor back;
  std::string error;
  ASSERT_TRUE(Descriptor::decode(w.data(), w.size(), &back, &error)) << error;
  ASSERT_EQ(back.count, 2);
  EXPECT_EQ(back.regions[0].address, 0x00007f0011223344ull);
  EXPECT_EQ(back.regions[0].rkey, 0xa1b2c3d4u);
  EXPECT_EQ(back.regions[0].length, 65536u);
  EXPECT_EQ(back.regions[1].length, 3u);
  EXPECT_EQ(back.total(), 65539u);
}

TEST(RendezvousDescriptor, LayoutIsLittleEndianAndFixed) {
  const auto w = wire_of(sample());
  ASSERT_EQ(w.size(), 4u + 2 * 16);
  EXPECT_EQ(w[0], 1);  // version
  EXPECT_EQ(w[1], 2);  // regions
  EXPECT_EQ(w[4], 0x44);
  EXPECT_EQ(w[11], 0x00);
  EXPECT_EQ(w[12], 0xd4);  // rkey
  EXPECT_EQ(w[16], 0x00);  // length 65536 = 00 00 01 00
  EXPECT_EQ(w[18], 0x01);
}

struct Corruption {
  size_t offset;
  uint8_t value;
  const char* expect;
};

TEST(RendezvousDescriptor, MalformedFieldsAreNamed) {
  const Corruption cases[] = {
      {0, 2, "rendezvous descriptor: unsupported version 2 at offset 0 (expected 1)"},
      {1, 0, "rendezvous descriptor: region count 0 at offset 1 is outside 1..16"},
      {1, 17, "rendezvous descriptor: region count 17 at offset 1 is outside 1..16"},
      {1, 3, "rendezvous descriptor: 36 bytes for 3 regions (expected 52)"},
      {19, 0x80, "rendezvous descriptor: region 0 length 2147549184 at offset 16 is outside 1..2^31"},
  };
  for (const Corruption& c : cases) {
    auto w = wire_of(sample());
    w[c.offset] = c.value;
    Descriptor d;
    std::string error;
    EXPECT_FALSE(Descriptor::decode(w.data(), w.size(), &d, &error)) << c.expect;
    EXPECT_EQ(error, c.expect);
  }
  Descriptor zero = sample();
  zero.regions[1].length = 0;
  auto w = wire_of(zero);
  Descriptor d;
  std::string error;
  EXPECT_FALSE(Descriptor::decode(w.data(), w.size(), &d, &error));
  EXPECT_EQ(error, "rendezvous descriptor: region 1 length 0 at offset 32 is outside 1..2^31");
  Descriptor wraps = sample();
  wraps.regions[0].address = ~uint64_t{0} - 100;
  w = wire_of(wraps);
  EXPECT_FALSE(Descriptor::decode(w.data(), w.size(), &d, &error));
  EXPECT_NE(error.find("region 0 at offset 4: address 0xffffffffffffff9b + length 65536 wraps around"),
            std::string::npos) << error;
  EXPECT_FALSE(Descriptor::decode(w.data(), 3, &d, &error));
  EXPECT_EQ(error, "rendezvous descriptor: 3 bytes, shorter than its 4-byte header");
}

TEST(RendezvousDescriptor, RandomBytesNeverCrash) {
  std::mt19937 rng(11);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    auto w = wire_of(sample());
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) w[rng() % w.size()] = static_cast<uint8_t>(rng());
    w.resize(w.size() - rng() % 3);
    Descriptor d;
    std::string error;
    if (Descriptor::decode(w.data(), w.size(), &d, &error)) {
      ++accepted;
      for (size_t r = 0; r < d.count; ++r) {
        EXPECT_GT(d.regions[r].length, 0u);
        EXPECT_LE(d.regions[r].length, Descriptor::kMaxRegionLength);
      }
    } else {
      EXPECT_FALSE(error.empty());
    }
  }
  EXPECT_GT(accepted, 0);  // flips in addresses and rkeys still decode: the sender's HCA checks those
}

TEST(InboundTransfers, CutsRegionsIntoPiecesInStreamOrder) {
  InboundTransfers in;
  in.reset(4);
  Descriptor a;
  a.count = 2;
  a.regions[0] = {1000, 7, 2500};
  a.regions[1] = {9000, 8, 10};
  Descriptor b;
  b.count = 1;
  b.regions[0] = {50000, 9, 1000};
  InboundTransfer* ta = in.add(a);
  InboundTransfer* tb = in.add(b);
  ASSERT_NE(ta, nullptr);
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(ta->total, 2510u);
  std::vector<RemoteRegion> pieces;
  while (InboundTransfer* t = in.next_to_read()) pieces.push_back(in.take_piece(*t, 1024));
  ASSERT_EQ(pieces.size(), 5u);  // 1024 + 1024 + 452 of region 0, 10 of region 1, then b's 1000
  EXPECT_EQ(pieces[0].address, 1000u);
  EXPECT_EQ(pieces[1].address, 2024u);
  EXPECT_EQ(pieces[2].length, 452u);
  EXPECT_EQ(pieces[3].rkey, 8u);
  EXPECT_EQ(pieces[3].length, 10u);
  EXPECT_EQ(pieces[4].address, 50000u);
  EXPECT_TRUE(ta->all_posted());
  EXPECT_TRUE(tb->all_posted());
  EXPECT_EQ(in.next_to_read(), nullptr);
  // Consuming the front keeps the rest in place; a new descriptor is read next.
  in.pop_front();
  EXPECT_EQ(&in.front(), tb);
  InboundTransfer* tc = in.add(b);
  EXPECT_EQ(in.next_to_read(), tc);
}

TEST(InboundTransfers, FullRingRefuses) {
  InboundTransfers in;
  in.reset(2);
  Descriptor d = sample();
  EXPECT_NE(in.add(d), nullptr);
  EXPECT_NE(in.add(d), nullptr);
  EXPECT_EQ(in.add(d), nullptr);
  in.clear();
  EXPECT_EQ(in.size(), 0u);
  EXPECT_NE(in.add(d), nullptr);
}

TEST(OutboundTransfers, ReleaseDropsViewsInOrderAndRefusesExcess) {
  OutboundTransfers out;
  out.reset(1);  // room for two: a release may trail its credits
  BufferSegment a = BufferSegment::allocate(100);
  BufferSegment b = BufferSegment::allocate(200);
  for (BufferSegment* s : {&a, &b}) {
    ASSERT_FALSE(out.full());
    OutboundTransfers::Transfer& t = out.next();
    t.held.append(*s);
    t.count = 1;
    t.bytes = s->length();
    out.commit();
  }
  EXPECT_TRUE(out.full());
  EXPECT_EQ(a.use_count(), 2);
  uint64_t bytes = 0;
  EXPECT_FALSE(out.release(3, nullptr, &bytes)) << "more released than sent";
  EXPECT_EQ(out.outstanding(), 2u);
  ASSERT_TRUE(out.release(1, nullptr, &bytes));
  EXPECT_EQ(bytes, 100u);
  EXPECT_EQ(a.use_count(), 1) << "the released descriptor's view is gone";
  EXPECT_EQ(b.use_count(), 2);
  out.release_all(nullptr);
  EXPECT_EQ(b.use_count(), 1);
  EXPECT_EQ(out.outstanding(), 0u);
}

}  // namespace
}  // namespace bypass::rdma
