// The doctor's DPDK checks: hugepages per NUMA node, the hugetlbfs mount, the EAL plan, IOMMU and
// vfio-pci, each NIC's driver, the NIC's NUMA node against ms.cpus, queues against workers.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "pmd/error.h"
#include "pmd/numa.h"
#include "tools/bypass-pmd/doctor.h"

namespace bypass::tools::doctor {

namespace {

// Drivers DPDK drives a PCI NIC through. mlx5_core is the bifurcated one: the kernel keeps the
// netdev and DPDK's mlx5 PMD reaches the same device through verbs.
bool is_user_space_driver(const std::string& driver) {
  return driver == "vfio-pci" || driver == "uio_pci_generic" || driver == "igb_uio";
}
bool is_bifurcated_driver(const std::string& driver) { return driver == "mlx5_core"; }

std::string device_dir(const std::string& address) { return "/sys/bus/pci/devices/" + address; }

std::string netdev_of(const Context& context, const std::string& address) {
  const auto names = context.files.list(device_dir(address) + "/net");
  return names && !names->empty() ? names->front() : "";
}

std::string megabytes(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

std::string page_size_text(uint64_t bytes) {
  return bytes >= (uint64_t{1} << 30) ? std::to_string(bytes >> 30) + " GiB" : std::to_string(bytes >> 20) + " MiB";
}

std::string pools_text(const std::vector<pmd::HugepagePool>& pools) {
  std::string out;
  for (const pmd::HugepagePool& pool : pools) {
    if (pool.total == 0) continue;
    out += (out.empty() ? "" : " + ") + std::to_string(pool.total) + " x " + page_size_text(pool.page_bytes) + " (" +
           std::to_string(pool.free) + " free)";
  }
  return out.empty() ? "none" : out;
}

// Hugepages a NIC needs: its DMA goes to IOVA-contiguous memory, which --no-huge does not give.
bool hugepages_required(const Context& context) {
  return context.config.get_string("dpdk.no_huge") == "no" || !context.pci_devices.empty() || context.probe_all_pci;
}

Status shortfall_status(const Context& context) { return hugepages_required(context) ? Status::Fail : Status::Warn; }

std::string shortfall_consequence(const Context& context) {
  if (context.config.get_string("dpdk.no_huge") == "no") return "dpdk.no_huge=no refuses to start";
  if (hugepages_required(context)) return "a NIC needs hugepage memory for DMA";
  return "the EAL falls back to --no-huge (plain pages, slower)";
}

}  // namespace

Check check_hugepages(const Context& context) {
  Check check{"hugepages", Status::Ok, "", ""};
  const uint64_t memory = context.config.get_size("dpdk.memory");
  if (context.config.get_string("dpdk.no_huge") == "yes") {
    check.found = "not used (dpdk.no_huge=yes)";
    if (!context.pci_devices.empty()) {
      check.status = Status::Warn;
      check.found += ", yet a NIC DMAs into that memory: reserve hugepages, then set dpdk.no_huge=auto";
      check.fix = pmd::hugepage_reserve_command(context.host.numa.node(context.port_node), memory);
    }
    return check;
  }
  const pmd::NumaTopology& numa = context.host.numa;
  std::string per_node;
  for (const pmd::NumaNode& node : numa.nodes)
    per_node += (per_node.empty() ? "" : "; ") + std::string("node ") + std::to_string(node.id) + ": " +
                pools_text(node.hugepages) + (node.id == context.port_node ? " (the NIC's)" : "");
  if (per_node.empty()) per_node = megabytes(context.host.free_hugepage_bytes) + " free";
  const pmd::NumaNode* home = numa.node(context.port_node);
  const uint64_t available = home ? home->free_hugepage_bytes() : context.host.free_hugepage_bytes;
  check.found = per_node + "; dpdk.memory needs " + megabytes(memory) +
                (home ? " on node " + std::to_string(home->id) : std::string());
  if (available >= memory) return check;
  const bool elsewhere = home && context.host.free_hugepage_bytes >= memory;
  check.status = elsewhere ? Status::Warn : shortfall_status(context);
  check.found += elsewhere ? ": the EAL would take it from other nodes, across the interconnect"
                           : ": not enough free, " + shortfall_consequence(context);
  // Without NUMA nodes in sysfs the reservation is host-wide.
  check.fix = pmd::hugepage_reserve_command(home ? home : (numa.nodes.size() == 1 ? &numa.nodes[0] : nullptr), memory);
  return check;
}

Check check_hugetlbfs(const Context& context) {
  Check check{"hugetlbfs", Status::Ok, "", ""};
  const std::vector<std::string>& mounts = context.host.hugetlbfs_mounts;
  const std::string& huge_dir = context.config.get_string("dpdk.huge_dir");
  if (context.config.get_string("dpdk.no_huge") == "yes") {
    check.found = "not needed (dpdk.no_huge=yes)";
    return check;
  }
  std::string listed;
  for (const std::string& m : mounts) listed += (listed.empty() ? "" : ", ") + m;
  // As plan_eal compares them: "/dev/hugepages/" names the mount "/dev/hugepages".
  const std::string wanted = std::filesystem::path(huge_dir).lexically_normal().string();
  const bool mounted = std::any_of(mounts.begin(), mounts.end(), [&](const std::string& m) { return m == wanted || m + "/" == wanted; });
  if (!huge_dir.empty() && !mounted) {
    check.status = Status::Fail;
    check.found = "dpdk.huge_dir " + huge_dir + " is not a hugetlbfs mount (mounted: " +
                  (listed.empty() ? "none" : listed) + ")";
    check.fix = "mkdir -p " + huge_dir + " && mount -t hugetlbfs nodev " + huge_dir;
    return check;
  }
  if (mounts.empty()) {
    check.status = shortfall_status(context);
    check.found = "no hugetlbfs mounted: " + shortfall_consequence(context);
    check.fix = "mount -t hugetlbfs nodev /dev/hugepages";
    return check;
  }
  check.found = "mounted at " + listed;
  return check;
}

Check check_eal_plan(const Context& context) {
  Check check{"eal", Status::Ok, "", ""};
  try {
    const pmd::EalPlan plan = pmd::plan_eal(context.config, context.host, "bypass");
    check.found = pmd::join_args(std::vector<std::string>(plan.args.begin() + 1, plan.args.end()));
    if (!plan.no_huge_reason.empty()) {
      check.status = Status::Warn;
      check.found = "--no-huge (" + plan.no_huge_reason + "): " + check.found;
    }
    if (!plan.numa_warning.empty()) {
      check.status = Status::Warn;
      check.found = plan.numa_warning + ": " + check.found;
    }
  } catch (const pmd::PmdError& e) {
    check.status = Status::Fail;
    check.found = e.what();
    check.fix = "change the option it names (bypass-pmd --help-options lists them)";
  }
  return check;
}

Check check_iommu(const Context& context) {
  Check check{"iommu", Status::Ok, "", ""};
  const HostFiles& files = context.files;
  bool needs_vfio = context.probe_all_pci;
  for (const std::string& address : context.pci_devices)
    needs_vfio = needs_vfio || !is_bifurcated_driver(files.link_name(device_dir(address) + "/driver").value_or(""));
  if (!needs_vfio) {
    check.found = context.pci_devices.empty() ? "not needed (virtual devices only)"
                                              : "not needed (bifurcated mlx5 ports: the kernel driver stays)";
    return check;
  }
  const size_t units = files.list("/sys/class/iommu").value_or(std::vector<std::string>{}).size();
  const size_t groups = files.list("/sys/kernel/iommu_groups").value_or(std::vector<std::string>{}).size();
  const bool vfio_pci = files.exists("/sys/bus/pci/drivers/vfio-pci");
  const bool no_iommu_mode = files.first_line("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode").value_or("") == "Y";
  const bool intel = files.read("/proc/cpuinfo").value_or("").find("GenuineIntel") != std::string::npos;
  const std::string boot_fix = std::string("sed -i 's/^GRUB_CMDLINE_LINUX=\"/&") +
                               (intel ? "intel_iommu=on " : "amd_iommu=on ") +
                               "iommu=pt /' /etc/default/grub && update-grub && reboot";
  const std::string state = units + groups > 0 ? "IOMMU on (" + std::to_string(groups) + (groups == 1 ? " group)" : " groups)") : "IOMMU off";
  if (units + groups == 0 && !no_iommu_mode) {
    check.status = Status::Fail;
    check.found = state + ": vfio-pci cannot map DMA for the NIC";
    check.fix = boot_fix;
  } else if (!vfio_pci) {
    check.status = Status::Fail;
    check.found = state + ", vfio-pci not loaded";
    check.fix = "modprobe vfio-pci";
  } else if (units + groups == 0) {
    check.status = Status::Warn;
    check.found = state + ", vfio in unsafe no-IOMMU mode: the NIC can DMA anywhere in memory";
    check.fix = boot_fix;
  } else {
    check.found = state + ", vfio-pci loaded";
  }
  return check;
}

std::vector<Check> check_devices(const Context& context) {
  const HostFiles& files = context.files;
  std::vector<Check> checks;
  if (context.pci_devices.empty()) {
    Check check{"devices", Status::Ok, "", ""};
    if (context.probe_all_pci) {
      check.status = Status::Fail;
      check.found = "neither dpdk.allow nor dpdk.vdev is set and no NIC is bound to a DPDK driver";
      check.fix = "dpdk-devbind.py --status-dev net, then dpdk-devbind.py -b vfio-pci ADDRESS";
    } else {
      std::string vdevs;
      for (const std::string& vdev : context.config.get_list("dpdk.vdev"))
        vdevs += (vdevs.empty() ? "" : ", ") + vdev.substr(0, vdev.find(','));
      check.found = "virtual devices only (" + vdevs + "): no PCI binding needed";
    }
    checks.push_back(check);
    return checks;
  }
  for (const std::string& address : context.pci_devices) {
    Check check{"device " + address, Status::Ok, "", ""};
    const std::string dir = device_dir(address);
    if (!files.exists(dir)) {
      check.status = Status::Fail;
      check.found = "no PCI device " + address + " (dpdk.allow)";
      check.fix = "dpdk-devbind.py --status-dev net";
      checks.push_back(check);
      continue;
    }
    const std::string driver = files.link_name(dir + "/driver").value_or("");
    const std::string netdev = netdev_of(context, address);
    const std::string bind = "dpdk-devbind.py -b vfio-pci " + address;
    if (driver == "vfio-pci") {
      const auto group = files.link_name(dir + "/iommu_group");
      check.found = "vfio-pci" + (group ? " (IOMMU group " + *group + ")" : std::string());
    } else if (is_bifurcated_driver(driver)) {
      // DPDK's mlx5 PMD opens the device through verbs: mlx5_ib must have made its RDMA device.
      const auto rdma = files.list(dir + "/infiniband");
      if (!rdma || rdma->empty()) {
        check.status = Status::Fail;
        check.found = "mlx5_core without an RDMA device: DPDK's mlx5 driver reaches the port through verbs";
        check.fix = "modprobe mlx5_ib";
      } else {
        // Sharing the port: without isolation the PMD receives every packet, the kernel none.
        const std::string shown = netdev.empty() ? "its netdev" : "netdev " + netdev;
        const bool isolation_known = context.config.registry().find("dpdk.flow_isolate") != nullptr;
        if (isolation_known && !context.config.get_bool("dpdk.flow_isolate")) {
          check.status = Status::Warn;
          check.found = "mlx5_core, bifurcated (" + rdma->front() + "): without dpdk.flow_isolate DPDK receives every "
                        "packet of the port and the kernel's " + shown + " none (its ssh, its monitoring)";
          check.fix = "--set dpdk.flow_isolate=true";
        } else {
          check.found = "mlx5_core, bifurcated (" + rdma->front() + "): the kernel keeps " + shown +
                        (isolation_known ? " and the traffic dpdk.flow_isolate leaves it"
                                         : "; share it with flow isolation (docs/deployment.md)");
        }
      }
    } else if (is_user_space_driver(driver)) {
      check.status = Status::Warn;
      check.found = driver + ": works, without the IOMMU's protection vfio-pci gives";
      check.fix = bind;
    } else if (driver.empty()) {
      check.status = Status::Fail;
      check.found = "no driver bound";
      check.fix = "modprobe vfio-pci && " + bind;
    } else {
      check.status = Status::Fail;
      check.found = "bound to the kernel's " + driver + (netdev.empty() ? "" : " (netdev " + netdev + ")") +
                    ": DPDK cannot drive it";
      check.fix = (netdev.empty() ? "" : "ip link set " + netdev + " down && ") + bind;
    }
    checks.push_back(check);
  }
  return checks;
}

Check check_numa(const Context& context) {
  Check check{"numa", Status::Ok, "", ""};
  const pmd::NumaTopology& numa = context.host.numa;
  if (!numa.multi_node()) {
    check.found = numa.nodes.empty() ? "no NUMA nodes in sysfs" : "one NUMA node";
    return check;
  }
  std::string nodes;
  for (const std::string& address : context.pci_devices) {
    const auto it = context.host.pci_numa_nodes.find(address);
    const int node = it == context.host.pci_numa_nodes.end() ? -1 : it->second;
    nodes += (nodes.empty() ? "" : ", ") + address + " on " + (node < 0 ? "no node" : "node " + std::to_string(node));
  }
  if (context.pci_devices.empty()) {
    check.found = std::to_string(numa.nodes.size()) + " NUMA nodes, no NIC to place workers by";
    return check;
  }
  const pmd::NumaNode* home = numa.node(context.port_node);
  if (!home) {
    check.status = Status::Warn;
    check.found = nodes + ": workers cannot follow the NIC's node (the firmware reports none, or the NICs differ)";
    return check;
  }
  const std::vector<int> cpus = context.config.get_cpus("ms.cpus");
  const pmd::WorkerPlacement placement = pmd::place_workers(numa, context.port_node, cpus, "the NIC");
  if (!placement.warning.empty()) {
    check.status = Status::Warn;
    check.found = nodes + "; " + placement.warning;
    check.fix = "--set ms.cpus=" + suggested_cpus(context);
  } else if (cpus.empty()) {
    check.found = nodes + "; unpinned workers kept to node " + std::to_string(home->id) + "'s CPUs " +
                  pmd::cpu_list_text(home->cpus);
  } else {
    check.found = nodes + "; ms.cpus " + pmd::cpu_list_text(cpus) + " on the same node";
  }
  return check;
}

Check check_queues(const Context& context) {
  Check check{"queues", Status::Ok, "", ""};
  const int64_t workers = context.config.get_int("ms.workers");
  const int64_t queues = context.config.get_int("dpdk.queues");
  const int64_t pairs = queues == 0 ? workers : std::min(queues, workers);
  check.found = std::to_string(workers) + " worker" + (workers > 1 ? "s, " : ", ") + std::to_string(pairs) +
                " RX/TX queue pair" + (pairs > 1 ? "s" : "") + " asked (the device's maximum: bypass-pmd ports)";
  if (workers > 1 && queues != 0 && queues < workers) {
    check.status = Status::Warn;
    check.found += "; dpdk.queues=" + std::to_string(queues) + " < ms.workers: " + std::to_string(workers - queues) +
                   " worker(s) receive through the software redirect ring";
    check.fix = "--set dpdk.queues=0";
  } else if (workers > 1 && !context.config.get_bool("dpdk.rss")) {
    check.status = Status::Warn;
    check.found += "; dpdk.rss=false: packets reach their worker through the software redirect ring";
    check.fix = "--set dpdk.rss=true";
  }
  const pmd::NumaNode* home = context.host.numa.node(context.port_node);
  const size_t cpus = home ? home->cpus.size() : context.host.online_cpus.size();
  if (cpus > 0 && static_cast<size_t>(workers) > cpus) {
    check.status = Status::Warn;
    check.found += "; more workers than the " + std::to_string(cpus) + " CPUs" +
                   (home ? " of the NIC's node" : std::string()) + ": polling workers share cores";
    check.fix = "--set ms.workers=" + std::to_string(cpus);
  }
  return check;
}

}  // namespace bypass::tools::doctor
