// Neighbor Discovery address resolution and unreachability detection (RFC 4861 §7) for one stack
// instance: IPv6's ARP. A neighbour cache whose lines go through the reachability states of §7.3.2,
// Neighbor Solicitations to the target's solicited-node group to resolve an address (§7.2.2),
// solicited Neighbor Advertisements in answer to solicitations for our address (§7.2.4), cache
// updates from advertisements (§7.2.5) and from the source link-layer option of solicitations
// (§7.2.3), and a bounded queue of IPv6 packets waiting for resolution.
//
// Our own addresses (RFC 4862 Duplicate Address Detection, RFC 6724 source selection) are the
// address set's (ipv6_address_set.h): this cache asks it whether a target is ours and which source
// to solicit from, and hands it the solicitations and advertisements about our addresses.
//
// Shaped like ArpResolver so the two can later share their pending-queue and replication code.
// Replication: each worker owns a replica. What this replica learns from the wire is reported
// through the learn hook; the glue forwards it to the other workers, which call learn().
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "stack/inet/device.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ipv6_address_set.h"
#include "stack/inet/nd_frames.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

// RFC 4861 §7.3.2. REACHABLE turns STALE when its ReachableTime has passed; that is decided when
// the line is next looked at, so no timer runs per reachable neighbour.
enum class NeighborState : uint8_t { Incomplete, Reachable, Stale, Delay, Probe };
const char* to_string(NeighborState state);

// A snapshot of one cache line for diagnostics and tests.
struct NeighborEntryInfo {
  Ipv6Address ip;
  MacAddress mac;  // zero while Incomplete
  NeighborState state = NeighborState::Incomplete;
  size_t queued_packets = 0;
  int solicitations_sent = 0;  // in the current Incomplete or Probe phase
};

class NeighborCache {
 public:
  // `reachable`: the other replicas may enter the line as REACHABLE (a solicited advertisement
  // confirmed it), otherwise as STALE.
  using LearnHook = std::function<void(const Ipv6Address&, MacAddress, bool reachable)>;

  NeighborCache(const InetSettings& settings, TimerService& timers, PacketDevice& device, Ipv6AddressSet& addresses,
                InetStats& stats);
  ~NeighborCache();
  NeighborCache(const NeighborCache&) = delete;
  NeighborCache& operator=(const NeighborCache&) = delete;

  // Sends an Ethernet frame carrying IPv6 to `next_hop`. `frame` begins with 14 reserved bytes
  // that are filled with the Ethernet header here. A multicast next hop maps straight to its
  // Ethernet group (RFC 2464 §7); a unicast one is resolved first, the frame queued meanwhile.
  void send_ipv6(const Ipv6Address& next_hop, Packet&& frame);
  // A Neighbor Solicitation or Advertisement addressed to us: `ip` the carrying header, `message`
  // the whole ICMPv6 message, its checksum already verified (Icmpv6Header::parse), `link_source`
  // the Ethernet source of its frame (zero when unknown): the only trace of who probes with a
  // solicitation from ::.
  void receive_solicitation(const Ipv6Header& ip, const BufferList& message, const MacAddress& link_source = {});
  void receive_advertisement(const Ipv6Header& ip, const BufferList& message, const MacAddress& link_source = {});
  // Upper-layer reachability confirmation (RFC 4861 §7.3.1): e.g. TCP saw new data acknowledged.
  void confirm_reachable(const Ipv6Address& ip);
  // Inserts or refreshes a line from another worker's replica or a static configuration.
  void learn(const Ipv6Address& ip, MacAddress mac, bool reachable);
  // What of a Neighbor Advertisement updates a cache line (RFC 4861 §7.2.5).
  struct Advertisement {
    Ipv6Address target;
    std::optional<MacAddress> link_layer;  // the Target Link-Layer Address option
    bool solicited = false;
    bool override_flag = false;
  };
  // Replication of advertisements: the answer to one replica's solicitation reaches whichever
  // worker the port puts it on. A replica with no line for the target discards it (§7.2.5), so it
  // reports it through this hook instead of learning it, and the glue has the other replicas call
  // learn_advertisement(): the one that asked completes its INCOMPLETE line.
  using AdvertisementHook = std::function<void(const Advertisement&)>;
  void set_unmatched_advertisement_hook(AdvertisementHook hook) { unmatched_advertisement_hook_ = std::move(hook); }
  // An advertisement another replica had no line for: applied by the rules of §7.2.5 if this
  // replica has a line for the target (typically INCOMPLETE: solicited -> REACHABLE, else STALE),
  // ignored otherwise (§7.2.5: an advertisement creates no line). Calls no hook back.
  void learn_advertisement(const Advertisement& advertisement);

