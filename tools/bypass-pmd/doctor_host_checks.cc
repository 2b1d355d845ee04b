// The doctor's checks of the host itself (readable sysfs, worker cores, irqbalance) and of the RDMA
// transport (memlock, the device and its port, the GID table).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "pmd/numa.h"
#include "stack/rdma/gid_selection.h"
#include "tools/bypass-pmd/doctor.h"

namespace bypass::tools::doctor {

namespace {

std::vector<int> cpu_file(const HostFiles& files, const std::string& path) {
  const auto text = files.first_line(path);
  if (!text || text->empty() || *text == "(null)") return {};
  try {
    return config::parse_cpu_list(*text);
  } catch (const std::exception&) {
    return {};
  }
}

bool contains(const std::vector<int>& set, int cpu) { return std::find(set.begin(), set.end(), cpu) != set.end(); }

std::vector<int> missing_from(const std::vector<int>& cpus, const std::vector<int>& set) {
  std::vector<int> out;
  for (int cpu : cpus)
    if (!contains(set, cpu)) out.push_back(cpu);
  return out;
}

std::string rdma_port_dir(const std::string& device, int64_t port) {
  return "/sys/class/infiniband/" + device + "/ports/" + std::to_string(port);
}

bool port_active(const HostFiles& files, const std::string& device, int64_t port) {
  return files.first_line(rdma_port_dir(device, port) + "/state").value_or("").find("ACTIVE") != std::string::npos;
}

// The netdev under an RDMA port: its GIDs name it (RoCE), or the PCI device lists it.
std::string rdma_netdev(const HostFiles& files, const std::string& device, int64_t port) {
  const std::string ndevs = rdma_port_dir(device, port) + "/gid_attrs/ndevs";
  for (const std::string& index : files.list(ndevs).value_or(std::vector<std::string>{}))
    if (const auto name = files.first_line(ndevs + "/" + index); name && !name->empty()) return *name;
  const auto net = files.list("/sys/class/infiniband/" + device + "/device/net");
  return net && !net->empty() ? net->front() : "";
}

std::string list_text(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string suggested_cpus(const Context& context) {
  const pmd::NumaNode* home = context.host.numa.node(context.port_node);
  std::vector<int> candidates;
  for (int cpu : home ? home->cpus : context.host.online_cpus)
    if (contains(context.host.online_cpus, cpu)) candidates.push_back(cpu);
  const std::vector<int> isolated = cpu_file(context.files, "/sys/devices/system/cpu/isolated");
  std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    const bool ia = contains(isolated, a), ib = contains(isolated, b);
    return ia != ib ? ia : a > b;
  });
  const auto workers = static_cast<size_t>(context.config.get_int("ms.workers"));
  candidates.resize(std::min(candidates.size(), workers));
  std::sort(candidates.begin(), candidates.end());
  return candidates.empty() ? "CPUS" : config::format_cpu_list(candidates);
}

std::string chosen_rdma_device(const config::Config& config, const HostFiles& files) {
  const std::string& wanted = config.get_string("rdma.device");
  const auto devices = files.list("/sys/class/infiniband").value_or(std::vector<std::string>{});
  if (!wanted.empty()) return std::find(devices.begin(), devices.end(), wanted) != devices.end() ? wanted : "";
  for (const std::string& device : devices)
    if (port_active(files, device, config.get_int("rdma.port"))) return device;
  return "";
}

Check check_sysfs(const Context& context) {
  Check check{"sysfs", Status::Ok, "", ""};
  std::string unreadable;
  for (const char* path : {"/sys/devices/system/cpu/online", "/proc/mounts"}) {
    if (context.files.read(path)) continue;
    unreadable += (unreadable.empty() ? "" : "; ") + context.files.full_path(path) + ": " +
                  context.files.why_unreadable(path);
  }
  const std::string root = context.files.root().empty() ? "/" : context.files.root();
  if (unreadable.empty()) {
    check.found = "sysfs and procfs readable under " + root;
    return check;
  }
  check.status = Status::Fail;
  check.found = "cannot read the host: " + unreadable;
  check.fix = context.files.root().empty() ? "mount -t sysfs sysfs /sys && mount -t proc proc /proc"
                                           : "bypass-pmd doctor --root DIR, DIR holding a host's sys/ and proc/";
  return check;
}

Check check_cores(const Context& context) {
  Check check{"cores", Status::Ok, "", ""};
  const std::vector<int> cpus = context.config.get_cpus("ms.cpus");
  const std::string suggestion = "--set ms.cpus=" + suggested_cpus(context);
  if (cpus.empty()) {
    check.status = Status::Warn;
    check.found = "ms.cpus is empty: workers are not pinned, the scheduler moves them and their caches go cold";
    check.fix = suggestion;
    return check;
  }
  const std::string listed = pmd::cpu_list_text(cpus);
  if (const std::vector<int> offline = missing_from(cpus, context.host.online_cpus); !offline.empty()) {
    check.status = Status::Fail;
    check.found = "ms.cpus " + listed + ": CPU " + pmd::cpu_list_text(offline) + " not online (online: " +
                  pmd::cpu_list_text(context.host.online_cpus) + ")";
    check.fix = suggestion;
    return check;
  }
  const std::vector<int> isolated = cpu_file(context.files, "/sys/devices/system/cpu/isolated");
  const std::vector<int> nohz = cpu_file(context.files, "/sys/devices/system/cpu/nohz_full");
  const std::vector<int> shared = missing_from(cpus, isolated);
  const std::vector<int> ticking = missing_from(cpus, nohz);
  if (shared.empty()) {
    check.found = "ms.cpus " + listed + " isolated (isolcpus)" +
                  (ticking.empty() ? ", nohz_full" : "; not nohz_full: " + pmd::cpu_list_text(ticking) +
                                                         " still take the timer tick");
    return check;
  }
  check.status = Status::Warn;
  check.found = "ms.cpus " + listed + ": " + pmd::cpu_list_text(shared) +
                " not isolated (isolated: " + pmd::cpu_list_text(isolated) +
                "): other tasks and kernel threads share the workers' cores";
  check.fix = "sed -i 's/^GRUB_CMDLINE_LINUX=\"/&isolcpus=" + listed + " nohz_full=" + listed + " rcu_nocbs=" + listed +
              " /' /etc/default/grub && update-grub && reboot";
  return check;
}

Check check_irqbalance(const Context& context) {
  Check check{"irqbalance", Status::Ok, "", ""};
  bool running = false;
  for (const std::string& entry : context.files.list("/proc").value_or(std::vector<std::string>{})) {
    if (entry.empty() || !std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(c); })) continue;
    if (context.files.first_line("/proc/" + entry + "/comm").value_or("") == "irqbalance") {
      running = true;
      break;
    }
  }
  const std::vector<int> cpus = context.config.get_cpus("ms.cpus");
  if (!running) {
    check.found = "not running";
    return check;
  }
  if (cpus.empty()) {
    check.found = "running; workers unpinned (see cores)";
    return check;
  }
  // irqbalance leaves isolated and nohz_full CPUs alone, and those its configuration bans.
  std::vector<int> protected_cpus = cpu_file(context.files, "/sys/devices/system/cpu/isolated");
  for (int cpu : cpu_file(context.files, "/sys/devices/system/cpu/nohz_full")) protected_cpus.push_back(cpu);
  std::istringstream defaults(context.files.read("/etc/default/irqbalance").value_or(""));
  for (std::string line; std::getline(defaults, line);) {
    const std::string key = "IRQBALANCE_BANNED_CPULIST=";
    if (line.rfind(key, 0) != 0) continue;
    std::string value = line.substr(key.size());
    value.erase(std::remove(value.begin(), value.end(), '"'), value.end());
    try {
      for (int cpu : config::parse_cpu_list(value)) protected_cpus.push_back(cpu);
    } catch (const std::exception&) {
    }
  }
  const std::vector<int> exposed = missing_from(cpus, protected_cpus);
  if (exposed.empty()) {
    check.found = "running; it leaves ms.cpus " + pmd::cpu_list_text(cpus) + " alone (isolated or banned)";
    return check;
  }
  check.status = Status::Warn;
  check.found = "running: it may move NIC and other interrupts onto worker CPU " + pmd::cpu_list_text(exposed);
  check.fix = "echo 'IRQBALANCE_BANNED_CPULIST=" + pmd::cpu_list_text(cpus) +
              "' >> /etc/default/irqbalance && systemctl restart irqbalance";
  return check;
}

