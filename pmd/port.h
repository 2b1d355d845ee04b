// A DPDK port as the rest of Bypass sees it: configured from the dpdk: section, one RX/TX queue
// pair per worker where the device allows, offloads negotiated, and per-worker burst I/O that
// works whatever the queue count: when a port has fewer queues than workers (or no RSS), packets
// reach their owning worker through a per-worker software ring, and workers without a TX queue
// of their own share one under a lock. A seeded fault shim wraps the bursts when dpdk.fault_* asks.
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "pmd/burst_guard.h"
#include "pmd/fault_shim.h"
#include "pmd/flow_table.h"
#include "pmd/offloads.h"
#include "pmd/toeplitz.h"

namespace bypass::pmd {

class MempoolSet;

struct PortOptions {
  unsigned workers = 1;
  unsigned queues = 0;  // 0: one per worker
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint16_t mtu = 1500;
  uint16_t mtu_limit = 0;  // 0: the driver's (or net_memif's bsize); see dpdk.mtu_limit
  bool promiscuous = false;
  bool flow_isolate = false;  // dpdk.flow_isolate: rte_flow isolated mode from configuration on
  std::chrono::nanoseconds link_wait{std::chrono::seconds(5)};
  OffloadRequest offloads;
  unsigned redirect_ring = 4096;
  FaultRates faults;
  bool faults_on_rx = true;
  bool faults_on_tx = false;
  uint64_t fault_seed = 1;
  static PortOptions from_config(const config::Config& config);
};

struct LinkState {
  bool up = false;
  uint32_t speed_mbps = 0;
  bool full_duplex = false;
  bool autoneg = false;
};

struct PortInfo {
  uint16_t port_id = 0;
  std::string name;     // "net_memif0"
  std::string driver;   // "net_memif"
  std::array<uint8_t, 6> mac{};
  uint16_t mtu = 0;
  int numa_socket = 0;
  uint16_t rx_queues = 0;
  uint16_t tx_queues = 0;
  uint16_t max_rx_queues = 0;
  uint16_t max_tx_queues = 0;
  DeviceCapabilities capabilities;
  OffloadPlan offloads;        // supported vs enabled, with the fallbacks taken
  bool software_redirect = false;  // packets may cross workers through the redirect rings
  bool flow_isolated = false;      // rte_flow isolated mode: only what a flow rule claims arrives
  // The device DMAs from memory it was given (a PCI NIC): a transmitted buffer must lie in memory
  // DPDK knows (its hugepages, or areas added with rte_extmem_register + rte_dev_dma_map). Virtual
  // devices (memif, tap, ring, af_packet) read buffers with the CPU, so any address works, except
  // virtio-user, whose vhost-user peer sees only the memory DPDK shared with it.
  bool dma_needs_registered_memory = false;
  uint16_t tx_max_segments = UINT16_MAX;  // mbufs one transmitted frame may chain
  std::string mac_text() const;
};

// Per-worker software counters (written only by the worker; read relaxed by anyone).
struct alignas(64) WorkerCounters {
  std::atomic<uint64_t> rx_packets{0};
  std::atomic<uint64_t> tx_packets{0};
  std::atomic<uint64_t> redirected_out{0};   // handed to another worker's ring
  std::atomic<uint64_t> redirected_in{0};    // taken from this worker's ring
  std::atomic<uint64_t> redirect_drops{0};   // the owner's ring was full
  std::atomic<uint64_t> tx_full{0};          // offered to tx_burst but not taken (queue full); the caller decides
  void add(std::atomic<uint64_t>& c, uint64_t n) { c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
};

struct QueueStats {
  uint64_t packets = 0, bytes = 0, errors = 0;
};

struct PortStats {
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;
  std::vector<QueueStats> rx_queues, tx_queues;  // from the device (zero where the driver keeps none)
  struct Worker {
    uint64_t rx_packets, tx_packets, redirected_out, redirected_in, redirect_drops, tx_full;
  };
  std::vector<Worker> workers;
  FaultCounters rx_faults, tx_faults;  // summed over queues
};

struct Xstat {
  std::string name;
  uint64_t value;
};

// Decides which worker owns a received packet. Return a worker index, or kKeepOnReceiver to keep
// the packet on the worker that polled it (ARP, non-IP). Called on the receiving worker's thread.
using OwnerFunction = unsigned (*)(const rte_mbuf* pkt, void* context);
inline constexpr unsigned kKeepOnReceiver = ~0u;

// Where an Ethernet + IPv6 frame's upper-layer header starts, past any Hop-by-Hop, Routing and
// Destination Options headers (RFC 8200 §4.1 order); `protocol` is what comes there (a Fragment
// header, 44, ends the walk). nullopt: not IPv6, truncated, or a chain longer than 8 headers.
struct Ipv6UpperLayer {
  uint8_t protocol;
  uint32_t offset;  // from the start of the frame
};
std::optional<Ipv6UpperLayer> ipv6_upper_layer(const rte_mbuf* pkt);

// The TCP destination port of an Ethernet + IPv4 or IPv6 frame (IPv6 past the extension headers
// ipv6_upper_layer steps over); nullopt for anything else, IPv4 non-first fragments included.
std::optional<uint16_t> tcp_destination_port(const rte_mbuf* pkt);

class Port {
 public:
  // Configures and starts the port (does not wait for the link). Throws PmdError.
  Port(uint16_t port_id, const PortOptions& options, MempoolSet& pools);
  ~Port();  // stops and closes the device, frees packets held in rings and shims
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  const PortInfo& info() const { return info_; }
  uint16_t id() const { return info_.port_id; }
  unsigned workers() const { return options_.workers; }
  const RssSteering& steering() const { return steering_; }
  rte_mempool* mempool() const { return pool_; }

