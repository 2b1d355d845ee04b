// Port: its options, the running port (link, multicast groups, isolated mode, the owner function)
// and the burst paths' slow side (software redirect, shared tx queues, fault shims). Start-up is
// in port_configure.cc, statistics in port_stats.cc.
#include "pmd/port.h"

#include <rte_ether.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "base/log.h"
#include "pmd/error.h"

namespace bypass::pmd {

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

std::string PortInfo::label() const { return "port " + std::to_string(port_id) + " (" + name + ")"; }

std::string PortInfo::mac_text() const {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  return text;
}

Port::~Port() {
  if (flows_) flows_->destroy_all();  // rules first: a net_tap remote gets its traffic back at once
  if (started_) {
    if (int rc = rte_eth_dev_stop(info_.port_id); rc != 0)
      BYPASS_LOG(Warn, "pmd", "port %u: stop failed: %s", info_.port_id, ethdev_error(rc).c_str());
  }
  redirect_.reset();  // frees what other workers handed over and nobody took
  rx_shims_.clear();
  tx_shims_.clear();
  // A memif peer's departure may still be being handled on the interrupt thread (burst_guard.h).
  if (burst_guard_ && !wait_for_interrupt_thread())
    BYPASS_LOG(Warn, "pmd", "%s: the EAL interrupt thread stayed busy; closing anyway", info_.label().c_str());
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
  const std::string label = info_.label();
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
  const std::string label = info_.label();
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

unsigned Port::default_owner(const rte_mbuf* pkt, void* context) {
  const Port& port = *static_cast<const Port*>(context);
  if (port.info_.offloads.enabled.rss && (pkt->ol_flags & RTE_MBUF_F_RX_RSS_HASH))
    return port.steering_.worker_for_hash(pkt->hash.rss);
  return worker_by_headers(port.steering_, pkt);
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
  const bool has_queue = worker < info_.rx_queues;
  uint16_t n = 0;
  WorkerCounters& counters = counters_[worker];
  if (redirect_) {
    // Leave room for the hardware queue so neither source starves the other.
    const uint16_t limit = has_queue ? std::max<uint16_t>(1, count / 2) : count;
    n = redirect_->take(worker, pkts, limit);
    counters.add(counters.redirected_in, n);
  }
  if (has_queue && n < count) {
    const uint16_t got = rx_from_queue(worker, static_cast<uint16_t>(worker), pkts + n, static_cast<uint16_t>(count - n));
    if (!redirect_)
      n = static_cast<uint16_t>(n + got);
    else
      n = static_cast<uint16_t>(n + redirect_->hand_over(worker, pkts + n, got, owner_, owner_context_, counters));
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
  if (!redirect_ || worker >= redirect_->workers()) return 0;
  const uint16_t n = redirect_->take(worker, pkts, count);
  counters_[worker].add(counters_[worker].redirected_in, n);
  counters_[worker].add(counters_[worker].rx_packets, n);
  return n;
}

}  // namespace bypass::pmd