Check check_memlock(const Context& context) {
  Check check{"memlock", Status::Ok, "", ""};
  const config::Config& config = context.config;
  // Each worker registers a receive and a send pool of rdma.chunk_count chunks (rdma_worker.cc).
  const uint64_t needed = static_cast<uint64_t>(config.get_int("ms.workers")) * 2 *
                          static_cast<uint64_t>(config.get_int("rdma.chunk_count")) * config.get_size("rdma.chunk_size");
  const std::string needs = "rdma needs " + std::to_string(needed >> 20) + " MiB (ms.workers x 2 pools x " +
                            "rdma.chunk_count x rdma.chunk_size)";
  // CAP_IPC_LOCK (capability 14) lifts the limit.
  std::istringstream status(context.files.read("/proc/self/status").value_or(""));
  for (std::string line; std::getline(status, line);) {
    unsigned long long caps = 0;
    if (std::sscanf(line.c_str(), "CapEff: %llx", &caps) == 1 && ((caps >> 14) & 1)) {
      check.found = "CAP_IPC_LOCK: no limit applies; " + needs;
      return check;
    }
  }
  std::istringstream limits(context.files.read("/proc/self/limits").value_or(""));
  std::string soft;
  for (std::string line; std::getline(limits, line);) {
    if (line.rfind("Max locked memory", 0) != 0) continue;
    std::istringstream fields(line.substr(17));
    fields >> soft;
  }
  const std::string fix = "ulimit -l unlimited (a systemd unit: LimitMEMLOCK=infinity)";
  if (soft.empty()) {
    check.status = Status::Warn;
    check.found = "cannot read the locked-memory limit (/proc/self/limits); " + needs;
    check.fix = fix;
  } else if (soft == "unlimited") {
    check.found = "unlimited; " + needs;
  } else if (std::stoull(soft) < needed) {
    check.status = Status::Fail;
    check.found = std::to_string(std::stoull(soft) >> 10) + " KiB may be locked, " + needs;
    check.fix = fix;
  } else {
    check.found = std::to_string(std::stoull(soft) >> 20) + " MiB may be locked; " + needs;
  }
  return check;
}

