// Port's start-up: the device configured in the order ethdev requires (device information, queue
// counts, MTU limit, rte_eth_dev_configure, queue setup, isolation, MTU, start), then the state the
// burst paths need (RSS table, software steering, shared tx queues, fault shims). Each step is a
// function of its own; errors name the dpdk.* option to change.
#include "pmd/port.h"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ether.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "base/log.h"
#include "pmd/eal.h"
#include "pmd/error.h"
#include "pmd/mempools.h"

namespace bypass::pmd {

namespace {

// One "key=value" of a device's devargs, read as the vdev string it came from.
std::optional<std::string> devarg(const rte_device* device, const std::string& key) {
  const rte_devargs* devargs = device != nullptr ? rte_dev_devargs(device) : nullptr;
  if (devargs == nullptr || devargs->args == nullptr) return std::nullopt;
  return vdev_param(std::string(devargs->name) + "," + devargs->args, key);
}

// net_memif's data path copies a frame of up to bsize bytes (devarg, default 2048) into one
// descriptor whatever max_mtu it reports (1500 in DPDK 22.11); bsize less the Ethernet header is the
// MTU it really carries. Frames longer than bsize would chain descriptors, and 22.11's copy-mode tx
// never clears the first descriptor's NEXT flag, so later frames could be glued: stay within bsize.
uint16_t memif_mtu(const rte_device* device) {
  unsigned long bsize = 2048;
  if (auto text = devarg(device, "bsize")) bsize = std::strtoul(text->c_str(), nullptr, 0);
  bsize = std::min<unsigned long>(bsize, 65535);
  return static_cast<uint16_t>(bsize > RTE_ETHER_HDR_LEN ? bsize - RTE_ETHER_HDR_LEN : 0);
}

// What the device is and can do, into `info`: its name, driver, NUMA node, queue limits, offload
// and RSS capabilities, whether it DMAs, how many segments a frame may chain.
rte_eth_dev_info describe_device(uint16_t port_id, PortInfo& info) {
  rte_eth_dev_info dev{};
  if (int rc = rte_eth_dev_info_get(port_id, &dev); rc != 0)
    throw PmdError("port " + std::to_string(port_id) + ": cannot read device info: " + ethdev_error(rc));
  char name[RTE_ETH_NAME_MAX_LEN] = "";
  rte_eth_dev_get_name_by_port(port_id, name);
  info.name = name;
  info.driver = dev.driver_name ? dev.driver_name : "?";
  info.numa_socket = std::max(0, rte_eth_dev_socket_id(port_id));
  info.max_rx_queues = dev.max_rx_queues;
  info.max_tx_queues = dev.max_tx_queues;
  auto& caps = info.capabilities;
  caps.rx_offload_capa = dev.rx_offload_capa;
  caps.tx_offload_capa = dev.tx_offload_capa;
  caps.flow_type_rss_offloads = dev.flow_type_rss_offloads;
  caps.reta_size = dev.reta_size;
  caps.hash_key_size = dev.hash_key_size;
  caps.max_rx_queues = dev.max_rx_queues;
  caps.max_tx_queues = dev.max_tx_queues;
  const rte_bus* bus = dev.device != nullptr ? rte_dev_bus(dev.device) : nullptr;
  // net_virtio_user is a virtual device, yet its peer (a vhost-user backend in another process)
  // reads buffers through the memory DPDK shared with it: any other address is invisible there.
  info.dma_needs_registered_memory =
      bus == nullptr || std::string(rte_bus_name(bus)) != "vdev" || info.driver == "net_virtio_user";
  if (dev.tx_desc_lim.nb_seg_max != 0) info.tx_max_segments = dev.tx_desc_lim.nb_seg_max;
  return dev;
}

// info.rx_queues and info.tx_queues: one pair per worker (or dpdk.queues), as far as the device allows.
void choose_queue_counts(const PortOptions& options, const rte_eth_dev_info& dev, PortInfo& info) {
  const std::string label = info.label();
  // Never more queues than workers: a queue nobody polls would swallow its share of the flows.
  unsigned wanted = options.queues ? std::min(options.queues, options.workers) : options.workers;
  // DPDK 22.11's memif gives a queue the peer offered no ring the ring of queue 0 (rte_eth_memif.c:
  // its ring_offset and region stay 0): a server with more queues than its client reads ring 0
  // from two workers (frames counted twice) and transmits into the client's ring 0. A peer may run
  // any worker count, so memif uses one queue pair unless dpdk.queues says both sides agree.
  if (info.driver == "net_memif" && options.queues == 0 && wanted > 1) {
    BYPASS_LOG(Info, "pmd", "%s: one queue pair for %u workers (set dpdk.queues to the same count on both memif "
               "peers for more)", label.c_str(), wanted);
    wanted = 1;
  }
  if (options.queues > options.workers)
    BYPASS_LOG(Warn, "pmd", "%s: dpdk.queues=%u exceeds ms.workers=%u; using %u", label.c_str(), options.queues,
               options.workers, options.workers);
  const unsigned rx_queues = std::max(1u, std::min<unsigned>(wanted, dev.max_rx_queues));
  const unsigned tx_queues = std::max(1u, std::min<unsigned>(wanted, dev.max_tx_queues));
  if (rx_queues < wanted || tx_queues < wanted)
    BYPASS_LOG(Info, "pmd", "%s: %u queue pairs wanted, device allows %u rx / %u tx", label.c_str(), wanted,
               rx_queues, tx_queues);
  info.rx_queues = static_cast<uint16_t>(rx_queues);
  info.tx_queues = static_cast<uint16_t>(tx_queues);
}

// The link's real MTU limit: the driver's word, unless the driver is known to under-report it
// (net_memif) or dpdk.mtu_limit says otherwise. Beyond the driver's own limit ethdev refuses the
// MTU, so the port is configured at the driver's limit and the stack uses dpdk.mtu.
struct MtuLimit {
  uint16_t driver_mtu;  // what ethdev accepts
  uint16_t limit;       // what the link carries
  std::string source;   // who says so, for messages
};

// Throws when dpdk.mtu exceeds the limit.
MtuLimit mtu_limit(const PortOptions& options, const rte_eth_dev_info& dev, const PortInfo& info) {
  // ethdev checks the MTU against both max_mtu and max_rx_pktlen (less Ethernet header and CRC).
  const unsigned frame_overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  MtuLimit m;
  m.driver_mtu = static_cast<uint16_t>(std::min<unsigned>(
      dev.max_mtu, dev.max_rx_pktlen > frame_overhead ? dev.max_rx_pktlen - frame_overhead : dev.max_mtu));
  m.limit = m.driver_mtu;
  m.source = info.driver + "'s reported limit";
  if (info.driver == "net_memif" && memif_mtu(dev.device) > m.limit) {
    m.limit = memif_mtu(dev.device);
    m.source = "net_memif's bsize devarg (" + std::to_string(m.limit + RTE_ETHER_HDR_LEN) + ")";
  }
  if (options.mtu_limit != 0) {
    m.limit = options.mtu_limit;
    m.source = "dpdk.mtu_limit";
  }
  if (options.mtu > m.limit)
    throw PmdError("dpdk.mtu: " + std::to_string(options.mtu) + " exceeds " + info.label() + "'s limit " +
                   std::to_string(m.limit) + " (" + m.source + ")" +
                   (info.driver == "net_memif" ? "; raise the vdev's bsize devarg to at least " +
                                                     std::to_string(options.mtu + RTE_ETHER_HDR_LEN)
                                               : std::string()));
  return m;
}

// rte_eth_dev_configure with the negotiated offloads and RSS under `key`; a driver refusing the key
// gets the configuration again without RSS, recorded in `plan`. Returns the configuration applied.
rte_eth_conf configure_device(const PortOptions& options, const rte_eth_dev_info& dev, const PortInfo& info,
                              const MtuLimit& mtu, const std::vector<uint8_t>& key, OffloadPlan& plan) {
  rte_eth_conf conf{};
  conf.rxmode.mtu = options.mtu > mtu.driver_mtu ? mtu.driver_mtu : options.mtu;
  conf.rxmode.offloads = plan.rx_offloads;
  conf.txmode.offloads = plan.tx_offloads;
  if (plan.enabled.lro) conf.rxmode.max_lro_pkt_size = dev.max_lro_pkt_size;
  if (plan.enabled.rss) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t*>(key.data());  // ethdev only reads it
    conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<uint8_t>(key.size());
    conf.rx_adv_conf.rss_conf.rss_hf = plan.rss_hf;
  }
  int rc = rte_eth_dev_configure(info.port_id, info.rx_queues, info.tx_queues, &conf);
  if (rc != 0 && plan.enabled.rss) {
    plan.fallbacks.push_back("rss: " + info.driver + " refused the symmetric key (" + ethdev_error(rc) +
                             "), flows are steered by the software redirect ring");
    plan.enabled.rss = false;
    plan.rss_hf = 0;
    plan.rx_offloads &= ~RTE_ETH_RX_OFFLOAD_RSS_HASH;
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
    conf.rxmode.offloads = plan.rx_offloads;
    conf.rx_adv_conf.rss_conf = {};
    rc = rte_eth_dev_configure(info.port_id, info.rx_queues, info.tx_queues, &conf);
  }
  if (rc != 0)
    throw PmdError(info.label() + ": configure failed: " + ethdev_error(rc) +
                   (options.mtu != RTE_ETHER_MTU ? " (check dpdk.mtu)" : " (check dpdk.queues)"));
  return conf;
}

// The rx queues (filled from `pool`) and tx queues, with the descriptor counts the driver adjusts.
void setup_queues(const PortOptions& options, const rte_eth_dev_info& dev, const PortInfo& info,
                  const rte_eth_conf& conf, rte_mempool* pool) {
  const uint16_t port_id = info.port_id;
  uint16_t rx_desc = options.rx_desc, tx_desc = options.tx_desc;
  if (rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rx_desc, &tx_desc) != 0) {
    rx_desc = options.rx_desc;
    tx_desc = options.tx_desc;
  }
  for (uint16_t q = 0; q < info.rx_queues; ++q) {
    rte_eth_rxconf rxconf = dev.default_rxconf;
    rxconf.offloads = conf.rxmode.offloads;
    const int rc = rte_eth_rx_queue_setup(port_id, q, rx_desc, static_cast<unsigned>(info.numa_socket), &rxconf, pool);
    if (rc != 0)
      throw PmdError(info.label() + ": rx queue " + std::to_string(q) + " setup failed: " + ethdev_error(rc) +
                     " (check dpdk.rx_desc and dpdk.mbufs)");
  }
  for (uint16_t q = 0; q < info.tx_queues; ++q) {
    rte_eth_txconf txconf = dev.default_txconf;
    txconf.offloads = conf.txmode.offloads;
    const int rc = rte_eth_tx_queue_setup(port_id, q, tx_desc, static_cast<unsigned>(info.numa_socket), &txconf);
    if (rc != 0)
      throw PmdError(info.label() + ": tx queue " + std::to_string(q) + " setup failed: " + ethdev_error(rc) +
                     " (check dpdk.tx_desc)");
  }
}

