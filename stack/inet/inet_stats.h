// Counters for one stack instance. Every drop increments exactly one reason counter.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

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
  // IPv6 / ICMPv6 / Neighbor Discovery
  uint64_t rx_malformed_ipv6 = 0, rx_ipv6_not_for_us = 0, rx_unsupported_next_header = 0;
  uint64_t ipv6_parameter_problems_sent = 0;
  uint64_t ipv6_reassembly_completed = 0, ipv6_reassembly_timeouts = 0, ipv6_reassembly_dropped = 0;
  uint64_t rx_malformed_icmpv6 = 0, icmpv6_echo_replies_sent = 0, icmpv6_errors_sent = 0;
  uint64_t icmpv6_errors_rate_limited = 0, icmpv6_errors_received = 0, icmpv6_packet_too_big_received = 0;
  // Packet Too Big about a TCP segment of no connection, or out of its window (RFC 5927 §4.1):
  // ignored, the path MTU unchanged.
  uint64_t icmpv6_packet_too_big_unvalidated = 0;
  uint64_t ipv6_tx_no_route = 0, ipv6_tx_too_big = 0;
  uint64_t rx_malformed_nd = 0, nd_solicitations_sent = 0, nd_advertisements_sent = 0;
  uint64_t nd_pending_dropped = 0, nd_resolution_failed = 0, nd_cache_full = 0;
  uint64_t nd_target_not_ours = 0;    // solicitations for an address that is not ours
  uint64_t nd_duplicate_address = 0;  // advertisements for our own address (RFC 4862 §5.4.4)
  // Duplicate Address Detection (RFC 4862 §5.4): probes sent, addresses found in use elsewhere,
  // packets dropped for being addressed to a tentative address, and packets not sent because no
  // address of ours was usable as their source (tentative or duplicated).
  uint64_t ipv6_dad_solicitations_sent = 0, ipv6_dad_duplicates = 0;
  uint64_t rx_ipv6_to_tentative = 0, ipv6_tx_no_source = 0;
  // TCP
  uint64_t rx_malformed_tcp = 0, tcp_bad_checksum = 0;
  uint64_t tcp_segments_received = 0, tcp_segments_sent = 0, tcp_retransmitted_segments = 0;
  uint64_t tcp_rst_sent = 0, tcp_rst_received = 0, tcp_challenge_acks = 0;
  uint64_t tcp_dropped_out_of_window = 0, tcp_dropped_paws = 0, tcp_dropped_no_connection = 0;
  uint64_t tcp_timeouts = 0, tcp_fast_retransmits = 0, tcp_syn_dropped_backlog = 0;
  uint64_t tcp_loss_probes = 0, tcp_spurious_timeouts = 0, tcp_out_of_window_acks_limited = 0;
  // ACKs that carried no data (of them: sent by the delayed-ACK timer, and window updates sent
  // because the application's read reopened the window): what a workload pays beyond its data.
  uint64_t tcp_pure_acks_sent = 0, tcp_delayed_acks_sent = 0, tcp_window_updates_sent = 0;
  uint64_t tcp_syn_cookies_sent = 0, tcp_syn_cookies_accepted = 0;
  uint64_t tcp_time_wait_reopened = 0;  // SYNs that opened a new incarnation from TIME-WAIT
  uint64_t tcp_connections_established = 0, tcp_connections_reset = 0;
  // Receive coalescing: units of two or more segments built by GRO (tcp_gro.h) and the segments in
  // them; frames the device already merged (LRO) and the wire segments they stood for.
  uint64_t tcp_gro_units = 0, tcp_gro_segments = 0;
  uint64_t tcp_lro_frames = 0, tcp_lro_segments = 0;
};

