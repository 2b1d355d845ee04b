// EAL start-up from the dpdk: section of the configuration.
//
// The arguments are planned first (plan_eal, pure and unit-tested) from the configuration and what
// the host offers (HostFacts: online CPUs, free hugepages, hugetlbfs mounts, NUMA nodes and the
// allowed NICs' nodes); only then is rte_eal_init called, once per process. Every refusal is a
// PmdError naming the option to change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/host_files.h"
#include "config/config.h"
#include "pmd/numa.h"

namespace bypass::pmd {

struct HostFacts {
  std::vector<int> online_cpus;        // from /sys/devices/system/cpu/online
  uint64_t free_hugepage_bytes = 0;    // all page sizes, free pages only
  std::vector<std::string> hugetlbfs_mounts;
  // The drivers EAL loads from its plugin directory (RTE_EAL_PMD_PATH, one package each on Debian:
  // "net_memif", "net_vhost", ...); nullopt for a DPDK that links its drivers in.
  std::optional<std::vector<std::string>> loadable_drivers;
  // Whether EAL can load `driver` ("net_virtio"): always true when the drivers are linked in.
  bool has_driver(const std::string& driver) const;
  NumaTopology numa;                          // nodes, their CPUs and hugepages
  std::map<std::string, int> pci_numa_nodes;  // canonical PCI address -> node (-1 unknown)
  // Reads the host through `files`; `pci_devices` (dpdk.allow) are the devices whose node to find.
  static HostFacts probe(const std::vector<std::string>& pci_devices = {}, const HostFiles& files = HostFiles());
};

struct EalPlan {
  std::vector<std::string> args;  // argv for rte_eal_init, args[0] is the program name
  bool no_huge = false;
  std::string no_huge_reason;     // why --no-huge was chosen (empty when requested explicitly)
  std::vector<int> lcore_cpus;    // lcore i runs on CPU lcore_cpus[i]
  unsigned main_lcore = 0;
  int port_node = -1;             // the allowed NICs' NUMA node on a multi-node host; -1 unknown
  std::string numa_warning;       // placement that could not follow the NIC's node, and why
};

// Throws PmdError naming the option when the configuration cannot work on this host.
EalPlan plan_eal(const config::Config& config, const HostFacts& host, const std::string& program = "bypass");

// Starts the EAL once per process (later calls return the first plan). Throws PmdError.
const EalPlan& start_eal(const config::Config& config, const std::string& program = "bypass");
bool eal_started();
// Releases EAL resources at exit (ports must be closed first).
void stop_eal();

std::string join_args(const std::vector<std::string>& args);

// The value of `key` in a vdev string's "key=value" pairs ("net_memif0,role=client,bsize=9216").
std::optional<std::string> vdev_param(const std::string& vdev, const std::string& key);

}  // namespace bypass::pmd
