#include "pmd/port.h"

#include <rte_bus.h>
#include <rte_byteorder.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "base/log.h"
#include "pmd/eal.h"
#include "pmd/error.h"
#include "pmd/mempools.h"

namespace bypass::pmd {

namespace {

constexpr uint16_t kMaxBurst = 512;

std::string port_label(uint16_t port_id, const std::string& name) {
  return "port " + std::to_string(port_id) + " (" + name + ")";
}

std::string ethdev_error(int rc) { return rte_strerror(rc < 0 ? -rc : rc); }

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

}  // namespace

PortOptions PortOptions::from_config(const config::Config& config) {
  PortOptions o;
  o.workers = static_cast<unsigned>(config.get_int("ms.workers"));
  o.queues = static_cast<unsigned>(config.get_int("dpdk.queues"));
  o.rx_desc = static_cast<uint16_t>(config.get_int("dpdk.rx_desc"));
  o.tx_desc = static_cast<uint16_t>(config.get_int("dpdk.tx_desc"));
  o.mtu = static_cast<uint16_t>(config.get_int("dpdk.mtu"));
  o.mtu_limit = static_cast<uint16_t>(config.get_int("dpdk.mtu_limit"));
  o.promiscuous = config.get_bool("dpdk.promiscuous");
  o.flow_isolate = config.get_bool("dpdk.flow_isolate");
  o.link_wait = config.get_duration("dpdk.link_wait");
  o.offloads = OffloadRequest::from_config(config);
  o.redirect_ring = static_cast<unsigned>(config.get_int("dpdk.redirect_ring"));
  o.faults = FaultRates::from_config(config);
  const std::string& on = config.get_string("dpdk.fault_on");
  o.faults_on_rx = on == "rx" || on == "both";
  o.faults_on_tx = on == "tx" || on == "both";
  o.fault_seed = static_cast<uint64_t>(config.get_int("dpdk.fault_seed"));
  return o;
}

std::string PortInfo::mac_text() const {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  return text;
}

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
    for (rte_ring* ring : redirect_rings_) rte_ring_free(ring);
    throw;
  }
}

