#include "stack/inet/ipv6_path_mtu.h"

#include <algorithm>

#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

uint32_t Ipv6PathMtu::get(const Ipv6Address& destination, uint32_t link_mtu) const {
  auto it = entries_.find(destination);
  if (it == entries_.end() || it->second.expires <= timers_.now()) return link_mtu;
  return std::min(it->second.mtu, link_mtu);
}

uint32_t Ipv6PathMtu::on_packet_too_big(const Ipv6Address& destination, uint32_t mtu, uint32_t link_mtu) {
  // RFC 8201 §4: a reported MTU below 1280 sets the path MTU to 1280 (no atomic fragments since
  // RFC 8021); one above the current estimate is ignored.
  const uint32_t current = get(destination, link_mtu);
  const uint32_t learned = std::max<uint32_t>(mtu, Ipv6Header::kMinimumMtu);
  if (learned >= current) return current;
  const TimePoint now = timers_.now();
  auto it = entries_.find(destination);
  if (it == entries_.end() && entries_.size() >= settings_.ipv6.path_mtu_max_entries) {
    auto soonest = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.second.expires < b.second.expires;
    });
    entries_.erase(soonest);  // a full table is rare: the linear scan is off the packet path
  }
  entries_[destination] = Entry{learned, now + settings_.ipv6.path_mtu_timeout};
  return learned;
}

}  // namespace bypass::inet
