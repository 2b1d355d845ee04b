// TxChainBuilder on a running EAL (--no-huge): which pieces are attached and which copied, the
// bytes of the chain, checksum offload fields, and above all ownership: an attached piece's
// storage lives exactly as long as the last of the stack's views and the mbufs referring to it,
// and nothing leaks when the pool runs dry. DpdkDevice's receive-side checksum verdicts too.
#include <gtest/gtest.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <cstring>
#include <string>
#include <vector>

#include "pmd/mempools.h"
#include "stack/dpdk/dpdk_device.h"
#include "stack/dpdk/tx_chain.h"

namespace bypass {
namespace {

constexpr size_t kHeaders = 54;  // Ethernet + IPv4 + TCP, as the stack's first segment

std::string pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 29);
  return s;
}

std::string chain_bytes(const rte_mbuf* head) {
  std::string out;
  for (const rte_mbuf* m = head; m != nullptr; m = m->next) out.append(rte_pktmbuf_mtod(m, const char*), m->data_len);
  return out;
}

class TxChainTest : public testing::Test {
 protected:
  void SetUp() override { pool_ = pools_.for_socket(0); }
  void TearDown() override {
    EXPECT_EQ(tx_pieces_outstanding(), 0u) << "attached pieces never released";
    for (const auto& u : pools_.usage()) EXPECT_EQ(u.in_use, 0u) << "mbufs leaked from " << u.name;
  }
  // A frame: the header segment, then one heap segment per entry of `sizes`.
  inet::Packet frame(const std::vector<size_t>& sizes) {
    inet::Packet p;
    p.data.append(BufferSegment::copy_of(pattern(kHeaders, 'H').data(), kHeaders));
    char seed = 'a';
    for (size_t n : sizes) {
      const std::string bytes = pattern(n, seed++);
      p.data.append(BufferSegment::copy_of(bytes.data(), n));
    }
    return p;
  }

  pmd::MempoolSet pools_{1023, 0, RTE_MBUF_DEFAULT_BUF_SIZE};
  rte_mempool* pool_ = nullptr;
};

TEST_F(TxChainTest, LargePieceIsAttachedAndOwnedUntilTheMbufIsFreed) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({4000});
  const BufferSegment payload = p.data.segments()[1];
  const long views_before = payload.use_count();
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->nb_segs, 2);
  EXPECT_EQ(m->data_len, kHeaders);
  EXPECT_EQ(m->pkt_len, kHeaders + 4000);
  ASSERT_NE(m->next, nullptr);
  EXPECT_TRUE(RTE_MBUF_HAS_EXTBUF(m->next));
  EXPECT_EQ(rte_pktmbuf_mtod(m->next, const char*), payload.data());  // the same memory, no copy
  EXPECT_EQ(chain_bytes(m), p.data.to_string());
  EXPECT_EQ(payload.use_count(), views_before + 1);  // the mbuf holds its own view
  EXPECT_EQ(tx_pieces_outstanding(), 1u);
  p.data.clear();  // the stack lets go first (segment acknowledged): the mbuf keeps it alive
  EXPECT_EQ(payload.use_count(), views_before);
  EXPECT_EQ(chain_bytes(m).substr(kHeaders), pattern(4000, 'a'));
  rte_pktmbuf_free(m);  // the driver is done: DPDK's free callback drops the mbuf's view
  EXPECT_EQ(payload.use_count(), views_before - 1);
  EXPECT_EQ(builder.counters().attached_pieces, 1u);
  EXPECT_EQ(builder.counters().attached_bytes, 4000u);
  EXPECT_EQ(builder.counters().copied_bytes, kHeaders);
}

TEST_F(TxChainTest, SmallPiecesAreCopiedNextToTheHeaders) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({100, 511, 7});
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->nb_segs, 1);
  EXPECT_TRUE(RTE_MBUF_DIRECT(m));
  EXPECT_EQ(chain_bytes(m), p.data.to_string());
  EXPECT_EQ(builder.counters().attached_pieces, 0u);
  rte_pktmbuf_free(m);
}

TEST_F(TxChainTest, MixedPiecesKeepTheirOrder) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({100, 1000, 100, 2000, 70000});
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  // headers+100 copied | 1000 attached | 100 copied | 2000 attached | 65535 + 4465 attached
  ASSERT_EQ(m->nb_segs, 6);
  const rte_mbuf* s = m;
  for (bool external : {false, true, false, true, true, true}) {
    EXPECT_EQ(RTE_MBUF_HAS_EXTBUF(s) != 0, external);
    s = s->next;
  }
  EXPECT_EQ(m->pkt_len, p.data.length());
  EXPECT_EQ(chain_bytes(m), p.data.to_string());
  EXPECT_EQ(tx_pieces_outstanding(), 4u);
  rte_pktmbuf_free(m);
}

