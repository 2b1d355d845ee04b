// Section "tcp": the userspace TCP/IP stack (stack/inet). Defaults follow the RFCs cited.
#include "config/option_sections.h"

namespace bypass::config {

void register_tcp_options(Registry& r) {
  // Retransmission timer, RFC 6298.
  r.add({.name = "tcp.rto_min", .type = OptionType::Duration, .default_value = "200ms",
         .help = "Floor of the retransmission timeout (RFC 6298 suggests 1s; Linux uses 200ms).",
         .min = 1'000'000});
  r.add({.name = "tcp.rto_initial", .type = OptionType::Duration, .default_value = "1s",
         .help = "Retransmission timeout before the first RTT sample (RFC 6298 2.1).",
         .min = 1'000'000});
  r.add({.name = "tcp.rto_max", .type = OptionType::Duration, .default_value = "60s",
         .help = "Ceiling of the retransmission timeout after back-off (RFC 6298 2.5).",
         .min = 1'000'000});
  r.add({.name = "tcp.msl", .type = OptionType::Duration, .default_value = "30s",
         .help = "Maximum segment lifetime; TIME_WAIT lasts 2*msl (RFC 9293 3.4.2)."});
  r.add({.name = "tcp.fin_wait2_timeout", .type = OptionType::Duration, .default_value = "60s",
         .help = "How long a connection the application has closed waits in FIN_WAIT_2 for the peer's FIN "
                 "before it is dropped (Linux's tcp_fin_timeout): nobody can read what would arrive, and a "
                 "peer that never closes would otherwise hold it for good."});
  r.add({.name = "tcp.congestion", .type = OptionType::Enum, .default_value = "cubic",
         .help = "Congestion control: newreno (RFC 6582) or cubic (RFC 9438).",
         .enum_values = {"newreno", "cubic"}});
  r.add({.name = "tcp.delayed_ack", .type = OptionType::Duration, .default_value = "40ms",
         .help = "Delay of a lone ACK (RFC 9293 3.8.6.3 allows up to 500ms); 0 acks at once.",
         .max = 500'000'000});
  r.add({.name = "tcp.nagle", .type = OptionType::Bool, .default_value = "false",
         .help = "Nagle's algorithm (RFC 896) on new connections by default."});
  r.add({.name = "tcp.sack", .type = OptionType::Bool, .default_value = "true",
         .help = "Offer and use selective acknowledgements (RFC 2018, recovery per RFC 6675)."});
  r.add({.name = "tcp.timestamps", .type = OptionType::Bool, .default_value = "true",
         .help = "Offer and use timestamps for RTT measurement and PAWS (RFC 7323)."});
  r.add({.name = "tcp.gro", .type = OptionType::Bool, .default_value = "true",
         .help = "Userspace stack: coalesce the consecutive in-order segments of a connection that arrive "
                 "in one receive burst into one before TCP processes them (receive offload in software, "
                 "as Linux's GRO), so TCP runs and acknowledges once per coalesced unit (RFC 5681 4.2); "
                 "off hands TCP every segment on its own."});
  r.add({.name = "tcp.window_scale", .type = OptionType::Int, .default_value = "7",
         .help = "Receive window scale shift to offer (RFC 7323 2.3 caps it at 14).",
         .min = 0, .max = 14});
  r.add({.name = "tcp.rcv_buffer", .type = OptionType::Size, .default_value = "1M",
         .help = "Receive buffer per connection (bounds the advertised window).",
         .min = 4096, .max = int64_t{1} << 30});
  r.add({.name = "tcp.snd_buffer", .type = OptionType::Size, .default_value = "1M",
         .help = "Send buffer per connection (unacknowledged plus unsent bytes).",
         .min = 4096, .max = int64_t{1} << 30});
  r.add({.name = "tcp.syn_backlog", .type = OptionType::Int, .default_value = "1024",
         .help = "Half-open connections kept per listener before SYNs are dropped or cookied.",
         .min = 1, .max = 1 << 20});
  r.add({.name = "tcp.syn_cookies", .type = OptionType::Bool, .default_value = "true",
         .help = "Answer SYNs with SYN cookies (RFC 4987 3.6) when the SYN backlog is full."});
  r.add({.name = "tcp.keepalive_idle", .type = OptionType::Duration, .default_value = "0",
         .help = "Idle time before keepalive probes start (RFC 9293 3.8.4); 0 turns keepalive off."});
  r.add({.name = "tcp.keepalive_interval", .type = OptionType::Duration, .default_value = "75s",
         .help = "Time between keepalive probes.", .min = 1'000'000});
  r.add({.name = "tcp.keepalive_count", .type = OptionType::Int, .default_value = "9",
         .help = "Unanswered keepalive probes before the connection is dropped.",
         .min = 1, .max = 1000});
  r.add({.name = "tcp.invalid_ack_ratelimit", .type = OptionType::Duration, .default_value = "500ms",
         .help = "Least time between two ACKs a connection sends in answer to out-of-window segments without "
                 "data (Linux's tcp_invalid_ratelimit), so two hosts that disagree about the sequence space "
                 "cannot trade ACKs without end; segments with data are always answered. 0: no limit."});
  r.add({.name = "tcp.arp_timeout", .type = OptionType::Duration, .default_value = "60s",
         .help = "Lifetime of a resolved ARP entry before it is refreshed.", .min = 1'000'000});
  r.add({.name = "tcp.ip_reassembly_timeout", .type = OptionType::Duration, .default_value = "30s",
         .help = "Discard an incomplete fragmented IPv4 datagram after this long (RFC 791).",
         .min = 1'000'000});
  r.add({.name = "tcp.ip_reassembly_max", .type = OptionType::Int, .default_value = "64",
         .help = "Datagrams being reassembled at once per worker; more are dropped.",
         .min = 0, .max = 65536});
}

}  // namespace bypass::config
