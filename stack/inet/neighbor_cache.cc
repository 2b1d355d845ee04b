#include "stack/inet/neighbor_cache.h"

#include "base/log.h"
#include "stack/inet/wire/ethernet.h"

namespace bypass::inet {

namespace {
// RFC 4861 §7.1: ND messages leave with hop limit 255 so a receiver can tell they are on-link.
constexpr uint8_t kNdHopLimit = 255;

// Copies a solicitation or advertisement out of its buffer, parses it and applies its §7.1
// validity checks: null, or what was wrong.
template <class Message>
const char* parse_nd_message(const Ipv6Header& ip, const BufferList& message, const char* too_long,
                             const char* (*validate)(const Ipv6Header&, size_t, const Message&),
                             Message& out) {
  if (message.length() > NeighborCache::kMaxMessage) return too_long;
  uint8_t raw[NeighborCache::kMaxMessage];
  message.copy_out(0, message.length(), raw);
  if (const char* error = Message::parse(raw, message.length(), out)) return error;
  return validate(ip, message.length(), out);
}
}  // namespace

const char* to_string(NeighborState state) {
  switch (state) {
    case NeighborState::Incomplete: return "incomplete";
    case NeighborState::Reachable: return "reachable";
    case NeighborState::Stale: return "stale";
    case NeighborState::Delay: return "delay";
    case NeighborState::Probe: return "probe";
  }
  return "?";
}

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

NeighborCache::NeighborCache(const InetSettings& settings, TimerService& timers, PacketDevice& device,
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

NeighborCache::~NeighborCache() {
  for (auto& [ip, entry] : cache_)
    if (entry.timer) timers_.cancel(entry.timer);
  for (OwnAddress& own : own_)
    if (own.timer) timers_.cancel(own.timer);
}

NeighborCache::OwnAddress* NeighborCache::find_own(const Ipv6Address& ip) {
  for (size_t i = 0; i < own_count_; ++i)
    if (own_[i].ip == ip) return &own_[i];
  return nullptr;
}

const NeighborCache::OwnAddress* NeighborCache::find_own(const Ipv6Address& ip) const {
  return const_cast<NeighborCache*>(this)->find_own(ip);
}

std::vector<OwnAddressInfo> NeighborCache::addresses() const {
  std::vector<OwnAddressInfo> out;
  for (size_t i = 0; i < own_count_; ++i) out.push_back({own_[i].ip, own_[i].state, own_[i].dad_sent, own_[i].claimed_by});
  return out;
}

std::optional<AddressState> NeighborCache::address_state(const Ipv6Address& ip) const {
  const OwnAddress* own = find_own(ip);
  if (!own) return std::nullopt;
  return own->state;
}

bool NeighborCache::is_preferred(const Ipv6Address& ip) const {
  const OwnAddress* own = find_own(ip);
  return own && own->state == AddressState::Preferred && !disabled_;
}

bool NeighborCache::listens_to(const Ipv6Address& group) const {
  if (disabled_) return false;
  bool any = false;
  for (size_t i = 0; i < own_count_; ++i) {
    if (own_[i].state == AddressState::Duplicated) continue;  // its group left with it
    if (group == own_[i].ip.solicited_node_multicast()) return true;
    any = true;
  }
  return any && group == Ipv6Address::all_nodes();
}

bool NeighborCache::listens_to(const MacAddress& group) const {
  if (disabled_) return false;
  bool any = false;
  for (size_t i = 0; i < own_count_; ++i) {
    if (own_[i].state == AddressState::Duplicated) continue;
    if (group == own_[i].ip.solicited_node_multicast().multicast_mac()) return true;
    any = true;
  }
  return any && group == Ipv6Address::all_nodes().multicast_mac();
}

Ipv6Address NeighborCache::source_for(const Ipv6Address& destination) const {
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

void NeighborCache::start_duplicate_address_detection() {
  if (dad_started_) return;
  dad_started_ = true;
  // RFC 4862 §5.4.2 would have the first probe after interface initialisation delayed by a random
  // 0 to MAX_RTR_SOLICITATION_DELAY (1 s), a SHOULD against the storm of many hosts powered up
  // together. Not done: this stack starts with its process, not with the link, and a random delay
  // would make start-up non-deterministic for the virtual-time tests.
  for (size_t i = 0; i < own_count_; ++i) {
    OwnAddress& own = own_[i];
    if (own.state == AddressState::Preferred) {
      send_advertisement(own.ip, Ipv6Address::all_nodes(), false, std::nullopt);
      continue;
    }
    if (own.state != AddressState::Tentative) continue;
    // Book-keeping first, as in start_resolution(): the answer may arrive before transmit returns.
    own.timer = timers_.schedule(settings_.ipv6.nd_retrans_timer, [this, i] { on_dad_timer(i); });
    send_dad_solicitation(own);
  }
}

void NeighborCache::send_dad_solicitation(OwnAddress& own) {
  // RFC 4862 §5.4.2: from :: (the address is not ours yet, and a neighbour must not cache anything
  // for it), to the address's solicited-node group, target the tentative address, and no Source
  // Link-Layer Address option (RFC 4861 §7.1.1 forbids one from ::). Hop limit 255 as every ND
  // message.
  NeighborSolicitation ns;
  ns.target = own.ip;
  const Ipv6Address destination = own.ip.solicited_node_multicast();
  uint8_t* message = nullptr;
  Packet frame = nd_frame(Ipv6Address{}, destination, ns.emitted_length(), message);
  ns.emit(message, Ipv6Address{}, destination);
  ++own.dad_sent;
  ++stats_.ipv6_dad_solicitations_sent;
  transmit(destination.multicast_mac(), std::move(frame));
}

void NeighborCache::on_dad_timer(size_t index) {
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
  send_advertisement(own.ip, Ipv6Address::all_nodes(), false, std::nullopt);
}

void NeighborCache::address_duplicated(OwnAddress& own, const MacAddress& claimed_by, const char* evidence) {
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

void NeighborCache::learn_duplicate(const Ipv6Address& ip, MacAddress claimed_by) {
  OwnAddress* own = find_own(ip);
  if (!own || own->state == AddressState::Duplicated) return;
  address_duplicated(*own, claimed_by, nullptr);
}

Ipv6Address NeighborCache::solicitation_source(const Ipv6Address& target, const Entry& entry) const {
  // RFC 4861 §7.2.2: the source of the packet prompting the solicitation if it is one of ours
  // (the answer then reaches the address the peer will reply to), else any of ours. The first
  // queued frame is that packet; its IPv6 source sits after the Ethernet header at offset 8.
  if (!entry.pending.empty()) {
    const BufferList& frame = entry.pending.front().data;
    constexpr size_t kSourceAt = EthernetHeader::kLength + 8;
    if (frame.length() >= kSourceAt + Ipv6Address::kLength) {
      uint8_t raw[Ipv6Address::kLength];
      frame.copy_out(kSourceAt, sizeof(raw), raw);
      const Ipv6Address source = Ipv6Address::from_bytes(raw);
      if (is_preferred(source)) return source;
    }
  }
  return source_for(target);
}

NeighborState NeighborCache::current_state(const Entry& entry) const {
  if (entry.state == NeighborState::Reachable && entry.reachable_until <= timers_.now())
    return NeighborState::Stale;
  return entry.state;
}

std::optional<NeighborState> NeighborCache::state(const Ipv6Address& ip) const {
  auto it = cache_.find(ip);
  if (it == cache_.end()) return std::nullopt;
  return current_state(it->second);
}

std::optional<MacAddress> NeighborCache::lookup(const Ipv6Address& ip) const {
  auto it = cache_.find(ip);
  if (it == cache_.end() || it->second.state == NeighborState::Incomplete) return std::nullopt;
  return it->second.mac;
}

std::vector<NeighborEntryInfo> NeighborCache::entries() const {
  std::vector<NeighborEntryInfo> out;
  out.reserve(cache_.size());
  for (const auto& [ip, entry] : cache_)
    out.push_back({ip, entry.mac, current_state(entry), entry.pending.size(), entry.solicitations_sent});
  return out;
}

void NeighborCache::transmit(MacAddress destination, Packet&& frame) {
  EthernetHeader eth{destination, device_.mac(), static_cast<uint16_t>(EtherType::Ipv6)};
  eth.emit(reinterpret_cast<uint8_t*>(frame.data.segments().front().data()));
  ++stats_.tx_frames;
  device_.transmit(std::move(frame));
}

NeighborCache::Cache::iterator NeighborCache::create_line(const Ipv6Address& ip) {
  if (cache_.size() >= settings_.ipv6.nd_max_entries) {
    // A full cache gives up a line nobody has confirmed lately (STALE, DELAY or PROBE): a stream
    // of solicitations from made-up sources would otherwise keep out every new neighbour. Lines
    // being resolved or confirmed reachable stay. The scan is linear, but only a full cache pays it.
    auto victim = cache_.begin();
    for (; victim != cache_.end(); ++victim) {
      const NeighborState state = current_state(victim->second);
      if (state != NeighborState::Incomplete && state != NeighborState::Reachable) break;
    }
    if (victim == cache_.end()) {
      ++stats_.nd_cache_full;
      return cache_.end();
    }
    drop_line(victim);
  }
  return cache_.emplace(ip, Entry{}).first;
}

void NeighborCache::queue(Entry& entry, Packet&& frame) {
  if (entry.pending.size() >= settings_.ipv6.nd_pending_per_address ||
      pending_total_ >= settings_.ipv6.nd_pending_total) {
    ++stats_.nd_pending_dropped;  // bounded: the oldest stay, the newest is dropped
    return;
  }
  entry.pending.push_back(std::move(frame));
  ++pending_total_;
}

void NeighborCache::send_ipv6(const Ipv6Address& next_hop, Packet&& frame) {
  if (next_hop.is_multicast()) return transmit(next_hop.multicast_mac(), std::move(frame));
  auto it = cache_.find(next_hop);
  if (it == cache_.end()) {
    it = create_line(next_hop);
    if (it == cache_.end()) return;  // counted as nd_cache_full
    queue(it->second, std::move(frame));
    return start_resolution(next_hop, it->second);
  }
  Entry& entry = it->second;
  switch (current_state(entry)) {
    case NeighborState::Incomplete:
      return queue(entry, std::move(frame));
    case NeighborState::Stale:
      // §7.3.3: the first packet to a STALE neighbour moves it to DELAY, giving upper layers
      // DELAY_FIRST_PROBE_TIME to confirm reachability before a probe is sent.
      set_state(it, NeighborState::Delay);
      [[fallthrough]];
    case NeighborState::Reachable:
    case NeighborState::Delay:
    case NeighborState::Probe:
      return transmit(entry.mac, std::move(frame));
  }
}

void NeighborCache::start_resolution(const Ipv6Address& target, Entry& entry) {
  // Book-keeping first: the device may deliver the advertisement before the solicitation call
  // returns, and set_link_layer() then rewrites `entry`.
  entry.solicitations_sent = 1;
  entry.timer = timers_.schedule(settings_.ipv6.nd_retrans_timer, [this, target] { on_timer(target); });
  send_solicitation(solicitation_source(target, entry), target, std::nullopt);
}

void NeighborCache::on_timer(Ipv6Address target) {
  auto it = cache_.find(target);
  if (it == cache_.end()) return;
  Entry& entry = it->second;
  entry.timer = 0;
  switch (entry.state) {
    case NeighborState::Incomplete:
      // §7.2.2: at most MAX_MULTICAST_SOLICIT solicitations, RETRANS_TIMER apart; resolution
      // has failed RETRANS_TIMER after the last. The queued packets are dropped (§7.2.2 would
      // have an ICMPv6 Address Unreachable sent for each, but their source is this host).
      if (entry.solicitations_sent >= settings_.ipv6.nd_max_multicast_solicit) {
        BYPASS_LOG(Debug, "nd", "no advertisement from %s, dropping %zu packets", target.to_string().c_str(),
                   entry.pending.size());
        ++stats_.nd_resolution_failed;
        stats_.nd_pending_dropped += entry.pending.size();
        return drop_line(it);
      }
      ++entry.solicitations_sent;
      entry.timer = timers_.schedule(settings_.ipv6.nd_retrans_timer, [this, target] { on_timer(target); });
      return send_solicitation(solicitation_source(target, entry), target, std::nullopt);
    case NeighborState::Delay:
      // §7.3.3: no confirmation within DELAY_FIRST_PROBE_TIME: probe with unicast solicitations.
      entry.state = NeighborState::Probe;
      entry.solicitations_sent = 0;
      [[fallthrough]];
    case NeighborState::Probe:
      // §7.3.3: after MAX_UNICAST_SOLICIT unanswered probes the line is deleted; the next packet
      // starts address resolution afresh.
      if (entry.solicitations_sent >= settings_.ipv6.nd_max_unicast_solicit) {
        ++stats_.nd_resolution_failed;
        return drop_line(it);
      }
      ++entry.solicitations_sent;
      entry.timer = timers_.schedule(settings_.ipv6.nd_retrans_timer, [this, target] { on_timer(target); });
      return send_solicitation(source_for(target), target, entry.mac);
    case NeighborState::Reachable:
    case NeighborState::Stale:
      return;
  }
}

void NeighborCache::drop_line(Cache::iterator it) {
  if (it->second.timer) timers_.cancel(it->second.timer);
  pending_total_ -= it->second.pending.size();
  cache_.erase(it);
}

void NeighborCache::set_state(Cache::iterator it, NeighborState state) {
  Entry& entry = it->second;
  if (entry.timer) timers_.cancel(entry.timer);
  entry.timer = 0;
  entry.state = state;
  entry.solicitations_sent = 0;
  if (state == NeighborState::Reachable) entry.reachable_until = timers_.now() + settings_.ipv6.nd_reachable_time;
  if (state == NeighborState::Delay) {
    const Ipv6Address target = it->first;
    entry.timer = timers_.schedule(settings_.ipv6.nd_delay_first_probe, [this, target] { on_timer(target); });
  }
}

void NeighborCache::set_link_layer(Cache::iterator it, MacAddress mac, NeighborState state) {
  Entry& entry = it->second;
  entry.mac = mac;
  std::deque<Packet> waiting = std::move(entry.pending);
  entry.pending.clear();
  pending_total_ -= waiting.size();
  set_state(it, state);
  for (Packet& packet : waiting) transmit(mac, std::move(packet));
}

Packet NeighborCache::nd_frame(const Ipv6Address& source, const Ipv6Address& destination, size_t icmp_length,
                               uint8_t*& message) const {
  BufferSegment seg = BufferSegment::allocate(EthernetHeader::kLength + Ipv6Header::kLength + icmp_length);
  auto* bytes = reinterpret_cast<uint8_t*>(seg.data());
  Ipv6Header ip;
  ip.payload_length = static_cast<uint16_t>(icmp_length);
  ip.next_header = kIpv6Icmpv6;
  ip.hop_limit = kNdHopLimit;
  ip.source = source;
  ip.destination = destination;
  ip.emit(bytes + EthernetHeader::kLength);
  message = bytes + EthernetHeader::kLength + Ipv6Header::kLength;
  Packet frame;
  frame.data.append(std::move(seg));
  return frame;
}

void NeighborCache::send_solicitation(const Ipv6Address& source, const Ipv6Address& target,
                                      std::optional<MacAddress> unicast_to) {
  // §7.2.2: resolution solicits the target's solicited-node group (RFC 4291 §2.7.1); a probe of a
  // known neighbour (§7.3.3) goes to the target itself at its cached link-layer address. Both
  // carry our link-layer address so the target need not resolve us in turn. With no usable
  // address of ours (all tentative or duplicated) nothing can be asked: only DAD may send from ::.
  if (source.is_unspecified()) {
    ++stats_.ipv6_tx_no_source;
    return;
  }
  NeighborSolicitation ns;
  ns.target = target;
  ns.options.source_link_layer = device_.mac();
  const Ipv6Address destination = unicast_to ? target : target.solicited_node_multicast();
  uint8_t* message = nullptr;
  Packet frame = nd_frame(source, destination, ns.emitted_length(), message);
  ns.emit(message, source, destination);
  ++stats_.nd_solicitations_sent;
  transmit(unicast_to ? *unicast_to : destination.multicast_mac(), std::move(frame));
}

void NeighborCache::send_advertisement(const Ipv6Address& target, const Ipv6Address& destination, bool solicited,
                                       std::optional<MacAddress> link_layer) {
  // §7.2.4: Target is the solicited address (ours), Override set since it is not an anycast
  // address, and our link-layer address in a Target Link-Layer Address option. The source is the
  // target itself (§4.4 allows any of ours; as Linux does): an advertisement about the link-local
  // address comes from it, about the configured one from that.
  NeighborAdvertisement na;
  na.solicited = solicited;
  na.override_flag = true;
  na.target = target;
  na.options.target_link_layer = device_.mac();
  uint8_t* message = nullptr;
  Packet frame = nd_frame(target, destination, na.emitted_length(), message);
  na.emit(message, target, destination);
  ++stats_.nd_advertisements_sent;
  if (link_layer) return transmit(*link_layer, std::move(frame));
  send_ipv6(destination, std::move(frame));
}

void NeighborCache::receive_solicitation(const Ipv6Header& ip, const BufferList& message,
                                         const MacAddress& link_source) {
  NeighborSolicitation ns;
  if (const char* error = parse_nd_message(ip, message, "nd: solicitation longer than the buffer",
                                           validate_neighbor_solicitation, ns)) {
    ++stats_.rx_malformed_nd;
    BYPASS_LOG(Debug, "nd", "dropped: %s", error);
    return;
  }
  OwnAddress* own = find_own(ns.target);
  if (own && own->state == AddressState::Tentative) {
    // RFC 4862 §5.4.3: a solicitation from :: for our tentative address is another node's
    // Duplicate Address Detection of the same address: it is a duplicate, for both of us. One
    // from a unicast source is someone resolving the address, and is silently ignored (the address
    // is not ours yet). Our own probe looped back (same Ethernet source, e.g. a reflecting switch
    // port) is no evidence either; RFC 7527's nonce would tell them apart better.
    if (ip.source.is_unspecified() && link_source != device_.mac() && !disabled_)
      address_duplicated(*own, link_source, "another node probes for it (Neighbor Solicitation from ::)");
    return;
  }
  if (!own || own->state == AddressState::Duplicated || disabled_) {
    ++stats_.nd_target_not_ours;  // §7.2.3: "the target address is not ... assigned": discarded
    return;
  }
  if (ip.source.is_unspecified()) {
    // Another node's Duplicate Address Detection for our address: §7.2.4 has the advertisement go
    // to all-nodes, not solicited, so the prober learns the address is taken.
    return send_advertisement(own->ip, Ipv6Address::all_nodes(), false, std::nullopt);
  }
  if (ns.options.source_link_layer) {
    // §7.2.3: a solicitation's source link-layer address creates a STALE line, or updates one
    // whose address differs (to STALE), or completes an INCOMPLETE one.
    const MacAddress mac = *ns.options.source_link_layer;
    auto it = cache_.find(ip.source);
    bool changed = true;
    if (it == cache_.end()) {
      it = create_line(ip.source);
      if (it != cache_.end()) set_link_layer(it, mac, NeighborState::Stale);
    } else if (it->second.state == NeighborState::Incomplete) {
      set_link_layer(it, mac, NeighborState::Stale);
    } else if (it->second.mac != mac) {
      it->second.mac = mac;
      set_state(it, NeighborState::Stale);
    } else {
      changed = false;
    }
    if (changed && it != cache_.end() && learn_hook_) learn_hook_(ip.source, mac, false);
  }
  // Straight to the solicitor's link-layer address when it gave one: the answer then needs no
  // cache line (a full cache cannot silence us) and does not start unreachability detection.
  send_advertisement(own->ip, ip.source, true, ns.options.source_link_layer);
}

void NeighborCache::receive_advertisement(const Ipv6Header& ip, const BufferList& message,
                                          const MacAddress& link_source) {
  NeighborAdvertisement na;
  if (const char* error = parse_nd_message(ip, message, "nd: advertisement longer than the buffer",
                                           validate_neighbor_advertisement, na)) {
    ++stats_.rx_malformed_nd;
    BYPASS_LOG(Debug, "nd", "dropped: %s", error);
    return;
  }
  if (OwnAddress* own = find_own(na.target)) {
    // Each worker's replica runs its own DAD and announces the address when it passes; on a port
    // that loops frames back (net_ring) that announcement, from our own MAC, reaches a replica
    // still tentative or already preferred: ours, not another node's.
    if (link_source == device_.mac()) return;
    switch (own->state) {
      case AddressState::Tentative:
        // RFC 4862 §5.4.4: an advertisement for a tentative address means another node has it.
        // Its Target Link-Layer Address option names the owner; the frame's source when it has none.
        if (!disabled_)
          address_duplicated(*own, na.options.target_link_layer.value_or(link_source),
                             "it is advertised by another node (Neighbor Advertisement)");
        return;
      case AddressState::Preferred:
        // §5.4.4: for an address already in use this is a duplicate DAD missed (a partitioned link
        // joined, say): logged (once per address, a flood must not flood the log) and counted.
        ++stats_.nd_duplicate_address;
        if (!own->conflict_logged) {
          own->conflict_logged = true;
          const MacAddress by = na.options.target_link_layer.value_or(link_source);
          BYPASS_LOG(Error, "nd", "%s, in use here, is advertised by another node (%s)", na.target.to_string().c_str(),
                     by.to_string().c_str());
        }
        return;
      case AddressState::Duplicated:
        return;  // already known to be someone else's
    }
  }
  const Advertisement advertisement{na.target, na.options.target_link_layer, na.solicited, na.override_flag};
  auto it = cache_.find(na.target);
  if (it == cache_.end()) {
    // §7.2.5: no line, the advertisement is silently discarded here. But another worker's replica
    // may have asked (its solicitation's answer lands on whichever queue the port picks): the glue
    // hands it to the others, which apply it only where a line exists.
    if (unmatched_advertisement_hook_) unmatched_advertisement_hook_(advertisement);
    return;
  }
  if (apply_advertisement(it, advertisement) && learn_hook_) learn_hook_(na.target, it->second.mac, na.solicited);
}

bool NeighborCache::apply_advertisement(Cache::iterator it, const Advertisement& advertisement) {
  Entry& entry = it->second;
  const std::optional<MacAddress>& mac = advertisement.link_layer;
  if (entry.state == NeighborState::Incomplete) {
    if (!mac) return false;  // §7.2.5: useless without the link-layer address
    set_link_layer(it, *mac, advertisement.solicited ? NeighborState::Reachable : NeighborState::Stale);
    return true;
  }
  const bool differs = mac && *mac != entry.mac;
  if (!advertisement.override_flag && differs) {
    // §7.2.5: an advertisement that may not override a different cached address only marks a
    // REACHABLE line STALE, so it gets probed.
    if (current_state(entry) == NeighborState::Reachable) set_state(it, NeighborState::Stale);
    return false;
  }
  if (differs) entry.mac = *mac;
  if (advertisement.solicited) set_state(it, NeighborState::Reachable);
  else if (differs) set_state(it, NeighborState::Stale);
  return advertisement.solicited || differs;
}

void NeighborCache::learn_advertisement(const Advertisement& advertisement) {
  if (advertisement.link_layer && (advertisement.link_layer->is_multicast() || advertisement.link_layer->is_zero()))
    return;
  auto it = cache_.find(advertisement.target);
  if (it == cache_.end()) return;  // §7.2.5: nobody here asked; an advertisement creates no line
  apply_advertisement(it, advertisement);
}

void NeighborCache::confirm_reachable(const Ipv6Address& ip) {
  auto it = cache_.find(ip);
  if (it == cache_.end() || it->second.state == NeighborState::Incomplete) return;
  set_state(it, NeighborState::Reachable);
}

void NeighborCache::learn(const Ipv6Address& ip, MacAddress mac, bool reachable) {
  if (ip.is_unspecified() || ip.is_multicast() || mac.is_multicast() || mac.is_zero()) return;
  auto it = cache_.find(ip);
  if (it == cache_.end()) {
    it = create_line(ip);
    if (it == cache_.end()) return;
  }
  if (it->second.state == NeighborState::Incomplete)
    return set_link_layer(it, mac, reachable ? NeighborState::Reachable : NeighborState::Stale);
  const bool differs = it->second.mac != mac;
  it->second.mac = mac;
  if (reachable) set_state(it, NeighborState::Reachable);
  else if (differs) set_state(it, NeighborState::Stale);
}

}  // namespace bypass::inet
