#include "tools/bypass-bench/dpdk_link.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <vector>

namespace bypass::bench {

namespace {

struct LinkSpec {
  DpdkLink link;
  const char* name;
  uint64_t copies_per_round_trip;
  // The client's memory is shared with the server (virtio-user's through the vhost-user socket, a
  // zero-copy memif client's segments): hugepage files, one per segment. The server copies with
  // the CPU and runs on plain memory too.
  bool client_hugepages;
  std::vector<std::string> drivers;  // DPDK drivers of both sides
  const char* what;
};

// Best first: `auto` takes the first one the host allows.
const std::vector<LinkSpec>& links() {
  static const std::vector<LinkSpec> kLinks = {
      {DpdkLink::VhostUser, "vhost-user", 2, true, {"net_vhost", "net_virtio"},
       "vhost-user server / virtio-user client: checksum offload and TSO, the server copies each frame"},
      {DpdkLink::MemifZeroCopy, "memif-zero-copy", 2, true, {"net_memif"},
       "net_memif, zero-copy client: only the memif server copies"},
      {DpdkLink::Memif, "memif", 4, false, {"net_memif"}, "net_memif in copy mode: each side copies on transmit and receive"},
  };
  return kLinks;
}

// The kernel copies each payload into the sender's socket buffer and out of the receiver's.
constexpr uint64_t kKernelCopiesPerRoundTrip = 4;
// memif's shared buffers hold one frame each: the Ethernet header on top of the MTU, rounded to a
// cache line, never below the PMD's default of 2048.
constexpr int64_t kEthernetHeader = 14;
constexpr int64_t kMemifDefaultBufferSize = 2048;

const LinkSpec& spec_of(DpdkLink link) {
  for (const LinkSpec& spec : links())
    if (spec.link == link) return spec;
  throw std::logic_error("dpdk link without a spec");
}

std::string mebibytes(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

[[noreturn]] void fail(const config::Config& conf, const std::string& key, const std::string& message) {
  throw config::ConfigError(conf.origin(key) + ": " + key + ": " + message);
}

// Items as a YAML flow sequence of quoted strings (what Config::set reads for a list).
std::string flow_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const std::string& item : items) {
    out += out.size() > 1 ? ", \"" : "\"";
    for (char c : item) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    out += '"';
  }
  return out + "]";
}

// The side's settings before any link is applied: what it asks of memory.
config::Config side_without_link(const config::Config& conf, Side side) {
  config::Config without = conf;
  without.set("bench.dpdk_link", "configured", conf.origin("bench.dpdk_link"));
  return side_config(without, side, "dpdk");
}

// How `spec` would run on `host`: `why_not` says why it cannot. The client's memory must be
// hugepages; the server (started first) takes hugepages under dpdk.no_huge=auto when enough are
// free, so where there are not enough for both it is kept off them and leaves them to the client.
struct LinkPlan {
  std::string why_not;
  bool server_without_hugepages = false;
};

LinkPlan plan_link(const config::Config& conf, const LinkSpec& spec, const pmd::HostFacts& host) {
  for (const std::string& driver : spec.drivers)
    if (!host.has_driver(driver)) return {"DPDK's " + driver + " driver is not installed"};
  if (!spec.client_hugepages) return {};
  const config::Config server = side_without_link(conf, Side::Server);
  const config::Config client = side_without_link(conf, Side::Client);
  if (client.get_string("dpdk.no_huge") == "yes")
    return {"it needs hugepages on the client, whose dpdk.no_huge is yes (" + client.origin("dpdk.no_huge") + ")"};
  if (host.hugetlbfs_mounts.empty()) return {"no hugetlbfs is mounted"};
  const uint64_t free_bytes = host.free_hugepage_bytes;
  const uint64_t client_memory = client.get_size("dpdk.memory");
  const uint64_t server_memory = server.get_size("dpdk.memory");
  if (free_bytes < client_memory)
    return {"the client needs " + mebibytes(client_memory) + " of hugepages (dpdk.memory), " + mebibytes(free_bytes) +
            " are free"};
  const std::string& server_no_huge = server.get_string("dpdk.no_huge");
  if (server_no_huge == "yes" || free_bytes - client_memory >= server_memory) return {};
  if (server_no_huge == "no")
    return {"the server (dpdk.no_huge no, " + server.origin("dpdk.no_huge") + ") and the client need " +
            mebibytes(server_memory) + " + " + mebibytes(client_memory) + " of hugepages, " + mebibytes(free_bytes) +
            " are free"};
  return {"", true};
}

void append_eal_arg(config::Config& side_conf, const std::string& arg, const std::string& origin) {
  std::vector<std::string> args = side_conf.get_list("dpdk.eal_args");
  if (std::find(args.begin(), args.end(), arg) != args.end()) return;
  args.push_back(arg);
  side_conf.set("dpdk.eal_args", flow_list(args), origin);
}

std::string memif_buffer_size(const config::Config& side_conf) {
  const int64_t frame = side_conf.get_int("dpdk.mtu") + kEthernetHeader;
  return std::to_string(std::max(kMemifDefaultBufferSize, (frame + 63) / 64 * 64));
}

std::string link_vdev(DpdkLink link, Side side, const std::string& socket, const config::Config& side_conf) {
  const bool server = side == Side::Server;
  switch (link) {
    case DpdkLink::VhostUser: {
      if (server) return "net_vhost0,iface=" + socket + ",queues=1,tso=1";  // tso=1: offered to the client
      // virtio-user takes its MAC from the devargs (else it picks a random one, and says so).
      const std::string& mac = side_conf.get_string("dpdk.hw_addr");
      return "net_virtio_user0,path=" + socket + ",queues=1" + (mac.empty() ? "" : ",mac=" + mac);
    }
    case DpdkLink::MemifZeroCopy:
    case DpdkLink::Memif: {
      std::string vdev = std::string("net_memif0,role=") + (server ? "server" : "client") + ",socket=" + socket +
                         ",bsize=" + memif_buffer_size(side_conf);
      if (!server && link == DpdkLink::MemifZeroCopy) vdev += ",zero-copy=yes";
      return vdev;
    }
    case DpdkLink::Configured:
    case DpdkLink::Auto: break;
  }
  return "";
}

}  // namespace