void Port::configure(MempoolSet& pools) {
  const uint16_t port_id = info_.port_id;
  rte_eth_dev_info dev{};
  if (int rc = rte_eth_dev_info_get(port_id, &dev); rc != 0)
    throw PmdError("port " + std::to_string(port_id) + ": cannot read device info: " + ethdev_error(rc));
  char name[RTE_ETH_NAME_MAX_LEN] = "";
  rte_eth_dev_get_name_by_port(port_id, name);
  info_.name = name;
  info_.driver = dev.driver_name ? dev.driver_name : "?";
  if (info_.driver == "net_memif") burst_guard_ = std::make_unique<BurstGuard>(options_.workers);
  const std::string label = port_label(port_id, info_.name);
  info_.numa_socket = std::max(0, rte_eth_dev_socket_id(port_id));
  info_.max_rx_queues = dev.max_rx_queues;
  info_.max_tx_queues = dev.max_tx_queues;
  auto& caps = info_.capabilities;
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
  info_.dma_needs_registered_memory =
      bus == nullptr || std::string(rte_bus_name(bus)) != "vdev" || info_.driver == "net_virtio_user";
  if (dev.tx_desc_lim.nb_seg_max != 0) info_.tx_max_segments = dev.tx_desc_lim.nb_seg_max;

  // Never more queues than workers: a queue nobody polls would swallow its share of the flows.
  unsigned wanted = options_.queues ? std::min(options_.queues, options_.workers) : options_.workers;
  // DPDK 22.11's memif gives a queue the peer offered no ring the ring of queue 0 (rte_eth_memif.c:
  // its ring_offset and region stay 0): a server with more queues than its client reads ring 0
  // from two workers (frames counted twice) and transmits into the client's ring 0. A peer may run
  // any worker count, so memif uses one queue pair unless dpdk.queues says both sides agree.
  if (info_.driver == "net_memif" && options_.queues == 0 && wanted > 1) {
    BYPASS_LOG(Info, "pmd", "%s: one queue pair for %u workers (set dpdk.queues to the same count on both memif "
               "peers for more)", label.c_str(), wanted);
    wanted = 1;
  }
  if (options_.queues > options_.workers)
    BYPASS_LOG(Warn, "pmd", "%s: dpdk.queues=%u exceeds ms.workers=%u; using %u", label.c_str(), options_.queues,
               options_.workers, options_.workers);
  const unsigned rx_queues = std::max(1u, std::min<unsigned>(wanted, dev.max_rx_queues));
  const unsigned tx_queues = std::max(1u, std::min<unsigned>(wanted, dev.max_tx_queues));
  if (rx_queues < wanted || tx_queues < wanted)
    BYPASS_LOG(Info, "pmd", "%s: %u queue pairs wanted, device allows %u rx / %u tx", label.c_str(), wanted,
               rx_queues, tx_queues);
  info_.rx_queues = static_cast<uint16_t>(rx_queues);
  info_.tx_queues = static_cast<uint16_t>(tx_queues);

  OffloadPlan plan = negotiate(caps, options_.offloads, info_.rx_queues, info_.driver);

  // The link's real MTU limit: the driver's word, unless the driver is known to under-report it
  // (net_memif) or dpdk.mtu_limit says otherwise. Beyond the driver's own limit ethdev refuses the
  // MTU, so the port is configured at the driver's limit and the stack uses dpdk.mtu.
  // ethdev checks the MTU against both max_mtu and max_rx_pktlen (less Ethernet header and CRC).
  const unsigned frame_overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  const uint16_t driver_mtu = static_cast<uint16_t>(std::min<unsigned>(
      dev.max_mtu, dev.max_rx_pktlen > frame_overhead ? dev.max_rx_pktlen - frame_overhead : dev.max_mtu));
  uint16_t mtu_limit = driver_mtu;
  std::string limit_source = info_.driver + "'s reported limit";
  if (info_.driver == "net_memif" && memif_mtu(dev.device) > mtu_limit) {
    mtu_limit = memif_mtu(dev.device);
    limit_source = "net_memif's bsize devarg (" + std::to_string(mtu_limit + RTE_ETHER_HDR_LEN) + ")";
  }
  if (options_.mtu_limit != 0) {
    mtu_limit = options_.mtu_limit;
    limit_source = "dpdk.mtu_limit";
  }
  if (options_.mtu > mtu_limit)
    throw PmdError("dpdk.mtu: " + std::to_string(options_.mtu) + " exceeds " + label + "'s limit " +
                   std::to_string(mtu_limit) + " (" + limit_source + ")" +
                   (info_.driver == "net_memif" ? "; raise the vdev's bsize devarg to at least " +
                                                      std::to_string(options_.mtu + RTE_ETHER_HDR_LEN)
                                                : std::string()));
  const bool beyond_driver_limit = options_.mtu > driver_mtu;

  flows_ = std::make_unique<FlowTable>(port_id, label, symmetric_rss_key(caps.hash_key_size ? caps.hash_key_size : 40));

  rte_eth_conf conf{};
  conf.rxmode.mtu = beyond_driver_limit ? driver_mtu : options_.mtu;
  conf.rxmode.offloads = plan.rx_offloads;
  conf.txmode.offloads = plan.tx_offloads;
  if (plan.enabled.lro) conf.rxmode.max_lro_pkt_size = dev.max_lro_pkt_size;
  std::vector<uint8_t> key = symmetric_rss_key(caps.hash_key_size ? caps.hash_key_size : 40);
  if (plan.enabled.rss) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = key.data();
    conf.rx_adv_conf.rss_conf.rss_key_len = static_cast<uint8_t>(key.size());
    conf.rx_adv_conf.rss_conf.rss_hf = plan.rss_hf;
  }
  int rc = rte_eth_dev_configure(port_id, info_.rx_queues, info_.tx_queues, &conf);
  if (rc != 0 && plan.enabled.rss) {
    plan.fallbacks.push_back("rss: " + info_.driver + " refused the symmetric key (" + ethdev_error(rc) +
                             "), flows are steered by the software redirect ring");
    plan.enabled.rss = false;
    plan.rss_hf = 0;
    plan.rx_offloads &= ~RTE_ETH_RX_OFFLOAD_RSS_HASH;
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
    conf.rxmode.offloads = plan.rx_offloads;
    conf.rx_adv_conf.rss_conf = {};
    rc = rte_eth_dev_configure(port_id, info_.rx_queues, info_.tx_queues, &conf);
  }
  if (rc != 0)
    throw PmdError(label + ": configure failed: " + ethdev_error(rc) +
                   (options_.mtu != RTE_ETHER_MTU ? " (check dpdk.mtu)" : " (check dpdk.queues)"));

  uint16_t rx_desc = options_.rx_desc, tx_desc = options_.tx_desc;
  if (rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rx_desc, &tx_desc) != 0) {
    rx_desc = options_.rx_desc;
    tx_desc = options_.tx_desc;
  }
  pool_ = pools.for_socket(info_.numa_socket);
  // Without rx scatter a frame must fit one mbuf (net_memif's copy-mode rx chains mbufs itself).
  const unsigned frame = options_.mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 8;  // + 2 VLAN tags
  if (!plan.enabled.rx_scatter && info_.driver != "net_memif" && frame > pools.data_room() - RTE_PKTMBUF_HEADROOM)
    throw PmdError("dpdk.mtu: " + std::to_string(options_.mtu) + " needs " + std::to_string(frame) +
                   "-byte mbufs and " + info_.driver + " cannot scatter; raise dpdk.mbuf_size to at least " +
                   std::to_string(frame + RTE_PKTMBUF_HEADROOM));
  for (uint16_t q = 0; q < info_.rx_queues; ++q) {
    rte_eth_rxconf rxconf = dev.default_rxconf;
    rxconf.offloads = conf.rxmode.offloads;
    rc = rte_eth_rx_queue_setup(port_id, q, rx_desc, static_cast<unsigned>(info_.numa_socket), &rxconf, pool_);
    if (rc != 0)
      throw PmdError(label + ": rx queue " + std::to_string(q) + " setup failed: " + ethdev_error(rc) +
                     " (check dpdk.rx_desc and dpdk.mbufs)");
  }
  for (uint16_t q = 0; q < info_.tx_queues; ++q) {
    rte_eth_txconf txconf = dev.default_txconf;
    txconf.offloads = conf.txmode.offloads;
    rc = rte_eth_tx_queue_setup(port_id, q, tx_desc, static_cast<unsigned>(info_.numa_socket), &txconf);
    if (rc != 0)
      throw PmdError(label + ": tx queue " + std::to_string(q) + " setup failed: " + ethdev_error(rc) +
                     " (check dpdk.tx_desc)");
  }

  // Isolated mode once the queues exist and before the port starts: mlx5 switches it only on a
  // stopped port, and net_tap removes the rules that hand its remote netdev's traffic to us (its
  // own MAC's, broadcast) only once its queues' netdev is up; before that it defers the switch.
  if (options_.flow_isolate) {
    if (const std::string reason = set_flow_isolation(port_id, true); !reason.empty())
      throw PmdError("dpdk.flow_isolate: " + label + ": driver " + info_.driver +
                     " cannot isolate its traffic with rte_flow: " + reason +
                     "; use a port whose driver has isolated mode (mlx5, net_tap on a kernel with the multiq qdisc "
                     "and TC flower) or turn dpdk.flow_isolate off");
    info_.flow_isolated = true;
  }

  uint16_t mtu = 0;
  rte_eth_dev_get_mtu(port_id, &mtu);
  if (beyond_driver_limit) {
    BYPASS_LOG(Info, "pmd", "%s: mtu %u beyond the driver's %u, as %s allows", label.c_str(), options_.mtu,
               driver_mtu, limit_source.c_str());
    mtu = options_.mtu;
  } else if (mtu != options_.mtu) {
    rc = rte_eth_dev_set_mtu(port_id, options_.mtu);
    if (rc != 0 && rc != -ENOTSUP)
      throw PmdError(label + ": cannot set dpdk.mtu=" + std::to_string(options_.mtu) + ": " + ethdev_error(rc) +
                     " (device range " + std::to_string(dev.min_mtu) + ".." + std::to_string(dev.max_mtu) + ")");
    if (rc == -ENOTSUP)
      BYPASS_LOG(Warn, "pmd", "%s: MTU stays %u (driver cannot change it; dpdk.mtu=%u)", label.c_str(), mtu,
                 options_.mtu);
    rte_eth_dev_get_mtu(port_id, &mtu);
  }
  info_.mtu = mtu;

  rc = options_.promiscuous ? rte_eth_promiscuous_enable(port_id) : rte_eth_promiscuous_disable(port_id);
  if (rc != 0 && rc != -ENOTSUP)
    BYPASS_LOG(Warn, "pmd", "%s: cannot %s promiscuous mode: %s", label.c_str(),
               options_.promiscuous ? "enable" : "disable", ethdev_error(rc).c_str());

  rc = rte_eth_dev_start(port_id);
  if (rc != 0)
    throw PmdError(label + ": start failed: " + ethdev_error(rc) +
                   (info_.driver == "net_memif"
                        ? " (a memif client needs its role=server peer listening on the same socket; check dpdk.vdev)"
                        : ""));
  started_ = true;

  info_.offloads = std::move(plan);
  if (info_.offloads.enabled.rss) setup_rss();
  for (const std::string& fallback : info_.offloads.fallbacks)
    BYPASS_LOG(Debug, "pmd", "%s: %s", label.c_str(), fallback.c_str());

  rte_ether_addr mac{};
  rte_eth_macaddr_get(port_id, &mac);
  std::copy(std::begin(mac.addr_bytes), std::end(mac.addr_bytes), info_.mac.begin());

  // Software steering whenever the hardware does not put each flow on its owner's queue already.
  const unsigned workers = options_.workers;
  // Under isolation the rules' own RSS (or per-source queues) spreads flows, in a way the RETA
  // below does not describe, so the owner function decides for every packet.
  info_.software_redirect =
      workers > 1 && (info_.flow_isolated || !(info_.offloads.enabled.rss && info_.rx_queues == workers));
  steering_ = RssSteering(workers, info_.offloads.enabled.rss ? caps.reta_size : 512, key.size());
  if (info_.software_redirect) {
    static std::atomic<unsigned> generation{0};
    const unsigned gen = generation++;
    for (unsigned w = 0; w < workers; ++w) {
      const std::string ring_name = "bpr" + std::to_string(port_id) + "_" + std::to_string(w) + "_" +
                                    std::to_string(gen);
      rte_ring* ring = rte_ring_create(ring_name.c_str(), options_.redirect_ring, info_.numa_socket, RING_F_SC_DEQ);
      if (!ring) {
        // The port's node has no memory left: a ring elsewhere works, each redirect crossing the interconnect.
        ring = rte_ring_create(ring_name.c_str(), options_.redirect_ring, SOCKET_ID_ANY, RING_F_SC_DEQ);
        if (ring)
          BYPASS_LOG(Warn, "pmd", "%s: redirect ring %s: no room on NUMA node %d (the port's), created on node %d",
                     label.c_str(), ring_name.c_str(), info_.numa_socket, ring->memzone->socket_id);
      }
      if (!ring)
        throw PmdError(label + ": cannot create redirect ring: " + std::string(rte_strerror(rte_errno)) +
                       " (lower dpdk.redirect_ring or raise dpdk.memory)");
      redirect_rings_.push_back(ring);
    }
    staging_.resize(size_t{workers} * workers);
    for (auto& s : staging_) s.reserve(kMaxBurst);
  }
  tx_locks_ = std::make_unique<rte_spinlock_t[]>(info_.tx_queues);
  tx_shared_.assign(info_.tx_queues, false);
  for (uint16_t q = 0; q < info_.tx_queues; ++q) {
    rte_spinlock_init(&tx_locks_[q]);
    tx_shared_[q] = workers > info_.tx_queues && (workers - 1 - q) / info_.tx_queues >= 1;
  }
  rx_shims_.resize(info_.rx_queues);
  tx_shims_.resize(info_.tx_queues);
  if (options_.faults.any()) {
    const uint64_t base = options_.fault_seed * 1'000'003ull + uint64_t{port_id} * 1'009ull;
    if (options_.faults_on_rx)
      for (uint16_t q = 0; q < info_.rx_queues; ++q)
        rx_shims_[q] = std::make_unique<FaultShim>(options_.faults, base + 2ull * q);
    if (options_.faults_on_tx)
      for (uint16_t q = 0; q < info_.tx_queues; ++q)
        tx_shims_[q] = std::make_unique<FaultShim>(options_.faults, base + 2ull * q + 1);
    BYPASS_LOG(Info, "pmd", "%s: fault injection on %s%s%s (seed %lu)", label.c_str(),
               options_.faults_on_rx ? "rx" : "", options_.faults_on_rx && options_.faults_on_tx ? "+" : "",
               options_.faults_on_tx ? "tx" : "", static_cast<unsigned long>(options_.fault_seed));
  }
  direct_io_ = !info_.software_redirect && info_.rx_queues == workers && info_.tx_queues == workers &&
               !options_.faults.any();
  BYPASS_LOG(Info, "pmd", "%s: %s, %u rx/%u tx queues for %u workers, mtu %u, offloads [%s]%s", label.c_str(),
             info_.mac_text().c_str(), info_.rx_queues, info_.tx_queues, workers, info_.mtu,
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

Port::~Port() {
  if (flows_) flows_->destroy_all();  // rules first: a net_tap remote gets its traffic back at once
  if (started_) {
    if (int rc = rte_eth_dev_stop(info_.port_id); rc != 0)
      BYPASS_LOG(Warn, "pmd", "port %u: stop failed: %s", info_.port_id, ethdev_error(rc).c_str());
  }
  for (rte_ring* ring : redirect_rings_) {
    rte_mbuf* m = nullptr;
    while (rte_ring_dequeue(ring, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
    rte_ring_free(ring);
  }
  rx_shims_.clear();
  tx_shims_.clear();
  rte_eth_dev_close(info_.port_id);
}

const char* Port::to_string(MulticastMode mode) {
  switch (mode) {
    case MulticastMode::Filter: return "multicast filter";
    case MulticastMode::UnicastTable: return "MAC address table";
    case MulticastMode::AllMulticast: return "all-multicast mode";
    case MulticastMode::Promiscuous: return "promiscuous mode";
    case MulticastMode::Unfiltered: return "unfiltered device";
  }
  return "?";
}

Port::MulticastMode Port::join_multicast(const std::vector<std::array<uint8_t, 6>>& groups) {
  const uint16_t port_id = info_.port_id;
  const std::string label = port_label(port_id, info_.name);
  if (rte_eth_promiscuous_get(port_id) == 1) {
    BYPASS_LOG(Info, "pmd", "%s: multicast groups arrive in promiscuous mode", label.c_str());
    return MulticastMode::Promiscuous;
  }
  std::vector<rte_ether_addr> addresses(groups.size());
  for (size_t i = 0; i < groups.size(); ++i)
    std::copy(groups[i].begin(), groups[i].end(), addresses[i].addr_bytes);
  const int filter = rte_eth_dev_set_mc_addr_list(port_id, addresses.data(), static_cast<uint32_t>(addresses.size()));
  if (filter == 0) {
    BYPASS_LOG(Info, "pmd", "%s: %zu multicast groups joined through the device's multicast filter", label.c_str(),
               groups.size());
    return MulticastMode::Filter;
  }
  // Many NICs match a multicast destination against their unicast MAC table as well. Only where
  // the table has room beside the port's own address: ethdev puts an added address in the first
  // empty slot, which on a port without a MAC (net_ring) is the default address's own.
  int table = -ENOSPC;
  size_t added = 0;
  rte_eth_dev_info dev{};
  rte_ether_addr own{};
  if (rte_eth_dev_info_get(port_id, &dev) == 0 && rte_eth_macaddr_get(port_id, &own) == 0 &&
      !rte_is_zero_ether_addr(&own) && dev.max_mac_addrs > groups.size()) {
    for (rte_ether_addr& address : addresses) {
      table = rte_eth_dev_mac_addr_add(port_id, &address, 0);
      if (table != 0) break;
      ++added;
    }
  }
  if (table == 0) {
    BYPASS_LOG(Info, "pmd", "%s: %zu multicast groups added to the MAC address table (no multicast filter: %s)",
               label.c_str(), groups.size(), ethdev_error(filter).c_str());
    return MulticastMode::UnicastTable;
  }
  for (size_t i = 0; i < added; ++i) rte_eth_dev_mac_addr_remove(port_id, &addresses[i]);
  const int all = rte_eth_allmulticast_enable(port_id);
  if (all == 0) {
    BYPASS_LOG(Info, "pmd", "%s: all-multicast mode on (multicast filter: %s; MAC table: %s)", label.c_str(),
               ethdev_error(filter).c_str(), ethdev_error(table).c_str());
    return MulticastMode::AllMulticast;
  }
  // net_ring and net_memif deliver every frame their peer sends: there is nothing to open.
  BYPASS_LOG(Info, "pmd", "%s: %s has no multicast filter, MAC table or all-multicast mode (%s); it filters nothing",
             label.c_str(), info_.driver.c_str(), ethdev_error(all).c_str());
  return MulticastMode::Unfiltered;
}

void Port::set_flow_isolated(bool on) {
  const std::string label = port_label(info_.port_id, info_.name);
  std::string reason = set_flow_isolation(info_.port_id, on);
  if (!reason.empty() && started_) {
    // mlx5 refuses while the port runs (EBUSY): stop, switch, start again.
    if (rte_eth_dev_stop(info_.port_id) == 0) {
      const std::string stopped_reason = set_flow_isolation(info_.port_id, on);
      if (stopped_reason.empty()) reason.clear();
      if (const int rc = rte_eth_dev_start(info_.port_id); rc != 0)
        throw PmdError(label + ": restart after switching isolated mode failed: " + ethdev_error(rc));
    }
  }
  if (!reason.empty())
    throw PmdError(label + ": driver " + info_.driver + " cannot " + (on ? "enter" : "leave") +
                   " rte_flow isolated mode: " + reason);
  info_.flow_isolated = on;
}

LinkState Port::link() const {
  rte_eth_link l{};
  LinkState s;
  if (rte_eth_link_get_nowait(info_.port_id, &l) != 0) return s;
  s.up = l.link_status == RTE_ETH_LINK_UP;
  s.speed_mbps = l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : l.link_speed;
  s.full_duplex = l.link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
  s.autoneg = l.link_autoneg == RTE_ETH_LINK_AUTONEG;
  return s;
}

bool Port::wait_link(std::chrono::nanoseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!link().up) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void Port::set_owner_function(OwnerFunction function, void* context) {
  owner_ = function ? function : &Port::default_owner;
  owner_context_ = function ? context : this;
}

namespace {

// IPv6 as NICs hash it (RTE_ETH_RSS_NONFRAG_IPV6_TCP/UDP, RTE_ETH_RSS_IPV6): TCP or UDP hashes its
// 4-tuple, anything else (a fragment, ICMPv6) the two addresses only, so all of a fragmented
// datagram and the neighbour discovery between two hosts land on one worker. Hop-by-Hop, Routing
// and Destination Options headers before TCP are stepped over (ipv6_upper_layer), so a segment
// that carries one stays with its flow.
unsigned ipv6_owner(const RssSteering& steering, const rte_mbuf* pkt) {
  uint8_t copy[sizeof(rte_ipv6_hdr)];
  const auto* ip6 = static_cast<const rte_ipv6_hdr*>(rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(copy), copy));
  if (!ip6) return kKeepOnReceiver;
  const std::span<const uint8_t, 16> src(ip6->src_addr, 16), dst(ip6->dst_addr, 16);
  if (const auto upper = ipv6_upper_layer(pkt); upper && (upper->protocol == IPPROTO_TCP || upper->protocol == IPPROTO_UDP)) {
    uint8_t ports_copy[4];
    const auto* ports = static_cast<const uint8_t*>(rte_pktmbuf_read(pkt, upper->offset, 4, ports_copy));
    if (ports)
      return steering.worker_for_ipv6(src, dst, static_cast<uint16_t>(ports[0] << 8 | ports[1]),
                                      static_cast<uint16_t>(ports[2] << 8 | ports[3]));
  }
  return steering.worker_for_ipv6_addresses(src, dst);
}

}  // namespace

std::optional<Ipv6UpperLayer> ipv6_upper_layer(const rte_mbuf* pkt) {
  uint8_t copy[sizeof(rte_ipv6_hdr)];
  const auto* ip6 = static_cast<const rte_ipv6_hdr*>(rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(copy), copy));
  if (!ip6 || (ip6->vtc_flow & rte_cpu_to_be_32(0xf0000000u)) != rte_cpu_to_be_32(0x60000000u)) return std::nullopt;
  uint8_t protocol = ip6->proto;
  uint32_t offset = RTE_ETHER_HDR_LEN + sizeof(rte_ipv6_hdr);
  // RFC 8200 §4: these three share the layout next header, length in 8-octet units less one. A
  // bounded walk: a chain longer than this is an attack or nonsense, hashed on addresses.
  constexpr int kMaxExtensionHeaders = 8;
  for (int i = 0; i < kMaxExtensionHeaders; ++i) {
    if (protocol != IPPROTO_HOPOPTS && protocol != IPPROTO_ROUTING && protocol != IPPROTO_DSTOPTS)
      return Ipv6UpperLayer{protocol, offset};
    uint8_t header_copy[2];
    const auto* header = static_cast<const uint8_t*>(rte_pktmbuf_read(pkt, offset, 2, header_copy));
    if (!header) return std::nullopt;
    protocol = header[0];
    offset += (header[1] + 1u) * 8u;
  }
  return std::nullopt;
}

std::optional<uint16_t> tcp_destination_port(const rte_mbuf* pkt) {
  uint8_t copy[RTE_ETHER_HDR_LEN + sizeof(rte_ipv4_hdr)];
  const auto* eth = static_cast<const rte_ether_hdr*>(rte_pktmbuf_read(pkt, 0, RTE_ETHER_HDR_LEN, copy));
  if (!eth) return std::nullopt;
  uint32_t offset = 0;
  if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
    const auto* ip = static_cast<const rte_ipv4_hdr*>(
        rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(rte_ipv4_hdr), copy + RTE_ETHER_HDR_LEN));
    if (!ip || ip->next_proto_id != IPPROTO_TCP || (ip->version_ihl & 0x0f) < 5) return std::nullopt;
    // A later fragment carries payload where the ports would be.
    if (rte_be_to_cpu_16(ip->fragment_offset) & RTE_IPV4_HDR_OFFSET_MASK) return std::nullopt;
    offset = RTE_ETHER_HDR_LEN + (ip->version_ihl & 0x0f) * 4u;
  } else if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) {
    const auto upper = ipv6_upper_layer(pkt);
    if (!upper || upper->protocol != IPPROTO_TCP) return std::nullopt;
    offset = upper->offset;
  } else {
    return std::nullopt;
  }
  uint8_t ports_copy[4];
  const auto* ports = static_cast<const uint8_t*>(rte_pktmbuf_read(pkt, offset, 4, ports_copy));
  if (!ports) return std::nullopt;
  return static_cast<uint16_t>(ports[2] << 8 | ports[3]);
}