// Without rx scatter a frame must fit one mbuf (net_memif's copy-mode rx chains mbufs itself).
void check_mbuf_room(const PortOptions& options, const PortInfo& info, const OffloadPlan& plan,
                     const MempoolSet& pools) {
  const unsigned frame = options.mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 8;  // + 2 VLAN tags
  if (!plan.enabled.rx_scatter && info.driver != "net_memif" && frame > pools.data_room() - RTE_PKTMBUF_HEADROOM)
    throw PmdError("dpdk.mtu: " + std::to_string(options.mtu) + " needs " + std::to_string(frame) +
                   "-byte mbufs and " + info.driver + " cannot scatter; raise dpdk.mbuf_size to at least " +
                   std::to_string(frame + RTE_PKTMBUF_HEADROOM));
}

// dpdk.flow_isolate: rte_flow isolated mode, once the queues exist and before the port starts:
// mlx5 switches it only on a stopped port, and net_tap removes the rules that hand its remote
// netdev's traffic to us (its own MAC's, broadcast) only once its queues' netdev is up; before that
// it defers the switch.
void enter_flow_isolation(const PortInfo& info) {
  if (const std::string reason = set_flow_isolation(info.port_id, true); !reason.empty())
    throw PmdError("dpdk.flow_isolate: " + info.label() + ": driver " + info.driver +
                   " cannot isolate its traffic with rte_flow: " + reason +
                   "; use a port whose driver has isolated mode (mlx5, net_tap on a kernel with the multiq qdisc "
                   "and TC flower) or turn dpdk.flow_isolate off");
}