TEST_F(TxChainTest, ARetransmissionAttachesTheSameMemoryAgain) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({3000});
  const BufferSegment payload = p.data.segments()[1];
  rte_mbuf* first = builder.build(p);
  rte_mbuf* again = builder.build(p);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(rte_pktmbuf_mtod(first->next, const char*), rte_pktmbuf_mtod(again->next, const char*));
  p.data.clear();
  rte_pktmbuf_free(first);
  EXPECT_EQ(chain_bytes(again).substr(kHeaders), pattern(3000, 'a'));  // still alive for the second
  rte_pktmbuf_free(again);
  EXPECT_EQ(payload.use_count(), 1);
}

TEST_F(TxChainTest, ThresholdAndSwitchesDecideWhatIsCopied) {
  TxChainOptions off;
  off.zero_copy = false;
  TxChainOptions no_chains;
  no_chains.multi_seg = false;
  TxChainOptions high;
  high.zero_copy_threshold = 5000;
  for (const TxChainOptions& options : {off, no_chains, high}) {
    TxChainBuilder builder(pool_, options);
    inet::Packet p = frame({1500});
    rte_mbuf* m = builder.build(p);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->nb_segs, 1);
    EXPECT_EQ(chain_bytes(m), p.data.to_string());
    EXPECT_EQ(builder.counters().attached_pieces, 0u);
    rte_pktmbuf_free(m);
  }
}

TEST_F(TxChainTest, SegmentLimitLeavesRoomForACopiedTail) {
  TxChainOptions options;
  options.max_segments = 3;
  TxChainBuilder builder(pool_, options);
  inet::Packet p = frame({600, 600, 600, 600});
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  EXPECT_LE(m->nb_segs, 3);
  EXPECT_EQ(chain_bytes(m), p.data.to_string());
  EXPECT_EQ(builder.counters().attached_pieces, 1u);
  rte_pktmbuf_free(m);
}

// A NIC that DMAs gets only memory DPDK mapped for it: heap memory is copied, rte_malloc memory
// (DPDK's own heap) attached when the EAL runs with IOVA as VA.
TEST_F(TxChainTest, DmaPortsAttachOnlyRegisteredMemory) {
  TxChainOptions options;
  options.dma_needs_registered_memory = true;
  TxChainBuilder builder(pool_, options);
  inet::Packet heap = frame({1500});
  rte_mbuf* m = builder.build(heap);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->nb_segs, 1);
  EXPECT_EQ(chain_bytes(m), heap.data.to_string());
  rte_pktmbuf_free(m);

  char* registered = static_cast<char*>(rte_malloc("tx_chain_test", 1500, 0));
  ASSERT_NE(registered, nullptr);
  std::memset(registered, 'r', 1500);
  inet::Packet dpdk_memory;
  dpdk_memory.data.append(BufferSegment::copy_of(pattern(kHeaders, 'H').data(), kHeaders));
  dpdk_memory.data.append(
      BufferSegment::wrap(registered, 1500, [](void* memory, BufferStorage*) { rte_free(memory); }, registered));
  m = builder.build(dpdk_memory);
  ASSERT_NE(m, nullptr);
  const bool va = rte_eal_iova_mode() == RTE_IOVA_VA;
  EXPECT_EQ(m->nb_segs, va ? 2 : 1);
  EXPECT_EQ(chain_bytes(m), dpdk_memory.data.to_string());
  EXPECT_EQ(builder.counters().unregistered_copies, va ? 1u : 0u);  // the heap piece, when zero-copy is on
  rte_pktmbuf_free(m);
}

TEST_F(TxChainTest, EmptyPoolReturnsNullAndReleasesEverything) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({1000, 1000, 1000});
  const BufferSegment payload = p.data.segments()[2];
  rte_pktmbuf_free(builder.build(p));  // the pool looked roomy: the next frames attach
  std::vector<rte_mbuf*> hoard;
  while (rte_mbuf* m = rte_pktmbuf_alloc(pool_)) hoard.push_back(m);
  // Give back room for a head and two attachments: the third attachment fails mid-chain.
  for (int i = 0; i < 3; ++i) {
    rte_pktmbuf_free(hoard.back());
    hoard.pop_back();
  }
  EXPECT_EQ(builder.build(p), nullptr);
  EXPECT_EQ(tx_pieces_outstanding(), 0u);
  EXPECT_EQ(payload.use_count(), 2);  // the packet's view and ours, none left in a lost mbuf
  for (rte_mbuf* m : hoard) rte_pktmbuf_free(m);
}