unsigned Port::default_owner(const rte_mbuf* pkt, void* context) {
  const Port& port = *static_cast<const Port*>(context);
  if (port.info_.offloads.enabled.rss && (pkt->ol_flags & RTE_MBUF_F_RX_RSS_HASH))
    return port.steering_.worker_for_hash(pkt->hash.rss);
  // Ethernet + IPv4 (no options needed for the addresses) + the first 4 bytes of TCP/UDP.
  uint8_t copy[RTE_ETHER_HDR_LEN + 60 + 4];
  const auto* eth = static_cast<const rte_ether_hdr*>(rte_pktmbuf_read(pkt, 0, RTE_ETHER_HDR_LEN, copy));
  if (eth && eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)) return ipv6_owner(port.steering_, pkt);
  if (!eth || eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) return kKeepOnReceiver;
  const auto* ip = static_cast<const rte_ipv4_hdr*>(
      rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN, sizeof(rte_ipv4_hdr), copy + RTE_ETHER_HDR_LEN));
  if (!ip) return kKeepOnReceiver;
  const uint32_t src = rte_be_to_cpu_32(ip->src_addr), dst = rte_be_to_cpu_32(ip->dst_addr);
  const uint16_t fragment = rte_be_to_cpu_16(ip->fragment_offset);
  const bool fragmented = (fragment & RTE_IPV4_HDR_OFFSET_MASK) || (fragment & RTE_IPV4_HDR_MF_FLAG);
  const unsigned header_len = (ip->version_ihl & 0x0f) * 4u;
  if (!fragmented && (ip->next_proto_id == IPPROTO_TCP || ip->next_proto_id == IPPROTO_UDP) && header_len >= 20) {
    uint8_t ports_copy[4];
    const auto* ports = static_cast<const uint8_t*>(
        rte_pktmbuf_read(pkt, RTE_ETHER_HDR_LEN + header_len, 4, ports_copy));
    if (ports) {
      const uint16_t sport = static_cast<uint16_t>(ports[0] << 8 | ports[1]);
      const uint16_t dport = static_cast<uint16_t>(ports[2] << 8 | ports[3]);
      return port.steering_.worker_for_ipv4(src, dst, sport, dport);
    }
  }
  // Fragments and other protocols hash on the addresses only, as NICs do (RTE_ETH_RSS_IPV4).
  return port.steering_.worker_for_ipv4_addresses(src, dst);
}