  // The port's rte_flow rules (bypass-pmd flow ..., and the dpdk stack's claims under
  // dpdk.flow_isolate); removed when the port closes.
  FlowTable& flows() { return *flows_; }
  // Switches isolated mode at run time (bypass-pmd flow isolate), stopping and restarting the
  // port when the driver only changes it while stopped (mlx5). Throws PmdError naming what the
  // port lacks. The steering chosen at start-up stays (dpdk.flow_isolate decides it).
  void set_flow_isolated(bool on);

  LinkState link() const;
  // Polls the link until up or `timeout`; true when up.
  bool wait_link(std::chrono::nanoseconds timeout) const;

  // Replaces the default owner function (symmetric Toeplitz over the IPv4 TCP/UDP 4-tuple and the
  // RETA). Call before traffic starts.
  void set_owner_function(OwnerFunction function, void* context);
  static unsigned default_owner(const rte_mbuf* pkt, void* port);  // context: the Port

  // Per-worker bursts, each called only from that worker's thread. rx returns packets owned by
  // `worker`; tx takes ownership of the packets it accepts (returns how many).
  uint16_t rx_burst(unsigned worker, rte_mbuf** pkts, uint16_t count) {
    if (direct_io_) {
      const uint16_t n = driver_rx(worker, static_cast<uint16_t>(worker), pkts, count);
      counters_[worker].add(counters_[worker].rx_packets, n);
      return n;
    }
    return rx_burst_slow(worker, pkts, count);
  }
  uint16_t tx_burst(unsigned worker, rte_mbuf** pkts, uint16_t count) {
    if (direct_io_) {
      const uint16_t n = driver_tx(worker, static_cast<uint16_t>(worker), pkts, count);
      counters_[worker].add(counters_[worker].tx_packets, n);
      if (n < count) counters_[worker].add(counters_[worker].tx_full, count - n);
      return n;
    }
    return tx_burst_slow(worker, pkts, count);
  }