// Sets dpdk.mtu where the driver can; returns the MTU the port has.
uint16_t apply_mtu(const PortOptions& options, const rte_eth_dev_info& dev, const PortInfo& info,
                   const MtuLimit& limit) {
  const uint16_t port_id = info.port_id;
  const std::string label = info.label();
  uint16_t mtu = 0;
  rte_eth_dev_get_mtu(port_id, &mtu);
  if (options.mtu > limit.driver_mtu) {
    BYPASS_LOG(Info, "pmd", "%s: mtu %u beyond the driver's %u, as %s allows", label.c_str(), options.mtu,
               limit.driver_mtu, limit.source.c_str());
    mtu = options.mtu;
  } else if (mtu != options.mtu) {
    const int rc = rte_eth_dev_set_mtu(port_id, options.mtu);
    if (rc != 0 && rc != -ENOTSUP)
      throw PmdError(label + ": cannot set dpdk.mtu=" + std::to_string(options.mtu) + ": " + ethdev_error(rc) +
                     " (device range " + std::to_string(dev.min_mtu) + ".." + std::to_string(dev.max_mtu) + ")");
    if (rc == -ENOTSUP)
      BYPASS_LOG(Warn, "pmd", "%s: MTU stays %u (driver cannot change it; dpdk.mtu=%u)", label.c_str(), mtu,
                 options.mtu);
    rte_eth_dev_get_mtu(port_id, &mtu);
  }
  return mtu;
}

