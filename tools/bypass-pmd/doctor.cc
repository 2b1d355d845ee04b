#include "tools/bypass-pmd/doctor.h"

#include <algorithm>
#include <cstdio>

#include "pmd/numa.h"
#include "tools/bypass-pmd/json.h"

namespace bypass::tools::doctor {

namespace {

// PCI network controllers (class 0x02xxxx) bound to a driver DPDK can take: what the EAL would
// probe with neither dpdk.allow nor dpdk.vdev.
std::vector<std::string> nics_for_dpdk(const HostFiles& files) {
  std::vector<std::string> out;
  for (const std::string& address : files.list("/sys/bus/pci/devices").value_or(std::vector<std::string>{})) {
    const std::string dir = "/sys/bus/pci/devices/" + address;
    if (files.first_line(dir + "/class").value_or("").rfind("0x02", 0) != 0) continue;
    const std::string driver = files.link_name(dir + "/driver").value_or("");
    if (driver == "vfio-pci" || driver == "uio_pci_generic" || driver == "igb_uio" || driver == "mlx5_core")
      out.push_back(address);
  }
  return out;
}

}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::Ok: return "OK";
    case Status::Warn: return "WARN";
    case Status::Fail: return "FAIL";
  }
  return "?";
}

Context::Context(const config::Config& config_in, const HostFiles& files_in) : config(config_in), files(files_in) {
  rdma = config.get_string("ms.type") == "rdma";
  if (rdma) {
    // The NIC under the RDMA device, when it is a PCI function (soft-RoCE's is not).
    const std::string device = chosen_rdma_device(config, files);
    const auto parent = device.empty() ? std::nullopt : files.link_name("/sys/class/infiniband/" + device + "/device");
    if (parent && files.exists("/sys/bus/pci/devices/" + *parent)) pci_devices.push_back(*parent);
  } else {
    const auto& allow = config.get_list("dpdk.allow");
    probe_all_pci = allow.empty() && config.get_list("dpdk.vdev").empty();
    for (const std::string& address : allow) pci_devices.push_back(pmd::canonical_pci_address(address));
    if (probe_all_pci) pci_devices = nics_for_dpdk(files);
  }
  host = pmd::HostFacts::probe(pci_devices, files);
  if (host.numa.multi_node()) port_node = pmd::common_numa_node(host.pci_numa_nodes, pci_devices);
}

bool Report::can_run() const {
  return std::none_of(checks.begin(), checks.end(), [](const Check& c) { return c.status == Status::Fail; });
}

Report run(const config::Config& config, const HostFiles& files) {
  Report report;
  report.root = files.root().empty() ? "/" : files.root();
  report.ms_type = config.get_string("ms.type");
  report.transport = report.ms_type == "rdma" ? "rdma" : "dpdk";
  const Context context(config, files);
  auto& out = report.checks;
  // Everything else reads sysfs and procfs: without them one line says so, not a dozen.
  out.push_back(check_sysfs(context));
  if (out.back().status == Status::Fail) return report;
  if (!context.rdma) {
    out.push_back(check_hugepages(context));
    out.push_back(check_hugetlbfs(context));
    out.push_back(check_iommu(context));
    for (Check& check : check_devices(context)) out.push_back(std::move(check));
  }
  out.push_back(check_numa(context));
  if (!context.rdma) out.push_back(check_queues(context));
  out.push_back(check_cores(context));
  out.push_back(check_irqbalance(context));
  if (context.rdma) {
    out.push_back(check_memlock(context));
    out.push_back(check_rdma_device(context));
    if (!chosen_rdma_device(config, files).empty()) out.push_back(check_rdma_gid(context));
  } else {
    out.push_back(check_eal_plan(context));
  }
  return report;
}

std::string format_table(const Report& report) {
  size_t width = 5;  // "CHECK"
  for (const Check& c : report.checks) width = std::max(width, c.name.size());
  std::string out = "bypass-pmd doctor: the " + report.transport + " transport's checks (ms.type=" + report.ms_type +
                    "), host root " + report.root + "\n";
  auto row = [&](const std::string& name, const std::string& status, const std::string& rest) {
    out += name + std::string(width - name.size() + 2, ' ') + status + std::string(8 - status.size(), ' ') + rest + "\n";
  };
  row("CHECK", "STATUS", "FOUND, and the command that fixes it");
  size_t warnings = 0, failures = 0;
  for (const Check& c : report.checks) {
    row(c.name, status_name(c.status), c.found + (c.fix.empty() ? "" : "  fix: " + c.fix));
    warnings += c.status == Status::Warn;
    failures += c.status == Status::Fail;
  }
  const std::string warned = std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings");
  out += failures == 0 ? "can run (" + warned + ")\n"
                       : "cannot run: " + std::to_string(failures) + " failed (" + warned + ")\n";
  return out;
}

std::string format_json(const Report& report) {
  Json j;
  j.begin_object().field("transport", report.transport).field("ms_type", report.ms_type).field("root", report.root);
  j.field("can_run", report.can_run());
  j.key("checks").begin_array();
  for (const Check& c : report.checks)
    j.begin_object().field("check", c.name).field("status", status_name(c.status)).field("found", c.found)
        .field("fix", c.fix).end_object();
  j.end_array().end_object();
  return j.str();
}

int run_command(const config::Config& config, const std::string& root, bool json) {
  const Report report = run(config, HostFiles(root));
  const std::string text = json ? format_json(report) + "\n" : format_table(report);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  return report.can_run() ? 0 : 1;
}

}  // namespace bypass::tools::doctor
