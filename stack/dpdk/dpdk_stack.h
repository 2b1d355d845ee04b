// The dpdk transport: the userspace TCP/IP stack (stack/inet) on DPDK ports (pmd/).
//
// One pmd::PortSet per stack; worker i polls RX queue i of the port (or its software redirect
// ring) from its PollingDriver's poll hook and owns one InetStack (own connections, timers and
// ARP table). Flows reach their worker through RSS or pmd's software redirect, both keyed by the
// symmetric Toeplitz hash of the 4-tuple, so outgoing connections pick local ports whose hash maps
// back to the connecting worker, and every worker listens (listen_per_worker()).
#pragma once

#include <array>
#include <chrono>
#include <functional>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "pmd/pmd.h"
#include "stack/dpdk/dpdk_device.h"
#include "stack/dpdk/queue_gauges.h"
#include "stack/dpdk/stack_flows.h"
#include "stack/inet/inet_stack.h"
#include "stack/dpdk/event_center_timer_service.h"
#include "stack/network_stack.h"
#include "stack/transport_registry.h"

namespace bypass {

// Ports listened on by one worker only. With software steering (pmd's redirect rings) every
// packet to such a port goes to that worker, whatever its 4-tuple hash says.
class SingleListenerTable {
 public:
  static constexpr uint8_t kNone = 0;
  void set(uint16_t port, unsigned worker) { owner_[port].store(static_cast<uint8_t>(worker + 1), std::memory_order_release); }
  void clear(uint16_t port) { owner_[port].store(kNone, std::memory_order_release); }
  // Worker + 1, or kNone.
  uint8_t owner_plus_one(uint16_t port) const { return owner_[port].load(std::memory_order_acquire); }

 private:
  std::array<std::atomic<uint8_t>, 65536> owner_{};
};

class DpdkWorker final : public Worker {
 public:
  DpdkWorker(unsigned id, pmd::Port& port, inet::MacAddress mac, const inet::InetSettings& settings,
             uint64_t secret_seed, const TxChainOptions& tx = {},
             std::chrono::nanoseconds idle_sleep = std::chrono::milliseconds(1));
  ~DpdkWorker() override;

  int listen(const SocketAddress& addr, const ListenOptions& lopts, const SocketOptions& sopts,
             ServerSocket* out) override;
  int connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) override;
  void on_thread_start() override;
  void on_thread_stop() override;

  // Workers that receive a copy of every ARP frame this worker polls (each InetStack keeps its
  // own ARP table, and a reply lands on whichever queue the peer picked).
  void set_siblings(std::vector<DpdkWorker*> siblings) { siblings_ = std::move(siblings); }

  PollingDriver& driver() { return static_cast<PollingDriver&>(center().driver()); }
  inet::InetStack& inet() { return *inet_; }
  DpdkDevice& device() { return device_; }
  // Polls that received at least one frame (worker thread).
  uint64_t rx_bursts() const { return rx_bursts_; }
  // Every poll, with frames or not (rx_bursts / polls is the share that found work).
  uint64_t polls() const { return polls_; }
  // Queue occupancy sampled every 100 ms (worker thread).
  const QueueGauges& queue_gauges() const { return gauges_; }
  uint32_t host_ip() const { return settings_.address.value; }
  const inet::Ipv6Address& host_ipv6() const { return settings_.ipv6.address; }  // unspecified: IPv6 off
  int inject_socket_failures() const { return inject_socket_failures_; }
  void set_inject_socket_failures(int every) { inject_socket_failures_ = every; }
  // Distinct per worker and socket, the same from run to run (a failing sequence replays).
  uint64_t next_socket_seed() { return (uint64_t{id()} << 32) + ++socket_serial_; }
  // Steering of listeners that only one worker serves (ListenOptions::reuse_port false).
  void set_single_listeners(SingleListenerTable* table) { single_listeners_ = table; }

 private:
  int poll();
  void share_arp(const inet::Packet& frame);
  // Runs `apply` on every sibling's stack, on the sibling's own thread: the replication of ARP and
  // Neighbor Discovery state, which is rare, so the dispatch's allocation does not matter.
  template <typename Apply>
  void on_siblings(const Apply& apply);
  // Our own addresses map to our MAC, so a looped port (net_ring) reaches this stack itself.
  void learn_own_addresses();
  void sample_queues();