uint16_t Port::rx_from_queue(unsigned worker, uint16_t queue, rte_mbuf** pkts, uint16_t count) {
  FaultShim* shim = rx_shims_[queue].get();
  if (!shim) return driver_rx(worker, queue, pkts, count);
  rte_mbuf* raw[kMaxBurst];
  const uint16_t got = driver_rx(worker, queue, raw, std::min(count, kMaxBurst));
  return shim->process(raw, got, pkts, count, FaultShim::now_ns());
}

uint16_t Port::rx_burst_slow(unsigned worker, rte_mbuf** pkts, uint16_t count) {
  count = std::min(count, kMaxBurst);
  const unsigned workers = options_.workers;
  const bool has_queue = worker < info_.rx_queues;
  uint16_t n = 0;
  WorkerCounters& counters = counters_[worker];
  if (info_.software_redirect) {
    // Leave room for the hardware queue so neither source starves the other.
    const uint16_t limit = has_queue ? std::max<uint16_t>(1, count / 2) : count;
    n = static_cast<uint16_t>(
        rte_ring_sc_dequeue_burst(redirect_rings_[worker], reinterpret_cast<void**>(pkts), limit, nullptr));
    counters.add(counters.redirected_in, n);
  }
  if (has_queue && n < count) {
    const uint16_t first = n;
    const uint16_t got = rx_from_queue(worker, static_cast<uint16_t>(worker), pkts + n, static_cast<uint16_t>(count - n));
    if (!info_.software_redirect) {
      n = static_cast<uint16_t>(n + got);
    } else {
      std::vector<rte_mbuf*>* staging = &staging_[size_t{worker} * workers];
      for (uint16_t i = first; i < first + got; ++i) {
        const unsigned owner = owner_(pkts[i], owner_context_);
        if (owner >= workers || owner == worker)
          pkts[n++] = pkts[i];
        else
          staging[owner].push_back(pkts[i]);
      }
      for (unsigned target = 0; target < workers; ++target) {
        auto& batch = staging[target];
        if (batch.empty()) continue;
        const unsigned sent = rte_ring_mp_enqueue_burst(redirect_rings_[target], reinterpret_cast<void**>(batch.data()),
                                                        static_cast<unsigned>(batch.size()), nullptr);
        counters.add(counters.redirected_out, sent);
        if (sent < batch.size()) {
          counters.add(counters.redirect_drops, batch.size() - sent);
          rte_pktmbuf_free_bulk(batch.data() + sent, static_cast<unsigned>(batch.size() - sent));
        }
        batch.clear();
      }
    }
  }
  counters.add(counters.rx_packets, n);
  // A worker polls rx all the time: let its tx shim release delayed packets even when it sends nothing.
  const uint16_t tx_queue = static_cast<uint16_t>(worker % info_.tx_queues);
  if (tx_shims_[tx_queue] && tx_shims_[tx_queue]->held() > 0) drain_tx_shim(worker, tx_queue);
  return n;
}

