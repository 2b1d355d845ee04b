#include "tests/integration/dpdk/stack_inspection.h"

#include <algorithm>
#include <functional>

#include "config/config.h"
#include "stack/dpdk/dpdk_stack.h"

namespace bypass::testing {

namespace {

// Runs `visit` on each dpdk worker's own thread.
void for_each_dpdk_worker(NetworkStack& stack, const std::function<void(unsigned, inet::InetStack&)>& visit) {
  auto* dpdk = dynamic_cast<DpdkStack*>(&stack);
  if (dpdk == nullptr) return;
  for (unsigned i = 0; i < dpdk->num_workers(); ++i)
    dpdk->run_on_worker(i, [&](inet::InetStack& host) { visit(i, host); });
}

// Each address of `ips` (valid IPv6 text) in the stack's form.
std::vector<inet::Ipv6Address> ipv6_addresses(const std::vector<std::string>& ips) {
  std::vector<inet::Ipv6Address> addresses;
  for (const std::string& ip : ips) addresses.push_back(inet::Ipv6Address::from_string(ip).value());
  return addresses;
}

// "send_mss [IP]:PORT N bytes_acked=B" for one connection (print_path_mtu's line).
std::string send_mss_line(const inet::TcpConnection& c) {
  return "send_mss " + inet::endpoint_to_string(c.tuple().remote_ip, c.tuple().remote_port) + " " +
         std::to_string(c.send_mss()) + " bytes_acked=" + std::to_string(c.bytes_acked()) + "\n";
}

}  // namespace

bool is_dpdk_stack(NetworkStack& stack) { return dynamic_cast<DpdkStack*>(&stack) != nullptr; }

void print_tcp_connections(NetworkStack& stack, std::ostream& out) {
  for_each_dpdk_worker(stack, [&](unsigned i, inet::InetStack& host) {
    host.tcp().for_each_connection(
        [&](const inet::TcpConnection& c) { out << "  worker " << i << ": " << c.describe() << "\n"; });
  });
  out.flush();
}

void print_inet_stats(NetworkStack& stack, std::ostream& out) {
  for_each_dpdk_worker(stack, [&](unsigned i, inet::InetStack& host) {
    const inet::InetStats& s = host.stats();
    out << "stats worker " << i << ":";
    for (const inet::InetCounter& c : inet::kInetCounters) {
      if (s.*(c.field) != 0) out << " " << c.name << "=" << s.*(c.field);
    }
    out << "\n";
  });
  if (auto* dpdk = dynamic_cast<DpdkStack*>(&stack)) {
    for (unsigned i = 0; i < dpdk->num_workers(); ++i) {
      DpdkWorker& worker = dpdk->dpdk_worker(i);
      worker.center().submit_and_wait([&] {
        const TxChainCounters& tx = worker.device().tx_counters();
        out << "stats tx worker " << i << ": frames=" << tx.frames << " tso_segments=" << tx.tso_segments
            << " cut_segments=" << tx.cut_segments << " cut_frames=" << tx.cut_frames << "\n";
      });
    }
    const pmd::PortStats p = dpdk->ports().port(0).stats();
    out << "stats port: rx_missed=" << p.rx_missed << " rx_errors=" << p.rx_errors
        << " tx_errors=" << p.tx_errors << " rx_nombuf=" << p.rx_nombuf << "\n";
  }
  out.flush();
}

size_t unfinished_tcp_connections(NetworkStack& stack) {
  size_t unfinished = 0;
  for_each_dpdk_worker(stack, [&](unsigned, inet::InetStack& host) {
    host.tcp().for_each_connection([&](const inet::TcpConnection& c) {
      if (c.state() != inet::TcpState::TimeWait) ++unfinished;
    });
  });
  return unfinished;
}

void print_arp_entries(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out) {
  for_each_dpdk_worker(stack, [&](unsigned i, inet::InetStack& host) {
    if (i != 0) return;
    for (const std::string& ip : ips) {
      const auto mac = host.arp().lookup(inet::Ipv4Address{config::parse_ipv4(ip).host_order});
      out << "arp " << ip << " " << (mac ? mac->to_string() : "unresolved") << "\n";
    }
  });
  out.flush();
}

void print_neighbor_entries(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out) {
  const std::vector<inet::Ipv6Address> addresses = ipv6_addresses(ips);
  for_each_dpdk_worker(stack, [&](unsigned i, inet::InetStack& host) {
    if (i != 0) return;
    for (const inet::Ipv6Address& ip : addresses) {
      const auto mac = host.neighbors().lookup(ip);
      out << "neigh " << ip.to_string() << " " << (mac ? mac->to_string() : "unresolved") << "\n";
    }
  });
  out.flush();
}

void print_path_mtu(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out) {
  const std::vector<inet::Ipv6Address> addresses = ipv6_addresses(ips);
  for_each_dpdk_worker(stack, [&](unsigned i, inet::InetStack& host) {
    if (i != 0) return;
    for (const inet::Ipv6Address& ip : addresses)
      out << "path_mtu " << ip.to_string() << " " << host.ipv6().path_mtu(ip) << "\n";
  });
  for_each_dpdk_worker(stack, [&](unsigned, inet::InetStack& host) {
    host.tcp().for_each_connection([&](const inet::TcpConnection& c) {
      const inet::FourTuple& tuple = c.tuple();
      if (!tuple.is_v6()) return;
      if (std::find(addresses.begin(), addresses.end(), tuple.remote_ip.v6()) == addresses.end()) return;
      out << send_mss_line(c);
    });
  });
  out.flush();
}

std::string send_mss_of(NetworkStack& stack, unsigned worker, const SocketAddress& local) {
  auto* dpdk = dynamic_cast<DpdkStack*>(&stack);
  if (dpdk == nullptr) return {};
  std::string line;
  dpdk->dpdk_worker(worker).inet().tcp().for_each_connection([&](const inet::TcpConnection& c) {
    if (c.tuple().local_port == local.port()) line = send_mss_line(c);
  });
  return line;
}

}  // namespace bypass::testing
