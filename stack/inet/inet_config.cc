#include "stack/inet/inet_config.h"

namespace bypass::inet {

void apply_tcp_config(const config::Config& config, InetSettings& settings) {
  TcpSettings& tcp = settings.tcp;
  tcp.rto_min = config.get_duration("tcp.rto_min");
  tcp.rto_initial = config.get_duration("tcp.rto_initial");
  tcp.rto_max = config.get_duration("tcp.rto_max");
  tcp.msl = config.get_duration("tcp.msl");
  tcp.fin_wait2_timeout = config.get_duration("tcp.fin_wait2_timeout");
  tcp.congestion = config.get_string("tcp.congestion") == "cubic" ? CongestionAlgorithm::Cubic
                                                                  : CongestionAlgorithm::NewReno;
  tcp.delayed_ack_timeout = config.get_duration("tcp.delayed_ack");
  tcp.delayed_ack = tcp.delayed_ack_timeout.count() > 0;
  tcp.nagle = config.get_bool("tcp.nagle");
  tcp.sack = config.get_bool("tcp.sack");
  tcp.timestamps = config.get_bool("tcp.timestamps");
  tcp.gro = config.get_bool("tcp.gro");
  int64_t shift = config.get_int("tcp.window_scale");
  tcp.window_scale = shift > 0;
  tcp.max_window_shift = static_cast<uint8_t>(shift);
  tcp.rcv_buffer = config.get_size("tcp.rcv_buffer");
  tcp.snd_buffer = config.get_size("tcp.snd_buffer");
  tcp.syn_backlog = static_cast<size_t>(config.get_int("tcp.syn_backlog"));
  tcp.syn_cookies = config.get_bool("tcp.syn_cookies");
  tcp.keepalive_idle = config.get_duration("tcp.keepalive_idle");
  tcp.keepalive = tcp.keepalive_idle.count() > 0;
  tcp.keepalive_interval = config.get_duration("tcp.keepalive_interval");
  tcp.keepalive_probes = static_cast<int>(config.get_int("tcp.keepalive_count"));
  tcp.invalid_ack_ratelimit = config.get_duration("tcp.invalid_ack_ratelimit");
  settings.arp_timeout = config.get_duration("tcp.arp_timeout");
  settings.ip_reassembly_timeout = config.get_duration("tcp.ip_reassembly_timeout");
  settings.ip_reassembly_max_datagrams = static_cast<size_t>(config.get_int("tcp.ip_reassembly_max"));
}

}  // namespace bypass::inet