// dpdk.promiscuous; a driver that cannot is warned about, not fatal.
void apply_promiscuous(const PortOptions& options, const PortInfo& info) {
  const int rc = options.promiscuous ? rte_eth_promiscuous_enable(info.port_id)
                                     : rte_eth_promiscuous_disable(info.port_id);
  if (rc != 0 && rc != -ENOTSUP)
    BYPASS_LOG(Warn, "pmd", "%s: cannot %s promiscuous mode: %s", info.label().c_str(),
               options.promiscuous ? "enable" : "disable", ethdev_error(rc).c_str());
}

void start_device(const PortInfo& info) {
  const int rc = rte_eth_dev_start(info.port_id);
  if (rc != 0)
    throw PmdError(info.label() + ": start failed: " + ethdev_error(rc) +
                   (info.driver == "net_memif"
                        ? " (a memif client needs its role=server peer listening on the same socket; check dpdk.vdev)"
                        : ""));
}

}  // namespace

Port::Port(uint16_t port_id, const PortOptions& options, MempoolSet& pools)
    : options_(options), steering_(options.workers ? options.workers : 1) {
  if (options_.workers == 0) options_.workers = 1;
  if ((options_.redirect_ring & (options_.redirect_ring - 1)) != 0)
    throw PmdError("dpdk.redirect_ring: " + std::to_string(options_.redirect_ring) + " is not a power of two");
  if (!rte_eth_dev_is_valid_port(port_id))
    throw PmdError("dpdk.port_id: port " + std::to_string(port_id) + " does not exist (" +
                   std::to_string(rte_eth_dev_count_avail()) + " ports; add one with dpdk.vdev or dpdk.allow)");
  info_.port_id = port_id;
  counters_ = std::make_unique<WorkerCounters[]>(options_.workers);
  try {
    configure(pools);
  } catch (...) {
    if (started_) rte_eth_dev_stop(port_id);
    redirect_.reset();
    throw;
  }
}

void Port::configure(MempoolSet& pools) {
  const rte_eth_dev_info dev = describe_device(info_.port_id, info_);
  if (info_.driver == "net_memif") burst_guard_ = std::make_unique<BurstGuard>(options_.workers);
  const std::string label = info_.label();
  choose_queue_counts(options_, dev, info_);
  OffloadPlan plan = negotiate(info_.capabilities, options_.offloads, info_.rx_queues, info_.driver);
  const MtuLimit mtu = mtu_limit(options_, dev, info_);

  const uint16_t key_size = info_.capabilities.hash_key_size ? info_.capabilities.hash_key_size : 40;
  flows_ = std::make_unique<FlowTable>(info_.port_id, label, symmetric_rss_key(key_size));
  const std::vector<uint8_t> key = symmetric_rss_key(key_size);
  const rte_eth_conf conf = configure_device(options_, dev, info_, mtu, key, plan);
  pool_ = pools.for_socket(info_.numa_socket);
  check_mbuf_room(options_, info_, plan, pools);
  setup_queues(options_, dev, info_, conf, pool_);
  if (options_.flow_isolate) {
    enter_flow_isolation(info_);
    info_.flow_isolated = true;
  }
  info_.mtu = apply_mtu(options_, dev, info_, mtu);
  apply_promiscuous(options_, info_);
  start_device(info_);
  started_ = true;

  info_.offloads = std::move(plan);
  if (info_.offloads.enabled.rss) setup_rss();
  for (const std::string& fallback : info_.offloads.fallbacks)
    BYPASS_LOG(Debug, "pmd", "%s: %s", label.c_str(), fallback.c_str());
  rte_ether_addr mac{};
  rte_eth_macaddr_get(info_.port_id, &mac);
  std::copy(std::begin(mac.addr_bytes), std::end(mac.addr_bytes), info_.mac.begin());

  setup_software_steering(key.size());
  share_tx_queues();
  setup_fault_shims();
  direct_io_ = !info_.software_redirect && info_.rx_queues == options_.workers &&
               info_.tx_queues == options_.workers && !options_.faults.any();
  BYPASS_LOG(Info, "pmd", "%s: %s, %u rx/%u tx queues for %u workers, mtu %u, offloads [%s]%s", label.c_str(),
             info_.mac_text().c_str(), info_.rx_queues, info_.tx_queues, options_.workers, info_.mtu,
             [&] {
               std::string s;
               for (const auto& n : info_.offloads.enabled.names()) s += (s.empty() ? "" : " ") + n;
               return s;
             }().c_str(),
             info_.software_redirect ? ", software redirect" : "");
}

