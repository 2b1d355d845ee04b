#include "stack/dpdk/dpdk_stack.h"

#include <rte_ethdev.h>
#include <rte_lcore.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "base/host_files.h"
#include "base/log.h"
#include "pmd/error.h"
#include "pmd/numa.h"
#include "pmd/toeplitz.h"
#include "stack/dpdk/dpdk_socket.h"
#include "stack/inet/inet_config.h"
#include "stack/inet/inet_stats.h"

namespace bypass {

namespace {

// After dpdk.idle_sleep without packets the worker sleeps in the kernel instead of spinning (the
// machine is shared); the tick timer bounds each sleep so received frames wait at most a tick.
constexpr std::chrono::microseconds kIdleTick{250};
constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint64_t kTicksPerArpRefresh = 4000;  // one second of kIdleTick
// The queue gauges walk every connection, a few cache lines each that are likely cold: ~0.3 ms at
// 1,024 connections, so every 100 ms (~0.3 % of the worker) and still 60 samples in a 6 s run.
constexpr uint64_t kTicksPerQueueSample = 400;

// dpdk.hw_addr when given, else the port's MAC; a port without one (net_ring) gets a locally
// administered address derived from the host IP (IEEE 802: bit 1 of the first octet), and so does
// a port shared with the kernel (dpdk.flow_isolate): its MAC is the kernel's, and the stack's own
// lets rules tell its frames from the kernel's where the port cannot match ARP by address.
inet::MacAddress choose_mac(const config::Config& conf, const pmd::Port& port, uint32_t host_ip) {
  inet::MacAddress mac;
  const std::string& text = conf.get_string("dpdk.hw_addr");
  if (!text.empty()) {
    unsigned b[6];
    char extra;
    if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &extra) != 6 ||
        std::any_of(std::begin(b), std::end(b), [](unsigned v) { return v > 0xff; }) || (b[0] & 1)) {
      throw std::runtime_error("dpdk.hw_addr: '" + text + "' is not a unicast MAC address aa:bb:cc:dd:ee:ff");
    }
    for (int i = 0; i < 6; ++i) mac.bytes[i] = static_cast<uint8_t>(b[i]);
    return mac;
  }
  std::copy(port.info().mac.begin(), port.info().mac.end(), mac.bytes.begin());
  if (mac.is_zero() || port.info().flow_isolated) {
    mac.bytes = {0x02, 0x00, static_cast<uint8_t>(host_ip >> 24), static_cast<uint8_t>(host_ip >> 16),
                 static_cast<uint8_t>(host_ip >> 8), static_cast<uint8_t>(host_ip)};
  }
  return mac;
}
// dpdk.trusted_link only where no wire can flip a bit: shared memory between two processes
// (net_memif) or a ring within one (net_ring). Any other port may face a NIC, a kernel or an
// unknown peer, where a frame without a valid TCP checksum is dropped (RFC 9293 §3.1) and a
// corrupted one must be.
bool trusted_link_allowed(const config::Config& conf, const pmd::PortInfo& port) {
  if (!conf.get_bool("dpdk.trusted_link")) return false;
  if (port.driver == "net_memif" || port.driver == "net_ring") return true;
  throw std::runtime_error(conf.origin("dpdk.trusted_link") + ": dpdk.trusted_link: port " +
                           std::to_string(port.port_id) + " (" + port.name + ") is driven by " + port.driver +
                           "; only net_memif and net_ring links may skip TCP checksums");
}

// Listen on port 0 picks from this range (the connect side uses tcp ephemeral ports).
constexpr uint16_t kListenPortFirst = 20000;
constexpr uint16_t kListenPortLast = 29999;

