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
#include "stack/inet/wire/ethernet.h"
#include "stack/inet/wire/ipv4.h"
#include "stack/inet/wire/ipv6.h"
#include "stack/inet/wire/tcp.h"

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

// An IPv6 frame (EtherType 0x86DD) is marked IPv6 for the port's TCP checksum, never with the IPv4
// header checksum flag: IPv6 has no header checksum (RFC 8200 §3).
TEST_F(TxChainTest, Ipv6FramesGetIpv6OffloadFlags) {
  TxChainBuilder builder(pool_, TxChainOptions{});
  constexpr size_t kIpv6Headers = 14 + 40 + 20;
  std::string headers = pattern(kIpv6Headers, 'H');
  inet::EthernetView(reinterpret_cast<uint8_t*>(headers.data()), headers.size())
      .set_ethertype(static_cast<uint16_t>(inet::EtherType::Ipv6));
  inet::Packet p;
  p.data.append(BufferSegment::copy_of(headers.data(), headers.size()));
  p.data.append(BufferSegment::copy_of(pattern(1000, 'a').data(), 1000));
  p.tx.tcp_checksum = true;
  p.tx.l2_length = 14;
  p.tx.l3_length = 40;
  p.tx.l4_length = 20;
  rte_mbuf* m = builder.build(p);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->ol_flags & (RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_TCP_CKSUM), RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_TCP_CKSUM);
  EXPECT_EQ(m->ol_flags & (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM), 0u);
  EXPECT_EQ(m->l2_len, 14u);
  EXPECT_EQ(m->l3_len, 40u);
  EXPECT_EQ(m->l4_len, 20u);
  EXPECT_EQ(builder.counters().checksum_offloads, 1u);
  rte_pktmbuf_free(m);

  // With TSO the large segment is marked for cutting as IPv6 too.
  TxChainOptions tso;
  tso.tso = true;
  TxChainBuilder tso_builder(pool_, tso);
  inet::Packet large;
  large.data.append(BufferSegment::copy_of(headers.data(), headers.size()));
  large.data.append(BufferSegment::copy_of(pattern(20000, 'b').data(), 20000));
  large.tx = p.tx;
  large.tx.segment_payload = 1428;
  m = tso_builder.build(large);
  ASSERT_NE(m, nullptr);
  const uint64_t wanted = RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_TCP_CKSUM;
  EXPECT_EQ(m->ol_flags & wanted, wanted);
  EXPECT_EQ(m->ol_flags & (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM), 0u);
  EXPECT_EQ(m->tso_segsz, 1428u);
  EXPECT_EQ(m->l3_len, 40u);
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

// A large TCP segment over IPv4 or IPv6 as TcpLayer hands it down for the device to cut:
// timestamps, PSH and FIN, the TCP checksum field holding the family's pseudo-header sum without
// the length (rte_ipv4_phdr_cksum / rte_ipv6_phdr_cksum with RTE_MBUF_F_TX_TCP_SEG).
struct LargeSegment {
  static constexpr uint32_t kSeq = 0xfffff000;  // wraps inside the segment
  inet::Ipv4Address source = inet::Ipv4Address::from_octets(10, 1, 0, 1);
  inet::Ipv4Address destination = inet::Ipv4Address::from_octets(10, 1, 0, 2);
  inet::Ipv6Address source6 = *inet::Ipv6Address::from_string("2001:db8::1");
  inet::Ipv6Address destination6 = *inet::Ipv6Address::from_string("2001:db8::2");
  bool ipv6;
  size_t l3;  // the IP header's length
  std::string payload;
  inet::Packet packet;
  size_t header_length = 0;

  LargeSegment(const std::vector<size_t>& pieces, uint16_t segment_payload, bool over_ipv6 = false)
      : ipv6(over_ipv6), l3(over_ipv6 ? inet::Ipv6Header::kLength : inet::Ipv4Header::kMinLength) {
    inet::TcpHeader tcp;
    tcp.source_port = 4000;
    tcp.destination_port = 80;
    tcp.seq = kSeq;
    tcp.ack = 77;
    tcp.flags = inet::kTcpAck | inet::kTcpPsh | inet::kTcpFin;
    tcp.window = 1000;
    tcp.options.timestamp = std::make_pair(5u, 6u);
    const size_t l4 = tcp.emitted_length();
    header_length = 14 + l3 + l4;
    for (size_t n : pieces) payload += pattern(n, static_cast<char>('a' + payload.size() % 7));
    std::string headers(header_length, '\0');
    auto* h = reinterpret_cast<uint8_t*>(headers.data());
    inet::EthernetHeader{{{2, 0, 0, 0, 0, 2}}, {{2, 0, 0, 0, 0, 1}}, static_cast<uint16_t>(ipv6 ? 0x86dd : 0x0800)}
        .emit(h);
    if (ipv6) {
      inet::Ipv6Header ip;
      ip.payload_length = static_cast<uint16_t>(l4 + payload.size());
      ip.next_header = inet::kIpv6Tcp;
      ip.hop_limit = 64;
      ip.source = source6;
      ip.destination = destination6;
      ip.emit(h + 14);
    } else {
      inet::Ipv4Header ip;
      ip.total_length = static_cast<uint16_t>(20 + l4 + payload.size());
      ip.identification = 900;
      ip.flags_fragment = inet::Ipv4Header::kFlagDontFragment;
      ip.protocol = 6;
      ip.source = source;
      ip.destination = destination;
      ip.emit(h + 14, true);
    }
    tcp.emit(h + 14 + l3);
    inet::tcp_field::Checksum::set(h + 14 + l3, pseudo_header_sum(0));
    packet.data.append(BufferSegment::copy_of(headers.data(), headers.size()));
    size_t at = 0;
    for (size_t n : pieces) {
      packet.data.append(BufferSegment::copy_of(payload.data() + at, n));
      at += n;
    }
    packet.tx.tcp_checksum = true;
    packet.tx.l2_length = 14;
    packet.tx.l3_length = static_cast<uint8_t>(l3);
    packet.tx.l4_length = static_cast<uint8_t>(l4);
    packet.tx.segment_payload = segment_payload;
  }

