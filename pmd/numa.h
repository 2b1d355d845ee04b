// NUMA placement. On a host with several NUMA nodes a NIC sits on one of them; a worker polling it
// from another node, or mbufs and rings in another node's memory, pay the interconnect on every
// packet. The host's topology is read from sysfs (through HostFiles, so tests use fake trees) and
// the decisions are pure functions of it: the EAL plan (lcores and --socket-mem on the NIC's node),
// the workers' CPUs, and the doctor's NUMA checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/host_files.h"

namespace bypass::pmd {

struct HugepagePool {
  uint64_t page_bytes = 0;  // 2 MiB, 1 GiB
  uint64_t total = 0;       // nr_hugepages
  uint64_t free = 0;        // free_hugepages
};

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;                // cpulist, sorted
  std::vector<HugepagePool> hugepages;  // by page size
  uint64_t free_hugepage_bytes() const;
};

struct NumaTopology {
  std::vector<NumaNode> nodes;  // by id; empty when sysfs shows no node (a kernel without NUMA)

  // /sys/devices/system/node/node*/{cpulist,hugepages/hugepages-*kB/{nr,free}_hugepages}.
  static NumaTopology read(const HostFiles& files);
  const NumaNode* node(int id) const;  // nullptr when there is no such node
  int node_of_cpu(int cpu) const;      // -1 when no node lists it
  bool multi_node() const { return nodes.size() > 1; }
};

// "0000:81:00.0" for "81:00.0" (EAL accepts both; sysfs names the full form).
std::string canonical_pci_address(const std::string& address);
// The NUMA node sysfs gives a PCI device (its numa_node file); -1 when the device is absent or the
// firmware does not say.
int pci_numa_node(const HostFiles& files, const std::string& address);

// The node every listed PCI device sits on; -1 when there are none, they differ, or any is unknown.
int common_numa_node(const std::map<std::string, int>& device_nodes, const std::vector<std::string>& devices);

// Where a port's workers run. Workers pinned by ms.cpus stay where they are told, but a warning
// names the cores that are off the port's node and the node's own CPUs; unpinned workers are kept
// to the port's node's CPUs. On one node, or with the port's node unknown, nothing changes.
struct WorkerPlacement {
  std::vector<int> affinity;  // CPUs unpinned workers may run on; empty: unchanged
  std::string warning;        // empty when placement is right
};
WorkerPlacement place_workers(const NumaTopology& topology, int port_node, const std::vector<int>& pinned_cpus,
                              const std::string& port_label);

// The command that leaves `bytes` of hugepages free on `node` (nullptr: the host, without NUMA)
// besides what is in use there now: "dpdk-hugepages.py --node 1 --reserve 512M".
std::string hugepage_reserve_command(const NumaNode* node, uint64_t bytes);

// "0-3,8" (the kernel's cpulist format) for a sorted list; "none" when empty.
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace bypass::pmd