// True when the first `length` bits of `a` and `b` agree.
bool same_prefix(const inet::Ipv6Address& a, const inet::Ipv6Address& b, unsigned length) {
  for (unsigned bit = 0; bit < length; bit += 8) {
    const unsigned take = std::min(8u, length - bit);
    const auto mask = static_cast<uint8_t>(0xff00u >> take);
    if ((a.bytes[bit / 8] & mask) != (b.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

}  // namespace

void apply_dpdk_ipv6_options(const config::Config& conf, inet::InetSettings& settings) {
  const std::string& address = conf.get_string("dpdk.host_ipv6");
  const std::string& gateway = conf.get_string("dpdk.gateway_ipv6");
  const auto prefix = static_cast<unsigned>(conf.get_int("dpdk.ipv6_prefix_length"));
  if (address.empty()) {
    if (!gateway.empty())
      throw std::runtime_error("dpdk.gateway_ipv6: '" + gateway + "' given without dpdk.host_ipv6 (IPv6 is off)");
    settings.ipv6.address = inet::Ipv6Address{};
    return;
  }
  if (address.find('/') != std::string::npos)
    throw std::runtime_error("dpdk.host_ipv6: '" + address +
                             "': give the address alone and its prefix length in dpdk.ipv6_prefix_length");
  const std::string bare = address.size() > 2 && address.front() == '[' && address.back() == ']'
                               ? address.substr(1, address.size() - 2)
                               : address;
  if (!inet::Ipv6Address::from_string(bare))
    throw std::runtime_error("dpdk.host_ipv6: '" + address + "' is not an IPv6 address (e.g. fd00:10::2)");
  inet::InetSettings parsed = settings;
  if (const std::string error = inet::apply_ipv6_addressing(bare + "/" + std::to_string(prefix), "", parsed);
      !error.empty()) {
    // RFC 4291 §2.7, §2.5.2-3: multicast, :: and ::1 name no interface of ours.
    throw std::runtime_error("dpdk.host_ipv6: '" + address +
                             "' is not a unicast address (multicast, :: and ::1 cannot be the stack's address)");
  }
  if (!gateway.empty()) {
    const std::string bare_gateway = gateway.size() > 2 && gateway.front() == '[' && gateway.back() == ']'
                                         ? gateway.substr(1, gateway.size() - 2)
                                         : gateway;
    const auto router = inet::Ipv6Address::from_string(bare_gateway);
    if (!router) throw std::runtime_error("dpdk.gateway_ipv6: '" + gateway + "' is not an IPv6 address (e.g. fe80::1)");
    if (router->is_unspecified() || router->is_multicast() || router->is_loopback() || *router == parsed.ipv6.address)
      throw std::runtime_error("dpdk.gateway_ipv6: '" + gateway +
                               "' is not a unicast address of another node (a router's address)");
    // A next hop is resolved by Neighbor Discovery, so it must be on the link: routers advertise
    // their link-local address (RFC 4861 §8: "the link-local address of the router"), and an
    // address within our own prefix is on-link too (§2.1).
    if (!router->is_link_local_unicast() && !same_prefix(*router, parsed.ipv6.address, prefix))
      throw std::runtime_error("dpdk.gateway_ipv6: '" + gateway + "' is neither link-local (fe80::/10) nor on " +
                               bare + "/" + std::to_string(prefix) + ": Neighbor Discovery could not reach it");
    parsed.ipv6.gateway = *router;
  }
  parsed.ipv6.dad_transmits = static_cast<int>(conf.get_int("dpdk.ipv6_dad_transmits"));
  parsed.ipv6.reassembly_timeout = conf.get_duration("dpdk.ipv6_reassembly_timeout");
  settings.ipv6 = parsed.ipv6;
}

inet::InetSettings dpdk_inet_settings(const config::Config& conf) {
  inet::InetSettings settings;
  settings.address.value = conf.get_ipv4("dpdk.host_ip").host_order;
  if (settings.address.is_zero())
    throw std::runtime_error("dpdk.host_ip: required for ms.type=dpdk (the stack's IPv4 address)");
  settings.netmask.value = conf.get_ipv4("dpdk.netmask").host_order;
  settings.gateway.value = conf.get_ipv4("dpdk.gateway").host_order;
  inet::apply_tcp_config(conf, settings);
  apply_dpdk_ipv6_options(conf, settings);
  return settings;
}

namespace {

// The EAL starts once per process and a closed virtual device (net_tap, net_ring) cannot be
// probed again, so the port set outlives a stack: later stacks in the process (tests create one
// per case) reuse it when they ask for the same port and worker count.
struct SharedPorts {
  std::mutex mutex;
  std::shared_ptr<pmd::PortSet> ports;
  uint16_t port_id = 0;
  unsigned workers = 0;
  std::vector<std::string> vdevs;
};

SharedPorts& shared_ports() {
  static SharedPorts* instance = new SharedPorts;  // never destroyed: ports must outlive every stack
  return *instance;
}

std::shared_ptr<pmd::PortSet> open_ports(const config::Config& conf) {
  const auto port_id = static_cast<uint16_t>(conf.get_int("dpdk.port_id"));
  const auto workers = static_cast<unsigned>(conf.get_int("ms.workers"));
  const std::vector<std::string>& vdevs = conf.get_list("dpdk.vdev");
  SharedPorts& shared = shared_ports();
  std::lock_guard lock(shared.mutex);
  if (shared.ports) {
    if (shared.port_id != port_id || shared.workers != workers || shared.vdevs != vdevs) {
      throw std::runtime_error(
          "ms.type=dpdk: this process already runs DPDK port " + std::to_string(shared.port_id) +
          " with " + std::to_string(shared.workers) +
          " workers; dpdk.port_id, dpdk.vdev and ms.workers cannot change within one process");
    }
    return shared.ports;
  }
  try {
    auto ports = std::make_shared<pmd::PortSet>(conf, port_id, "bypass");
    ports->wait_links(conf.get_duration("dpdk.link_wait"));
    shared.ports = ports;
  } catch (const pmd::PmdError& e) {
    throw std::runtime_error(std::string("ms.type=dpdk: ") + e.what());
  }
  shared.port_id = port_id;
  shared.workers = workers;
  shared.vdevs = vdevs;
  return shared.ports;
}

// pmd owner function: packets to a single-worker listener's port go to that worker (SYNs and the
// rest of its passive connections); everything else follows the 4-tuple hash.
unsigned steer_with_single_listeners(const rte_mbuf* pkt, void* context) {
  auto* self = static_cast<std::pair<pmd::Port*, SingleListenerTable*>*>(context);
  if (const auto dst_port = pmd::tcp_destination_port(pkt)) {  // IPv4 or IPv6
    if (const uint8_t owner = self->second->owner_plus_one(*dst_port); owner != SingleListenerTable::kNone)
      return owner - 1u;
  }
  return pmd::Port::default_owner(pkt, self->first);
}

// Frames left in the queues by a previous stack on the same port belong to connections that no
// longer exist.
void drain_port(pmd::Port& port) {
  rte_mbuf* mbufs[DpdkDevice::kBurst];
  for (unsigned worker = 0; worker < port.workers(); ++worker) {
    for (int round = 0; round < 1024; ++round) {
      const uint16_t n = port.rx_burst(worker, mbufs, DpdkDevice::kBurst);
      if (n == 0) break;
      rte_pktmbuf_free_bulk(mbufs, n);
    }
  }
}

}  // namespace

template <typename Apply>
void DpdkWorker::on_siblings(const Apply& apply) {
  for (DpdkWorker* sibling : siblings_)
    sibling->center().dispatch_external([sibling, apply] { apply(sibling->inet()); });
}

DpdkWorker::DpdkWorker(unsigned id, pmd::Port& port, inet::MacAddress mac,
                       const inet::InetSettings& settings, uint64_t secret_seed, const TxChainOptions& tx,
                       std::chrono::nanoseconds idle_sleep)
    : Worker(id, make_polling_driver(idle_sleep)),
      port_(port),
      settings_(settings),
      device_(port, id, mac, tx),
      timers_(center()),
      inet_(std::make_unique<inet::InetStack>(settings_, device_, timers_, secret_seed)) {
  driver().set_poll_hook([this] { return poll(); });
  // Neighbor Discovery messages reach one worker (their 4-tuple-less hash picks it), yet every
  // worker sends to that neighbour: what one replica learns from the wire, the others learn too,
  // as ARP frames are shared (share_arp). NeighborCache::learn does not call the hook back.
  inet::NeighborCache& neighbors = inet_->neighbors();
  neighbors.set_learn_hook([this](const inet::Ipv6Address& ip, inet::MacAddress mac, bool reachable) {
    on_siblings([ip, mac, reachable](inet::InetStack& sibling) { sibling.neighbors().learn(ip, mac, reachable); });
  });
  // The answer to one worker's solicitation lands on whichever worker the port picks; one with no
  // line for its target hands it on, so the worker that asked completes its INCOMPLETE line (and
  // shares the result through the learn hook no further: every sibling got the advertisement).
  neighbors.set_unmatched_advertisement_hook([this](const inet::NeighborCache::Advertisement& advertisement) {
    on_siblings([advertisement](inet::InetStack& sibling) { sibling.neighbors().learn_advertisement(advertisement); });
  });
  // Duplicate Address Detection (RFC 4862 §5.4): the NA or NS that reveals a duplicate reaches one
  // worker's queue only, yet all workers send from our addresses; the others must stop using the
  // address too (§5.4.5), or one worker would keep answering for an address the others gave up.
  // learn_duplicate does not call the hook back.
  inet_->addresses().set_duplicate_hook([this](const inet::Ipv6Address& ip, inet::MacAddress claimed_by) {
    on_siblings([ip, claimed_by](inet::InetStack& sibling) { sibling.addresses().learn_duplicate(ip, claimed_by); });
  });
  // Outgoing connections must use a tuple whose hash brings the replies back to this worker. A
  // received segment has src = remote, dst = local (pmd::Port::default_owner).
  const pmd::RssSteering& steering = port_.steering();
  const unsigned self = id;
  if (port_.workers() > 1) {
    // The tuple as the peer's packets carry it (source = remote), hashed as the port hashes them.
    inet_->tcp().set_port_filter([&steering, self](const inet::FourTuple& t) {
      if (t.remote_ip.is_v4())
        return steering.worker_for_ipv4(t.remote_ip.v4().value, t.local_ip.v4().value, t.remote_port,
                                        t.local_port) == self;
      const inet::Ipv6Address remote = t.remote_ip.v6(), local = t.local_ip.v6();
      return steering.worker_for_ipv6(std::span<const uint8_t, 16>(remote.bytes),
                                      std::span<const uint8_t, 16>(local.bytes), t.remote_port,
                                      t.local_port) == self;
    });
  }
}

DpdkWorker::~DpdkWorker() {
  // Connections may still send (RST) while they go; the loop has stopped, so flush inline.
  inet_.reset();
  device_.end_batch();
  if (device_.tx_dropped() != 0 || device_.tx_alloc_failures() != 0) {
    BYPASS_LOG(Info, "dpdk", "worker %u: %llu frames dropped on a full TX queue, %llu for want of mbufs",
               id(), static_cast<unsigned long long>(device_.tx_dropped()),
               static_cast<unsigned long long>(device_.tx_alloc_failures()));
  }
}

void DpdkWorker::on_thread_start() {
  // A registered thread gets an lcore id, so mempool get/put use the per-lcore cache. A thread
  // that has one already (without worker threads: the application's, which may be EAL's main
  // thread or run a sibling worker too) keeps it: registering again would replace its id.
  if (rte_lcore_id() == LCORE_ID_ANY) {
    thread_registered_ = rte_thread_register() == 0;
    if (!thread_registered_) {
      BYPASS_LOG(Warn, "dpdk", "worker %u: rte_thread_register failed (%s); running without an lcore id",
                 id(), rte_strerror(rte_errno));
    }
    registered_lcore_ = rte_lcore_id();
  }
  // Connections to our own address (the peer is this stack, e.g. over a looped net_ring) resolve
  // to our own MAC; the tick refreshes the entry every second so it never ages out.
  learn_own_addresses();
  struct Tick {
    DpdkWorker* worker;
    void operator()() const {
      if (++worker->ticks_ % kTicksPerArpRefresh == 0) worker->learn_own_addresses();
      if (worker->ticks_ % kTicksPerQueueSample == 0) worker->sample_queues();
      worker->tick_ = worker->center().create_timer(kIdleTick, Tick{worker});
    }
  };
  tick_ = center().create_timer(kIdleTick, Tick{this});
  inet_->start();
}

void DpdkWorker::on_thread_stop() {
  if (tick_ != 0) center().cancel_timer(tick_);
  tick_ = 0;
  device_.end_batch();
  // Only on the thread this worker registered (stop() may run the loops elsewhere once their
  // thread is gone, see NetworkStack::stop()).
  if (thread_registered_ && rte_lcore_id() == registered_lcore_) rte_thread_unregister();
  thread_registered_ = false;
}

int DpdkWorker::poll() {
  rte_mbuf* mbufs[DpdkDevice::kBurst];
  const uint16_t count = port_.rx_burst(id(), mbufs, DpdkDevice::kBurst);
  ++polls_;
  rx_bursts_ += count != 0;
  device_.begin_batch();
  inet_->begin_burst();
  for (uint16_t i = 0; i < count; ++i) {
    inet::Packet frame = device_.receive(mbufs[i]);
    if (!siblings_.empty()) share_arp(frame);
    inet_->receive(std::move(frame));
  }
  inet_->end_burst();  // coalesced segments go to TCP, their ACKs into this batch
  return static_cast<int>(count + device_.end_batch());
}

void DpdkWorker::sample_queues() {
  const bool own_rx_queue = id() < port_.info().rx_queues;
  gauges_.sample(inet_->tcp(), device_, port_.mempool(), port_.id(), own_rx_queue ? static_cast<int>(id()) : -1);
}

void DpdkWorker::learn_own_addresses() {
  inet_->arp().learn(settings_.address, device_.mac());
  // Reachable, and refreshed well within ReachableTime (RFC 4861 §6.3.2, 30 s), so the line never
  // goes STALE and starts probing ourselves.
  if (inet_->ipv6_enabled()) inet_->neighbors().learn(settings_.ipv6.address, device_.mac(), true);
}

void DpdkWorker::share_arp(const inet::Packet& frame) {
  if (frame.data.length() < 14) return;
  uint8_t type[2];
  frame.data.copy_out(12, 2, type);
  if ((type[0] << 8 | type[1]) != kEtherTypeArp) return;
  // The replicas learn the sender; only this worker answers a request (and counts the frame), or
  // a request would draw one reply per worker.
  on_siblings([bytes = frame.data.to_string().substr(14)](inet::InetStack& sibling) {
    BufferList copy;
    copy.append_copy(bytes);
    sibling.arp().learn_from_shared(copy);
  });
}

int DpdkWorker::listen(const SocketAddress& addr, const ListenOptions& lopts,
                       const SocketOptions& /*sopts*/, ServerSocket* out) {
  // One listener per port takes both families (TcpLayer::listen); the address only has to be ours
  // or the wildcard of its family.
  if (addr.is_ipv6()) {
    if (settings_.ipv6.address.is_unspecified()) return -EADDRNOTAVAIL;  // dpdk.host_ipv6 not set
    inet::Ipv6Address requested;
    requested.bytes = addr.ipv6_octets();
    if (!requested.is_unspecified() && requested != settings_.ipv6.address) return -EADDRNOTAVAIL;
  } else if (!addr.is_ipv4()) {
    return -EAFNOSUPPORT;
  } else if (addr.ipv4_host_order() != 0 && addr.ipv4_host_order() != settings_.address.value) {
    return -EADDRNOTAVAIL;
  }
  std::shared_ptr<inet::TcpListener> listener;
  if (addr.port() != 0) {
    listener = inet_->tcp().listen(addr.port());
    if (!listener) return -EADDRINUSE;
  } else {
    // Start at a random point so consecutive stacks do not collide with the peer's TIME_WAITs.
    std::random_device seed;
    const unsigned span = kListenPortLast - kListenPortFirst + 1;
    const unsigned start = seed() % span;
    for (unsigned i = 0; i < span && !listener; ++i) {
      listener = inet_->tcp().listen(static_cast<uint16_t>(kListenPortFirst + (start + i) % span));
    }
    if (!listener) return -EADDRINUSE;
  }
  SingleListenerTable* single = lopts.reuse_port ? nullptr : single_listeners_;
  *out = ServerSocket(std::make_unique<DpdkServerSocket>(*this, std::move(listener), single, addr.is_ipv6()));
  return 0;
}

int DpdkWorker::connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) {
  if (!addr.is_ipv4() && !addr.is_ipv6()) return -EAFNOSUPPORT;
  if (addr.port() == 0) return -EINVAL;
  inet::IpAddress remote = inet::Ipv4Address{0};
  if (addr.is_ipv6()) {
    if (settings_.ipv6.address.is_unspecified()) return -EADDRNOTAVAIL;  // dpdk.host_ipv6 not set
    inet::Ipv6Address v6;
    v6.bytes = addr.ipv6_octets();
    remote = v6;
  } else {
    remote = inet::Ipv4Address{addr.ipv4_host_order()};
  }
  std::shared_ptr<inet::TcpConnection> connection = inet_->tcp().connect(remote, addr.port());
  if (!connection) return -EADDRNOTAVAIL;
  *out = ConnectedSocket(std::make_unique<DpdkConnectedSocket>(*this, std::move(connection), opts, true));
  return 0;
}

// ---------------------------------------------------------------------------------------------

DpdkStack::DpdkStack(const config::Config& conf) : NetworkStack(conf, "dpdk") {
  const inet::InetSettings settings = dpdk_inet_settings(conf);
  ipv6_ = settings.ipv6;
  ports_ = open_ports(conf);
  pmd::Port& port = ports_->port(0);
  drain_port(port);
  // NUMA (pmd/numa.h): the port's queues, mempool and redirect rings are on its node already; the
  // workers go there too, or a warning names the cores ms.cpus put elsewhere.
  const pmd::WorkerPlacement placement =
      pmd::place_workers(pmd::NumaTopology::read(HostFiles()), rte_eth_dev_socket_id(port.id()),
                         conf.get_cpus("ms.cpus"), "port " + std::to_string(port.id()) + " (" + port.info().name + ")");
  if (!placement.warning.empty()) BYPASS_LOG(Warn, "dpdk", "%s", placement.warning.c_str());
  set_unpinned_cpus(placement.affinity);
  const inet::MacAddress mac = choose_mac(conf, port, settings.address.value);
  const pmd::OffloadFlags& offloads = port.info().offloads.enabled;
  BYPASS_LOG(Info, "dpdk", "port %u (%s) mac %s, %u workers, host %s%s; tx checksum %s, rx checksum %s",
             port.id(), port.info().name.c_str(), mac.to_string().c_str(), port.workers(),
             settings.address.to_string().c_str(), port.info().software_redirect ? ", software redirect" : "",
             offloads.tx_tcp_checksum ? "offloaded" : "software",
             offloads.rx_tcp_checksum ? "offloaded" : "software");
  if (!settings.ipv6.address.is_unspecified()) {
    // Neighbor Discovery talks to groups (RFC 4861 §7.2.2, §7.2.6): our solicited-node group, that
    // of the link-local address a modified EUI-64 interface identifier from our MAC would give
    // (RFC 4291 §2.5.1, App. A: its low 24 bits are the MAC's), and all-nodes.
    const auto group = [](const inet::Ipv6Address& ip) {
      const inet::MacAddress m = ip.multicast_mac();
      return std::array<uint8_t, 6>{m.bytes[0], m.bytes[1], m.bytes[2], m.bytes[3], m.bytes[4], m.bytes[5]};
    };
    std::vector<std::array<uint8_t, 6>> groups = {group(settings.ipv6.address.solicited_node_multicast()),
                                                  group(inet::Ipv6Address::all_nodes())};
    const std::array<uint8_t, 6> link_local = {0x33, 0x33, 0xff, mac.bytes[3], mac.bytes[4], mac.bytes[5]};
    if (link_local != groups[0]) groups.push_back(link_local);
    BYPASS_LOG(Info, "dpdk", "IPv6 %s/%u%s%s; neighbour discovery through the port's %s",
               settings.ipv6.address.to_string().c_str(), unsigned{settings.ipv6.prefix_length},
               settings.ipv6.gateway.is_unspecified() ? "" : " via ",
               settings.ipv6.gateway.is_unspecified() ? "" : settings.ipv6.gateway.to_string().c_str(),
               pmd::Port::to_string(port.join_multicast(groups)));
  }
  if (port.info().flow_isolated) {
    flow_rules_ = std::make_unique<StackFlowRules>(port, stack_flow_claims(settings, mac, port.info().rx_queues));
    for (const std::string& rule : flow_rules_->describe())
      BYPASS_LOG(Info, "dpdk", "flow rule %s", rule.c_str());
  }
  single_listeners_ = std::make_unique<SingleListenerTable>();
  if (port.info().software_redirect) {
    steering_context_ = std::make_unique<std::pair<pmd::Port*, SingleListenerTable*>>(&port, single_listeners_.get());
    port.set_owner_function(&steer_with_single_listeners, steering_context_.get());
  }
  const int inject = static_cast<int>(conf.get_int("ms.inject_socket_failures"));
  const std::chrono::nanoseconds idle_sleep = conf.get_duration("dpdk.idle_sleep");
  TxChainOptions tx;
  tx.trusted_link = trusted_link_allowed(conf, port.info());
  tx.zero_copy = conf.get_bool("dpdk.zero_copy_send");
  tx.zero_copy_threshold = conf.get_size("dpdk.zero_copy_threshold");
  tx.attach_when_device_copies = conf.get_bool("dpdk.attach_on_copying_ports");
  tx.software_segmentation = conf.get_bool("dpdk.gso");
  tx.hold_when_backlogged = conf.get_bool("dpdk.hold_when_backlogged");
  // memif's own zero-copy mode transmits only from the memory regions it shares with the peer
  // (the mempool), so an external buffer would reach the peer as an offset into nothing.
  for (const std::string& vdev : conf.get_list("dpdk.vdev")) {
    if (tx.zero_copy && vdev.find("zero-copy=yes") != std::string::npos) {
      BYPASS_LOG(Info, "dpdk", "dpdk.zero_copy_send off: the memif port '%s' runs in zero-copy mode", vdev.c_str());
      tx.zero_copy = false;
    }
  }
  std::random_device seed;
  std::vector<DpdkWorker*> all;
  for (unsigned i = 0; i < port.workers(); ++i) {
    const uint64_t secret = uint64_t{seed()} << 32 | seed();
    auto worker = std::make_unique<DpdkWorker>(i, port, mac, settings, secret, tx, idle_sleep);
    worker->set_inject_socket_failures(inject);
    if (port.info().software_redirect) worker->set_single_listeners(single_listeners_.get());
    all.push_back(worker.get());
    add_worker(std::move(worker));
  }
  for (DpdkWorker* worker : all) {
    std::vector<DpdkWorker*> siblings;
    for (DpdkWorker* other : all) {
      if (other != worker) siblings.push_back(other);
    }
    worker->set_siblings(std::move(siblings));
  }
}

DpdkStack::~DpdkStack() {
  stop();
  // Workers hold mbufs (received data, queued frames): they go before the port and its pool.
  workers_.clear();
  if (steering_context_) ports_->port(0).set_owner_function(nullptr, nullptr);
  flow_rules_.reset();
  ports_.reset();
}

void DpdkStack::start() {
  if (started_) return;
  NetworkStack::start();
  const std::string failure = wait_for_address_detection();
  if (failure.empty()) return;
  stop(std::chrono::nanoseconds(0));  // nothing was sent yet: no linger
  throw std::runtime_error(failure);
}

std::string DpdkStack::wait_for_address_detection() {
  // RFC 4862 §5.4: a tentative address is neither a source nor a destination, so until DAD passes
  // (DupAddrDetectTransmits probes RetransTimer apart, then RetransTimer of silence) a connect
  // fails with EADDRNOTAVAIL and a SYN to our listener is dropped. Waiting here, bounded, rather
  // than using the address at once as RFC 4429's Optimistic DAD would: an optimistic address may
  // not answer Neighbor Solicitations with an override nor advertise itself (§3.3), so the peer of
  // an early connect could not resolve us until DAD ended anyway; and every worker runs the stack's
  // loop, so the first connect or listen (on a worker's thread) cannot block there instead.
  if (ipv6_.address.is_unspecified() || ipv6_.dad_transmits <= 0) return "";
  // Thread start-up, timer tick, a loaded machine: the test command runs up to three suites at once,
  // each with busy-polling DPDK processes, on two CPUs (2 s was once exceeded there).
  constexpr auto kMargin = std::chrono::seconds(5);
  const auto bound = ipv6_.nd_retrans_timer * ipv6_.dad_transmits + kMargin;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    std::vector<inet::OwnAddressInfo> tentative, duplicated;
    for (unsigned i = 0; i < num_workers(); ++i) {
      run_on_worker(i, [&](inet::InetStack& inet) {
        for (const inet::OwnAddressInfo& own : inet.addresses().entries()) {
          if (own.state == inet::AddressState::Tentative) tentative.push_back(own);
          if (own.state == inet::AddressState::Duplicated) duplicated.push_back(own);
        }
      });
    }
    for (const inet::OwnAddressInfo& own : duplicated) {
      const std::string by = own.claimed_by.is_zero() ? "another node" : own.claimed_by.to_string();
      if (own.ip == ipv6_.address)
        return "dpdk.host_ipv6: " + own.ip.to_string() + " is already used by " + by +
               " on the link (RFC 4862 Duplicate Address Detection); give this host another address";
      // RFC 4862 §5.4.5: the link-local address comes from the MAC, so the MAC is not unique.
      return "dpdk.hw_addr: the link-local address " + own.ip.to_string() +
             " formed from this port's MAC is already used by " + by +
             " on the link (RFC 4862 §5.4.5: the MAC is not unique there, IPv6 is off); give the port another "
             "dpdk.hw_addr";
    }
    if (tentative.empty()) return "";
    if (std::chrono::steady_clock::now() > deadline)
      return "dpdk.ipv6_dad_transmits: Duplicate Address Detection of " + tentative.front().ip.to_string() +
             " did not end within " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(bound).count()) +
             " ms (" + std::to_string(ipv6_.dad_transmits) + " probes, " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(ipv6_.nd_retrans_timer).count()) +
             " ms apart): a worker is not running";
    pause(std::chrono::milliseconds(10));  // without worker threads the loops run meanwhile
  }
}

