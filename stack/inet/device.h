// The stack's view of a network port. pmd/ (through stack/dpdk) implements it on a DPDK queue
// pair; tests implement it with an in-memory pipe. The stack never calls DPDK directly.
#pragma once

#include <cstdint>

#include "stack/inet/packet.h"
#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

struct DeviceCapabilities {
  bool tx_ipv4_checksum = false;
  bool tx_tcp_checksum = false;
  // The device validates checksums on receive and reports the result in Packet::rx_*.
  bool rx_checksum = false;
  // Largest IP datagram (headers included, at most 65535) the device takes in one frame with
  // TxOffload::segment_payload set and cuts into MTU-sized TCP segments itself: TSO on the port, or
  // software segmentation below the stack (GSO). 0: every frame must fit the MTU. Needs
  // tx_tcp_checksum (each cut segment gets its own sum). Like tx_tcp_checksum it holds for IPv4
  // and IPv6 alike (TxOffload::l3_length and the version field tell the device which it has).
  uint32_t tx_large_segment_bytes = 0;
};

class PacketDevice {
 public:
  virtual ~PacketDevice() = default;
  // Takes ownership of a complete Ethernet frame. May drop (the stack's retransmission covers it).
  virtual void transmit(Packet&& frame) = 0;
  // IP MTU of the link (bytes after the Ethernet header), e.g. 1500.
  virtual uint16_t mtu() const = 0;
  virtual MacAddress mac() const = 0;
  virtual DeviceCapabilities capabilities() const { return {}; }

  // The device holds frames its full queue refused and will retry them: TCP then keeps new data
  // in its send buffers (nothing copied or built yet) instead of adding frames that would wait,
  // and goes on once this clears (TcpLayer::begin_burst). A flag, not a virtual call: TCP reads
  // it for every segment of new data.
  bool transmit_backlogged() const { return transmit_backlogged_; }

 protected:
  void set_transmit_backlogged(bool backlogged) { transmit_backlogged_ = backlogged; }

 private:
  bool transmit_backlogged_ = false;
};

}  // namespace bypass::inet