void Port::setup_rss() {
  const uint16_t reta_size = info_.capabilities.reta_size;
  std::vector<rte_eth_rss_reta_entry64> reta((reta_size + RTE_ETH_RETA_GROUP_SIZE - 1) / RTE_ETH_RETA_GROUP_SIZE);
  for (uint16_t i = 0; i < reta_size; ++i) {
    auto& group = reta[i / RTE_ETH_RETA_GROUP_SIZE];
    group.mask |= 1ull << (i % RTE_ETH_RETA_GROUP_SIZE);
    group.reta[i % RTE_ETH_RETA_GROUP_SIZE] = static_cast<uint16_t>(i % info_.rx_queues);
  }
  const int rc = rte_eth_dev_rss_reta_update(info_.port_id, reta.data(), reta_size);
  if (rc != 0) {
    info_.offloads.enabled.rss = false;
    info_.offloads.fallbacks.push_back("rss: " + info_.driver + " cannot program the RETA (" + ethdev_error(rc) +
                                       "), flows are steered by the software redirect ring");
  }
}

void Port::setup_software_steering(size_t key_length) {
  // Software steering whenever the hardware does not put each flow on its owner's queue already.
  const unsigned workers = options_.workers;
  // Under isolation the rules' own RSS (or per-source queues) spreads flows, in a way the RETA
  // below does not describe, so the owner function decides for every packet.
  info_.software_redirect =
      workers > 1 && (info_.flow_isolated || !(info_.offloads.enabled.rss && info_.rx_queues == workers));
  steering_ = RssSteering(workers, info_.offloads.enabled.rss ? info_.capabilities.reta_size : 512, key_length);
  if (info_.software_redirect)
    redirect_ = std::make_unique<RedirectRings>(info_.port_id, info_.label(), workers, options_.redirect_ring,
                                                info_.numa_socket, kMaxBurst);
}

void Port::share_tx_queues() {
  // Workers beyond the tx queue count take queue worker % tx_queues, under its lock.
  const unsigned workers = options_.workers;
  tx_locks_ = std::make_unique<rte_spinlock_t[]>(info_.tx_queues);
  tx_shared_.assign(info_.tx_queues, false);
  for (uint16_t q = 0; q < info_.tx_queues; ++q) {
    rte_spinlock_init(&tx_locks_[q]);
    tx_shared_[q] = workers > info_.tx_queues && (workers - 1 - q) / info_.tx_queues >= 1;
  }
}

void Port::setup_fault_shims() {
  rx_shims_.resize(info_.rx_queues);
  tx_shims_.resize(info_.tx_queues);
  if (!options_.faults.any()) return;
  // One seed per queue and direction, from dpdk.fault_seed and the port: a run can be replayed.
  const uint64_t base = options_.fault_seed * 1'000'003ull + uint64_t{info_.port_id} * 1'009ull;
  if (options_.faults_on_rx)
    for (uint16_t q = 0; q < info_.rx_queues; ++q)
      rx_shims_[q] = std::make_unique<FaultShim>(options_.faults, base + 2ull * q);
  if (options_.faults_on_tx)
    for (uint16_t q = 0; q < info_.tx_queues; ++q)
      tx_shims_[q] = std::make_unique<FaultShim>(options_.faults, base + 2ull * q + 1);
  BYPASS_LOG(Info, "pmd", "%s: fault injection on %s%s%s (seed %lu)", info_.label().c_str(),
             options_.faults_on_rx ? "rx" : "", options_.faults_on_rx && options_.faults_on_tx ? "+" : "",
             options_.faults_on_tx ? "tx" : "", static_cast<unsigned long>(options_.fault_seed));
}

}  // namespace bypass::pmd
