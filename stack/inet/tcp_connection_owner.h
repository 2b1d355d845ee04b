// What a TcpConnection needs from the stack that owns it (TcpLayer): its clock and counters, the
// output path (tcp_segment_output.h), the initial sequence number (RFC 6528), the MTUs its
// segments must fit, the
// reachability hint to the neighbour cache (RFC 4861 §7.3.1), the challenge-ACK budget (RFC 5961
// §7), and the two moments the owner's tables change (established, closed). The connection sees
// its owner only through this, not through tcp_layer.h.
//
// The clock, the counters and the output path serve every segment: they are plain references
// here, so using them is no virtual call (a virtual send_segment cost ~4 instructions per segment
// sent, callgrind inet_rx_profile).
#pragma once

#include <cstdint>

#include "base/buffer_list.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ip_address.h"
#include "stack/inet/tcp_segment_output.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/seq_number.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

struct FourTuple;
class TcpConnection;

class TcpConnectionOwner {
 public:
  TcpConnectionOwner(TimerService& timers, InetStats& stats, TcpSegmentOutput& output)
      : timers_(timers), stats_(stats), output_(output) {}
  TcpConnectionOwner(const TcpConnectionOwner&) = delete;
  TcpConnectionOwner& operator=(const TcpConnectionOwner&) = delete;

  TimerService& timers() { return timers_; }
  InetStats& stats() { return stats_; }
  TcpSegmentOutput& segment_output() { return output_; }

  // RFC 6528 initial sequence number for a connection of `tuple`.
  virtual SeqNumber generate_iss(const FourTuple& tuple) const = 0;
  // The MTU segments of `tuple` must fit: the link MTU for IPv4 (Fragmentation Needed reaches the
  // connection instead), the destination's path MTU for IPv6.
  virtual uint32_t path_mtu(const FourTuple& tuple) const = 0;
  // The link MTU.
  virtual uint16_t mtu() const = 0;
  // RFC 4861 §7.3.1 upper-layer hint for the first hop towards an IPv6 `remote`.
  virtual void confirm_reachable(const IpAddress& remote) = 0;
  // RFC 5961 §7: whether one more challenge ACK fits the owner-wide rate limit.
  virtual bool allow_challenge_ack() = 0;
  virtual void on_established(TcpConnection& connection) = 0;
  // The connection reached CLOSED: the owner takes it out of its tables.
  virtual void on_closed(TcpConnection& connection) = 0;
  // The connection holds new data while the device is backlogged (segment_output()
  // .device_backlogged()); the owner calls its output() again, in the order they came, once the
  // backlog cleared. Called once until then.
  virtual void wait_for_device(TcpConnection& connection) = 0;

 protected:
  ~TcpConnectionOwner() = default;

  TimerService& timers_;
  InetStats& stats_;
  TcpSegmentOutput& output_;
};

}  // namespace bypass::inet