NetworkStack::Counters DpdkStack::port_counters() {
  const pmd::PortStats port = ports_->port(0).stats();
  return {{"rx_packets", port.rx_packets}, {"tx_packets", port.tx_packets},
          {"rx_bytes", port.rx_bytes},     {"tx_bytes", port.tx_bytes},
          {"rx_missed", port.rx_missed},   {"rx_errors", port.rx_errors},
          {"tx_errors", port.tx_errors},   {"rx_nombuf", port.rx_nombuf}};
}

NetworkStack::WorkerReport DpdkStack::worker_report(unsigned i) {
  inet::InetStack& inet = dpdk_worker(i).inet();
  WorkerReport report;
  const inet::InetStats& stats = inet.stats();
  for (const inet::InetCounter& counter : inet::kInetCounters)
    report.counters.emplace_back(std::string(counter.name), stats.*(counter.field));
  const auto micros = [](auto d) { return uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(d).count()); };
  for (const inet::ConnectionInfo& c : inet.tcp().connections()) {
    report.sockets.push_back(
        {inet::endpoint_to_string(c.tuple.local_ip, c.tuple.local_port),
         inet::endpoint_to_string(c.tuple.remote_ip, c.tuple.remote_port), inet::to_string(c.state),
         {{"cwnd", c.cwnd}, {"ssthresh", c.ssthresh}, {"mss", c.mss}, {"srtt_us", micros(c.srtt)},
          {"rttvar_us", micros(c.rttvar)}, {"rto_us", micros(c.rto)}, {"retransmits", c.retransmitted_segments},
          {"timeouts", c.timeouts}, {"bytes_in", c.bytes_in}, {"bytes_out", c.bytes_out}}});
  }
  return report;
}

