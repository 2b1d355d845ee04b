// Port::stats(), xstats(), xstat() and reset_stats(): see pmd/port_stats.h.
#include "pmd/port.h"

namespace bypass::pmd {

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
