#include "stack/inet/neighbor_cache.h"

#include "base/log.h"
#include "stack/inet/wire/ethernet.h"

namespace bypass::inet {

namespace {
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

NeighborCache::NeighborCache(const InetSettings& settings, TimerService& timers, PacketDevice& device,
                             Ipv6AddressSet& addresses, InetStats& stats)
    : settings_(settings), timers_(timers), device_(device), addresses_(addresses), stats_(stats) {}

NeighborCache::~NeighborCache() {
  for (auto& [ip, entry] : cache_)
    if (entry.timer) timers_.cancel(entry.timer);
}

Ipv6Address NeighborCache::solicitation_source(const Ipv6Address& target, const Entry& entry) const {
  // RFC 4861 §7.2.2: the source of the packet prompting the solicitation if it is one of ours
  // (the answer then reaches the address the peer will reply to), else any of ours. The first
  // queued frame is that packet; its IPv6 source sits after the Ethernet header at offset 8.
  if (!entry.pending.empty()) {
    const BufferList& frame = entry.pending.front().data;
    constexpr size_t kSourceAt = EthernetHeader::kLength + ipv6_field::Source::kOffset;
    if (frame.length() >= kSourceAt + Ipv6Address::kLength) {
      uint8_t raw[Ipv6Address::kLength];
      frame.copy_out(kSourceAt, sizeof(raw), raw);
      const Ipv6Address source = Ipv6Address::from_bytes(raw);
      if (addresses_.is_preferred(source)) return source;
    }
  }
  return addresses_.source_for(target);
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
      return send_solicitation(addresses_.source_for(target), target, entry.mac);
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
  Packet frame = nd_frame(source, destination, ns);
  ++stats_.nd_solicitations_sent;
  transmit(unicast_to ? *unicast_to : destination.multicast_mac(), std::move(frame));
}

void NeighborCache::send_advertisement(const Ipv6Address& target, const Ipv6Address& destination, bool solicited,
                                       std::optional<MacAddress> link_layer) {
  // §7.2.4: Target is the solicited address (ours), Override set since it is not an anycast
  // address, and our link-layer address in a Target Link-Layer Address option. The source is the
  // target itself (§4.4 allows any of ours; as Linux does): an advertisement about the link-local
  // address comes from it, about the configured one from that.
  Packet frame = nd_frame(target, destination, advertisement_of_ours(target, device_.mac(), solicited));
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
  // RFC 4862 §5.4.3: a solicitation for one of our tentative addresses is for the address set's
  // Duplicate Address Detection alone.
  if (addresses_.receive_solicitation_for_tentative(ns.target, ip.source, link_source)) return;
  const std::optional<AddressState> target_state = addresses_.address_state(ns.target);
  if (!target_state || *target_state == AddressState::Duplicated || addresses_.ipv6_disabled()) {
    ++stats_.nd_target_not_ours;  // §7.2.3: "the target address is not ... assigned": discarded
    return;
  }
  if (ip.source.is_unspecified()) {
    // Another node's Duplicate Address Detection for our address: §7.2.4 has the advertisement go
    // to all-nodes, not solicited, so the prober learns the address is taken.
    return send_advertisement(ns.target, Ipv6Address::all_nodes(), false, std::nullopt);
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
  send_advertisement(ns.target, ip.source, true, ns.options.source_link_layer);
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
  // RFC 4862 §5.4.4: an advertisement of one of our addresses is evidence for the address set.
  if (addresses_.receive_advertisement_for_own(na.target, na.options.target_link_layer, link_source)) return;
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