void Port::drain_tx_shim(unsigned worker, uint16_t queue) {
  const bool shared = tx_shared_[queue];
  if (shared) rte_spinlock_lock(&tx_locks_[queue]);
  rte_mbuf* out[kMaxBurst];
  FaultShim& shim = *tx_shims_[queue];
  const uint16_t ready = shim.process(nullptr, 0, out, kMaxBurst, FaultShim::now_ns());
  const uint16_t sent = driver_tx(worker, queue, out, ready);
  if (sent < ready) shim.requeue_front(out + sent, static_cast<uint16_t>(ready - sent));
  if (shared) rte_spinlock_unlock(&tx_locks_[queue]);
}

uint16_t Port::tx_burst_slow(unsigned worker, rte_mbuf** pkts, uint16_t count) {
  const uint16_t queue = static_cast<uint16_t>(worker % info_.tx_queues);
  const bool shared = tx_shared_[queue];
  if (shared) rte_spinlock_lock(&tx_locks_[queue]);
  uint16_t accepted = 0;
  if (FaultShim* shim = tx_shims_[queue].get()) {
    // Backpressure once the shim holds more than a ring's worth, as a full device would.
    if (shim->held() < size_t{options_.tx_desc} * 2) {
      accepted = std::min(count, kMaxBurst);
      rte_mbuf* out[kMaxBurst];
      const uint16_t ready = shim->process(pkts, accepted, out, kMaxBurst, FaultShim::now_ns());
      const uint16_t sent = driver_tx(worker, queue, out, ready);
      if (sent < ready) shim->requeue_front(out + sent, static_cast<uint16_t>(ready - sent));
    }
  } else {
    accepted = driver_tx(worker, queue, pkts, count);
  }
  if (shared) rte_spinlock_unlock(&tx_locks_[queue]);
  counters_[worker].add(counters_[worker].tx_packets, accepted);
  if (accepted < count) counters_[worker].add(counters_[worker].tx_full, count - accepted);
  return accepted;
}