  // Packets other workers handed to `worker` that it has not taken yet. Only once every worker
  // has stopped polling (the ring has one consumer): a caller accounting for every packet takes
  // them here instead of letting the destructor free them uncounted.
  uint16_t drain_redirect(unsigned worker, rte_mbuf** pkts, uint16_t count);

  // How join_multicast let the groups in.
  enum class MulticastMode { Filter, UnicastTable, AllMulticast, Promiscuous, Unfiltered };
  static const char* to_string(MulticastMode mode);
  // Lets frames to the Ethernet groups `groups` in (IPv6 Neighbor Discovery needs the
  // solicited-node group and all-nodes, RFC 2464 §7 / RFC 4291 §2.7.1): the device's multicast
  // filter (rte_eth_dev_set_mc_addr_list, replacing any earlier list) when the driver has one,
  // else its MAC address table, else all-multicast mode. A promiscuous port needs nothing, and a
  // driver that offers none of the three (net_ring, net_memif) filters nothing. Logs which.
  MulticastMode join_multicast(const std::vector<std::array<uint8_t, 6>>& groups);

  PortStats stats() const;
  std::vector<Xstat> xstats() const;
  // One extended statistic by its driver name ("rx_good_packets"); nullopt when the driver has none.
  std::optional<uint64_t> xstat(const std::string& name) const;
  void reset_stats();

 private:
  void configure(MempoolSet& pools);
  void setup_rss();
  uint16_t rx_burst_slow(unsigned worker, rte_mbuf** pkts, uint16_t count);
  uint16_t tx_burst_slow(unsigned worker, rte_mbuf** pkts, uint16_t count);
  uint16_t rx_from_queue(unsigned worker, uint16_t queue, rte_mbuf** pkts, uint16_t count);
  void drain_tx_shim(unsigned worker, uint16_t queue);
  // The driver's bursts, marked for burst_guard_ where the driver needs it (memif).
  uint16_t driver_rx(unsigned worker, uint16_t queue, rte_mbuf** pkts, uint16_t count) {
    if (burst_guard_) burst_guard_->enter(worker);
    const uint16_t n = rte_eth_rx_burst(info_.port_id, queue, pkts, count);
    if (burst_guard_) burst_guard_->leave(worker);
    return n;
  }
  uint16_t driver_tx(unsigned worker, uint16_t queue, rte_mbuf** pkts, uint16_t count) {
    if (burst_guard_) burst_guard_->enter(worker);
    // With TSO on, the driver's own fix-ups come first (virtio wants the TSO pseudo-header sum with
    // the length, DPDK's convention is without). A frame it refuses stays with the caller.
    if (info_.offloads.enabled.tso) count = rte_eth_tx_prepare(info_.port_id, queue, pkts, count);
    const uint16_t n = rte_eth_tx_burst(info_.port_id, queue, pkts, count);
    if (burst_guard_) burst_guard_->leave(worker);
    return n;
  }

  PortOptions options_;
  PortInfo info_;
  RssSteering steering_;
  rte_mempool* pool_ = nullptr;
  bool started_ = false;
  bool direct_io_ = false;  // one queue pair per worker, hardware steering, no faults
  OwnerFunction owner_ = &Port::default_owner;
  void* owner_context_ = this;
  std::vector<rte_ring*> redirect_rings_;               // one per worker (multi-producer, single consumer)
  std::vector<std::vector<rte_mbuf*>> staging_;         // per worker: packets bound for other workers
  std::unique_ptr<rte_spinlock_t[]> tx_locks_;          // per tx queue, taken only when shared
  std::vector<bool> tx_shared_;
  std::vector<std::unique_ptr<FaultShim>> rx_shims_, tx_shims_;  // per queue; null when off
  std::unique_ptr<WorkerCounters[]> counters_;
  std::unique_ptr<BurstGuard> burst_guard_;  // net_memif only (see burst_guard.h)
  std::unique_ptr<FlowTable> flows_;
};

}  // namespace bypass::pmd
