#include "pmd/pmd.h"

#include <rte_ethdev.h>

#include "base/log.h"

namespace bypass::pmd {

PortSet::PortSet(const config::Config& config, std::optional<uint16_t> only, const std::string& program)
    : eal_(&start_eal(config, program)), pools_(MempoolSet::from_config(config)) {
  const PortOptions options = PortOptions::from_config(config);
  if (only) {
    ports_.push_back(std::make_unique<Port>(*only, options, *pools_));
    return;
  }
  uint16_t port_id = 0;
  RTE_ETH_FOREACH_DEV(port_id) { ports_.push_back(std::make_unique<Port>(port_id, options, *pools_)); }
  if (ports_.empty())
    throw PmdError("dpdk.vdev: no DPDK port found (add a virtual device such as net_tap0,iface=bp0 with "
                   "dpdk.vdev, or a PCI device bound to a DPDK driver with dpdk.allow)");
}

PortSet::~PortSet() { ports_.clear(); }

void PortSet::wait_links(std::chrono::nanoseconds timeout) {
  for (auto& port : ports_) {
    if (port->wait_link(timeout)) continue;
    std::string hint;
    if (port->info().driver == "net_memif")
      hint = "; is the memif peer running on the same socket (role=server/client in dpdk.vdev)?";
    throw PmdError("dpdk.link_wait: port " + std::to_string(port->id()) + " (" + port->info().name +
                   ") link still down after " + config::format_duration(timeout) + hint);
  }
}

}  // namespace bypass::pmd
