// ARP (RFC 826) for one stack instance: a cache with lifetimes, replies to requests for our
// address, gratuitous announcement at start, and a bounded queue of IPv4 packets waiting for
// resolution (requests are retried; when resolution fails the queue is dropped and counted).
//
// Replication: each worker owns a replica. Whatever this replica learns from the wire is reported
// through the learn hook; the glue forwards it to the other workers, which call learn().
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "stack/inet/device.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/arp.h"

namespace bypass::inet {

// A snapshot of one ARP cache line for diagnostics (bypass-pmd stack arp).
struct ArpEntryInfo {
  enum class State { Reachable, Expired, Incomplete };
  Ipv4Address ip;
  MacAddress mac;         // zero while Incomplete
  State state = State::Incomplete;
  Duration age{0};        // since learned (Reachable, Expired) or since the first request (Incomplete)
  size_t queued_packets = 0;
  int requests_sent = 0;  // Incomplete only
};
const char* to_string(ArpEntryInfo::State state);

class ArpResolver {
 public:
  using LearnHook = std::function<void(Ipv4Address, MacAddress)>;

  ArpResolver(const InetSettings& settings, TimerService& timers, PacketDevice& device,
              InetStats& stats);
  ~ArpResolver();

  // Send an Ethernet frame carrying IPv4 to `next_hop`. `frame` begins with 14 reserved bytes that
  // are filled with the Ethernet header here. Queued while the address is being resolved.
  void send_ipv4(Ipv4Address next_hop, Packet&& frame);
  // A received ARP packet (bytes after the Ethernet header).
  void receive(const BufferList& payload);
  // An ARP packet another worker received and handled (DpdkWorker::share_arp): this replica learns
  // from it as receive() would (RFC 826 merge), but neither answers nor counts it: that worker did,
  // and one request must draw one reply, not one per worker.
  void learn_from_shared(const BufferList& payload);
  // Insert or refresh an entry (from another worker's replica, or a static configuration).
  void learn(Ipv4Address ip, MacAddress mac);
  // Start resolving `ip` without queueing a packet (diagnostics), unless it is cached or already
  // being resolved.
  void resolve(Ipv4Address ip);
  // Gratuitous ARP (RFC 5227 §3 announcement): a request for our own address.
  void announce();

  std::optional<MacAddress> lookup(Ipv4Address ip) const;
  size_t pending_packets() const { return pending_total_; }
  // Resolved and unresolved addresses, ordered by IP. Expired lines stay listed until replaced.
  std::vector<ArpEntryInfo> entries() const;
  void set_learn_hook(LearnHook hook) { learn_hook_ = std::move(hook); }

 private:
  // RFC 826 "Packet Reception" for a parsed packet; `answer`: reply to a request for our address.
  void process(const ArpPacket& arp, bool answer);

  struct Entry {
    MacAddress mac;
    TimePoint learned;
    TimePoint expires;
  };
  struct Pending {
    std::deque<Packet> packets;
    TimePoint first_request;
    int requests_sent = 0;
    TimerService::TimerId retry_timer = 0;
  };

  // Sends the first request for `target` and arms the retries, once per pending line.
  void start_resolution(Ipv4Address target, Pending& pending);
  void send_request(Ipv4Address target);
  void send_arp(uint16_t operation, MacAddress eth_destination, MacAddress target_mac,
                Ipv4Address target_ip);
  void transmit_ipv4(MacAddress destination, Packet&& frame);
  void on_retry(Ipv4Address target);
  void insert(Ipv4Address ip, MacAddress mac, bool from_wire);

  const InetSettings& settings_;
  TimerService& timers_;
  PacketDevice& device_;
  InetStats& stats_;
  std::unordered_map<uint32_t, Entry> cache_;
  std::unordered_map<uint32_t, Pending> pending_;
  size_t pending_total_ = 0;
  LearnHook learn_hook_;
};

}  // namespace bypass::inet
