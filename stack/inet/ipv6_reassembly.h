// IPv6 fragment reassembly (RFC 8200 §4.5). Bounded like the IPv4 reassembler (ip_reassembly.h):
// at most `reassembly_max_datagrams` datagrams and `reassembly_max_bytes` bytes in progress, and a
// datagram not complete within 60 seconds is discarded; when its first fragment had arrived, the
// source is then told with an ICMPv6 Time Exceeded (code 1) quoting that fragment.
//
// Overlapping fragments (RFC 5722 §4): the whole datagram is discarded, and so are the fragments
// of it that arrive afterwards, until its timer runs out; an exact duplicate is dropped alone
// (RFC 8200 §4.5 allows it). Atomic fragments (RFC 6946) never get
// here: the extension-header walk treats them as whole packets.
//
// A separate class from IpReassembler rather than a generalisation of it: the key differs (a
// 32-bit identification, no protocol), IPv6 keeps the first fragment for the timeout error and
// poisons overlapping datagrams; the fragment bookkeeping itself is small.
#pragma once

#include <functional>
#include <map>
#include <optional>

#include "base/buffer_list.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

class Ipv6Reassembler {
 public:
  // The fragmentable part of a reassembled datagram: the bytes after the Fragment header, in
  // order, and the Next Header the first fragment's Fragment header named for them.
  struct Reassembled {
    uint8_t next_header = 0;
    BufferList payload;
  };
  // Called when a datagram whose first fragment arrived times out: `first_fragment` is that
  // fragment's whole IPv6 packet, to be quoted in a Time Exceeded message (RFC 8200 §4.5).
  using TimeoutHook = std::function<void(const BufferList& first_fragment)>;

  Ipv6Reassembler(const InetSettings& settings, TimerService& timers, InetStats& stats);
  ~Ipv6Reassembler();
  Ipv6Reassembler(const Ipv6Reassembler&) = delete;
  Ipv6Reassembler& operator=(const Ipv6Reassembler&) = delete;

  // One fragment: `header` its IPv6 header, `fragment` its Fragment header, `data` the bytes after
  // the Fragment header, `packet` the whole IPv6 packet (kept only for a first fragment). Returns
  // the datagram when this fragment completes it.
  std::optional<Reassembled> add(const Ipv6Header& header, const Ipv6FragmentHeader& fragment, BufferList&& data,
                                 const BufferList& packet);
  void set_timeout_hook(TimeoutHook hook) { timeout_hook_ = std::move(hook); }
  size_t datagrams_in_progress() const { return datagrams_.size(); }
  size_t bytes_in_progress() const { return bytes_; }

 private:
  struct Key {
    Ipv6Address source;
    Ipv6Address destination;
    uint32_t identification = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct Datagram {
    std::map<size_t, BufferList> fragments;  // by offset
    size_t received = 0;
    std::optional<size_t> total;  // known once the last fragment (M clear) arrives
    uint8_t next_header = 0;      // from the first fragment
    BufferList first_fragment;    // the first fragment's whole packet, for the timeout error
    // RFC 5722 §4: after an overlap, fragments of this datagram are dropped until the timer ends.
    bool discarded = false;
    TimerService::TimerId timer = 0;
  };
  using Datagrams = std::map<Key, Datagram>;

  // Frees the datagram's fragments and counts the drop; with `poison` its line stays (empty and
  // discarding) until its timer ends, otherwise it is erased.
  void discard(Datagrams::iterator it, bool poison);
  void on_timeout(const Key& key);

  const InetSettings& settings_;
  TimerService& timers_;
  InetStats& stats_;
  Datagrams datagrams_;
  size_t bytes_ = 0;
  TimeoutHook timeout_hook_;
};

}  // namespace bypass::inet