Check check_rdma_device(const Context& context) {
  Check check{"rdma device", Status::Ok, "", ""};
  const HostFiles& files = context.files;
  const int64_t port = context.config.get_int("rdma.port");
  const auto devices = files.list("/sys/class/infiniband").value_or(std::vector<std::string>{});
  const std::string& wanted = context.config.get_string("rdma.device");
  if (devices.empty()) {
    check.status = Status::Fail;
    check.found = "no RDMA device (/sys/class/infiniband is empty)";
    check.fix = "modprobe mlx5_ib (soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE)";
    return check;
  }
  if (!wanted.empty() && std::find(devices.begin(), devices.end(), wanted) == devices.end()) {
    check.status = Status::Fail;
    check.found = "rdma.device " + wanted + " does not exist (have: " + list_text(devices) + ")";
    check.fix = "--set rdma.device=" + devices.front();
    return check;
  }
  const std::string device = wanted.empty() ? chosen_rdma_device(context.config, files) : wanted;
  if (device.empty() || !port_active(files, device, port)) {
    const std::string shown = device.empty() ? devices.front() : device;
    const std::string netdev = rdma_netdev(files, shown, port);
    check.status = Status::Fail;
    check.found = "port " + std::to_string(port) + " of " + (device.empty() ? list_text(devices) : device) +
                  " is not active (" + files.first_line(rdma_port_dir(shown, port) + "/state").value_or("missing") + ")";
    check.fix = "ip link set " + (netdev.empty() ? std::string("NETDEV") : netdev) + " up";
    return check;
  }
  const std::string dir = rdma_port_dir(device, port);
  const std::string link_layer = files.first_line(dir + "/link_layer").value_or("?");
  const std::string netdev = rdma_netdev(files, device, port);
  check.found = device + " port " + std::to_string(port) + " active, " + link_layer +
                (link_layer == "Ethernet" ? " (RoCE)" : "") + (netdev.empty() ? "" : ", netdev " + netdev);
  return check;
}

Check check_rdma_gid(const Context& context) {
  Check check{"rdma gid", Status::Ok, "", ""};
  const HostFiles& files = context.files;
  const std::string device = chosen_rdma_device(context.config, files);
  const int64_t port = context.config.get_int("rdma.port");
  const std::string& version = context.config.get_string("rdma.roce_version");
  const auto table = rdma::read_gid_table(files, device, static_cast<int>(port));
  const std::string netdev = rdma_netdev(files, device, port);
  const std::string address_fix = "ip addr add ADDRESS/PREFIX dev " + (netdev.empty() ? std::string("NETDEV") : netdev);
  if (!table) {
    check.status = Status::Fail;
    check.found = "cannot read the GID table of " + device + " port " + std::to_string(port) + " (" +
                  files.full_path(rdma_port_dir(device, port) + "/gids") + ")";
    check.fix = "--set rdma.gid_index=N (ibv_devinfo -v lists the table)";
    return check;
  }
  const bool ethernet = files.first_line(rdma_port_dir(device, port) + "/link_layer").value_or("") == "Ethernet";
  const std::optional<int64_t> index = context.config.get_int_or_auto("rdma.gid_index");
  if (!index) {
    const rdma::GidChoice choice = rdma::choose_gid(*table, ethernet, version);
    if (choice.index < 0) {
      check.status = Status::Fail;
      check.found = "rdma.gid_index auto: " + choice.error;
      check.fix = address_fix;
      return check;
    }
    const auto entry = std::find_if(table->begin(), table->end(), [&](const rdma::GidEntry& e) { return e.index == choice.index; });
    check.found = "rdma.gid_index auto: " + entry->describe();
    return check;
  }
  const auto entry = std::find_if(table->begin(), table->end(), [&](const rdma::GidEntry& e) { return e.index == *index; });
  if (entry == table->end()) {
    check.status = Status::Fail;
    check.found = "rdma.gid_index " + std::to_string(*index) + " is empty in " + device + "'s table";
    check.fix = "--set rdma.gid_index=auto";
  } else if (ethernet && !entry->type.empty() && !rdma::gid_type_matches(entry->type, version)) {
    check.status = Status::Fail;
    check.found = "rdma.gid_index " + entry->describe() + ", not RoCE " + version + " (rdma.roce_version)";
    check.fix = "--set rdma.gid_index=auto";
  } else {
    check.found = "rdma.gid_index " + entry->describe();
  }
  return check;
}

}  // namespace bypass::tools::doctor