  uint16_t pseudo_header_sum(size_t tcp_length) const {
    return ipv6 ? inet::tcp_pseudo_header_sum(source6, destination6, tcp_length)
                : inet::tcp_pseudo_header_sum(source, destination, tcp_length);
  }
  uint16_t checksum(const BufferList& segment) const {
    return ipv6 ? inet::tcp_checksum(source6, destination6, segment) : inet::tcp_checksum(source, destination, segment);
  }
};

std::vector<rte_mbuf*> cut(TxChainBuilder& builder, const inet::Packet& packet, bool* ok) {
  std::vector<rte_mbuf*> frames;
  *ok = builder.build_cut(packet, [](void* out, rte_mbuf* m) { static_cast<std::vector<rte_mbuf*>*>(out)->push_back(m); },
                          &frames);
  return frames;
}

// Software segmentation on a port without TSO: each frame is a complete, valid TCP segment of at
// most segment_payload bytes, its sequence number, IP length (IPv4 total length or IPv6 payload
// length), IPv4 identification and checksums its own, PSH and FIN on the last only, and together
// they carry the payload exactly; over IPv4 and IPv6 alike.
TEST_F(TxChainTest, SoftwareSegmentationCutsWhileCopying) {
  for (const bool ipv6 : {false, true})
  for (const bool attach : {false, true})
  for (const bool port_sums : {false, true}) {
    for (const std::vector<size_t>& pieces :
         std::vector<std::vector<size_t>>{{1448 * 3}, {333, 20000, 7, 44000}, {1}, {8948, 8948, 100}}) {
      SCOPED_TRACE(ipv6 ? "IPv6" : "IPv4");
      const uint16_t mss = pieces.size() == 3 ? 8948 : 1448;
      TxChainOptions options;
      options.device_copies = !attach;  // a port that DMAs: payload attached, not copied
      options.software_tcp_checksum = !port_sums;
      TxChainBuilder builder(pool_, options);
      LargeSegment large(pieces, mss, ipv6);
      const size_t l4_offset = 14 + large.l3;
      ASSERT_TRUE(builder.cuts(large.packet));
      bool ok = false;
      std::vector<rte_mbuf*> frames = cut(builder, large.packet, &ok);
      ASSERT_TRUE(ok);
      ASSERT_EQ(frames.size(), (large.payload.size() + mss - 1) / mss);
      std::string carried;
      for (size_t i = 0; i < frames.size(); ++i) {
        const std::string bytes = chain_bytes(frames[i]);
        const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
        if (ipv6) {
          inet::Ipv6Header ip;
          ASSERT_EQ(inet::Ipv6Header::parse(b + 14, bytes.size() - 14, ip), nullptr) << "frame " << i;
          EXPECT_EQ(ip.payload_length, bytes.size() - l4_offset);
          EXPECT_EQ(ip.source, large.source6);
        } else {
          inet::Ipv4Header ip;
          ASSERT_EQ(inet::Ipv4Header::parse(b + 14, bytes.size() - 14, true, ip), nullptr) << "frame " << i;
          EXPECT_EQ(ip.total_length, bytes.size() - 14);
          EXPECT_EQ(ip.identification, 900 + i);
        }
        inet::TcpHeader tcp;
        ASSERT_EQ(inet::TcpHeader::parse(b + l4_offset, bytes.size() - l4_offset, tcp), nullptr);
        EXPECT_EQ(tcp.seq, LargeSegment::kSeq + static_cast<uint32_t>(carried.size()));
        const bool last = i + 1 == frames.size();
        EXPECT_EQ(tcp.has(inet::kTcpFin), last);
        EXPECT_EQ(tcp.has(inet::kTcpPsh), last);
        EXPECT_TRUE(tcp.options.timestamp.has_value());
        const size_t payload = bytes.size() - large.header_length;
        EXPECT_LE(payload, mss);
        if (!last) {
          EXPECT_EQ(payload, mss);
        }
        carried += bytes.substr(large.header_length);
        if (port_sums) {
          // The port completes the sum: flags and lengths set, the field holds this frame's
          // pseudo-header sum (with its length: the frame is not cut further).
          const uint64_t l3_flag = ipv6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4;
          EXPECT_EQ(frames[i]->ol_flags & (RTE_MBUF_F_TX_TCP_CKSUM | l3_flag), RTE_MBUF_F_TX_TCP_CKSUM | l3_flag);
          EXPECT_EQ(frames[i]->ol_flags & (RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IP_CKSUM), 0u);
          EXPECT_EQ(frames[i]->l3_len, large.l3);
          EXPECT_EQ(frames[i]->l4_len, large.packet.tx.l4_length);
          EXPECT_EQ(inet::tcp_field::Checksum::get(b + l4_offset), large.pseudo_header_sum(bytes.size() - l4_offset));
        } else {
          BufferList segment;
          segment.append(BufferSegment::copy_of(bytes.data() + l4_offset, bytes.size() - l4_offset));
          EXPECT_EQ(large.checksum(segment), 0) << "frame " << i;
          EXPECT_EQ(frames[i]->ol_flags & RTE_MBUF_F_TX_TCP_CKSUM, 0u);
        }
        rte_pktmbuf_free(frames[i]);
      }
      EXPECT_EQ(carried, large.payload);
      if (attach && large.payload.size() >= 4 * 1448) {
        EXPECT_GT(builder.counters().attached_bytes, 0u);
      } else if (!attach) {
        EXPECT_EQ(builder.counters().attached_bytes, 0u);
      }
      EXPECT_EQ(builder.counters().cut_segments, 1u);
      EXPECT_EQ(builder.counters().cut_frames, frames.size());
    }
  }
}

