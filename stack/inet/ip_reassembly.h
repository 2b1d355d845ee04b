// IPv4 fragment reassembly (RFC 791 §3.2, "reassembly"; RFC 815 hole bookkeeping simplified to a
// sorted fragment list). Bounded: at most `ip_reassembly_max_datagrams` datagrams and
// `ip_reassembly_max_bytes` bytes in progress; a datagram not complete within the timeout is
// dropped. Overlapping fragments drop the whole datagram (they are only ever produced by attacks
// or broken middleboxes; cf. RFC 5722 for the IPv6 equivalent).
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "base/buffer_list.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/ipv4.h"

namespace bypass::inet {

class IpReassembler {
 public:
  IpReassembler(const InetSettings& settings, TimerService& timers, InetStats& stats);
  ~IpReassembler();
  // `payload` is the fragment's data (after the IP header). Returns the whole datagram's payload
  // when this fragment completes it.
  std::optional<BufferList> add(const Ipv4Header& header, BufferList&& payload);
  size_t datagrams_in_progress() const { return datagrams_.size(); }
  size_t bytes_in_progress() const { return bytes_; }

 private:
  using Key = std::tuple<uint32_t, uint32_t, uint16_t, uint8_t>;  // src, dst, id, protocol
  struct Datagram {
    std::map<size_t, BufferList> fragments;  // by offset
    size_t received = 0;
    std::optional<size_t> total;  // known once the last fragment (MF=0) arrives
    TimerService::TimerId timer = 0;
  };
  void drop(std::map<Key, Datagram>::iterator it);

  const InetSettings& settings_;
  TimerService& timers_;
  InetStats& stats_;
  std::map<Key, Datagram> datagrams_;
  size_t bytes_ = 0;
};

}  // namespace bypass::inet