// Every counter by name, for tools and tests that print or look up counters.
struct InetCounter {
  std::string_view name;
  uint64_t InetStats::*field;
};
inline constexpr std::array kInetCounters = {
    InetCounter{"rx_frames", &InetStats::rx_frames},
    InetCounter{"tx_frames", &InetStats::tx_frames},
    InetCounter{"rx_malformed_ethernet", &InetStats::rx_malformed_ethernet},
    InetCounter{"rx_not_for_us", &InetStats::rx_not_for_us},
    InetCounter{"rx_unsupported_ethertype", &InetStats::rx_unsupported_ethertype},
    InetCounter{"rx_malformed_arp", &InetStats::rx_malformed_arp},
    InetCounter{"arp_requests_sent", &InetStats::arp_requests_sent},
    InetCounter{"arp_replies_sent", &InetStats::arp_replies_sent},
    InetCounter{"arp_pending_dropped", &InetStats::arp_pending_dropped},
    InetCounter{"arp_resolution_failed", &InetStats::arp_resolution_failed},
    InetCounter{"rx_malformed_ipv4", &InetStats::rx_malformed_ipv4},
    InetCounter{"rx_ipv4_not_for_us", &InetStats::rx_ipv4_not_for_us},
    InetCounter{"rx_unsupported_protocol", &InetStats::rx_unsupported_protocol},
    InetCounter{"reassembly_completed", &InetStats::reassembly_completed},
    InetCounter{"reassembly_timeouts", &InetStats::reassembly_timeouts},
    InetCounter{"reassembly_dropped", &InetStats::reassembly_dropped},
    InetCounter{"tx_no_route", &InetStats::tx_no_route},
    InetCounter{"tx_too_big", &InetStats::tx_too_big},
    InetCounter{"rx_malformed_icmp", &InetStats::rx_malformed_icmp},
    InetCounter{"icmp_echo_replies_sent", &InetStats::icmp_echo_replies_sent},
    InetCounter{"icmp_unreachable_received", &InetStats::icmp_unreachable_received},
    InetCounter{"icmp_echo_requests_sent", &InetStats::icmp_echo_requests_sent},
    InetCounter{"icmp_echo_replies_received", &InetStats::icmp_echo_replies_received},
    InetCounter{"icmp_echo_replies_unmatched", &InetStats::icmp_echo_replies_unmatched},
    InetCounter{"rx_malformed_ipv6", &InetStats::rx_malformed_ipv6},
    InetCounter{"rx_ipv6_not_for_us", &InetStats::rx_ipv6_not_for_us},
    InetCounter{"rx_unsupported_next_header", &InetStats::rx_unsupported_next_header},
    InetCounter{"ipv6_parameter_problems_sent", &InetStats::ipv6_parameter_problems_sent},
    InetCounter{"ipv6_reassembly_completed", &InetStats::ipv6_reassembly_completed},
    InetCounter{"ipv6_reassembly_timeouts", &InetStats::ipv6_reassembly_timeouts},
    InetCounter{"ipv6_reassembly_dropped", &InetStats::ipv6_reassembly_dropped},
    InetCounter{"rx_malformed_icmpv6", &InetStats::rx_malformed_icmpv6},
    InetCounter{"icmpv6_echo_replies_sent", &InetStats::icmpv6_echo_replies_sent},
    InetCounter{"icmpv6_errors_sent", &InetStats::icmpv6_errors_sent},
    InetCounter{"icmpv6_errors_rate_limited", &InetStats::icmpv6_errors_rate_limited},
    InetCounter{"icmpv6_errors_received", &InetStats::icmpv6_errors_received},
    InetCounter{"icmpv6_packet_too_big_received", &InetStats::icmpv6_packet_too_big_received},
    InetCounter{"icmpv6_packet_too_big_unvalidated", &InetStats::icmpv6_packet_too_big_unvalidated},
    InetCounter{"ipv6_tx_no_route", &InetStats::ipv6_tx_no_route},
    InetCounter{"ipv6_tx_too_big", &InetStats::ipv6_tx_too_big},
    InetCounter{"rx_malformed_nd", &InetStats::rx_malformed_nd},
    InetCounter{"nd_solicitations_sent", &InetStats::nd_solicitations_sent},
    InetCounter{"nd_advertisements_sent", &InetStats::nd_advertisements_sent},
    InetCounter{"nd_pending_dropped", &InetStats::nd_pending_dropped},
    InetCounter{"nd_resolution_failed", &InetStats::nd_resolution_failed},
    InetCounter{"nd_cache_full", &InetStats::nd_cache_full},
    InetCounter{"nd_target_not_ours", &InetStats::nd_target_not_ours},
    InetCounter{"nd_duplicate_address", &InetStats::nd_duplicate_address},
    InetCounter{"ipv6_dad_solicitations_sent", &InetStats::ipv6_dad_solicitations_sent},
    InetCounter{"ipv6_dad_duplicates", &InetStats::ipv6_dad_duplicates},
    InetCounter{"rx_ipv6_to_tentative", &InetStats::rx_ipv6_to_tentative},
    InetCounter{"ipv6_tx_no_source", &InetStats::ipv6_tx_no_source},
    InetCounter{"rx_malformed_tcp", &InetStats::rx_malformed_tcp},
    InetCounter{"tcp_bad_checksum", &InetStats::tcp_bad_checksum},
    InetCounter{"tcp_segments_received", &InetStats::tcp_segments_received},
    InetCounter{"tcp_segments_sent", &InetStats::tcp_segments_sent},
    InetCounter{"tcp_retransmitted_segments", &InetStats::tcp_retransmitted_segments},
    InetCounter{"tcp_rst_sent", &InetStats::tcp_rst_sent},
    InetCounter{"tcp_rst_received", &InetStats::tcp_rst_received},
    InetCounter{"tcp_challenge_acks", &InetStats::tcp_challenge_acks},
    InetCounter{"tcp_dropped_out_of_window", &InetStats::tcp_dropped_out_of_window},
    InetCounter{"tcp_dropped_paws", &InetStats::tcp_dropped_paws},
    InetCounter{"tcp_dropped_no_connection", &InetStats::tcp_dropped_no_connection},
    InetCounter{"tcp_timeouts", &InetStats::tcp_timeouts},
    InetCounter{"tcp_fast_retransmits", &InetStats::tcp_fast_retransmits},
    InetCounter{"tcp_syn_dropped_backlog", &InetStats::tcp_syn_dropped_backlog},
    InetCounter{"tcp_loss_probes", &InetStats::tcp_loss_probes},
    InetCounter{"tcp_pure_acks_sent", &InetStats::tcp_pure_acks_sent},
    InetCounter{"tcp_delayed_acks_sent", &InetStats::tcp_delayed_acks_sent},
    InetCounter{"tcp_window_updates_sent", &InetStats::tcp_window_updates_sent},
    InetCounter{"tcp_spurious_timeouts", &InetStats::tcp_spurious_timeouts},
    InetCounter{"tcp_out_of_window_acks_limited", &InetStats::tcp_out_of_window_acks_limited},
    InetCounter{"tcp_syn_cookies_sent", &InetStats::tcp_syn_cookies_sent},
    InetCounter{"tcp_syn_cookies_accepted", &InetStats::tcp_syn_cookies_accepted},
    InetCounter{"tcp_time_wait_reopened", &InetStats::tcp_time_wait_reopened},
    InetCounter{"tcp_connections_established", &InetStats::tcp_connections_established},
    InetCounter{"tcp_connections_reset", &InetStats::tcp_connections_reset},
    InetCounter{"tcp_gro_units", &InetStats::tcp_gro_units},
    InetCounter{"tcp_gro_segments", &InetStats::tcp_gro_segments},
    InetCounter{"tcp_lro_frames", &InetStats::tcp_lro_frames},
    InetCounter{"tcp_lro_segments", &InetStats::tcp_lro_segments},
};
static_assert(sizeof(InetStats) == kInetCounters.size() * sizeof(uint64_t),
              "kInetCounters must name every InetStats counter");

}  // namespace bypass::inet
