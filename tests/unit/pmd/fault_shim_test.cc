// The seeded fault shim: each fault alone, determinism by seed, and nothing leaks.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <vector>

#include "pmd/fault_shim.h"
#include "tests/unit/pmd/packets.h"

namespace bypass::pmd {
namespace {

using testing_packets::udp_packet;
using testing_packets::udp_source_port;

class FaultShimTest : public testing::Test {
 protected:
  void SetUp() override {
    pool_ = rte_pktmbuf_pool_create(("fault_" + std::to_string(counter_++)).c_str(), 4095, 0, 0,
                                    RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool_, nullptr);
  }
  void TearDown() override {
    EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
    rte_mempool_free(pool_);
  }
  std::vector<rte_mbuf*> burst(uint16_t n, uint16_t first_port = 1000) {
    std::vector<rte_mbuf*> pkts;
    for (uint16_t i = 0; i < n; ++i) pkts.push_back(udp_packet(pool_, 0x0a000001, 0x0a000002, first_port + i, 80));
    return pkts;
  }
  // Runs one burst through the shim at time `now`; returns source ports of what came out.
  std::vector<uint16_t> pass(FaultShim& shim, std::vector<rte_mbuf*> in, uint64_t now) {
    std::vector<rte_mbuf*> out(1024);
    const uint16_t n = shim.process(in.data(), static_cast<uint16_t>(in.size()), out.data(), 1024, now);
    std::vector<uint16_t> ports;
    for (uint16_t i = 0; i < n; ++i) {
      ports.push_back(udp_source_port(out[i]));
      rte_pktmbuf_free(out[i]);
    }
    return ports;
  }
  rte_mempool* pool_ = nullptr;
  static inline int counter_ = 0;
};

TEST_F(FaultShimTest, NoFaultsPassesEverythingInOrder) {
  FaultShim shim(FaultRates{}, 1);
  EXPECT_FALSE(shim.active());
  EXPECT_EQ(pass(shim, burst(4), 0), (std::vector<uint16_t>{1000, 1001, 1002, 1003}));
  EXPECT_EQ(shim.counters().seen, 4u);
}

TEST_F(FaultShimTest, DropAll) {
  FaultRates r;
  r.drop_ppm = 1'000'000;
  FaultShim shim(r, 1);
  EXPECT_TRUE(pass(shim, burst(32), 0).empty());
  EXPECT_EQ(shim.counters().dropped, 32u);
}

TEST_F(FaultShimTest, DropRateIsRoughlyRespected) {
  FaultRates r;
  r.drop_ppm = 100'000;  // 10 %
  FaultShim shim(r, 42);
  size_t passed = 0;
  for (int i = 0; i < 50; ++i) passed += pass(shim, burst(64), 0).size();
  EXPECT_EQ(passed + shim.counters().dropped, 50u * 64);
  EXPECT_GT(shim.counters().dropped, 150u);  // 320 expected
  EXPECT_LT(shim.counters().dropped, 500u);
}

TEST_F(FaultShimTest, DuplicateAll) {
  FaultRates r;
  r.duplicate_ppm = 1'000'000;
  FaultShim shim(r, 1);
  EXPECT_EQ(pass(shim, burst(3), 0), (std::vector<uint16_t>{1000, 1000, 1001, 1001, 1002, 1002}));
  EXPECT_EQ(shim.counters().duplicated, 3u);
}

TEST_F(FaultShimTest, ReorderSwapsWithTheNextPacket) {
  FaultRates r;
  r.reorder_ppm = 1'000'000;  // every packet not already overtaking is held
  FaultShim shim(r, 1);
  // 1000 held, 1001 passes and releases 1000; 1002 held, 1003 passes and releases it.
  EXPECT_EQ(pass(shim, burst(4), 0), (std::vector<uint16_t>{1001, 1000, 1003, 1002}));
  // A lone held packet comes out after the reorder timeout even with no traffic behind it.
  EXPECT_TRUE(pass(shim, burst(1, 2000), 0).empty());
  EXPECT_EQ(shim.held(), 1u);
  EXPECT_EQ(pass(shim, {}, 2'000'000), (std::vector<uint16_t>{2000}));
}

TEST_F(FaultShimTest, DelayHoldsUntilDue) {
  FaultRates r;
  r.delay = std::chrono::milliseconds(5);
  r.delay_ppm = 1'000'000;
  FaultShim shim(r, 1);
  EXPECT_TRUE(pass(shim, burst(2), 1'000'000).empty());
  EXPECT_EQ(shim.held(), 2u);
  EXPECT_TRUE(pass(shim, {}, 5'999'999).empty());
  EXPECT_EQ(pass(shim, {}, 6'000'000), (std::vector<uint16_t>{1000, 1001}));
}

TEST_F(FaultShimTest, CorruptFlipsExactlyOneBitPastTheEthernetHeader) {
  FaultRates r;
  r.corrupt_ppm = 1'000'000;
  FaultShim shim(r, 3);
  for (int round = 0; round < 20; ++round) {
    std::vector<rte_mbuf*> in = burst(1);
    rte_mbuf* original = rte_pktmbuf_copy(in[0], pool_, 0, UINT32_MAX);
    ASSERT_NE(original, nullptr);
    rte_mbuf* out[4];
    ASSERT_EQ(shim.process(in.data(), 1, out, 4, 0), 1);
    const auto* a = rte_pktmbuf_mtod(original, const uint8_t*);
    const auto* b = rte_pktmbuf_mtod(out[0], const uint8_t*);
    int flipped = 0;
    for (uint16_t i = 0; i < rte_pktmbuf_data_len(original); ++i) {
      flipped += __builtin_popcount(a[i] ^ b[i]);
      if (a[i] != b[i]) {
        EXPECT_GE(i, 14);
      }
    }
    EXPECT_EQ(flipped, 1);
    rte_pktmbuf_free(original);
    rte_pktmbuf_free(out[0]);
  }
}

TEST_F(FaultShimTest, SameSeedSameFaults) {
  FaultRates r;
  r.drop_ppm = 200'000;
  r.duplicate_ppm = 200'000;
  r.reorder_ppm = 200'000;
  FaultShim a(r, 99), b(r, 99), c(r, 100);
  std::vector<uint16_t> out_a, out_b, out_c;
  for (int i = 0; i < 10; ++i) {
    for (uint16_t p : pass(a, burst(32), 0)) out_a.push_back(p);
    for (uint16_t p : pass(b, burst(32), 0)) out_b.push_back(p);
    for (uint16_t p : pass(c, burst(32), 0)) out_c.push_back(p);
  }
  EXPECT_EQ(out_a, out_b);
  EXPECT_NE(out_a, out_c);
}

TEST_F(FaultShimTest, OutputBeyondCapacityWaitsForTheNextCall) {
  FaultRates r;
  r.duplicate_ppm = 1'000'000;
  FaultShim shim(r, 1);
  std::vector<rte_mbuf*> in = burst(4);
  rte_mbuf* out[8];
  ASSERT_EQ(shim.process(in.data(), 4, out, 5, 0), 5);
  EXPECT_EQ(shim.held(), 3u);
  ASSERT_EQ(shim.process(nullptr, 0, out + 5, 3, 0), 3);
  for (rte_mbuf* m : out) rte_pktmbuf_free(m);
}

TEST_F(FaultShimTest, DestructorFreesHeldPackets) {
  FaultRates r;
  r.delay = std::chrono::seconds(10);
  r.delay_ppm = 1'000'000;
  {
    FaultShim shim(r, 1);
    EXPECT_TRUE(pass(shim, burst(8), 0).empty());
  }
  EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u);
}

}  // namespace
}  // namespace bypass::pmd