// Attachments cost an extra mbuf each; with the pool under a quarter free they stop.
TEST_F(TxChainTest, LowPoolCopiesInsteadOfAttaching) {
  std::vector<rte_mbuf*> hoard;
  while (rte_mempool_avail_count(pool_) > pool_->size / 8) hoard.push_back(rte_pktmbuf_alloc(pool_));
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({1200});
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->nb_segs, 1);
  EXPECT_EQ(chain_bytes(m), p.data.to_string());
  EXPECT_EQ(builder.counters().low_pool_copies, 1u);
  rte_pktmbuf_free(m);
  for (rte_mbuf* h : hoard) rte_pktmbuf_free(h);
}

TEST_F(TxChainTest, ChecksumOffloadFieldsFollowThePacket) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet p = frame({1000});
  p.tx.ipv4_checksum = true;
  p.tx.tcp_checksum = true;
  p.tx.l2_length = 14;
  p.tx.l3_length = 20;
  p.tx.l4_length = 20;
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  const uint64_t wanted = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_TCP_CKSUM;
  EXPECT_EQ(m->ol_flags & wanted, wanted);
  EXPECT_EQ(m->l2_len, 14u);
  EXPECT_EQ(m->l3_len, 20u);
  EXPECT_EQ(m->l4_len, 20u);
  EXPECT_EQ(builder.counters().checksum_offloads, 1u);
  rte_pktmbuf_free(m);

  inet::Packet plain = frame({10});
  m = builder.build(plain);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ol_flags & wanted, 0u);
  EXPECT_EQ(builder.counters().checksum_offloads, 1u);
  rte_pktmbuf_free(m);
}

// A virtual device reads frames with the CPU: pieces are copied into the mbufs, never attached,
// unless dpdk.attach_on_copying_ports asks for attachment anyway.
TEST_F(TxChainTest, PortsThatCopyGetPiecesCopied) {
  TxChainOptions copying;
  copying.device_copies = true;
  TxChainBuilder builder(pool_, copying);
  inet::Packet p = frame({100, 3000, 70000});
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  for (const rte_mbuf* s = m; s != nullptr; s = s->next) EXPECT_TRUE(RTE_MBUF_DIRECT(s));
  EXPECT_EQ(chain_bytes(m), p.data.to_string());
  EXPECT_EQ(builder.counters().attached_pieces, 0u);
  EXPECT_EQ(builder.counters().copied_bytes, p.data.length());
  EXPECT_EQ(tx_pieces_outstanding(), 0u);
  rte_pktmbuf_free(m);

  copying.attach_when_device_copies = true;
  TxChainBuilder attaching(pool_, copying);
  m = attaching.build(p);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(attaching.counters().attached_pieces, 3u);  // 3000, 65535 + 4465
  rte_pktmbuf_free(m);
}

