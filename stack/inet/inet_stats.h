// Counters for one stack instance. Every drop increments exactly one reason counter.
#pragma once

#include <cstdint>

namespace bypass::inet {

struct InetStats {
  // link / ARP
  uint64_t rx_frames = 0, tx_frames = 0;
  uint64_t rx_malformed_ethernet = 0, rx_not_for_us = 0, rx_unsupported_ethertype = 0;
  uint64_t rx_malformed_arp = 0, arp_requests_sent = 0, arp_replies_sent = 0;
  uint64_t arp_pending_dropped = 0, arp_resolution_failed = 0;
  // IPv4 / ICMP
  uint64_t rx_malformed_ipv4 = 0, rx_ipv4_not_for_us = 0, rx_unsupported_protocol = 0;
  uint64_t reassembly_completed = 0, reassembly_timeouts = 0, reassembly_dropped = 0;
  uint64_t tx_no_route = 0, tx_too_big = 0;
  uint64_t rx_malformed_icmp = 0, icmp_echo_replies_sent = 0, icmp_unreachable_received = 0;
  uint64_t icmp_echo_requests_sent = 0, icmp_echo_replies_received = 0, icmp_echo_replies_unmatched = 0;
  // TCP
  uint64_t rx_malformed_tcp = 0, tcp_bad_checksum = 0;
  uint64_t tcp_segments_received = 0, tcp_segments_sent = 0, tcp_retransmitted_segments = 0;
  uint64_t tcp_rst_sent = 0, tcp_rst_received = 0, tcp_challenge_acks = 0;
  uint64_t tcp_dropped_out_of_window = 0, tcp_dropped_paws = 0, tcp_dropped_no_connection = 0;
  uint64_t tcp_timeouts = 0, tcp_fast_retransmits = 0, tcp_syn_dropped_backlog = 0;
  uint64_t tcp_syn_cookies_sent = 0, tcp_syn_cookies_accepted = 0;
  uint64_t tcp_connections_established = 0, tcp_connections_reset = 0;
};

}  // namespace bypass::inet
