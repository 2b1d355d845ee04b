// How much payload TcpConnection::output() puts in one segment. Where the device cuts large
// segments (TSO on the port, or software segmentation below the stack: DeviceCapabilities::
// tx_large_segment_bytes), new data goes out in segments of up to ~64 KiB, so the stack's per-
// segment work (headers, timers, ACK clocking) is paid once per 64 KiB instead of once per
// SMSS; the device then cuts them at the SMSS handed to it (TxOffload::segment_payload).
//
// What the wire sees is unchanged: SMSS-sized segments, sent back to back as cwnd and the peer's
// window allow (RFC 5681 §3.1 limits what is in flight, not how it is handed to the device).
// Retransmissions (after a timeout, RFC 6298 §5.4; fast retransmit and SACK recovery, RFC 6675
// §5, go through their own paths) stay exactly one SMSS, as RFC 5681 §3.2 step 4 says.
#include <algorithm>

#include "stack/inet/tcp_connection.h"

namespace bypass::inet {

uint32_t TcpConnection::segment_length(uint32_t avail, uint32_t window, uint32_t room, uint32_t mss_limit,
                                       bool retransmission) const {
  const uint32_t one = std::min({avail, room, mss_limit});
  if (retransmission || one < mss_limit) return one;
  // The largest payload the device takes: its datagram limit less the IP header (IPv4's or
  // IPv6's) and the longest TCP header, in whole segments.
  const uint32_t datagram = owner_.segment_output().max_large_segment_bytes();
  const uint32_t headers = ip_header_length() + TcpHeader::kMaxLength;
  if (datagram <= headers + mss_limit) return one;
  const uint32_t most = (datagram - headers) / mss_limit * mss_limit;
  uint32_t len = std::min({avail, room, most});
  // Sender silly-window avoidance (RFC 9293 §3.8.6.2.1) cut by cut: only the end of the queued
  // data may leave a short last piece.
  // Deferral (Linux's tcp_tso_should_defer, simplified): each ACK frees only the two segments it
  // acknowledges, so sending at once would hand the device segments of two SMSS. While more data
  // waits than the window has room for and that room is under a quarter of the window, wait: at
  // least three quarters of the window are in flight, so ACKs will come and open more room.
  if (len < most && len < avail && room < window / 4 && !recovery_.in_recovery()) return 0;
  if (len != avail) len -= len % mss_limit;
  return len;
}

}  // namespace bypass::inet
