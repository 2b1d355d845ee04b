// TCP's output path: a segment's header written in front of its payload, the checksum (or the
// pseudo-header sum a device completes), and the frame handed to IPv4 or IPv6. Concrete, not
// virtual: every segment a connection sends goes through it (TcpConnectionOwner::segment_output),
// so the call is a direct one.
#pragma once

#include <cstdint>

#include "base/buffer_list.h"
#include "stack/inet/device.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

struct FourTuple;
class Ipv4Layer;
class Ipv6Layer;
class TcpSegmentOutput {
 public:
  TcpSegmentOutput(Ipv4Layer& ip, Ipv6Layer& ip6, PacketDevice& device, InetStats& stats)
      : ip_(ip), ip6_(ip6), device_(device), stats_(stats) {}

  // Sends one segment of `tuple`'s connection. `segment_payload` != 0: a segment larger than the
  // MTU, for the device to cut into pieces of that many payload bytes (TxOffload::segment_payload).
  void send(const FourTuple& tuple, const TcpHeader& header, BufferList payload, uint16_t segment_payload = 0);
  // The largest IP datagram (IPv4, or IPv6 with its fixed header) one TCP segment may fill
  // (DeviceCapabilities::tx_large_segment_bytes); 0 when every segment must fit the MTU.
  uint32_t max_large_segment_bytes() const;
  // PacketDevice::transmit_backlogged.
  bool device_backlogged() const { return device_.transmit_backlogged(); }

 private:
  Ipv4Layer& ip_;
  Ipv6Layer& ip6_;
  PacketDevice& device_;
  InetStats& stats_;
};

}  // namespace bypass::inet