NetworkStack::Counters DpdkStack::transport_counters() {
  Counters out;
  for (auto& [name, value] : port_counters()) out.emplace_back("port_" + name, value);
  // The TCP counters a benchmark reader wants, summed over workers; looked up by name in
  // kInetCounters so the list is all there is to change.
  static constexpr std::string_view kReported[] = {
      "tcp_segments_sent", "tcp_segments_received", "tcp_retransmitted_segments", "tcp_fast_retransmits",
      "tcp_timeouts", "tcp_bad_checksum", "tcp_dropped_out_of_window", "tcp_rst_sent", "tcp_rst_received",
      "tcp_connections_established", "tx_no_route", "tcp_gro_units", "tcp_gro_segments", "tcp_lro_frames",
      "tcp_loss_probes", "tcp_spurious_timeouts", "tcp_pure_acks_sent", "tcp_delayed_acks_sent",
      "tcp_window_updates_sent"};
  std::vector<inet::InetStats> per_worker(num_workers());
  // Where each TCP checksum was computed or verified (which path a benchmark's link took), and
  // frames the device dropped: its TX queue and backlog full, or no mbuf to build them in; and
  // the polls that received anything and the calls that transmitted (port_rx_packets / rx_bursts
  // and port_tx_packets / tx_bursts are the mean bursts), all polls, and the calls a full TX ring
  // refused; then the sums of the queue gauges (QueueGauges).
  std::pair<const char*, uint64_t> device[] = {{"rx_checksum_offloads", 0}, {"rx_checksums_trusted", 0},
                                               {"tx_checksum_offloads", 0}, {"tx_software_checksums", 0},
                                               {"tx_checksums_trusted", 0}, {"tx_queue_full_drops", 0},
                                               {"tx_mbuf_shortages", 0},    {"rx_bursts", 0},
                                               {"tx_bursts", 0},            {"polls", 0},
                                               {"tx_refused_bursts", 0}};
  constexpr size_t kDeviceCounters = 11;
  static_assert(std::size(device) == kDeviceCounters);
  std::pair<std::string_view, uint64_t> gauges[std::size(QueueGauges::kFields)];
  for (size_t g = 0; g < std::size(gauges); ++g) gauges[g] = {QueueGauges::kFields[g].name, 0};
  for (unsigned i = 0; i < num_workers(); ++i) {
    DpdkWorker& worker = dpdk_worker(i);
    worker.center().submit_and_wait([&per_worker, &device, &gauges, &worker, i] {
      per_worker[i] = worker.inet().stats();
      const DpdkDevice& port = worker.device();
      const TxChainCounters& tx = port.tx_counters();
      const uint64_t values[] = {port.rx_checksum_offloads(), port.rx_checksums_trusted(), tx.checksum_offloads,
                                 tx.software_checksums, tx.trusted_checksums, port.tx_dropped(),
                                 port.tx_alloc_failures(), worker.rx_bursts(),
                                 port.tx_bursts(), worker.polls(), port.tx_refused_bursts()};
      static_assert(std::size(values) == kDeviceCounters);
      for (size_t c = 0; c < std::size(device); ++c) device[c].second += values[c];
      for (size_t g = 0; g < std::size(gauges); ++g) gauges[g].second += worker.queue_gauges().*QueueGauges::kFields[g].value;
    });
  }
  for (std::string_view name : kReported) {
    const auto counter = std::find_if(inet::kInetCounters.begin(), inet::kInetCounters.end(),
                                      [name](const inet::InetCounter& c) { return c.name == name; });
    uint64_t total = 0;
    for (const inet::InetStats& stats : per_worker) total += stats.*(counter->field);
    out.emplace_back(std::string(name), total);
  }
  for (const auto& [name, total] : device) out.emplace_back(name, total);
  for (const auto& [name, total] : gauges) out.emplace_back(std::string(name), total);
  return out;
}