uint16_t Port::drain_redirect(unsigned worker, rte_mbuf** pkts, uint16_t count) {
  if (!info_.software_redirect || worker >= redirect_rings_.size()) return 0;
  const auto n = static_cast<uint16_t>(
      rte_ring_sc_dequeue_burst(redirect_rings_[worker], reinterpret_cast<void**>(pkts), count, nullptr));
  counters_[worker].add(counters_[worker].redirected_in, n);
  counters_[worker].add(counters_[worker].rx_packets, n);
  return n;
}

PortStats Port::stats() const {
  PortStats s;
  rte_eth_stats st{};
  if (rte_eth_stats_get(info_.port_id, &st) == 0) {
    s.rx_packets = st.ipackets;
    s.tx_packets = st.opackets;
    s.rx_bytes = st.ibytes;
    s.tx_bytes = st.obytes;
    s.rx_missed = st.imissed;
    s.rx_errors = st.ierrors;
    s.tx_errors = st.oerrors;
    s.rx_nombuf = st.rx_nombuf;
    for (uint16_t q = 0; q < info_.rx_queues && q < RTE_ETHDEV_QUEUE_STAT_CNTRS; ++q)
      s.rx_queues.push_back({st.q_ipackets[q], st.q_ibytes[q], st.q_errors[q]});
    for (uint16_t q = 0; q < info_.tx_queues && q < RTE_ETHDEV_QUEUE_STAT_CNTRS; ++q)
      s.tx_queues.push_back({st.q_opackets[q], st.q_obytes[q], 0});
  }
  for (unsigned w = 0; w < options_.workers; ++w) {
    const WorkerCounters& c = counters_[w];
    s.workers.push_back({c.rx_packets.load(std::memory_order_relaxed), c.tx_packets.load(std::memory_order_relaxed),
                         c.redirected_out.load(std::memory_order_relaxed),
                         c.redirected_in.load(std::memory_order_relaxed),
                         c.redirect_drops.load(std::memory_order_relaxed), c.tx_full.load(std::memory_order_relaxed)});
  }
  auto sum = [](FaultCounters& total, const std::vector<std::unique_ptr<FaultShim>>& shims) {
    for (const auto& shim : shims) {
      if (!shim) continue;
      const FaultCounters& c = shim->counters();
      total.seen += c.seen;
      total.dropped += c.dropped;
      total.duplicated += c.duplicated;
      total.reordered += c.reordered;
      total.delayed += c.delayed;
      total.corrupted += c.corrupted;
    }
  };
  sum(s.rx_faults, rx_shims_);
  sum(s.tx_faults, tx_shims_);
  return s;
}

