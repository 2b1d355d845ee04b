#include "stack/inet/ipv6_address_set.h"

#include "base/log.h"
#include "stack/inet/nd_frames.h"

namespace bypass::inet {

const char* to_string(AddressState state) {
  switch (state) {
    case AddressState::Tentative: return "tentative";
    case AddressState::Preferred: return "preferred";
    case AddressState::Duplicated: return "duplicated";
  }
  return "?";
}

Ipv6Address link_local_address(const MacAddress& mac) {
  Ipv6Address a{{0xfe, 0x80}};
  a.bytes[8] = static_cast<uint8_t>(mac.bytes[0] ^ 0x02);  // RFC 4291 Appendix A: the "u" bit inverted
  a.bytes[9] = mac.bytes[1];
  a.bytes[10] = mac.bytes[2];
  a.bytes[11] = 0xff;
  a.bytes[12] = 0xfe;
  a.bytes[13] = mac.bytes[3];
  a.bytes[14] = mac.bytes[4];
  a.bytes[15] = mac.bytes[5];
  return a;
}

Ipv6AddressSet::Ipv6AddressSet(const InetSettings& settings, TimerService& timers, PacketDevice& device,
                               InetStats& stats)
    : settings_(settings), timers_(timers), device_(device), stats_(stats) {
  // IPv6 on: the link-local address every interface has (RFC 4291 §2.1, §2.5.6) and the
  // configured one, unless that is the same. Tentative until Duplicate Address Detection passes,
  // or preferred at once without it (RFC 4862 §5.4: DupAddrDetectTransmits 0).
  if (settings_.ipv6.address.is_unspecified()) return;
  const AddressState initial = settings_.ipv6.dad_transmits > 0 ? AddressState::Tentative : AddressState::Preferred;
  own_[0].ip = link_local_address(device_.mac());
  own_[0].state = initial;
  own_count_ = 1;
  if (settings_.ipv6.address != own_[0].ip) {
    own_[1].ip = settings_.ipv6.address;
    own_[1].state = initial;
    own_count_ = 2;
  }
}

Ipv6AddressSet::~Ipv6AddressSet() {
  for (OwnAddress& own : own_)
    if (own.timer) timers_.cancel(own.timer);
}

Ipv6AddressSet::OwnAddress* Ipv6AddressSet::find_own(const Ipv6Address& ip) {
  for (size_t i = 0; i < own_count_; ++i)
    if (own_[i].ip == ip) return &own_[i];
  return nullptr;
}

const Ipv6AddressSet::OwnAddress* Ipv6AddressSet::find_own(const Ipv6Address& ip) const {
  return const_cast<Ipv6AddressSet*>(this)->find_own(ip);
}

std::vector<OwnAddressInfo> Ipv6AddressSet::entries() const {
  std::vector<OwnAddressInfo> out;
  for (size_t i = 0; i < own_count_; ++i) out.push_back({own_[i].ip, own_[i].state, own_[i].dad_sent, own_[i].claimed_by});
  return out;
}

std::optional<AddressState> Ipv6AddressSet::address_state(const Ipv6Address& ip) const {
  const OwnAddress* own = find_own(ip);
  if (!own) return std::nullopt;
  return own->state;
}

bool Ipv6AddressSet::is_preferred(const Ipv6Address& ip) const {
  const OwnAddress* own = find_own(ip);
  return own && own->state == AddressState::Preferred && !disabled_;
}

bool Ipv6AddressSet::listens_to(const Ipv6Address& group) const {
  if (disabled_) return false;
  bool any = false;
  for (size_t i = 0; i < own_count_; ++i) {
    if (own_[i].state == AddressState::Duplicated) continue;  // its group left with it
    if (group == own_[i].ip.solicited_node_multicast()) return true;
    any = true;
  }
  return any && group == Ipv6Address::all_nodes();
}

bool Ipv6AddressSet::listens_to(const MacAddress& group) const {
  if (disabled_) return false;
  bool any = false;
  for (size_t i = 0; i < own_count_; ++i) {
    if (own_[i].state == AddressState::Duplicated) continue;
    if (group == own_[i].ip.solicited_node_multicast().multicast_mac()) return true;
    any = true;
  }
  return any && group == Ipv6Address::all_nodes().multicast_mac();
}

Ipv6Address Ipv6AddressSet::source_for(const Ipv6Address& destination) const {
  // RFC 6724 §5 with two candidates. Rule 2 (prefer appropriate scope): a link-local or link-scope
  // multicast destination (ff01::/16, ff02::/16; RFC 4291 §2.7 scope 1, 2) gets the link-local
  // source, anything wider the configured address. Only usable (preferred) addresses are
  // candidates (rule 3 and RFC 4862 §5.4: never a tentative or duplicated one). A link-scope
  // destination may fall back to the configured address, which reaches the link as well; a wider
  // one may not fall back to the link-local address, which no router forwards (RFC 4291 §2.5.6).
  const bool link_scope = destination.is_link_local_unicast() ||
                          (destination.is_multicast() && (destination.bytes[1] & 0x0f) <= 2);
  const Ipv6Address& link_local = own_[0].ip;
  const Ipv6Address& configured = own_count_ > 1 ? own_[1].ip : own_[0].ip;
  if (link_scope && is_preferred(link_local)) return link_local;
  if (is_preferred(configured)) return configured;
  return {};
}

void Ipv6AddressSet::start_duplicate_address_detection() {
  if (dad_started_) return;
  dad_started_ = true;
  // RFC 4862 §5.4.2 would have the first probe after interface initialisation delayed by a random
  // 0 to MAX_RTR_SOLICITATION_DELAY (1 s), a SHOULD against the storm of many hosts powered up
  // together. Not done: this stack starts with its process, not with the link, and a random delay
  // would make start-up non-deterministic for the virtual-time tests.
  for (size_t i = 0; i < own_count_; ++i) {
    OwnAddress& own = own_[i];
    if (own.state == AddressState::Preferred) {
      announce(own.ip);
      continue;
    }
    if (own.state != AddressState::Tentative) continue;
    // Book-keeping first, as in NeighborCache::start_resolution(): the answer may arrive before
    // transmit returns.
    own.timer = timers_.schedule(settings_.ipv6.nd_retrans_timer, [this, i] { on_dad_timer(i); });
    send_dad_solicitation(own);
  }
}

void Ipv6AddressSet::send_dad_solicitation(OwnAddress& own) {
  // RFC 4862 §5.4.2: from :: (the address is not ours yet, and a neighbour must not cache anything
  // for it), to the address's solicited-node group, target the tentative address, and no Source
  // Link-Layer Address option (RFC 4861 §7.1.1 forbids one from ::). Hop limit 255 as every ND
  // message.
  NeighborSolicitation ns;
  ns.target = own.ip;
  const Ipv6Address destination = own.ip.solicited_node_multicast();
  Packet frame = nd_frame(Ipv6Address{}, destination, ns);
  ++own.dad_sent;
  ++stats_.ipv6_dad_solicitations_sent;
  transmit_ipv6_frame(device_, stats_, destination.multicast_mac(), std::move(frame));
}

void Ipv6AddressSet::announce(const Ipv6Address& ip) {
  Packet frame = nd_frame(ip, Ipv6Address::all_nodes(), advertisement_of_ours(ip, device_.mac(), false));
  ++stats_.nd_advertisements_sent;
  transmit_ipv6_frame(device_, stats_, Ipv6Address::all_nodes().multicast_mac(), std::move(frame));
}

void Ipv6AddressSet::on_dad_timer(size_t index) {
  OwnAddress& own = own_[index];
  own.timer = 0;
  if (own.state != AddressState::Tentative || disabled_) return;
  // RFC 4862 §5.4.2: DupAddrDetectTransmits solicitations RetransTimer apart; RetransTimer after
  // the last one without a conflict, the address is unique (§5.4.3, §5.4.4 found nothing).
  if (own.dad_sent < settings_.ipv6.dad_transmits) {
    own.timer = timers_.schedule(settings_.ipv6.nd_retrans_timer, [this, index] { on_dad_timer(index); });
    return send_dad_solicitation(own);
  }
  own.state = AddressState::Preferred;
  BYPASS_LOG(Info, "nd", "%s passed duplicate address detection", own.ip.to_string().c_str());
  announce(own.ip);
}

void Ipv6AddressSet::address_duplicated(OwnAddress& own, const MacAddress& claimed_by, const char* evidence) {
  // RFC 4862 §5.4.5: the address is not assigned and a system management error is logged; it
  // stays out of use (no retry: §5.4.5 leaves recovery to manual intervention). Linux does the
  // same by default (accept_dad=1): the address stays in the "dadfailed" state, unused, and the
  // interface carries on with its other addresses. So here: a duplicated configured address leaves
  // only link-local IPv6 (so IPv4-only for anything beyond the link), a duplicated link-local one
  // takes IPv6 down, below.
  if (own.timer) timers_.cancel(own.timer);
  own.timer = 0;
  own.state = AddressState::Duplicated;
  own.claimed_by = claimed_by;
  if (evidence) {
    ++stats_.ipv6_dad_duplicates;
    const std::string by =
        claimed_by.is_zero() ? std::string("an unknown link-layer address") : claimed_by.to_string();
    BYPASS_LOG(Error, "nd", "duplicate address: %s is already used by %s on the link (%s); it will not be used",
               own.ip.to_string().c_str(), by.c_str(), evidence);
  }
  const bool link_local = &own == &own_[0];
  // Reported before IPv6 may go down below: `own` stays valid (it lives in own_).
  if (evidence && duplicate_hook_) duplicate_hook_(own.ip, claimed_by);
  if (link_local) {
    // §5.4.5: a duplicated link-local address formed from the hardware address means the MAC is
    // not unique on the link, and IP operation on the interface SHOULD be disabled (Linux does so
    // with accept_dad=2): no address of ours is used, no IPv6 packet received. IPv4 carries on.
    disabled_ = true;
    for (size_t i = 0; i < own_count_; ++i) {
      if (own_[i].timer) timers_.cancel(own_[i].timer);
      own_[i].timer = 0;
    }
    if (evidence)
      BYPASS_LOG(Error, "nd", "IPv6 disabled: our link-local address, formed from MAC %s, is not unique (RFC 4862 §5.4.5)",
                 device_.mac().to_string().c_str());
  }
}

void Ipv6AddressSet::learn_duplicate(const Ipv6Address& ip, MacAddress claimed_by) {
  OwnAddress* own = find_own(ip);
  if (!own || own->state == AddressState::Duplicated) return;
  address_duplicated(*own, claimed_by, nullptr);
}

bool Ipv6AddressSet::receive_solicitation_for_tentative(const Ipv6Address& target, const Ipv6Address& source,
                                                        const MacAddress& link_source) {
  OwnAddress* own = find_own(target);
  if (!own || own->state != AddressState::Tentative) return false;
  // RFC 4862 §5.4.3: a solicitation from :: for our tentative address is another node's
  // Duplicate Address Detection of the same address: it is a duplicate, for both of us. One
  // from a unicast source is someone resolving the address, and is silently ignored (the address
  // is not ours yet). Our own probe looped back (same Ethernet source, e.g. a reflecting switch
  // port) is no evidence either; RFC 7527's nonce would tell them apart better.
  if (source.is_unspecified() && link_source != device_.mac() && !disabled_)
    address_duplicated(*own, link_source, "another node probes for it (Neighbor Solicitation from ::)");
  return true;
}

bool Ipv6AddressSet::receive_advertisement_for_own(const Ipv6Address& target,
                                                   const std::optional<MacAddress>& target_link_layer,
                                                   const MacAddress& link_source) {
  OwnAddress* own = find_own(target);
  if (!own) return false;
  // Each worker's replica runs its own DAD and announces the address when it passes; on a port
  // that loops frames back (net_ring) that announcement, from our own MAC, reaches a replica
  // still tentative or already preferred: ours, not another node's.
  if (link_source == device_.mac()) return true;
  switch (own->state) {
    case AddressState::Tentative:
      // RFC 4862 §5.4.4: an advertisement for a tentative address means another node has it.
      // Its Target Link-Layer Address option names the owner; the frame's source when it has none.
      if (!disabled_)
        address_duplicated(*own, target_link_layer.value_or(link_source),
                           "it is advertised by another node (Neighbor Advertisement)");
      return true;
    case AddressState::Preferred:
      // §5.4.4: for an address already in use this is a duplicate DAD missed (a partitioned link
      // joined, say): logged (once per address, a flood must not flood the log) and counted.
      ++stats_.nd_duplicate_address;
      if (!own->conflict_logged) {
        own->conflict_logged = true;
        const MacAddress by = target_link_layer.value_or(link_source);
        BYPASS_LOG(Error, "nd", "%s, in use here, is advertised by another node (%s)", target.to_string().c_str(),
                   by.to_string().c_str());
      }
      return true;
    case AddressState::Duplicated:
      return true;  // already known to be someone else's
  }
  return true;
}

}  // namespace bypass::inet