// Plain RFC 1071 sum over the pseudo-header sum and the chain's L4 bytes, as a receiver verifies
// it: a correct TCP checksum field makes it 0xffff.
uint16_t l4_sum(const std::string& frame_bytes, size_t l4_offset, uint16_t pseudo_header_sum) {
  uint64_t sum = pseudo_header_sum;
  for (size_t i = l4_offset; i < frame_bytes.size(); i += 2) {
    const uint32_t high = static_cast<uint8_t>(frame_bytes[i]);
    const uint32_t low = i + 1 < frame_bytes.size() ? static_cast<uint8_t>(frame_bytes[i + 1]) : 0;
    sum += high << 8 | low;
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// A port without TCP checksum offload: the chain completes the field (which holds the pseudo-header
// sum, as for offload) over the bytes it copies and the pieces it attaches, odd lengths included,
// and leaves the offload flags off.
TEST_F(TxChainTest, SoftwareChecksumIsCompletedWhileCopying) {
  constexpr size_t kL4 = 34;  // Ethernet 14 + IPv4 20; the TCP header is the rest of the 54 bytes
  for (const bool attach : {false, true}) {
    for (const std::vector<size_t>& sizes :
         std::vector<std::vector<size_t>>{{}, {1}, {7, 1000}, {333, 2049, 1}, {1448}, {3001, 5, 9000}}) {
      TxChainOptions options;
      options.software_tcp_checksum = true;
      options.zero_copy = attach;
      TxChainBuilder builder(pool_, options);
      inet::Packet p = frame(sizes);
      p.tx.tcp_checksum = true;
      p.tx.l2_length = 14;
      p.tx.l3_length = 20;
      p.tx.l4_length = 20;
      // The stack leaves the pseudo-header sum in the field; any value works for the check.
      std::string expected = p.data.to_string();
      expected[kL4 + 16] = 0x12;
      expected[kL4 + 17] = 0x34;
      std::memcpy(p.data.segments()[0].data() + kL4 + 16, "\x12\x34", 2);
      rte_mbuf* m = builder.build(p);
      ASSERT_NE(m, nullptr);
      const std::string sent = chain_bytes(m);
      EXPECT_EQ(l4_sum(sent, kL4, 0x1234), 0xffff) << "attach " << attach << " payload pieces " << sizes.size();
      // Everything but the checksum field is the frame as given.
      EXPECT_EQ(sent.substr(0, kL4 + 16), expected.substr(0, kL4 + 16));
      EXPECT_EQ(sent.substr(kL4 + 18), expected.substr(kL4 + 18));
      EXPECT_EQ(m->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM, 0u);
      EXPECT_EQ(builder.counters().software_checksums, 1u);
      EXPECT_EQ(builder.counters().checksum_offloads, 0u);
      rte_pktmbuf_free(m);
    }
  }
}

TEST_F(TxChainTest, ReceivedChecksumVerdictsReachThePacket) {
  const struct {
    uint64_t flags;
    inet::RxChecksum ip, l4;
  } cases[] = {
      {0, inet::RxChecksum::Unknown, inet::RxChecksum::Unknown},
      {RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD, inet::RxChecksum::Good, inet::RxChecksum::Good},
      {RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_GOOD, inet::RxChecksum::Bad, inet::RxChecksum::Good},
      {RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD, inet::RxChecksum::Good, inet::RxChecksum::Bad},
      {RTE_MBUF_F_RX_IP_CKSUM_NONE | RTE_MBUF_F_RX_L4_CKSUM_NONE, inet::RxChecksum::Good, inet::RxChecksum::Good},
  };
  for (const auto& c : cases) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    rte_pktmbuf_append(m, 60);
    m->ol_flags = c.flags;
    inet::Packet p = DpdkDevice::packet_from_mbuf(m);  // frees the mbuf when `p` goes
    EXPECT_EQ(p.rx_ip_checksum, c.ip) << std::hex << c.flags;
    EXPECT_EQ(p.rx_l4_checksum, c.l4) << std::hex << c.flags;
  }
}

// A received chain: each segment is its own owner, so the header mbuf returns to the pool as soon
// as the stack trims the headers, while the payload mbuf stays until it is read.
TEST_F(TxChainTest, ReceivedChainReleasesEachSegmentOnItsOwn) {
  const unsigned free_before = rte_mempool_avail_count(pool_);
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet sent = frame({1000});
  rte_mbuf* m = builder.build(sent);  // head (headers) + attached payload, as a looped port delivers it
  ASSERT_NE(m, nullptr);
  inet::Packet received = DpdkDevice::packet_from_mbuf(m);
  EXPECT_EQ(received.data.to_string(), sent.data.to_string());
  EXPECT_EQ(rte_mempool_avail_count(pool_), free_before - 2);
  received.data.trim_front(kHeaders);
  EXPECT_EQ(rte_mempool_avail_count(pool_), free_before - 1);  // the header mbuf is back
  EXPECT_EQ(received.data.to_string(), pattern(1000, 'a'));
  received.data.clear();
  EXPECT_EQ(rte_mempool_avail_count(pool_), free_before);
}

// Under pool pressure the receive path copies: unread data must not pin mbufs the ACKs need.
TEST_F(TxChainTest, ReceivedChainCopiedUnderPressureFreesEveryMbufAtOnce) {
  const unsigned free_before = rte_mempool_avail_count(pool_);
  TxChainBuilder builder(pool_, TxChainOptions{});
  inet::Packet sent = frame({1000, 3000});
  rte_mbuf* m = builder.build(sent);
  ASSERT_NE(m, nullptr);
  ASSERT_GT(m->nb_segs, 1);
  m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_GOOD;
  inet::Packet received = DpdkDevice::packet_copied_from_mbuf(m);
  EXPECT_EQ(rte_mempool_avail_count(pool_), free_before);
  EXPECT_EQ(received.data.to_string(), sent.data.to_string());
  EXPECT_EQ(received.rx_l4_checksum, inet::RxChecksum::Good);
}

}  // namespace
}  // namespace bypass