// A port with TSO gets the large segment whole, marked for the port to cut: RTE_MBUF_F_TX_IPV4 or
// _IPV6 for its family (never IP_CKSUM: the stack summed the IPv4 header, IPv6 has none), l3_len
// 20 or 40, tso_segsz the SMSS, and the field the pseudo-header sum without the length.
TEST_F(TxChainTest, TsoPortsGetTheSegmentMarked) {
  for (const bool ipv6 : {false, true}) {
    SCOPED_TRACE(ipv6 ? "IPv6" : "IPv4");
    TxChainOptions options;
    options.tso = true;
    TxChainBuilder builder(pool_, options);
    LargeSegment large({30000, 30000}, 1448, ipv6);
    EXPECT_FALSE(builder.cuts(large.packet));
    rte_mbuf* m = builder.build(large.packet);
    ASSERT_NE(m, nullptr);
    const uint64_t l3_flag = ipv6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4;
    const uint64_t wanted = RTE_MBUF_F_TX_TCP_SEG | l3_flag | RTE_MBUF_F_TX_TCP_CKSUM;
    EXPECT_EQ(m->ol_flags & (wanted | RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_IP_CKSUM), wanted);
    EXPECT_EQ(m->tso_segsz, 1448u);
    EXPECT_EQ(m->l2_len, 14u);
    EXPECT_EQ(m->l3_len, large.l3);
    EXPECT_EQ(m->l4_len, large.packet.tx.l4_length);
    EXPECT_EQ(m->pkt_len, large.header_length + 60000);
    const std::string bytes = chain_bytes(m);
    EXPECT_EQ(bytes, large.packet.data.to_string());
    EXPECT_EQ(inet::tcp_field::Checksum::get(reinterpret_cast<const uint8_t*>(bytes.data()) + 14 + large.l3),
              large.pseudo_header_sum(0));
    EXPECT_EQ(builder.counters().tso_segments, 1u);
    rte_pktmbuf_free(m);
  }
}

// The pool runs dry halfway through a cut: the frames already handed over stand, nothing leaks.
TEST_F(TxChainTest, CutStopsCleanlyWhenThePoolRunsDry) {
  TxChainOptions options;
  options.software_tcp_checksum = true;
  TxChainBuilder builder(pool_, options);
  std::vector<rte_mbuf*> hoard;
  while (rte_mempool_avail_count(pool_) > 10) hoard.push_back(rte_pktmbuf_alloc(pool_));
  LargeSegment large({60000}, 1448);
  bool ok = true;
  std::vector<rte_mbuf*> frames = cut(builder, large.packet, &ok);
  EXPECT_FALSE(ok);
  EXPECT_LE(frames.size(), 10u);
  for (rte_mbuf* m : frames) rte_pktmbuf_free(m);
  for (rte_mbuf* m : hoard) rte_pktmbuf_free(m);
}

}  // namespace
}  // namespace bypass