  std::optional<NeighborState> state(const Ipv6Address& ip) const;
  std::optional<MacAddress> lookup(const Ipv6Address& ip) const;
  size_t pending_packets() const { return pending_total_; }
  std::vector<NeighborEntryInfo> entries() const;  // ordered by address
  void set_learn_hook(LearnHook hook) { learn_hook_ = std::move(hook); }

  // The largest ND message handled: a solicitation or advertisement is 24 bytes and carries one or
  // two 8-byte options; anything up to the Ethernet MTU is read, longer ones are counted and dropped.
  static constexpr size_t kMaxMessage = 1500 - Ipv6Header::kLength;

 private:
  struct Entry {
    NeighborState state = NeighborState::Incomplete;
    MacAddress mac;
    TimePoint reachable_until{0};
    int solicitations_sent = 0;
    TimerService::TimerId timer = 0;  // retransmission (Incomplete, Probe) or first probe (Delay)
    std::deque<Packet> pending;       // Incomplete only
  };
  using Cache = std::map<Ipv6Address, Entry>;

  // REACHABLE past its ReachableTime reads as STALE (§7.3.3 "ReachableTime milliseconds have
  // passed"); applied when a line is used.
  NeighborState current_state(const Entry& entry) const;
  void transmit(MacAddress destination, Packet&& frame) {
    transmit_ipv6_frame(device_, stats_, destination, std::move(frame));
  }
  void queue(Entry& entry, Packet&& frame);
  void start_resolution(const Ipv6Address& target, Entry& entry);
  void on_timer(Ipv6Address target);
  // `source` one of our preferred addresses (RFC 4861 §7.2.2).
  void send_solicitation(const Ipv6Address& source, const Ipv6Address& target, std::optional<MacAddress> unicast_to);
  // The source of a solicitation resolving `entry` (§7.2.2): the source of the packet that prompted
  // it when that is ours, else the one source_for() picks; :: when none is usable.
  Ipv6Address solicitation_source(const Ipv6Address& target, const Entry& entry) const;
  // Advertises our address `target`, from it. To `link_layer` when given, else through the cache
  // like any packet.
  void send_advertisement(const Ipv6Address& target, const Ipv6Address& destination, bool solicited,
                          std::optional<MacAddress> link_layer);
  // Updates the line `it` from an advertisement (RFC 4861 §7.2.5); whether the other replicas
  // should learn the result (the line was completed, confirmed or given a new address).
  bool apply_advertisement(Cache::iterator it, const Advertisement& advertisement);
  // Records `mac` for `ip` in `state` and, for a line that was Incomplete, sends what waited.
  void set_link_layer(Cache::iterator it, MacAddress mac, NeighborState state);
  // Enters `state`, cancelling the previous state's timer and arming the new one's.
  void set_state(Cache::iterator it, NeighborState state);
  // A new line for `ip`, or end() when the cache is full (counted).
  Cache::iterator create_line(const Ipv6Address& ip);
  void drop_line(Cache::iterator it);
  const InetSettings& settings_;
  TimerService& timers_;
  PacketDevice& device_;
  Ipv6AddressSet& addresses_;
  InetStats& stats_;
  Cache cache_;
  size_t pending_total_ = 0;
  LearnHook learn_hook_;
  AdvertisementHook unmatched_advertisement_hook_;
};

}  // namespace bypass::inet
