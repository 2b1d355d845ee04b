// The entry point of pmd/: start the EAL from the configuration, create the mempools and open
// the ports. The dpdk transport glue and bypass-pmd use this; stack/inet never sees DPDK.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "config/config.h"
#include "pmd/eal.h"
#include "pmd/error.h"
#include "pmd/mempools.h"
#include "pmd/port.h"

namespace bypass::pmd {

class PortSet {
 public:
  // Starts the EAL if needed and opens `only` (a port id) or every available port. Ports are
  // started; links are not waited for (see wait_links). Throws PmdError.
  explicit PortSet(const config::Config& config, std::optional<uint16_t> only = std::nullopt,
                   const std::string& program = "bypass");
  ~PortSet();  // ports close before the pools they draw from

  const EalPlan& eal() const { return *eal_; }
  std::vector<std::unique_ptr<Port>>& ports() { return ports_; }
  Port& port(size_t index) { return *ports_.at(index); }
  MempoolSet& pools() { return *pools_; }

  // Waits up to dpdk.link_wait for every port; throws PmdError naming the first port still down.
  void wait_links(std::chrono::nanoseconds timeout);

 private:
  const EalPlan* eal_;
  std::unique_ptr<MempoolSet> pools_;
  std::vector<std::unique_ptr<Port>> ports_;
};

}  // namespace bypass::pmd
