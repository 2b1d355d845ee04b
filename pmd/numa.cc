#include "pmd/numa.h"

#include <algorithm>
#include <cstdio>

#include "config/config.h"

namespace bypass::pmd {

namespace {

std::vector<int> parse_cpus_or_empty(const std::optional<std::string>& text) {
  if (!text || text->empty()) return {};
  try {
    return config::parse_cpu_list(*text);
  } catch (const std::exception&) {
    return {};
  }
}

uint64_t number_or_zero(const std::optional<std::string>& text) {
  if (!text) return 0;
  unsigned long long value = 0;
  return std::sscanf(text->c_str(), "%llu", &value) == 1 ? value : 0;
}

}  // namespace

uint64_t NumaNode::free_hugepage_bytes() const {
  uint64_t bytes = 0;
  for (const HugepagePool& pool : hugepages) bytes += pool.free * pool.page_bytes;
  return bytes;
}

NumaTopology NumaTopology::read(const HostFiles& files) {
  NumaTopology topology;
  const std::string base = "/sys/devices/system/node";
  for (const std::string& name : files.list(base).value_or(std::vector<std::string>{})) {
    int id = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "node%d%c", &id, &tail) != 1 || id < 0) continue;
    NumaNode node;
    node.id = id;
    node.cpus = parse_cpus_or_empty(files.first_line(base + "/" + name + "/cpulist"));
    const std::string huge = base + "/" + name + "/hugepages";
    for (const std::string& size : files.list(huge).value_or(std::vector<std::string>{})) {
      unsigned long long kib = 0;
      if (std::sscanf(size.c_str(), "hugepages-%llukB", &kib) != 1) continue;
      HugepagePool pool;
      pool.page_bytes = uint64_t{kib} * 1024;
      pool.total = number_or_zero(files.first_line(huge + "/" + size + "/nr_hugepages"));
      pool.free = number_or_zero(files.first_line(huge + "/" + size + "/free_hugepages"));
      node.hugepages.push_back(pool);
    }
    std::sort(node.hugepages.begin(), node.hugepages.end(),
              [](const HugepagePool& a, const HugepagePool& b) { return a.page_bytes < b.page_bytes; });
    topology.nodes.push_back(std::move(node));
  }
  std::sort(topology.nodes.begin(), topology.nodes.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return topology;
}

const NumaNode* NumaTopology::node(int id) const {
  for (const NumaNode& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

int NumaTopology::node_of_cpu(int cpu) const {
  for (const NumaNode& n : nodes)
    if (std::binary_search(n.cpus.begin(), n.cpus.end(), cpu)) return n.id;
  return -1;
}

std::string canonical_pci_address(const std::string& address) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  if (std::sscanf(address.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4) {
    domain = 0;  // the short form: bus:device.function
    if (std::sscanf(address.c_str(), "%x:%x.%x%c", &bus, &device, &function, &tail) != 3) return address;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return text;
}

int pci_numa_node(const HostFiles& files, const std::string& address) {
  const auto text = files.first_line("/sys/bus/pci/devices/" + canonical_pci_address(address) + "/numa_node");
  int node = -1;
  if (!text || std::sscanf(text->c_str(), "%d", &node) != 1) return -1;
  return node;
}

int common_numa_node(const std::map<std::string, int>& device_nodes, const std::vector<std::string>& devices) {
  int common = -1;
  for (const std::string& device : devices) {
    const auto it = device_nodes.find(canonical_pci_address(device));
    const int node = it == device_nodes.end() ? -1 : it->second;
    if (node < 0 || (common >= 0 && node != common)) return -1;
    common = node;
  }
  return common;
}

WorkerPlacement place_workers(const NumaTopology& topology, int port_node, const std::vector<int>& pinned_cpus,
                              const std::string& port_label) {
  WorkerPlacement placement;
  const NumaNode* home = topology.node(port_node);
  if (!topology.multi_node() || home == nullptr || home->cpus.empty()) return placement;
  if (pinned_cpus.empty()) {
    placement.affinity = home->cpus;
    return placement;
  }
  std::vector<int> away;
  for (int cpu : pinned_cpus)
    if (topology.node_of_cpu(cpu) != port_node) away.push_back(cpu);
  if (away.empty()) return placement;
  std::vector<int> away_nodes;
  for (int cpu : away) {
    const int node = topology.node_of_cpu(cpu);
    if (std::find(away_nodes.begin(), away_nodes.end(), node) == away_nodes.end()) away_nodes.push_back(node);
  }
  std::string nodes_text;
  for (int node : away_nodes)
    nodes_text += (nodes_text.empty() ? "" : ", ") + (node < 0 ? std::string("no node") : std::to_string(node));
  placement.warning = "ms.cpus: CPU" + std::string(away.size() > 1 ? "s " : " ") + cpu_list_text(away) +
                      (away.size() > 1 ? " are" : " is") + " on NUMA node " + nodes_text + ", but " + port_label +
                      " is on node " + std::to_string(port_node) +
                      ": every packet crosses the interconnect; use CPUs of node " + std::to_string(port_node) + " (" +
                      cpu_list_text(home->cpus) + ")";
  return placement;
}

std::string hugepage_reserve_command(const NumaNode* node, uint64_t bytes) {
  uint64_t in_use = 0;
  if (node)
    for (const HugepagePool& pool : node->hugepages) in_use += (pool.total - std::min(pool.free, pool.total)) * pool.page_bytes;
  const uint64_t mebibytes = (in_use + bytes + (1u << 20) - 1) >> 20;
  // --reserve sets the node's total (nr_hugepages), so pages other processes hold count in.
  return "dpdk-hugepages.py" + (node ? " --node " + std::to_string(node->id) : std::string()) + " --reserve " +
         std::to_string(mebibytes) + "M";
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  return cpus.empty() ? "none" : config::format_cpu_list(cpus);
}

}  // namespace bypass::pmd