std::vector<Xstat> Port::xstats() const {
  std::vector<Xstat> out;
  const int count = rte_eth_xstats_get_names(info_.port_id, nullptr, 0);
  if (count <= 0) return out;
  std::vector<rte_eth_xstat_name> names(static_cast<size_t>(count));
  std::vector<rte_eth_xstat> values(static_cast<size_t>(count));
  if (rte_eth_xstats_get_names(info_.port_id, names.data(), static_cast<unsigned>(count)) != count) return out;
  const int got = rte_eth_xstats_get(info_.port_id, values.data(), static_cast<unsigned>(count));
  for (int i = 0; i < got && i < count; ++i)
    out.push_back({names[values[static_cast<size_t>(i)].id].name, values[static_cast<size_t>(i)].value});
  return out;
}

std::optional<uint64_t> Port::xstat(const std::string& name) const {
  uint64_t id = 0, value = 0;
  if (rte_eth_xstats_get_id_by_name(info_.port_id, name.c_str(), &id) != 0) return std::nullopt;
  if (rte_eth_xstats_get_by_id(info_.port_id, &id, &value, 1) != 1) return std::nullopt;
  return value;
}

void Port::reset_stats() {
  rte_eth_stats_reset(info_.port_id);
  rte_eth_xstats_reset(info_.port_id);
  for (unsigned w = 0; w < options_.workers; ++w) {
    WorkerCounters& c = counters_[w];
    for (auto* counter : {&c.rx_packets, &c.tx_packets, &c.redirected_out, &c.redirected_in, &c.redirect_drops, &c.tx_full})
      counter->store(0, std::memory_order_relaxed);
  }
}

}  // namespace bypass::pmd