std::shared_ptr<NetworkStack> make_dpdk_stack(const config::Config& conf) {
  return std::make_shared<DpdkStack>(conf);
}

size_t DpdkStack::awaiting_acknowledgement(unsigned i) { return dpdk_worker(i).inet().tcp().unacknowledged_connections(); }

void DpdkStack::run_on_worker(unsigned i, const std::function<void(inet::InetStack&)>& work) {
  DpdkWorker& w = dpdk_worker(i);
  w.center().submit_and_wait([&w, &work] { work(w.inet()); });
}

unsigned DpdkStack::worker_for_peer(uint32_t peer_ip) {
  pmd::Port& port = ports_->port(0);
  if (port.workers() <= 1) return 0;
  const uint32_t host = dpdk_worker(0).host_ip();
  return port.steering().worker_for_ipv4_addresses(peer_ip, host);
}

unsigned DpdkStack::worker_for_peer(const inet::Ipv6Address& peer) {
  pmd::Port& port = ports_->port(0);
  const inet::Ipv6Address& host = dpdk_worker(0).host_ipv6();
  if (port.workers() <= 1 || host.is_unspecified()) return 0;
  return port.steering().worker_for_ipv6_addresses(std::span<const uint8_t, 16>(peer.bytes),
                                                   std::span<const uint8_t, 16>(host.bytes));
}

void release_dpdk_ports() {
  SharedPorts& shared = shared_ports();
  std::lock_guard lock(shared.mutex);
  if (shared.ports.use_count() == 1) shared.ports.reset();
}

void register_dpdk_transport(TransportRegistry& registry) { registry.add("dpdk", make_dpdk_stack); }

}  // namespace bypass
