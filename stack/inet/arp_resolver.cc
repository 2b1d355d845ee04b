#include "stack/inet/arp_resolver.h"

#include <algorithm>

#include "base/log.h"
#include "stack/inet/wire/ethernet.h"

namespace bypass::inet {

const char* to_string(ArpEntryInfo::State state) {
  switch (state) {
    case ArpEntryInfo::State::Reachable: return "reachable";
    case ArpEntryInfo::State::Expired: return "expired";
    case ArpEntryInfo::State::Incomplete: return "incomplete";
  }
  return "?";
}

ArpResolver::ArpResolver(const InetSettings& settings, TimerService& timers, PacketDevice& device,
                         InetStats& stats)
    : settings_(settings), timers_(timers), device_(device), stats_(stats) {}

ArpResolver::~ArpResolver() {
  for (auto& [ip, pending] : pending_)
    if (pending.retry_timer) timers_.cancel(pending.retry_timer);
}

std::optional<MacAddress> ArpResolver::lookup(Ipv4Address ip) const {
  auto it = cache_.find(ip.value);
  if (it == cache_.end() || it->second.expires <= timers_.now()) return std::nullopt;
  return it->second.mac;
}

std::vector<ArpEntryInfo> ArpResolver::entries() const {
  const TimePoint now = timers_.now();
  std::vector<ArpEntryInfo> out;
  for (const auto& [ip, entry] : cache_) {
    ArpEntryInfo info;
    info.ip.value = ip;
    info.mac = entry.mac;
    info.state = entry.expires > now ? ArpEntryInfo::State::Reachable : ArpEntryInfo::State::Expired;
    info.age = now - entry.learned;
    out.push_back(info);
  }
  for (const auto& [ip, pending] : pending_) {
    ArpEntryInfo info;
    info.ip.value = ip;
    info.age = now - pending.first_request;
    info.queued_packets = pending.packets.size();
    info.requests_sent = pending.requests_sent;
    out.push_back(info);  // an expired line may also be pending: both are shown
  }
  std::sort(out.begin(), out.end(), [](const ArpEntryInfo& a, const ArpEntryInfo& b) {
    return a.ip != b.ip ? a.ip < b.ip : a.state < b.state;
  });
  return out;
}

void ArpResolver::transmit_ipv4(MacAddress destination, Packet&& frame) {
  EthernetHeader eth{destination, device_.mac(), static_cast<uint16_t>(EtherType::Ipv4)};
  eth.emit(reinterpret_cast<uint8_t*>(frame.data.segments().front().data()));
  ++stats_.tx_frames;
  device_.transmit(std::move(frame));
}

void ArpResolver::send_ipv4(Ipv4Address next_hop, Packet&& frame) {
  if (next_hop.is_broadcast()) return transmit_ipv4(MacAddress::broadcast(), std::move(frame));
  if (auto mac = lookup(next_hop)) return transmit_ipv4(*mac, std::move(frame));
  Pending& pending = pending_[next_hop.value];
  if (pending.packets.size() >= settings_.arp_pending_per_address ||
      pending_total_ >= settings_.arp_pending_total) {
    ++stats_.arp_pending_dropped;  // bounded: the oldest stays, the newest is dropped
  } else {
    pending.packets.push_back(std::move(frame));
    ++pending_total_;
  }
  start_resolution(next_hop, pending);
}

void ArpResolver::resolve(Ipv4Address ip) {
  if (ip.is_zero() || ip.is_broadcast() || lookup(ip)) return;
  start_resolution(ip, pending_[ip.value]);
}

void ArpResolver::start_resolution(Ipv4Address target, Pending& pending) {
  if (pending.requests_sent != 0) return;
  // Book-keeping first: the device may deliver the reply before send_request() returns, and
  // insert() then cancels the timer and erases `pending` (the reference dangles afterwards).
  pending.requests_sent = 1;
  pending.first_request = timers_.now();
  pending.retry_timer = timers_.schedule(settings_.arp_retry_interval, [this, target] { on_retry(target); });
  send_request(target);
}

void ArpResolver::on_retry(Ipv4Address target) {
  auto it = pending_.find(target.value);
  if (it == pending_.end()) return;
  Pending& pending = it->second;
  pending.retry_timer = 0;
  if (pending.requests_sent > settings_.arp_max_retries) {
    BYPASS_LOG(Debug, "arp", "no reply from %s, dropping %zu packets", target.to_string().c_str(),
               pending.packets.size());
    ++stats_.arp_resolution_failed;
    stats_.arp_pending_dropped += pending.packets.size();
    pending_total_ -= pending.packets.size();
    pending_.erase(it);
    return;
  }
  ++pending.requests_sent;
  pending.retry_timer =
      timers_.schedule(settings_.arp_retry_interval, [this, target] { on_retry(target); });
  send_request(target);  // last: a synchronous reply erases `pending` (see send_ipv4)
}

void ArpResolver::send_request(Ipv4Address target) {
  ++stats_.arp_requests_sent;
  send_arp(ArpPacket::kRequest, MacAddress::broadcast(), MacAddress{}, target);
}

void ArpResolver::announce() {
  // RFC 5227 §2.3: sender and target protocol address both ours, target hardware address zero.
  ++stats_.arp_requests_sent;
  send_arp(ArpPacket::kRequest, MacAddress::broadcast(), MacAddress{}, settings_.address);
}

void ArpResolver::send_arp(uint16_t operation, MacAddress eth_destination, MacAddress target_mac,
                           Ipv4Address target_ip) {
  BufferSegment seg = BufferSegment::allocate(EthernetHeader::kLength + ArpPacket::kLength);
  auto* bytes = reinterpret_cast<uint8_t*>(seg.data());
  EthernetHeader{eth_destination, device_.mac(), static_cast<uint16_t>(EtherType::Arp)}.emit(bytes);
  ArpPacket arp{operation, device_.mac(), settings_.address, target_mac, target_ip};
  arp.emit(bytes + EthernetHeader::kLength);
  Packet frame;
  frame.data.append(std::move(seg));
  ++stats_.tx_frames;
  device_.transmit(std::move(frame));
}

void ArpResolver::learn(Ipv4Address ip, MacAddress mac) { insert(ip, mac, false); }

void ArpResolver::insert(Ipv4Address ip, MacAddress mac, bool from_wire) {
  if (ip.is_zero() || mac.is_multicast() || mac.is_zero()) return;
  cache_[ip.value] = Entry{mac, timers_.now(), timers_.now() + settings_.arp_timeout};
  if (from_wire && learn_hook_) learn_hook_(ip, mac);
  auto it = pending_.find(ip.value);
  if (it == pending_.end()) return;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  if (pending.retry_timer) timers_.cancel(pending.retry_timer);
  pending_total_ -= pending.packets.size();
  for (Packet& packet : pending.packets) transmit_ipv4(mac, std::move(packet));
}

void ArpResolver::receive(const BufferList& payload) {
  uint8_t raw[ArpPacket::kLength];
  ArpPacket arp;
  const char* error = "arp: packet shorter than 28 bytes";
  if (payload.length() >= ArpPacket::kLength) {
    payload.copy_out(0, ArpPacket::kLength, raw);
    error = ArpPacket::parse(raw, sizeof(raw), arp);
  }
  if (error) {
    ++stats_.rx_malformed_arp;
    BYPASS_LOG(Debug, "arp", "dropped: %s", error);
    return;
  }
  process(arp, true);
}

void ArpResolver::learn_from_shared(const BufferList& payload) {
  if (payload.length() < ArpPacket::kLength) return;  // counted by the worker that received it
  uint8_t raw[ArpPacket::kLength];
  payload.copy_out(0, ArpPacket::kLength, raw);
  ArpPacket arp;
  if (ArpPacket::parse(raw, sizeof(raw), arp) == nullptr) process(arp, false);
}

void ArpResolver::process(const ArpPacket& arp, bool answer) {
  // RFC 826 "Packet Reception": update an existing entry for the sender; add one only when the
  // packet is for us (merge flag), so a busy LAN does not fill the cache.
  bool for_us = arp.target_ip == settings_.address;
  bool known = cache_.count(arp.sender_ip.value) || pending_.count(arp.sender_ip.value);
  if ((known || for_us) && arp.sender_ip != settings_.address) insert(arp.sender_ip, arp.sender_mac, true);
  if (answer && for_us && arp.operation == ArpPacket::kRequest) {
    ++stats_.arp_replies_sent;
    send_arp(ArpPacket::kReply, arp.sender_mac, arp.sender_mac, arp.sender_ip);
  }
}

}  // namespace bypass::inet