DpdkLink dpdk_link_from_config(const config::Config& conf) {
  const std::string& name = conf.get_string("bench.dpdk_link");
  if (name == "auto") return DpdkLink::Auto;
  for (const LinkSpec& spec : links())
    if (name == spec.name) return spec.link;
  return DpdkLink::Configured;
}

const char* dpdk_link_name(DpdkLink link) {
  if (link == DpdkLink::Configured) return "configured";
  if (link == DpdkLink::Auto) return "auto";
  return spec_of(link).name;
}

LinkChoice choose_dpdk_link(const config::Config& conf, const pmd::HostFacts& host) {
  const DpdkLink asked = dpdk_link_from_config(conf);
  if (asked == DpdkLink::Configured) return {asked, "the job's bench.server.dpdk / bench.client.dpdk name the port"};
  const auto chosen = [&](const LinkSpec& spec, const LinkPlan& plan, const std::string& why) {
    std::string reason = why + spec.what;
    if (plan.server_without_hugepages)
      reason += "; the server runs without hugepages: the " + mebibytes(host.free_hugepage_bytes) +
                " free are the client's";
    return LinkChoice{spec.link, reason, plan.server_without_hugepages};
  };
  if (asked != DpdkLink::Auto) {
    const LinkSpec& spec = spec_of(asked);
    const LinkPlan plan = plan_link(conf, spec, host);
    if (!plan.why_not.empty())
      fail(conf, "bench.dpdk_link", std::string(spec.name) + " cannot run here: " + plan.why_not +
                                        " (bench.dpdk_link=auto picks the best link this host allows)");
    return chosen(spec, plan, std::string("bench.dpdk_link=") + spec.name + " (" + conf.origin("bench.dpdk_link") + "); ");
  }
  std::string passed_over;
  for (const LinkSpec& spec : links()) {
    const LinkPlan plan = plan_link(conf, spec, host);
    if (plan.why_not.empty()) {
      LinkChoice choice = chosen(spec, plan, "auto: ");
      if (!passed_over.empty()) choice.reason += "; " + passed_over;
      return choice;
    }
    passed_over += std::string(passed_over.empty() ? "not " : "; not ") + spec.name + ": " + plan.why_not;
  }
  fail(conf, "bench.dpdk_link", "auto finds no link this host can run: " + passed_over);
}

