#include "stack/inet/tcp_segment_output.h"

#include <algorithm>

#include "stack/inet/device.h"
#include "stack/inet/ipv4_layer.h"
#include "stack/inet/ipv6_layer.h"
#include "stack/inet/tcp_connection.h"
#include "stack/inet/wire/checksum.h"

namespace bypass::inet {

uint32_t TcpSegmentOutput::max_large_segment_bytes() const {
  // Both families alike: DPDK's TSO and TCP checksum offloads (RTE_ETH_TX_OFFLOAD_TCP_TSO,
  // _TCP_CKSUM) cover IPv4 and IPv6 frames, and the software cut (TcpSegmentCutter) does too.
  const DeviceCapabilities caps = device_.capabilities();
  return caps.tx_tcp_checksum ? std::min<uint32_t>(caps.tx_large_segment_bytes, 65535) : 0;
}

namespace {
// The family's pseudo-header sum (RFC 9293 §3.1; RFC 8200 §8.1 for IPv6) for a segment of
// `tcp_length` bytes.
uint16_t pseudo_header_sum(const FourTuple& tuple, size_t tcp_length) {
  if (tuple.is_v6()) return tcp_pseudo_header_sum(tuple.local_ip.v6(), tuple.remote_ip.v6(), tcp_length);
  return tcp_pseudo_header_sum(tuple.local_ip.v4(), tuple.remote_ip.v4(), tcp_length);
}
}  // namespace

void TcpSegmentOutput::send(const FourTuple& tuple, const TcpHeader& header, BufferList payload,
                            uint16_t segment_payload) {
  const size_t headroom = tuple.is_v6() ? kIpv6FrameHeadroom : kFrameHeadroom;
  size_t header_length = header.emitted_length();
  BufferSegment head = BufferSegment::allocate(headroom + header_length);
  auto* tcp = reinterpret_cast<uint8_t*>(head.data()) + headroom;
  header.emit(tcp);
  const TcpView view(tcp, header_length);
  size_t tcp_length = header_length + payload.length();
  Packet frame;
  if (segment_payload != 0) {
    // Cut by the device (TSO, or software below the stack), which sums each piece: the field
    // holds the pseudo-header sum without the length (DPDK's TSO convention, rte_ipv4_phdr_cksum
    // and rte_ipv6_phdr_cksum with RTE_MBUF_F_TX_TCP_SEG).
    view.set_checksum(pseudo_header_sum(tuple, 0));
    frame.tx.tcp_checksum = true;
    frame.tx.segment_payload = segment_payload;
  } else if (device_.capabilities().tx_tcp_checksum) {
    // The NIC completes the sum; it expects the pseudo-header sum in the field (DPDK convention).
    view.set_checksum(pseudo_header_sum(tuple, tcp_length));
    frame.tx.tcp_checksum = true;
  } else {
    ChecksumAccumulator sum;
    sum.add_u16(pseudo_header_sum(tuple, tcp_length));
    sum.add(tcp, header_length);
    sum.add(payload, 0, payload.length());
    view.set_checksum(sum.finish());
  }
  frame.tx.l4_length = static_cast<uint8_t>(header_length);
  frame.data.append(std::move(head));
  frame.data.append(std::move(payload));
  ++stats_.tcp_segments_sent;
  if (!tuple.is_v6()) {
    ip_.send(tuple.remote_ip.v4(), IpProtocol::Tcp, std::move(frame));
    return;
  }
  // No fragmentation (RFC 8200 §5 leaves it to the source, and TCP sizes segments to the path
  // MTU instead): a segment too big is dropped and counted by Ipv6Layer, and resent smaller.
  // From the tuple's own address, which the pseudo-header above covers (not a fresh source choice).
  ip6_.send_from(tuple.local_ip.v6(), tuple.remote_ip.v6(), kIpv6Tcp, std::move(frame), /*allow_fragment=*/false);
}

}  // namespace bypass::inet
