#include "stack/inet/ipv6_reassembly.h"

#include "base/log.h"

namespace bypass::inet {

Ipv6Reassembler::Ipv6Reassembler(const InetSettings& settings, TimerService& timers, InetStats& stats)
    : settings_(settings), timers_(timers), stats_(stats) {}

Ipv6Reassembler::~Ipv6Reassembler() {
  for (auto& [key, datagram] : datagrams_)
    if (datagram.timer) timers_.cancel(datagram.timer);
}

void Ipv6Reassembler::discard(Datagrams::iterator it, bool poison) {
  Datagram& datagram = it->second;
  bytes_ -= datagram.received;
  ++stats_.ipv6_reassembly_dropped;
  if (poison) {
    datagram.fragments.clear();
    datagram.first_fragment.clear();
    datagram.received = 0;
    datagram.discarded = true;
    return;
  }
  if (datagram.timer) timers_.cancel(datagram.timer);
  datagrams_.erase(it);
}

void Ipv6Reassembler::on_timeout(const Key& key) {
  auto it = datagrams_.find(key);
  if (it == datagrams_.end()) return;
  it->second.timer = 0;
  BufferList first = std::move(it->second.first_fragment);
  const bool discarded = it->second.discarded;
  bytes_ -= it->second.received;
  datagrams_.erase(it);
  if (discarded) return;  // already counted when it was discarded
  ++stats_.ipv6_reassembly_timeouts;
  // RFC 8200 §4.5: Time Exceeded only when the first fragment was received.
  if (!first.empty() && timeout_hook_) timeout_hook_(first);
}

std::optional<Ipv6Reassembler::Reassembled> Ipv6Reassembler::add(const Ipv6Header& header,
                                                                 const Ipv6FragmentHeader& fragment,
                                                                 BufferList&& data, const BufferList& packet) {
  const Key key{header.source, header.destination, fragment.identification};
  const size_t offset = fragment.offset_bytes;
  const size_t length = data.length();
  auto it = datagrams_.find(key);
  if (it != datagrams_.end() && it->second.discarded) {
    ++stats_.ipv6_reassembly_dropped;  // RFC 5722 §4: later fragments of a discarded datagram
    return std::nullopt;
  }
  // The walk (walk_ipv6_extensions) refused a non-final fragment whose length is not a multiple
  // of 8 and one reaching past 65535 bytes; an empty fragment carries nothing to place.
  if (length == 0) {
    if (it != datagrams_.end()) discard(it, false);
    else ++stats_.ipv6_reassembly_dropped;
    return std::nullopt;
  }
  if (it == datagrams_.end()) {
    if (datagrams_.size() >= settings_.ipv6.reassembly_max_datagrams) {
      ++stats_.ipv6_reassembly_dropped;
      return std::nullopt;
    }
    it = datagrams_.emplace(key, Datagram{}).first;
    it->second.timer = timers_.schedule(settings_.ipv6.reassembly_timeout, [this, key] { on_timeout(key); });
  }
  Datagram& datagram = it->second;
  if (bytes_ + length > settings_.ipv6.reassembly_max_bytes) {
    discard(it, false);
    return std::nullopt;
  }
  if (!fragment.more_fragments) {
    const size_t total = offset + length;
    // RFC 8200 §4.5 reassembly: two different ends, or data already past this end, cannot be one
    // datagram; treated as an overlap (RFC 5722).
    if ((datagram.total && *datagram.total != total) ||
        (!datagram.fragments.empty() &&
         datagram.fragments.rbegin()->first + datagram.fragments.rbegin()->second.length() > total)) {
      discard(it, true);
      return std::nullopt;
    }
    datagram.total = total;
  }
  if (datagram.total && offset + length > *datagram.total) {
    discard(it, true);
    return std::nullopt;
  }
  // Overlap check against the neighbours in offset order. RFC 5722 §4 makes any overlap fatal to
  // the datagram; RFC 8200 §4.5 lets an exact duplicate (a fragment the network delivered twice)
  // be dropped alone instead, which is done when offset, length and bytes all match.
  auto next = datagram.fragments.lower_bound(offset);
  if (next != datagram.fragments.end() && next->first == offset && next->second.contents_equal(data))
    return std::nullopt;
  bool overlaps = next != datagram.fragments.end() && next->first < offset + length;
  if (next != datagram.fragments.begin()) {
    auto prev = std::prev(next);
    overlaps = overlaps || prev->first + prev->second.length() > offset;
  }
  if (overlaps) {
    BYPASS_LOG(Debug, "ipv6", "overlapping fragment at %zu, datagram %u discarded", offset, fragment.identification);
    discard(it, true);
    return std::nullopt;
  }
  if (offset == 0) {
    datagram.next_header = fragment.next_header;
    datagram.first_fragment = packet;  // shares the segments
  }
  datagram.fragments.emplace(offset, std::move(data));
  datagram.received += length;
  bytes_ += length;
  if (!datagram.total || datagram.received != *datagram.total) return std::nullopt;
  // No overlaps and the byte count matches the total: the fragments tile [0, total).
  Reassembled whole;
  whole.next_header = datagram.next_header;
  for (auto& [at, bytes] : datagram.fragments) whole.payload.append(std::move(bytes));
  if (datagram.timer) timers_.cancel(datagram.timer);
  bytes_ -= datagram.received;
  datagrams_.erase(it);
  ++stats_.ipv6_reassembly_completed;
  return whole;
}

}  // namespace bypass::inet