std::vector<std::string> settle_dpdk_link(const LinkChoice& choice, config::Config& conf) {
  const std::string origin = "bench.dpdk_link=" + conf.get_string("bench.dpdk_link") + " (" +
                             conf.origin("bench.dpdk_link") + ")";
  conf.set("bench.dpdk_link", dpdk_link_name(choice.link), origin);
  std::vector<std::string> sets = {"bench.dpdk_link=" + conf.to_string("bench.dpdk_link")};
  if (choice.server_without_hugepages) {
    std::vector<std::string> items = conf.get_list("bench.server.dpdk");
    items.push_back("dpdk.no_huge=yes");
    conf.set("bench.server.dpdk", flow_list(items), origin);
    sets.push_back("bench.server.dpdk=" + conf.to_string("bench.server.dpdk"));
  }
  return sets;
}

void apply_dpdk_link(const config::Config& conf, Side side, config::Config& side_conf) {
  const DpdkLink link = dpdk_link_from_config(conf);
  if (link == DpdkLink::Configured) return;
  if (link == DpdkLink::Auto)
    fail(conf, "bench.dpdk_link",
         "auto is resolved by `bypass-bench run`, which starts both sides; a lone server or client needs the link "
         "named (vhost-user, memif-zero-copy, memif) or bench.dpdk_link=configured with the port in dpdk.vdev");
  const LinkSpec& spec = spec_of(link);
  const std::string origin = "bench.dpdk_link=" + std::string(spec.name);
  for (const char* device_key : {"dpdk.vdev", "dpdk.allow"}) {
    if (!side_conf.get_list(device_key).empty())
      fail(conf, "bench.dpdk_link",
           std::string(spec.name) + " gives the " + side_name(side) + " its port, but " + device_key + " is set (" +
               side_conf.origin(device_key) + "); drop it, or set bench.dpdk_link=configured to keep that port");
  }
  if (side == Side::Client && spec.client_hugepages) {
    if (side_conf.get_string("dpdk.no_huge") == "yes")
      fail(conf, "bench.dpdk_link",
           std::string(spec.name) + " needs hugepages on the client (its memory is shared with the server through "
               "hugepage files), but dpdk.no_huge is yes (" + side_conf.origin("dpdk.no_huge") + ")");
    side_conf.set("dpdk.no_huge", "no", origin);
    append_eal_arg(side_conf, "--single-file-segments", origin);
  }
  const std::string socket = conf.get_string("bench.link_socket");
  side_conf.set("dpdk.vdev", flow_list({link_vdev(link, side, socket, side_conf)}), origin);
}

LinkDescription describe_link(const config::Config& side_conf) {
  const std::string& transport = side_conf.get_string("ms.type");
  if (transport == "posix") return {"kernel", kKernelCopiesPerRoundTrip};
  if (transport != "dpdk") return {transport, std::nullopt};
  const DpdkLink link = dpdk_link_from_config(side_conf);
  if (link != DpdkLink::Configured && link != DpdkLink::Auto) {
    const LinkSpec& spec = spec_of(link);
    return {spec.name, spec.copies_per_round_trip};
  }
  // The job's own port: its driver, without a claim about its copies.
  const std::vector<std::string>& vdevs = side_conf.get_list("dpdk.vdev");
  if (vdevs.empty()) return {"pci", std::nullopt};
  std::string driver = vdevs.front().substr(0, vdevs.front().find(','));
  while (!driver.empty() && std::isdigit(static_cast<unsigned char>(driver.back()))) driver.pop_back();
  return {driver, std::nullopt};
}

}  // namespace bypass::bench
