// Plain settings for one stack instance. The protocol core never reads Config; an adapter in the
// glue fills these from the tcp.* / inet options.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

using namespace std::chrono_literals;

enum class CongestionAlgorithm { NewReno, Cubic };

struct TcpSettings {
  std::chrono::nanoseconds rto_min = 200ms;      // RFC 6298 §2.4 allows a floor below 1 s
  std::chrono::nanoseconds rto_initial = 1s;     // RFC 6298 §2.1
  std::chrono::nanoseconds rto_max = 60s;        // RFC 6298 §2.5
  std::chrono::nanoseconds msl = 30s;            // TIME_WAIT lasts 2*MSL (RFC 9293 §3.4.2)
  std::chrono::nanoseconds fin_wait2_timeout = 60s;  // an orphaned FIN_WAIT_2 (closed by the app) ends
  CongestionAlgorithm congestion = CongestionAlgorithm::NewReno;
  bool delayed_ack = true;
  std::chrono::nanoseconds delayed_ack_timeout = 40ms;
  bool nagle = false;
  bool sack = true;
  bool timestamps = true;
  bool window_scale = true;
  // Coalesce each receive burst's consecutive in-order segments of a connection (tcp_gro.h).
  bool gro = true;
  uint8_t max_window_shift = 14;     // largest shift we offer (RFC 7323 §2.3 caps it at 14)
  size_t rcv_buffer = 1 << 20;
  size_t snd_buffer = 1 << 20;
  size_t syn_backlog = 256;          // half-open connections per listener
  size_t accept_backlog = 1024;      // established, not yet accepted
  bool syn_cookies = true;
  bool keepalive = false;
  std::chrono::nanoseconds keepalive_idle = 7200s;
  std::chrono::nanoseconds keepalive_interval = 75s;
  int keepalive_probes = 9;
  int max_retransmissions = 15;      // give up (reset) after this many RTO expiries in a row
  int max_syn_retransmissions = 6;
  size_t max_challenge_acks_per_second = 1000;  // RFC 5961 §7
  // At most one ACK per connection this often in answer to unacceptable segments without data
  // (Linux's tcp_invalid_ratelimit): two hosts that disagree about the sequence space would
  // otherwise trade such ACKs without end. Zero: no limit.
  std::chrono::nanoseconds invalid_ack_ratelimit = 500ms;
  uint16_t ephemeral_port_first = 32768;
  uint16_t ephemeral_port_last = 60999;
};

// IPv6 (RFC 8200) and Neighbor Discovery (RFC 4861). The address unspecified (::) leaves IPv6
// off: the stack then drops IPv6 frames as an unsupported EtherType, as it always did.
struct Ipv6Settings {
  Ipv6Address address;
  uint8_t prefix_length = 64;  // on-link prefix of `address` (RFC 4861 §2.1 "on-link")
  Ipv6Address gateway;         // unspecified: no route off the prefix
  uint8_t hop_limit = 64;      // RFC 8200 §3 leaves it to the host; 64 as Linux and IPv4's TTL
  // RFC 4861 §10 protocol constants. REACHABLE_TIME is not randomised (§6.3.2 asks for a factor
  // of 0.5 to 1.5): one host's entries expiring together costs nothing here.
  std::chrono::nanoseconds nd_reachable_time = 30s;
  std::chrono::nanoseconds nd_retrans_timer = 1s;
  std::chrono::nanoseconds nd_delay_first_probe = 5s;
  int nd_max_multicast_solicit = 3;
  int nd_max_unicast_solicit = 3;
  // RFC 4862 §5.1 DupAddrDetectTransmits: Neighbor Solicitations sent, RetransTimer
  // (nd_retrans_timer) apart, to check each of our addresses is unique before it is used (§5.4).
  // 0 turns Duplicate Address Detection off: the addresses are usable from the start, as for a
  // link whose addresses are known not to collide (or tests that want traffic at once).
  int dad_transmits = 1;
  size_t nd_pending_per_address = 32;  // packets queued while resolving one address
  size_t nd_pending_total = 1024;
  size_t nd_max_entries = 1024;        // neighbour cache lines; when full, an unconfirmed one makes room
  // RFC 8200 §4.5: a datagram not reassembled within 60 seconds is discarded.
  std::chrono::nanoseconds reassembly_timeout = 60s;
  size_t reassembly_max_datagrams = 64;
  size_t reassembly_max_bytes = 4 << 20;
  // RFC 4443 §2.4 (f): ICMPv6 errors are rate limited; a token bucket of this many per second
  // with a burst of `icmp_error_burst`.
  uint32_t icmp_errors_per_second = 100;
  uint32_t icmp_error_burst = 10;
  // RFC 8201 §4: a learned path MTU is raised back to the link MTU after this long (at least 5
  // minutes, 10 recommended), and never stored below 1280 (RFC 8200 §5).
  std::chrono::nanoseconds path_mtu_timeout = 600s;
  size_t path_mtu_max_entries = 256;
};

struct InetSettings {
  Ipv4Address address;
  Ipv4Address netmask = Ipv4Address::from_octets(255, 255, 255, 0);
  Ipv4Address gateway;  // zero: no route outside the subnet
  uint8_t ttl = 64;
  std::chrono::nanoseconds arp_timeout = 60s;        // cache entry lifetime
  std::chrono::nanoseconds arp_retry_interval = 1s;  // request retransmission while unresolved
  int arp_max_retries = 3;
  size_t arp_pending_per_address = 32;              // packets queued while resolving one address
  size_t arp_pending_total = 1024;
  std::chrono::nanoseconds ip_reassembly_timeout = 30s;  // RFC 791 suggests 15 s as a lower bound
  size_t ip_reassembly_max_datagrams = 64;
  size_t ip_reassembly_max_bytes = 4 << 20;
  Ipv6Settings ipv6;
  TcpSettings tcp;
};

}  // namespace bypass::inet
