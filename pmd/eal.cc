// Interrupt instances (rte_intr_instance_alloc and its setters) are still experimental in DPDK
// 22.11, and an rte_intr_handle cannot be built otherwise: park_interrupt_thread() needs one.
#define ALLOW_EXPERIMENTAL_API

#include "pmd/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_interrupts.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "pmd/error.h"

namespace bypass::pmd {

namespace {

uint64_t mebibytes_rounded_up(uint64_t bytes) { return (bytes + (1u << 20) - 1) >> 20; }

}  // namespace

std::optional<std::string> vdev_param(const std::string& vdev, const std::string& key) {
  std::stringstream in(vdev);
  std::string part;
  std::getline(in, part, ',');  // device name
  while (std::getline(in, part, ','))
    if (part.compare(0, key.size() + 1, key + "=") == 0) return part.substr(key.size() + 1);
  return std::nullopt;
}

namespace {

// Drivers Debian's DPDK ships as virtual devices; anything else is a typo or a missing plugin,
// which EAL itself would report only as "Bus (vdev) probe failed".
const char* const kVirtualDrivers[] = {"net_tap", "net_memif", "net_af_packet", "net_af_xdp", "net_ring",
                                       "net_null", "net_pcap", "net_vhost", "net_virtio_user", "net_bonding",
                                       "net_failsafe", "net_kni", "crypto_", "event_", "baseband_", "dma_"};

void check_vdev(const std::string& vdev) {
  const std::string name = vdev.substr(0, vdev.find(','));
  const bool known = std::any_of(std::begin(kVirtualDrivers), std::end(kVirtualDrivers), [&](const char* d) {
    const std::string driver(d);
    return name.compare(0, driver.size(), driver) == 0;
  });
  if (name.empty() || !known)
    throw PmdError("dpdk.vdev: unknown virtual device '" + name +
                   "' (expected a driver name plus index such as net_tap0, net_memif0, net_af_packet0, net_ring0)");
  if (name.compare(0, 9, "net_memif") == 0) {
    const auto role = vdev_param(vdev, "role");
    const auto abstract = vdev_param(vdev, "socket-abstract");
    const auto socket = vdev_param(vdev, "socket");
    // A client on a filesystem socket needs the server's socket file now; say so before EAL waits.
    if (role && *role == "client" && abstract && *abstract == "no" && socket && !std::filesystem::exists(*socket))
      throw PmdError("dpdk.vdev: memif socket '" + *socket + "' of '" + name +
                     "' does not exist (start the role=server process first)");
  }
}

// A virtio-user port connects to its vhost-user backend's socket during EAL probe and fails at
// once when the socket is not there yet. Two processes started together (bench run, a test) race
// for it, so the virtio-user side waits for the socket, up to dpdk.link_wait, before EAL starts.
void wait_for_vhost_sockets(const std::vector<std::string>& vdevs, std::chrono::nanoseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (const std::string& vdev : vdevs) {
    if (vdev.compare(0, 15, "net_virtio_user") != 0) continue;
    const auto path = vdev_param(vdev, "path");
    const auto server = vdev_param(vdev, "server");
    if (!path || (server && *server == "1") || path->compare(0, 5, "/dev/") == 0) continue;  // vhost-kernel
    while (!std::filesystem::exists(*path)) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw PmdError("dpdk.vdev: vhost-user socket '" + *path + "' of '" + vdev.substr(0, vdev.find(',')) +
                       "' did not appear within dpdk.link_wait (start the net_vhost process first)");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

// A net_vhost backend that finds a socket file left by a process that died fails its configure
// with "Operation not permitted". Nobody answering on it means it is stale: remove it; somebody
// answering means another backend owns it, which deserves a clear error rather than a fight.
void clear_stale_vhost_sockets(const std::vector<std::string>& vdevs) {
  for (const std::string& vdev : vdevs) {
    if (vdev.compare(0, 9, "net_vhost") != 0) continue;
    const auto path = vdev_param(vdev, "iface");
    const auto client = vdev_param(vdev, "client");
    if (!path || (client && *client == "1") || !std::filesystem::is_socket(*path)) continue;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path->size() >= sizeof address.sun_path) continue;  // EAL will say the path is too long
    std::memcpy(address.sun_path, path->c_str(), path->size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool answered = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    if (answered)
      throw PmdError("dpdk.vdev: vhost-user socket '" + *path + "' of '" + vdev.substr(0, vdev.find(',')) +
                     "' is served by another process (choose another iface path)");
    std::error_code ignored;
    std::filesystem::remove(*path, ignored);
    BYPASS_LOG(Info, "pmd", "removed stale vhost-user socket %s", path->c_str());
  }
}

}  // namespace

HostFacts HostFacts::probe(const std::vector<std::string>& pci_devices, const HostFiles& files) {
  HostFacts facts;
  try {
    facts.online_cpus = config::parse_cpu_list(files.first_line("/sys/devices/system/cpu/online").value_or(""));
  } catch (const std::exception&) {
    facts.online_cpus.clear();
  }
  if (facts.online_cpus.empty() && files.root().empty()) {  // no sysfs on the real host: ask libc
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < n; ++i) facts.online_cpus.push_back(static_cast<int>(i));
  }
  const std::string huge = "/sys/kernel/mm/hugepages";
  for (const std::string& name : files.list(huge).value_or(std::vector<std::string>{})) {
    unsigned long long kib = 0, free_pages = 0;
    if (std::sscanf(name.c_str(), "hugepages-%llukB", &kib) != 1) continue;
    const auto free_text = files.first_line(huge + "/" + name + "/free_hugepages");
    if (!free_text || std::sscanf(free_text->c_str(), "%llu", &free_pages) != 1) continue;
    facts.free_hugepage_bytes += uint64_t{free_pages} * kib * 1024;
  }
  std::istringstream mounts(files.read("/proc/mounts").value_or(""));
  std::string device, mount_point, fs_type, rest;
  while (mounts >> device >> mount_point >> fs_type && std::getline(mounts, rest))
    if (fs_type == "hugetlbfs") facts.hugetlbfs_mounts.push_back(mount_point);
  // Shared builds load every librte_<driver>.so of this directory at rte_eal_init (this binary's
  // DPDK, on this machine, whatever root the rest is read from).
  const std::string plugin_dir = RTE_EAL_PMD_PATH;
  if (!plugin_dir.empty()) {
    facts.loadable_drivers.emplace();
    std::error_code unreadable;
    for (const auto& entry : std::filesystem::directory_iterator(plugin_dir, unreadable)) {
      const std::string name = entry.path().filename().string();  // librte_net_memif.so
      const std::string prefix = "librte_", suffix = ".so";
      if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        facts.loadable_drivers->push_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    }
    if (unreadable) facts.loadable_drivers.reset();  // EAL will say what it cannot load
  }
  facts.numa = NumaTopology::read(files);
  for (const std::string& device_address : pci_devices)
    facts.pci_numa_nodes[canonical_pci_address(device_address)] = pci_numa_node(files, device_address);
  return facts;
}

bool HostFacts::has_driver(const std::string& driver) const {
  return !loadable_drivers || std::find(loadable_drivers->begin(), loadable_drivers->end(), driver) !=
                                  loadable_drivers->end();
}

EalPlan plan_eal(const config::Config& config, const HostFacts& host, const std::string& program) {
  EalPlan plan;
  auto& args = plan.args;
  args.push_back(program);

  // Lcores: one per worker, on ms.cpus in order (round-robin when there are fewer CPUs).
  const auto workers = static_cast<unsigned>(config.get_int("ms.workers"));
  const std::string& lcore_map = config.get_string("dpdk.lcores");
  const auto main_lcore = static_cast<unsigned>(config.get_int("dpdk.main_lcore"));
  // The allowed NICs' node, when the host has several: lcores and memory go there.
  if (host.numa.multi_node()) plan.port_node = common_numa_node(host.pci_numa_nodes, config.get_list("dpdk.allow"));
  const NumaNode* port_node = host.numa.node(plan.port_node);
  if (!lcore_map.empty()) {
    args.push_back("--lcores=" + lcore_map);
  } else {
    std::vector<int> cpus = config.get_cpus("ms.cpus");
    for (int cpu : cpus)
      if (std::find(host.online_cpus.begin(), host.online_cpus.end(), cpu) == host.online_cpus.end())
        throw PmdError("ms.cpus: CPU " + std::to_string(cpu) + " does not exist on this host (online CPUs: " +
                       cpu_list_text(host.online_cpus) + ")");
    if (cpus.empty() && port_node) {  // unpinned: the NIC's node's online CPUs
      for (int cpu : port_node->cpus)
        if (std::find(host.online_cpus.begin(), host.online_cpus.end(), cpu) != host.online_cpus.end())
          cpus.push_back(cpu);
    }
    if (cpus.empty()) cpus = host.online_cpus;
    if (cpus.empty()) throw PmdError("ms.cpus: no online CPU found on this host");
    if (main_lcore >= workers)
      throw PmdError("dpdk.main_lcore: " + std::to_string(main_lcore) + " is not one of the " +
                     std::to_string(workers) + " worker lcores (0.." + std::to_string(workers - 1) + "; see ms.workers)");
    std::string map;
    for (unsigned i = 0; i < workers; ++i) {
      const int cpu = cpus[i % cpus.size()];
      plan.lcore_cpus.push_back(cpu);
      if (!map.empty()) map += ",";
      map += std::to_string(i) + "@" + std::to_string(cpu);
    }
    args.push_back("--lcores=" + map);
  }
  plan.main_lcore = main_lcore;
  args.push_back("--main-lcore=" + std::to_string(main_lcore));
  if (const int64_t channels = config.get_int("dpdk.memory_channels"); channels > 0)
    args.push_back("-n" + std::to_string(channels));

  // Memory: hugepages when the host has enough free, else --no-huge under dpdk.no_huge=auto.
  const uint64_t memory = config.get_size("dpdk.memory");
  const std::string& no_huge = config.get_string("dpdk.no_huge");
  const std::string& huge_dir = config.get_string("dpdk.huge_dir");
  std::string unavailable;
  if (no_huge != "yes") {
    if (!huge_dir.empty()) {
      const std::string dir = std::filesystem::path(huge_dir).lexically_normal().string();
      const bool mounted = std::any_of(host.hugetlbfs_mounts.begin(), host.hugetlbfs_mounts.end(),
                                       [&](const std::string& m) { return m == dir || m + "/" == dir; });
      if (!mounted)
        throw PmdError("dpdk.huge_dir: '" + huge_dir + "' is not a hugetlbfs mount (mounts: " +
                       (host.hugetlbfs_mounts.empty() ? std::string("none") : host.hugetlbfs_mounts.front()) +
                       "); fix the path or set dpdk.no_huge=yes");
    }
    if (host.hugetlbfs_mounts.empty())
      unavailable = "no hugetlbfs is mounted";
    else if (host.free_hugepage_bytes < memory)
      unavailable = std::to_string(host.free_hugepage_bytes >> 20) + " MiB of hugepages free, dpdk.memory needs " +
                    std::to_string(mebibytes_rounded_up(memory)) + " MiB";
  }
  if (no_huge == "yes") {
    plan.no_huge = true;
  } else if (!unavailable.empty()) {
    if (no_huge == "no")
      throw PmdError("dpdk.no_huge: hugepages required but " + unavailable +
                     " (reserve pages with tools/setup.sh, lower dpdk.memory, or set dpdk.no_huge=auto)");
    plan.no_huge = true;
    plan.no_huge_reason = unavailable;
  }
  if (plan.no_huge) {
    args.push_back("--no-huge");
  } else if (!huge_dir.empty()) {
    args.push_back("--huge-dir=" + huge_dir);
  }
  // On the NIC's node when it has the hugepages (--socket-mem lists MiB per node: "0,256" puts all
  // on node 1); otherwise -m takes them from any node, and the start-up log says why.
  if (!plan.no_huge && port_node && port_node->free_hugepage_bytes() >= memory) {
    std::string per_node;
    for (int node = 0; node <= plan.port_node; ++node)
      per_node += (node ? "," : "") + std::to_string(node == plan.port_node ? mebibytes_rounded_up(memory) : 0);
    args.push_back("--socket-mem=" + per_node);
  } else {
    if (!plan.no_huge && port_node)
      plan.numa_warning = "dpdk.memory: only " + std::to_string(port_node->free_hugepage_bytes() >> 20) +
                          " MiB of hugepages free on NUMA node " + std::to_string(plan.port_node) +
                          " (the NIC's) for " + std::to_string(mebibytes_rounded_up(memory)) +
                          " MiB: memory comes from other nodes too (" +
                          hugepage_reserve_command(port_node, memory) + ")";
    args.push_back("-m" + std::to_string(mebibytes_rounded_up(memory)));
  }

  if (config.get_bool("dpdk.in_memory")) {
    // --in-memory implies hugepage-backed memory; without hugepages --no-shconf keeps the
    // process equally free of shared runtime files.
    args.push_back(plan.no_huge ? "--no-shconf" : "--in-memory");
  } else {
    std::string prefix = config.get_string("dpdk.file_prefix");
    if (prefix.empty()) prefix = "bypass" + std::to_string(getpid());
    args.push_back("--file-prefix=" + prefix);
  }

  if (!config.get_bool("dpdk.telemetry")) args.push_back("--no-telemetry");

  // Devices: with only virtual devices asked for, PCI is not scanned (a VM's own NIC is never
  // probed by accident); with neither, EAL probes every PCI device bound to a DPDK driver.
  const auto& allow = config.get_list("dpdk.allow");
  const auto& vdevs = config.get_list("dpdk.vdev");
  if (allow.empty() && !vdevs.empty()) args.push_back("--no-pci");
  for (const std::string& pci : allow) {
    unsigned domain = 0, bus = 0, dev = 0, fn = 0;
    char tail = 0;
    const bool full = std::sscanf(pci.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4;
    const bool short_form = std::sscanf(pci.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3;
    if (!full && !short_form)
      throw PmdError("dpdk.allow: '" + pci + "' is not a PCI address (expected 0000:03:00.0)");
    args.push_back("-a" + pci);
  }
  for (const std::string& vdev : vdevs) {
    check_vdev(vdev);
    args.push_back("--vdev=" + vdev);
  }
  args.push_back("--log-level=" + std::to_string(config.get_int("dpdk.log_level")));
  for (const std::string& extra : config.get_list("dpdk.eal_args")) args.push_back(extra);
  return plan;
}

std::string join_args(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

namespace {
std::mutex eal_mutex;
std::optional<EalPlan> started_plan;
bool eal_stopped = false;
}  // namespace

const EalPlan& start_eal(const config::Config& config, const std::string& program) {
  std::lock_guard lock(eal_mutex);
  if (started_plan) return *started_plan;
  if (eal_stopped) throw PmdError("dpdk: the EAL was stopped and cannot start again in this process");
  EalPlan plan = plan_eal(config, HostFacts::probe(config.get_list("dpdk.allow")), program);
  if (!plan.numa_warning.empty()) BYPASS_LOG(Warn, "pmd", "%s", plan.numa_warning.c_str());
  if (plan.no_huge && !plan.no_huge_reason.empty())
    BYPASS_LOG(Warn, "pmd", "hugepages unavailable (%s): running with --no-huge (dpdk.no_huge=auto)",
               plan.no_huge_reason.c_str());
  else if (plan.no_huge)
    BYPASS_LOG(Info, "pmd", "running with --no-huge (dpdk.no_huge=yes)");
  BYPASS_LOG(Info, "pmd", "EAL arguments: %s", join_args(plan.args).c_str());
  std::vector<char*> argv;
  clear_stale_vhost_sockets(config.get_list("dpdk.vdev"));
  wait_for_vhost_sockets(config.get_list("dpdk.vdev"), config.get_duration("dpdk.link_wait"));
  std::vector<std::string> storage = plan.args;  // rte_eal_init may permute argv
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  optind = 1;  // EAL parses with getopt; a tool may have used it already
  const int rc = rte_eal_init(static_cast<int>(storage.size()), argv.data());
  optind = 1;
  if (rc < 0) {
    const int err = rte_errno;
    std::string hint;
    switch (err) {
      case EINVAL: hint = "bad EAL argument (check dpdk.lcores, ms.cpus, dpdk.eal_args)"; break;
      case ENOMEM: hint = "not enough memory (lower dpdk.memory or set dpdk.no_huge=yes)"; break;
      case ENOTSUP: hint = "a device could not be probed (check dpdk.vdev and dpdk.allow)"; break;
      case EACCES: hint = "permission denied (run as root or with hugepage access)"; break;
      case EALREADY: hint = "the EAL was already initialised in this process"; break;
      case ENODEV: hint = "no device found (check dpdk.vdev and dpdk.allow)"; break;
      default: hint = "see the EAL messages above; arguments were: " + join_args(plan.args); break;
    }
    throw PmdError("dpdk: EAL start-up failed: " + std::string(rte_strerror(err)) + ": " + hint);
  }
  started_plan = std::move(plan);
  return *started_plan;
}

bool eal_started() {
  std::lock_guard lock(eal_mutex);
  return started_plan.has_value();
}

namespace {

// DPDK 22.11's rte_eal_cleanup() never stops the EAL interrupt thread, yet it unmaps EAL memory
// (rte_eal_memory_detach) while interrupt sources whose handles live there (net_memif's control
// channel and socket, allocated RTE_INTR_INSTANCE_F_SHARED) may still be on that thread's list.
// When one of their fds wakes the thread after that (the memif peer closing its end),
// eal_intr_process_interrupts() reads the unmapped handle in rte_intr_fd_get(): SIGSEGV during
// exit (5 of 45 receivers with 2 workers), which under ASan deadlocked with the leak check into a
// process that never exits. So before cleanup the thread is parked for good in the callback of a
// source of our own (an eventfd): it handles nothing more, and exit() ends it. Not in an alarm
// callback: cleanup unregisters the alarm source with rte_intr_callback_unregister_sync(), which
// would wait for that callback forever.
enum class Park : int { Pending, Parked, Abandoned };

struct Parking {
  std::atomic<Park> state{Park::Pending};
  int fd = -1;
  rte_intr_handle* handle = nullptr;
};

void park_forever(void* arg) {
  auto* parking = static_cast<Parking*>(arg);
  eventfd_t value;
  eventfd_read(parking->fd, &value);  // the thread does not read an EXT source's fd itself
  Park expected = Park::Pending;
  if (!parking->state.compare_exchange_strong(expected, Park::Parked)) return;  // stop_eal gave up waiting
  for (;;) pause();
}

void park_interrupt_thread() {
  static Parking parking;  // static: the parked thread holds it until exit
  parking.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  std::string failed;
  if (parking.fd < 0) {
    failed = std::string("eventfd: ") + std::strerror(errno);
  } else if ((parking.handle = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE)) == nullptr ||
             rte_intr_fd_set(parking.handle, parking.fd) != 0 ||
             rte_intr_type_set(parking.handle, RTE_INTR_HANDLE_EXT) != 0) {
    failed = std::string("interrupt instance: ") + rte_strerror(rte_errno);
  } else if (const int rc = rte_intr_callback_register(parking.handle, park_forever, &parking); rc != 0) {
    failed = std::string("rte_intr_callback_register: ") + rte_strerror(-rc);
  }
  if (!failed.empty()) {
    BYPASS_LOG(Warn, "pmd", "cannot park the EAL interrupt thread before cleanup (%s)", failed.c_str());
    if (parking.handle != nullptr) rte_intr_instance_free(parking.handle);
    if (parking.fd >= 0) close(parking.fd);
    return;
  }
  eventfd_write(parking.fd, 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (parking.state.load(std::memory_order_acquire) == Park::Pending &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  Park expected = Park::Pending;
  if (parking.state.compare_exchange_strong(expected, Park::Abandoned)) {
    // Busy for 2 s (a handler still running): cleanup goes ahead as it would without us; our
    // callback, if it runs now, returns at once, so waiting for it here is bounded.
    rte_intr_callback_unregister_sync(parking.handle, park_forever, &parking);
    rte_intr_instance_free(parking.handle);
    close(parking.fd);
    BYPASS_LOG(Warn, "pmd", "the EAL interrupt thread stayed busy for 2 s; cleaning up without parking it");
  }
}

}  // namespace

void stop_eal() {
  std::lock_guard lock(eal_mutex);
  if (!started_plan) return;
  park_interrupt_thread();
  rte_eal_cleanup();
  started_plan.reset();
  eal_stopped = true;
}

}  // namespace bypass::pmd
