// Neighbor Discovery address resolution and unreachability detection (RFC 4861 §7) for one stack
// instance: IPv6's ARP. A neighbour cache whose lines go through the reachability states of §7.3.2,
// Neighbor Solicitations to the target's solicited-node group to resolve an address (§7.2.2),
// solicited Neighbor Advertisements in answer to solicitations for our address (§7.2.4), cache
// updates from advertisements (§7.2.5) and from the source link-layer option of solicitations
// (§7.2.3), and a bounded queue of IPv6 packets waiting for resolution.
//
// It also keeps our own addresses (RFC 4862): a link-local address formed from the MAC (RFC 4291
// §2.5.6, Appendix A) besides the configured one, each tentative until Duplicate Address Detection
// (§5.4) finds it unique, and the source address chosen for a destination (RFC 6724, simplified).
//
// Shaped like ArpResolver so the two can later share their pending-queue and replication code.
// Replication: each worker owns a replica. What this replica learns from the wire is reported
// through the learn hook; the glue forwards it to the other workers, which call learn().
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "stack/inet/device.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

// RFC 4861 §7.3.2. REACHABLE turns STALE when its ReachableTime has passed; that is decided when
// the line is next looked at, so no timer runs per reachable neighbour.
enum class NeighborState : uint8_t { Incomplete, Reachable, Stale, Delay, Probe };
const char* to_string(NeighborState state);

// RFC 4862 §5.4, §5.5.4: an address of ours is tentative while Duplicate Address Detection runs
// (not used as a source, packets to it dropped but for Neighbor Discovery), preferred once it
// passed (usable), and duplicated when another node turned out to use it (never used).
enum class AddressState : uint8_t { Tentative, Preferred, Duplicated };
const char* to_string(AddressState state);

// The link-local address (RFC 4291 §2.5.6: fe80::/64) whose interface identifier is the modified
// EUI-64 of `mac` (RFC 4291 Appendix A, RFC 2464 §4): ff:fe inserted between the MAC's third and
// fourth octets and the universal/local bit (0x02 of the first octet) inverted.
//
// Why EUI-64 and not RFC 7217's stable opaque identifiers: every worker's stack instance derives
// the same address from the port's MAC with nothing to share or keep (7217 needs a secret key that
// survives restarts), and a link-local address never leaves the link, where the MAC it reveals is
// on every frame anyway; RFC 8064's tracking concern is about addresses seen beyond the link.
Ipv6Address link_local_address(const MacAddress& mac);

// One of our addresses, for diagnostics, tools and tests.
struct OwnAddressInfo {
  Ipv6Address ip;
  AddressState state = AddressState::Tentative;
  int dad_solicitations_sent = 0;
  MacAddress claimed_by;  // who made it Duplicated, when known (zero otherwise)
};

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

  NeighborCache(const InetSettings& settings, TimerService& timers, PacketDevice& device, InetStats& stats);
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
  // Starts Duplicate Address Detection (RFC 4862 §5.4) of our tentative addresses; each one that
  // passes is announced with an unsolicited Neighbor Advertisement to all-nodes (RFC 4861 §7.2.6,
  // the counterpart of a gratuitous ARP: neighbours holding a line for us update it), never before
  // (RFC 4862 §5.4: a tentative address is not advertised). With dad_transmits 0 the addresses
  // are preferred already and announced at once. Later calls do nothing.
  void start_duplicate_address_detection();

  // Our addresses: the link-local one first, then the configured one (when it is not the same).
  // None while IPv6 is off (no configured address).
  std::vector<OwnAddressInfo> addresses() const;
  const Ipv6Address& link_local() const { return own_[0].ip; }
  // The state of `ip` if it is one of our addresses.
  std::optional<AddressState> address_state(const Ipv6Address& ip) const;
  // Whether `ip` is ours and usable: preferred, and IPv6 not disabled.
  bool is_preferred(const Ipv6Address& ip) const;
  // Whether packets to `group` are received: all-nodes and the solicited-node group of each address
  // not duplicated (tentative ones too: RFC 4862 §5.4.2 joins it before probing, to hear other
  // nodes' probes for the same address).
  bool listens_to(const Ipv6Address& group) const;
  // The same for the Ethernet group (RFC 2464 §7) of a frame's destination.
  bool listens_to(const MacAddress& group) const;
  // The source address for a packet to `destination` (RFC 6724 §5, simplified to our two
  // addresses): the link-local one for a link-scope destination (rule 2, appropriate scope), the
  // configured one otherwise; :: when no suitable address is preferred.
  Ipv6Address source_for(const Ipv6Address& destination) const;
  // RFC 4862 §5.4.5: the MAC-derived link-local address was duplicated, so our MAC is not unique on
  // the link and IPv6 is off on it: no address is usable.
  bool ipv6_disabled() const { return disabled_; }
  // Replication of DAD results: the evidence of a duplicate (one frame) reaches one worker's queue
  // only, so this replica reports what it found through the hook and the glue has the other
  // workers' replicas call learn_duplicate(). (Each replica runs its own DAD; without the hook the
  // others would keep using the address.)
  using DuplicateHook = std::function<void(const Ipv6Address&, MacAddress claimed_by)>;
  void set_duplicate_hook(DuplicateHook hook) { duplicate_hook_ = std::move(hook); }
  // Another replica found `ip`, one of ours, duplicated: the same here, whatever its state (one
  // worker using an address the others gave up would split the host), neither logged nor counted
  // again. Not one of ours: ignored.
  void learn_duplicate(const Ipv6Address& ip, MacAddress claimed_by);
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
  void transmit(MacAddress destination, Packet&& frame);
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
  // An Ethernet + IPv6 frame from `source` to `destination` with hop limit 255 (§7.1) and room for
  // an ICMPv6 message of `icmp_length` bytes, which `message` points at on return.
  Packet nd_frame(const Ipv6Address& source, const Ipv6Address& destination, size_t icmp_length,
                  uint8_t*& message) const;

  // One of our addresses and its Duplicate Address Detection (RFC 4862 §5.4).
  struct OwnAddress {
    Ipv6Address ip;
    AddressState state = AddressState::Tentative;
    int dad_sent = 0;
    TimerService::TimerId timer = 0;  // next probe, or the end of detection
    MacAddress claimed_by;
    bool conflict_logged = false;  // a preferred address advertised by another node: logged once
  };
  OwnAddress* find_own(const Ipv6Address& ip);
  const OwnAddress* find_own(const Ipv6Address& ip) const;
  void send_dad_solicitation(OwnAddress& own);
  void on_dad_timer(size_t index);
  // Another node uses `own` (RFC 4862 §5.4.5): never used, logged once, counted, reported through
  // the duplicate hook. `evidence` null: learned from another replica, none of that.
  void address_duplicated(OwnAddress& own, const MacAddress& claimed_by, const char* evidence);

  const InetSettings& settings_;
  TimerService& timers_;
  PacketDevice& device_;
  InetStats& stats_;
  Cache cache_;
  size_t pending_total_ = 0;
  LearnHook learn_hook_;
  AdvertisementHook unmatched_advertisement_hook_;
  // [0] the link-local address, [1] the configured one; own_count_ of them are in use (0: IPv6 off).
  std::array<OwnAddress, 2> own_;
  size_t own_count_ = 0;
  DuplicateHook duplicate_hook_;
  bool dad_started_ = false;
  bool disabled_ = false;
};

}  // namespace bypass::inet
