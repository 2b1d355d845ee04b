// bypass-pmd doctor: checks the host against the configuration before anything starts, the way
// Ceph's async+dpdk and async+rdma users find out one failure at a time: hugepages per NUMA node,
// the hugetlbfs mount, IOMMU and vfio-pci, each NIC's driver, the NIC's node against ms.cpus,
// isolated worker cores and irqbalance, queues against workers, and for RDMA the memlock limit,
// the device, its port and its GID table.
//
// Each check is a pure function of a Context: the configuration and the host as read through
// HostFiles (under --root, so tests run them on fake sysfs/procfs trees). It starts no EAL and
// opens no device, so it runs on hosts where the configuration cannot.
#pragma once

#include <string>
#include <vector>

#include "base/host_files.h"
#include "config/config.h"
#include "pmd/eal.h"

namespace bypass::tools::doctor {

enum class Status { Ok, Warn, Fail };
const char* status_name(Status status);  // "OK", "WARN", "FAIL"

struct Check {
  std::string name;    // "hugepages", "device 0000:81:00.0"
  Status status = Status::Ok;
  std::string found;   // what the host has, against what the configuration needs
  std::string fix;     // the exact command that fixes it; empty when there is nothing to run
};

// The configuration and what the checks read of the host, read once.
struct Context {
  Context(const config::Config& config, const HostFiles& files);

  const config::Config& config;
  const HostFiles& files;
  bool rdma = false;                     // ms.type=rdma: the RDMA checks instead of the DPDK ones
  pmd::HostFacts host;                   // CPUs, hugepages, mounts, NUMA nodes, the NICs' nodes
  std::vector<std::string> pci_devices;  // canonical addresses: dpdk.allow, or those EAL would probe
  bool probe_all_pci = false;            // neither dpdk.allow nor dpdk.vdev: EAL probes every PCI device
  int port_node = -1;                    // the NICs' NUMA node on a multi-node host; -1 unknown
};

// Checks in the order the table prints them. Those about one subject return one line; devices
// return one per NIC.
Check check_sysfs(const Context& context);  // FAIL when sysfs/procfs cannot be read at all
Check check_hugepages(const Context& context);
Check check_hugetlbfs(const Context& context);
Check check_eal_plan(const Context& context);
Check check_iommu(const Context& context);
std::vector<Check> check_devices(const Context& context);
Check check_numa(const Context& context);
Check check_queues(const Context& context);
Check check_cores(const Context& context);
Check check_irqbalance(const Context& context);
Check check_memlock(const Context& context);
Check check_rdma_device(const Context& context);
Check check_rdma_gid(const Context& context);

// Helpers the checks share.
// ms.workers CPUs to suggest for ms.cpus: of the NIC's node (all online CPUs when unknown),
// isolated ones first, then from the highest down (CPU 0 carries most of the kernel's own work).
std::string suggested_cpus(const Context& context);
// The RDMA device the transport would open: rdma.device, or the first with an active port; ""
// when there is none.
std::string chosen_rdma_device(const config::Config& config, const HostFiles& files);

struct Report {
  std::string transport;  // whose checks ran: "dpdk" or "rdma"
  std::string ms_type;    // the configuration's ms.type (posix gets the dpdk checks: bypass-pmd's own)
  std::string root;       // the host root read
  std::vector<Check> checks;
  bool can_run() const;   // no check failed
};

Report run(const config::Config& config, const HostFiles& files);
std::string format_table(const Report& report);
std::string format_json(const Report& report);

// `bypass-pmd doctor [--json] [--root DIR]`: prints the report; 0 when the configuration can run,
// 1 when not.
int run_command(const config::Config& config, const std::string& root, bool json);

}  // namespace bypass::tools::doctor
