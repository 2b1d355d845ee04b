#include "stack/inet/ip_reassembly.h"

#include "base/log.h"

namespace bypass::inet {

IpReassembler::IpReassembler(const InetSettings& settings, TimerService& timers, InetStats& stats)
    : settings_(settings), timers_(timers), stats_(stats) {}

IpReassembler::~IpReassembler() {
  for (auto& [key, datagram] : datagrams_) timers_.cancel(datagram.timer);
}

void IpReassembler::drop(std::map<Key, Datagram>::iterator it) {
  timers_.cancel(it->second.timer);
  bytes_ -= it->second.received;
  ++stats_.reassembly_dropped;
  datagrams_.erase(it);
}

std::optional<BufferList> IpReassembler::add(const Ipv4Header& header, BufferList&& payload) {
  Key key{header.source.value, header.destination.value, header.identification, header.protocol};
  size_t offset = header.fragment_offset_bytes();
  size_t length = payload.length();
  auto it = datagrams_.find(key);
  // RFC 791: every fragment but the last carries a multiple of 8 bytes.
  if ((header.more_fragments() && length % 8 != 0) || length == 0) {
    BYPASS_LOG(Debug, "ipv4", "fragment with bad length %zu dropped", length);
    if (it != datagrams_.end()) drop(it);
    else ++stats_.reassembly_dropped;
    return std::nullopt;
  }
  if (it == datagrams_.end()) {
    if (datagrams_.size() >= settings_.ip_reassembly_max_datagrams) {
      ++stats_.reassembly_dropped;
      return std::nullopt;
    }
    it = datagrams_.emplace(key, Datagram{}).first;
    it->second.timer = timers_.schedule(settings_.ip_reassembly_timeout, [this, key] {
      auto found = datagrams_.find(key);
      if (found == datagrams_.end()) return;
      found->second.timer = 0;
      bytes_ -= found->second.received;
      datagrams_.erase(found);
      ++stats_.reassembly_timeouts;
    });
  }
  Datagram& datagram = it->second;
  if (bytes_ + length > settings_.ip_reassembly_max_bytes) {
    drop(it);
    return std::nullopt;
  }
  if (!header.more_fragments()) {
    size_t total = offset + length;
    if (datagram.total && *datagram.total != total) {
      drop(it);  // two different "last" fragments
      return std::nullopt;
    }
    datagram.total = total;
  }
  if (datagram.total && offset + length > *datagram.total) {
    drop(it);
    return std::nullopt;
  }
  // Overlap check against the neighbours in offset order (an exact duplicate is ignored).
  auto next = datagram.fragments.lower_bound(offset);
  if (next != datagram.fragments.end() && next->first == offset &&
      next->second.length() == length)
    return std::nullopt;
  if (next != datagram.fragments.end() && next->first < offset + length) {
    drop(it);
    return std::nullopt;
  }
  if (next != datagram.fragments.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length() > offset) {
      drop(it);
      return std::nullopt;
    }
  }
  datagram.fragments.emplace(offset, std::move(payload));
  datagram.received += length;
  bytes_ += length;
  if (!datagram.total || datagram.received != *datagram.total) return std::nullopt;
  // No overlaps and the byte count matches the total: the fragments tile [0, total).
  BufferList whole;
  for (auto& [frag_offset, bytes] : datagram.fragments) whole.append(std::move(bytes));
  timers_.cancel(datagram.timer);
  bytes_ -= datagram.received;
  datagrams_.erase(it);
  ++stats_.reassembly_completed;
  return whole;
}

}  // namespace bypass::inet
