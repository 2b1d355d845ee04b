// The host's own IPv6 addresses on one stack instance (RFC 4862): a link-local address formed from
// the MAC (RFC 4291 §2.5.6, Appendix A) besides the configured one, each tentative until Duplicate
// Address Detection (§5.4) finds it unique, then announced and preferred; the Neighbor Discovery
// groups they listen to (RFC 4291 §2.7.1); and the source address chosen for a destination
// (RFC 6724, simplified to these two).
//
// Neighbor Discovery messages about our addresses reach it through the neighbour cache, which
// parses them; its probes and announcements leave through nd_frames.h.
//
// Replication: each worker owns a replica and runs its own DAD. A duplicate this replica finds is
// reported through the duplicate hook; the glue forwards it to the other workers, which call
// learn_duplicate().
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <vector>

#include "stack/inet/device.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

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

class Ipv6AddressSet {
 public:
  // IPv6 on (settings.ipv6.address set): the link-local address and the configured one, tentative
  // (or preferred at once with dad_transmits 0). IPv6 off: no address.
  Ipv6AddressSet(const InetSettings& settings, TimerService& timers, PacketDevice& device, InetStats& stats);
  ~Ipv6AddressSet();
  Ipv6AddressSet(const Ipv6AddressSet&) = delete;
  Ipv6AddressSet& operator=(const Ipv6AddressSet&) = delete;

  // Starts Duplicate Address Detection (RFC 4862 §5.4) of our tentative addresses; each one that
  // passes is announced with an unsolicited Neighbor Advertisement to all-nodes (RFC 4861 §7.2.6,
  // the counterpart of a gratuitous ARP: neighbours holding a line for us update it), never before
  // (RFC 4862 §5.4: a tentative address is not advertised). With dad_transmits 0 the addresses
  // are preferred already and announced at once. Later calls do nothing.
  void start_duplicate_address_detection();

  // Our addresses: the link-local one first, then the configured one (when it is not the same).
  // None while IPv6 is off (no configured address).
  std::vector<OwnAddressInfo> entries() const;
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

  // Neighbor Discovery input about our addresses, from the neighbour cache once it has parsed and
  // validated the message. A solicitation for `target`: true when `target` is one of our tentative
  // addresses, the solicitation then being Duplicate Address Detection's alone (RFC 4862 §5.4.3);
  // `link_source` is the Ethernet source of its frame (zero when unknown).
  bool receive_solicitation_for_tentative(const Ipv6Address& target, const Ipv6Address& source,
                                          const MacAddress& link_source);
  // An advertisement for `target`: true when `target` is one of ours, the advertisement then being
  // evidence for or against it (RFC 4862 §5.4.4) and nothing for the neighbour cache.
  bool receive_advertisement_for_own(const Ipv6Address& target, const std::optional<MacAddress>& target_link_layer,
                                     const MacAddress& link_source);

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

 private:
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
  // The unsolicited advertisement of `ip` to all-nodes (RFC 4861 §7.2.6), from `ip` itself.
  void announce(const Ipv6Address& ip);
  void on_dad_timer(size_t index);
  // Another node uses `own` (RFC 4862 §5.4.5): never used, logged once, counted, reported through
  // the duplicate hook. `evidence` null: learned from another replica, none of that.
  void address_duplicated(OwnAddress& own, const MacAddress& claimed_by, const char* evidence);

  const InetSettings& settings_;
  TimerService& timers_;
  PacketDevice& device_;
  InetStats& stats_;
  // [0] the link-local address, [1] the configured one; own_count_ of them are in use (0: IPv6 off).
  std::array<OwnAddress, 2> own_;
  size_t own_count_ = 0;
  DuplicateHook duplicate_hook_;
  bool dad_started_ = false;
  bool disabled_ = false;
};

}  // namespace bypass::inet
