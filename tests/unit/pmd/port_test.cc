// Port on ring-backed devices (rte_eth_from_rings, so the test feeds the rx ring itself): offload
// fallbacks reported, the software redirect path with more workers than queues, fault shim on the
// burst path, stats and mempool accounting.
#include <gtest/gtest.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "pmd/error.h"
#include "pmd/mempools.h"
#include "pmd/port.h"
#include "tests/unit/pmd/packets.h"

namespace bypass::pmd {
namespace {

using testing_packets::arp_packet;
using testing_packets::ipv6_packet;
using testing_packets::udp_packet;
using testing_packets::udp_source_port;

constexpr uint32_t kClient = 0x0a000001, kServer = 0x0a000002;

class RingPortTest : public testing::Test {
 protected:
  // A device whose rx queues read rx_rings_ and whose tx queues write tx_rings_.
  uint16_t make_device(unsigned queues, int numa_node = SOCKET_ID_ANY) {
    const std::string base = "rp" + std::to_string(counter_++);
    const size_t first = rx_rings_.size();  // a test may make several devices
    for (unsigned q = 0; q < queues; ++q) {
      rx_rings_.push_back(rte_ring_create((base + "rx" + std::to_string(q)).c_str(), 4096, SOCKET_ID_ANY,
                                          RING_F_SP_ENQ | RING_F_SC_DEQ));
      tx_rings_.push_back(rte_ring_create((base + "tx" + std::to_string(q)).c_str(), 4096, SOCKET_ID_ANY,
                                          RING_F_SP_ENQ | RING_F_SC_DEQ));
    }
    const int id = rte_eth_from_rings(base.c_str(), rx_rings_.data() + first, queues, tx_rings_.data() + first,
                                      queues, numa_node);
    EXPECT_GE(id, 0);
    return static_cast<uint16_t>(id);
  }
  void TearDown() override {
    port_.reset();
    for (rte_ring* r : rx_rings_) drain_and_free(r);
    for (rte_ring* r : tx_rings_) drain_and_free(r);
    for (const auto& u : pools_.usage()) EXPECT_EQ(u.in_use, 0u) << "mbufs leaked from " << u.name;
  }
  static void drain_and_free(rte_ring* r) {
    void* m = nullptr;
    while (rte_ring_dequeue(r, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
    rte_ring_free(r);
  }
  void open(unsigned workers, unsigned queues, PortOptions options = {}) {
    options.workers = workers;
    options.queues = queues;
    options.rx_desc = options.tx_desc = 256;
    port_ = std::make_unique<Port>(make_device(queues), options, pools_);
  }
  void feed(unsigned queue, rte_mbuf* m) { ASSERT_EQ(rte_ring_enqueue(rx_rings_[queue], m), 0); }

  MempoolSet pools_{2047, 0, RTE_MBUF_DEFAULT_BUF_SIZE};
  std::vector<rte_ring*> rx_rings_, tx_rings_;
  std::unique_ptr<Port> port_;
  static inline int counter_ = 0;
};

TEST_F(RingPortTest, ReportsFallbacksForEveryMissingOffload) {
  open(2, 2);
  const PortInfo& info = port_->info();
  EXPECT_EQ(info.rx_queues, 2);
  EXPECT_EQ(info.tx_queues, 2);
  EXPECT_FALSE(info.offloads.enabled.rss);
  EXPECT_FALSE(info.offloads.enabled.tso);
  EXPECT_TRUE(info.software_redirect);  // two queues but no RSS: the device does not steer flows
  for (const char* what : {"rx-ipv4-cksum", "tx-tcp-cksum", "tso", "rss"})
    EXPECT_TRUE(std::any_of(info.offloads.fallbacks.begin(), info.offloads.fallbacks.end(),
                            [&](const std::string& f) { return f.rfind(what, 0) == 0; }))
        << what;
  EXPECT_TRUE(port_->link().up);
}

TEST_F(RingPortTest, OneWorkerOneQueueUsesTheDirectPath) {
  open(1, 1);
  EXPECT_FALSE(port_->info().software_redirect);
  feed(0, udp_packet(port_->mempool(), kClient, kServer, 1234, 80));
  rte_mbuf* pkts[8];
  ASSERT_EQ(port_->rx_burst(0, pkts, 8), 1);
  EXPECT_EQ(port_->tx_burst(0, pkts, 1), 1);
  EXPECT_EQ(rte_ring_count(tx_rings_[0]), 1u);
  const PortStats s = port_->stats();
  EXPECT_EQ(s.rx_packets, 1u);
  EXPECT_EQ(s.tx_packets, 1u);
  EXPECT_EQ(s.workers.at(0).rx_packets, 1u);
}

TEST_F(RingPortTest, TwoWorkersOnOneQueueGetTheirOwnFlows) {
  open(2, 1);
  ASSERT_TRUE(port_->info().software_redirect);
  const RssSteering& steering = port_->steering();
  unsigned expected[2] = {0, 0};
  for (uint16_t sport = 2000; sport < 2200; ++sport) {
    feed(0, udp_packet(port_->mempool(), kClient, kServer, sport, 80));
    ++expected[steering.worker_for_ipv4(kClient, kServer, sport, 80)];
  }
  feed(0, arp_packet(port_->mempool()));  // not IPv4: stays with the worker that polled it
  ASSERT_GT(expected[0], 0u);
  ASSERT_GT(expected[1], 0u);

  rte_mbuf* pkts[64];
  EXPECT_EQ(port_->rx_burst(1, pkts, 64), 0);  // worker 1 has no queue and nothing redirected yet
  unsigned got[2] = {0, 0};
  bool arp_seen = false;
  for (int round = 0; round < 100 && got[0] + got[1] + arp_seen < 201; ++round) {
    for (unsigned w = 0; w < 2; ++w) {
      const uint16_t n = port_->rx_burst(w, pkts, 64);
      for (uint16_t i = 0; i < n; ++i) {
        const auto* eth = rte_pktmbuf_mtod(pkts[i], const rte_ether_hdr*);
        if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
          EXPECT_EQ(w, 0u);
          arp_seen = true;
        } else {
          const uint16_t sport = udp_source_port(pkts[i]);
          EXPECT_EQ(steering.worker_for_ipv4(kClient, kServer, sport, 80), w) << "source port " << sport;
          // The reply direction hashes to the same worker (symmetric key).
          EXPECT_EQ(steering.worker_for_ipv4(kServer, kClient, 80, sport), w);
          ++got[w];
        }
        rte_pktmbuf_free(pkts[i]);
      }
    }
  }
  EXPECT_EQ(got[0], expected[0]);
  EXPECT_EQ(got[1], expected[1]);
  EXPECT_TRUE(arp_seen);
  const PortStats s = port_->stats();
  EXPECT_EQ(s.workers[0].redirected_out, expected[1]);
  EXPECT_EQ(s.workers[1].redirected_in, expected[1]);
  EXPECT_EQ(s.workers[0].redirect_drops, 0u);

  // Worker 1 has no tx queue of its own: it shares queue 0.
  rte_mbuf* out = udp_packet(port_->mempool(), kServer, kClient, 80, 2000);
  EXPECT_EQ(port_->tx_burst(1, &out, 1), 1);
  EXPECT_EQ(rte_ring_count(tx_rings_[0]), 1u);
}

// IPv6 is steered as NICs hash it: a TCP segment by its 4-tuple (both directions alike), a
// fragment or an ICMPv6 message by the two addresses.
TEST_F(RingPortTest, Ipv6FlowsGoToTheWorkerOfTheirHash) {
  open(2, 1);
  ASSERT_TRUE(port_->info().software_redirect);
  const RssSteering& steering = port_->steering();
  const uint8_t client[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  const uint8_t server[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const unsigned by_addresses = steering.worker_for_ipv6_addresses(client, server);
  std::map<uint16_t, unsigned> want;  // TCP source port -> worker
  for (uint16_t sport = 3000; sport < 3100; ++sport) {
    feed(0, ipv6_packet(port_->mempool(), client, server, IPPROTO_TCP, sport, 80));
    want[sport] = steering.worker_for_ipv6(client, server, sport, 80);
    EXPECT_EQ(want[sport], steering.worker_for_ipv6(server, client, 80, sport));
  }
  feed(0, ipv6_packet(port_->mempool(), client, server, 44));  // a Fragment header
  feed(0, ipv6_packet(port_->mempool(), client, server, 58));  // ICMPv6
  std::set<unsigned> workers_used;
  unsigned got = 0, others = 0;
  rte_mbuf* pkts[64];
  for (int round = 0; round < 100 && got + others < 102; ++round) {
    for (unsigned w = 0; w < 2; ++w) {
      const uint16_t n = port_->rx_burst(w, pkts, 64);
      for (uint16_t i = 0; i < n; ++i) {
        const auto* ip6 = rte_pktmbuf_mtod_offset(pkts[i], const rte_ipv6_hdr*, sizeof(rte_ether_hdr));
        if (ip6->proto == IPPROTO_TCP) {
          const auto* ports = reinterpret_cast<const uint8_t*>(ip6 + 1);
          const uint16_t sport = static_cast<uint16_t>(ports[0] << 8 | ports[1]);
          EXPECT_EQ(want.at(sport), w) << "source port " << sport;
          workers_used.insert(w);
          ++got;
        } else {
          EXPECT_EQ(by_addresses, w) << "next header " << int(ip6->proto);
          ++others;
        }
        rte_pktmbuf_free(pkts[i]);
      }
    }
  }
  EXPECT_EQ(got, 100u);
  EXPECT_EQ(others, 2u);
  EXPECT_EQ(workers_used.size(), 2u) << "100 flows all hashed to one worker";
}

// IPv6 TCP behind Hop-by-Hop or Destination Options headers (RFC 8200 §4.3, §4.6) stays with its
// flow: the owner steps over them to the ports. Fragments still hash on addresses only.
TEST_F(RingPortTest, Ipv6ExtensionHeadersBeforeTcpKeepTheFlowsWorker) {
  open(2, 1);
  ASSERT_TRUE(port_->info().software_redirect);
  const RssSteering& steering = port_->steering();
  const uint8_t client[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  const uint8_t server[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  constexpr unsigned kOffset = sizeof(rte_ether_hdr) + sizeof(rte_ipv6_hdr);
  // One 8-byte extension header of type `first` (next header TCP), then the ports.
  auto with_extension = [&](uint8_t first, uint16_t sport, uint16_t dport) {
    rte_mbuf* m = ipv6_packet(port_->mempool(), client, server, first);
    auto* ext = rte_pktmbuf_mtod_offset(m, uint8_t*, kOffset);
    ext[0] = IPPROTO_TCP;
    ext[1] = 0;  // (0 + 1) * 8 bytes
    ext[8] = uint8_t(sport >> 8), ext[9] = uint8_t(sport), ext[10] = uint8_t(dport >> 8), ext[11] = uint8_t(dport);
    return m;
  };
  rte_mbuf* probe = with_extension(IPPROTO_HOPOPTS, 4000, 443);
  auto upper = ipv6_upper_layer(probe);
  ASSERT_TRUE(upper.has_value());
  EXPECT_EQ(upper->protocol, IPPROTO_TCP);
  EXPECT_EQ(upper->offset, kOffset + 8);
  EXPECT_EQ(tcp_destination_port(probe), std::optional<uint16_t>(443));
  rte_pktmbuf_free(probe);
  // A Fragment header ends the walk: no ports to read there.
  rte_mbuf* fragment = ipv6_packet(port_->mempool(), client, server, IPPROTO_FRAGMENT);
  EXPECT_EQ(ipv6_upper_layer(fragment)->protocol, IPPROTO_FRAGMENT);
  EXPECT_FALSE(tcp_destination_port(fragment).has_value());
  rte_pktmbuf_free(fragment);
  // A chain that loops on itself (each Destination Options header announcing another) ends.
  rte_mbuf* endless = ipv6_packet(port_->mempool(), client, server, IPPROTO_DSTOPTS);
  auto* ext = rte_pktmbuf_mtod_offset(endless, uint8_t*, kOffset);
  ext[0] = IPPROTO_DSTOPTS;
  ext[1] = 0;
  EXPECT_FALSE(ipv6_upper_layer(endless).has_value());  // runs off the 20-byte payload
  rte_pktmbuf_free(endless);
  // IPv4 and IPv6 TCP alike give their destination port; UDP gives none.
  rte_mbuf* tcp6 = ipv6_packet(port_->mempool(), client, server, IPPROTO_TCP, 5000, 8080);
  EXPECT_EQ(tcp_destination_port(tcp6), std::optional<uint16_t>(8080));
  rte_pktmbuf_free(tcp6);
  rte_mbuf* udp4 = udp_packet(port_->mempool(), kClient, kServer, 5000, 53);
  EXPECT_FALSE(tcp_destination_port(udp4).has_value());
  rte_pktmbuf_free(udp4);

  std::map<uint16_t, unsigned> want;
  for (uint16_t sport = 4000; sport < 4064; ++sport) {
    feed(0, with_extension(sport % 2 ? IPPROTO_HOPOPTS : IPPROTO_DSTOPTS, sport, 443));
    want[sport] = steering.worker_for_ipv6(client, server, sport, 443);
    EXPECT_EQ(want[sport], steering.worker_for_ipv6(server, client, 443, sport)) << "not symmetric";
  }
  unsigned got = 0;
  rte_mbuf* pkts[64];
  for (int round = 0; round < 100 && got < 64; ++round) {
    for (unsigned w = 0; w < 2; ++w) {
      const uint16_t n = port_->rx_burst(w, pkts, 64);
      for (uint16_t i = 0; i < n; ++i) {
        const auto* ports = rte_pktmbuf_mtod_offset(pkts[i], const uint8_t*, kOffset + 8);
        const uint16_t sport = static_cast<uint16_t>(ports[0] << 8 | ports[1]);
        EXPECT_EQ(want.at(sport), w) << "source port " << sport;
        ++got;
        rte_pktmbuf_free(pkts[i]);
      }
    }
  }
  EXPECT_EQ(got, 64u);
}

// A ring device has no multicast filter and a MAC table of one slot holding no address: the
// groups must not take the port's own slot; the port falls back to all-multicast (or, lacking
// that too, filters nothing) and says so.
TEST_F(RingPortTest, JoiningNeighborDiscoveryGroupsLeavesThePortsAddressAlone) {
  open(1, 1);
  rte_ether_addr before{}, after{};
  ASSERT_EQ(rte_eth_macaddr_get(port_->id(), &before), 0);
  const std::vector<std::array<uint8_t, 6>> groups = {{0x33, 0x33, 0xff, 0, 0, 2}, {0x33, 0x33, 0, 0, 0, 1}};
  const Port::MulticastMode mode = port_->join_multicast(groups);
  EXPECT_NE(mode, Port::MulticastMode::UnicastTable) << Port::to_string(mode);
  EXPECT_NE(mode, Port::MulticastMode::Filter) << Port::to_string(mode);
  ASSERT_EQ(rte_eth_macaddr_get(port_->id(), &after), 0);
  EXPECT_TRUE(rte_is_same_ether_addr(&before, &after));
  EXPECT_EQ(port_->join_multicast(groups), mode);  // again, as a later stack on the same port does
}

TEST_F(RingPortTest, WorkersOnTheirOwnThreadsReceiveEveryPacketOnce) {
  open(3, 1);
  constexpr unsigned kPackets = 3000;
  std::atomic<unsigned> received{0}, misrouted{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      rte_mbuf* pkts[32];
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!done.load() && std::chrono::steady_clock::now() < deadline) {
        const uint16_t n = port_->rx_burst(w, pkts, 32);
        for (uint16_t i = 0; i < n; ++i) {
          if (port_->steering().worker_for_ipv4(kClient, kServer, udp_source_port(pkts[i]), 80) != w) ++misrouted;
          rte_pktmbuf_free(pkts[i]);
        }
        received += n;
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // More packets than the pool holds: the feeder waits for the workers to free some.
  for (unsigned i = 0; i < kPackets && std::chrono::steady_clock::now() < deadline;) {
    rte_mbuf* m = udp_packet(port_->mempool(), kClient, kServer, static_cast<uint16_t>(1024 + i % 5000), 80);
    if (!m) {
      std::this_thread::yield();
      continue;
    }
    while (rte_ring_enqueue(rx_rings_[0], m) != 0) std::this_thread::yield();
    ++i;
  }
  while (received.load() < kPackets && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(received.load(), kPackets);
  EXPECT_EQ(misrouted.load(), 0u);
}

TEST_F(RingPortTest, CustomOwnerFunctionDecides) {
  open(2, 1);
  port_->set_owner_function([](const rte_mbuf*, void*) -> unsigned { return 1; }, nullptr);
  for (int i = 0; i < 5; ++i) feed(0, udp_packet(port_->mempool(), kClient, kServer, static_cast<uint16_t>(3000 + i), 80));
  rte_mbuf* pkts[8];
  EXPECT_EQ(port_->rx_burst(0, pkts, 8), 0);
  const uint16_t n = port_->rx_burst(1, pkts, 8);
  EXPECT_EQ(n, 5);
  rte_pktmbuf_free_bulk(pkts, n);
}

TEST_F(RingPortTest, FaultShimWrapsRxBursts) {
  PortOptions options;
  options.faults.drop_ppm = 1'000'000;
  options.faults_on_rx = true;
  open(1, 1, options);
  for (int i = 0; i < 10; ++i) feed(0, udp_packet(port_->mempool(), kClient, kServer, static_cast<uint16_t>(4000 + i), 80));
  rte_mbuf* pkts[16];
  EXPECT_EQ(port_->rx_burst(0, pkts, 16), 0);
  const PortStats s = port_->stats();
  EXPECT_EQ(s.rx_faults.seen, 10u);
  EXPECT_EQ(s.rx_faults.dropped, 10u);
}

TEST_F(RingPortTest, FaultShimWrapsTxBurstsWithDelay) {
  PortOptions options;
  options.faults.delay = std::chrono::milliseconds(20);
  options.faults.delay_ppm = 1'000'000;
  options.faults_on_rx = false;
  options.faults_on_tx = true;
  open(1, 1, options);
  rte_mbuf* m = udp_packet(port_->mempool(), kServer, kClient, 80, 5000);
  EXPECT_EQ(port_->tx_burst(0, &m, 1), 1);
  EXPECT_EQ(rte_ring_count(tx_rings_[0]), 0u);  // held by the shim
  rte_mbuf* pkts[4];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rte_ring_count(tx_rings_[0]) == 0 && std::chrono::steady_clock::now() < deadline) {
    port_->rx_burst(0, pkts, 4);  // polling rx releases due tx packets
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(rte_ring_count(tx_rings_[0]), 1u);
  EXPECT_EQ(port_->stats().tx_faults.delayed, 1u);
}

// NUMA: a port's mbuf pool, queues and redirect rings are created on its node. This host's DPDK
// has one node (0); a ring device that says it sits on node 1 has its pool and rings fall back to
// the node with memory (with a warning each) instead of failing, and traffic still flows.
TEST_F(RingPortTest, PoolAndRingsGoOnThePortsNodeOrFallBack) {
  PortOptions options;
  options.workers = 2;
  options.queues = 1;
  options.rx_desc = options.tx_desc = 256;
  Port home(make_device(1, 0), options, pools_);
  EXPECT_EQ(home.info().numa_socket, 0);
  EXPECT_EQ(home.mempool()->socket_id, 0);
  port_ = std::make_unique<Port>(make_device(1, 1), options, pools_);
  EXPECT_EQ(port_->info().numa_socket, 1);
  EXPECT_TRUE(port_->info().software_redirect);  // two workers, one queue: the rings exist
  EXPECT_NE(port_->mempool()->socket_id, 1);
  feed(1, udp_packet(port_->mempool(), kClient, kServer, 6000, 80));  // rx_rings_[1]: the node-1 device's
  rte_mbuf* pkts[4];
  unsigned received = 0;
  for (int round = 0; round < 4; ++round)
    for (unsigned w = 0; w < 2; ++w) {
      const uint16_t n = port_->rx_burst(w, pkts, 4);
      received += n;
      rte_pktmbuf_free_bulk(pkts, n);
    }
  EXPECT_EQ(received, 1u);
}

TEST_F(RingPortTest, StatsResetAndMempoolAccounting) {
  open(1, 1);
  for (int i = 0; i < 4; ++i) feed(0, udp_packet(port_->mempool(), kClient, kServer, static_cast<uint16_t>(6000 + i), 80));
  const unsigned in_use_before = pools_.usage().at(0).in_use;
  EXPECT_GE(in_use_before, 4u);
  rte_mbuf* pkts[8];
  const uint16_t n = port_->rx_burst(0, pkts, 8);
  ASSERT_EQ(n, 4);
  rte_pktmbuf_free_bulk(pkts, n);
  EXPECT_EQ(pools_.usage().at(0).in_use, in_use_before - 4);
  EXPECT_EQ(port_->stats().rx_packets, 4u);
  const auto xstats = port_->xstats();
  EXPECT_TRUE(std::any_of(xstats.begin(), xstats.end(), [](const Xstat& x) { return x.name == "rx_good_packets" && x.value == 4; }));
  EXPECT_EQ(port_->xstat("rx_good_packets"), std::optional<uint64_t>(4));
  EXPECT_EQ(port_->xstat("no_such_counter"), std::nullopt);
  port_->reset_stats();
  EXPECT_EQ(port_->stats().rx_packets, 0u);
  EXPECT_EQ(port_->stats().workers[0].rx_packets, 0u);
}

TEST_F(RingPortTest, BadOptionsAreNamed) {
  PortOptions options;
  options.workers = 1;
  try {
    Port port(999, options, pools_);
    FAIL() << "port 999 opened";
  } catch (const PmdError& e) {
    EXPECT_NE(std::string(e.what()).find("dpdk.port_id"), std::string::npos) << e.what();
  }
  options.redirect_ring = 1000;
  EXPECT_THROW(Port(make_device(1), options, pools_), PmdError);
  options.redirect_ring = 4096;
  options.mtu = 9000;  // a ring device cannot take 9000-byte frames in 2 KiB mbufs... unless it scatters
  const uint16_t id = make_device(1);
  try {
    Port port(id, options, pools_);
    EXPECT_TRUE(port.info().offloads.enabled.rx_scatter);
  } catch (const PmdError& e) {
    EXPECT_NE(std::string(e.what()).find("dpdk.mtu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace bypass::pmd
