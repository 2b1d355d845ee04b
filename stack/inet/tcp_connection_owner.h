// What a TcpConnection needs from the stack that owns it (TcpLayer): its clock and counters, the
// initial sequence number (RFC 6528), the MTUs its segments must fit, the output path, the
// reachability hint to the neighbour cache (RFC 4861 §7.3.1), the challenge-ACK budget (RFC 5961
// §7), and the two moments the owner's tables change (established, closed). The connection sees
// its owner only through this, not through tcp_layer.h.
//
// The clock and the counters are read on every segment: they are plain references here, so
// reading them is no virtual call.
#pragma once

#include <cstdint>

#include "base/buffer_list.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ip_address.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/seq_number.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

struct FourTuple;
class TcpConnection;

class TcpConnectionOwner {
 public:
  TcpConnectionOwner(TimerService& timers, InetStats& stats) : timers_(timers), stats_(stats) {}
  TcpConnectionOwner(const TcpConnectionOwner&) = delete;
  TcpConnectionOwner& operator=(const TcpConnectionOwner&) = delete;

  TimerService& timers() { return timers_; }
  InetStats& stats() { return stats_; }

  // RFC 6528 initial sequence number for a connection of `tuple`.
  virtual SeqNumber generate_iss(const FourTuple& tuple) const = 0;
  // The MTU segments of `tuple` must fit: the link MTU for IPv4 (Fragmentation Needed reaches the
  // connection instead), the destination's path MTU for IPv6.
  virtual uint32_t path_mtu(const FourTuple& tuple) const = 0;
  // The link MTU.
  virtual uint16_t mtu() const = 0;
  // The largest IP datagram one TCP segment of `tuple` may fill (the device cuts it); 0 when
  // every segment must fit the MTU.
  virtual uint32_t max_large_segment_bytes(const FourTuple& tuple) const = 0;
  // Sends one segment; `segment_payload` != 0: a segment larger than the MTU, for the device to
  // cut into pieces of that many payload bytes.
  virtual void send_segment(const FourTuple& tuple, const TcpHeader& header, BufferList payload,
                            uint16_t segment_payload = 0) = 0;
  // RFC 4861 §7.3.1 upper-layer hint for the first hop towards an IPv6 `remote`.
  virtual void confirm_reachable(const IpAddress& remote) = 0;
  // RFC 5961 §7: whether one more challenge ACK fits the owner-wide rate limit.
  virtual bool allow_challenge_ack() = 0;
  virtual void on_established(TcpConnection& connection) = 0;
  // The connection reached CLOSED: the owner takes it out of its tables.
  virtual void on_closed(TcpConnection& connection) = 0;

 protected:
  ~TcpConnectionOwner() = default;

  TimerService& timers_;
  InetStats& stats_;
};

}  // namespace bypass::inet