  pmd::Port& port_;
  inet::InetSettings settings_;
  DpdkDevice device_;
  EventCenterTimerService timers_;
  std::unique_ptr<inet::InetStack> inet_;
  std::vector<DpdkWorker*> siblings_;
  EventCenter::TimerId tick_ = 0;
  uint64_t ticks_ = 0;
  uint64_t rx_bursts_ = 0;
  uint64_t polls_ = 0;
  QueueGauges gauges_;
  int inject_socket_failures_ = 0;
  uint64_t socket_serial_ = 0;
  SingleListenerTable* single_listeners_ = nullptr;
  bool thread_registered_ = false;  // on_thread_start registered its thread with EAL
  unsigned registered_lcore_ = 0;   // the lcore id that registration gave
};

class DpdkStack final : public NetworkStack {
 public:
  explicit DpdkStack(const config::Config& conf);
  ~DpdkStack() override;
  // Starts the workers and, with IPv6 and Duplicate Address Detection on, returns once every
  // worker's addresses passed DAD (RFC 4862 §5.4: about dpdk.ipv6_dad_transmits x RetransTimer),
  // so a connect or listen right after start finds them usable. Throws std::runtime_error naming
  // the option when an address turned out to be another node's (the workers are stopped then).
  void start() override;
  bool listen_per_worker() const override { return true; }
  pmd::PortSet& ports() { return *ports_; }
  // Port packets/bytes/drops and the main TCP/IP counters summed over workers (read on each
  // worker's thread: InetStats are plain fields).
  Counters transport_counters() override;
  // Every InetStats counter of worker i and its TCP connections (on that worker's thread).
  WorkerReport worker_report(unsigned i) override;
  Counters port_counters() override;
  DpdkWorker& dpdk_worker(unsigned i) { return static_cast<DpdkWorker&>(*worker(i)); }
  // Runs `work` with worker i's InetStack on that worker's thread and waits for it: the inet
  // objects (ARP table, connections, echo requests) may only be touched there. Once started.
  void run_on_worker(unsigned i, const std::function<void(inet::InetStack&)>& work);
  // The worker that receives IPv4 datagrams without ports (ICMP) from `peer_ip` (host order):
  // RSS and pmd's software steering hash such packets on the two addresses only.
  unsigned worker_for_peer(uint32_t peer_ip);
  // The same for IPv6 datagrams without ports (ICMPv6, Neighbor Discovery) from `peer` to our
  // dpdk.host_ipv6 (worker 0 when IPv6 is off).
  unsigned worker_for_peer(const inet::Ipv6Address& peer);
  // The rte_flow rules claiming this stack's traffic (dpdk.flow_isolate), or null.
  const StackFlowRules* flow_rules() const { return flow_rules_.get(); }

 protected:
  // Worker i's TCP connections whose data or FIN the peer has not acknowledged: stop() lingers for
  // them, since nothing sends them once the process stops (no kernel finishes a userspace close).
  size_t awaiting_acknowledgement(unsigned i) override;

 private:
  // Empty once no worker's IPv6 address is tentative; otherwise why not (an address duplicated,
  // or DAD unfinished within its bound).
  std::string wait_for_address_detection();

  inet::Ipv6Settings ipv6_;  // as configured (unspecified address: IPv6 off)
  std::shared_ptr<pmd::PortSet> ports_;
  std::unique_ptr<SingleListenerTable> single_listeners_;
  std::unique_ptr<std::pair<pmd::Port*, SingleListenerTable*>> steering_context_;
  std::unique_ptr<StackFlowRules> flow_rules_;  // removed before the port may close
};

// The stack's settings from dpdk.host_ip (required), netmask, gateway, the IPv6 options below and
// tcp.*; throws std::runtime_error naming the option and its bad value.
inet::InetSettings dpdk_inet_settings(const config::Config& conf);
// settings.ipv6 from dpdk.host_ipv6 (empty: IPv6 off), dpdk.ipv6_prefix_length and
// dpdk.gateway_ipv6; refuses a host address that is not unicast and a gateway Neighbor Discovery
// could not reach (neither link-local nor on the prefix). Throws std::runtime_error.
void apply_dpdk_ipv6_options(const config::Config& conf, inet::InetSettings& settings);

// Reads the dpdk.* options (dpdk.host_ip is required) and tcp.*; throws std::runtime_error with
// the option name when the transport cannot run (no port, no memory, bad address).
std::shared_ptr<NetworkStack> make_dpdk_stack(const config::Config& conf);
// Registers make_dpdk_stack as ms.type=dpdk (called from the generated compiled_transports.cc).
void register_dpdk_transport(TransportRegistry& registry);

// Closes the process's DPDK port set (kept open for later stacks, see SharedPorts) once no stack
// uses it any more; a tool calls it before pmd::stop_eal() so that exit frees every port and pool.
void release_dpdk_ports();

}  // namespace bypass
