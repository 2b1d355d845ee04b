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

std::string apply_ipv6_addressing(std::string_view address, std::string_view gateway, InetSettings& settings) {
  Ipv6Settings ipv6 = settings.ipv6;
  ipv6.address = Ipv6Address{};
  ipv6.gateway = Ipv6Address{};
  ipv6.prefix_length = 64;
  if (!address.empty()) {
    std::string_view host = address;
    if (const size_t slash = address.find('/'); slash != std::string_view::npos) {
      host = address.substr(0, slash);
      const std::string_view length = address.substr(slash + 1);
      if (length.empty() || length.size() > 3 || length.find_first_not_of("0123456789") != std::string_view::npos ||
          std::stoi(std::string(length)) > 128)
        return "IPv6 prefix length must be 0 to 128: " + std::string(address);
      ipv6.prefix_length = static_cast<uint8_t>(std::stoi(std::string(length)));
    }
    const auto parsed = Ipv6Address::from_string(host);
    if (!parsed) return "not an IPv6 address: " + std::string(address);
    // A host address must name one interface (RFC 4291 §2.5.2, §2.7).
    if (parsed->is_unspecified() || parsed->is_multicast() || parsed->is_loopback())
      return "not a unicast IPv6 address for the stack: " + std::string(address);
    ipv6.address = *parsed;
  }
  if (!gateway.empty()) {
    const auto parsed = Ipv6Address::from_string(gateway);
    if (!parsed || parsed->is_unspecified() || parsed->is_multicast())
      return "not a unicast IPv6 gateway address: " + std::string(gateway);
    ipv6.gateway = *parsed;
  }
  settings.ipv6 = ipv6;
  return {};
}

}  // namespace bypass::inet
