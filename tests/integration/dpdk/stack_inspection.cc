#include "tests/integration/dpdk/stack_inspection.h"

#include <functional>
#include <utility>

#include "config/config.h"
#include "stack/dpdk/dpdk_stack.h"
#include "tests/unit/socket/socket_test_harness.h"

namespace bypass::testing {

namespace {

// Runs `visit` on each dpdk worker's own thread.
void for_each_dpdk_worker(NetworkStack& stack, const std::function<void(unsigned, DpdkWorker&)>& visit) {
  for (unsigned i = 0; i < stack.num_workers(); ++i) {
    auto* worker = dynamic_cast<DpdkWorker*>(stack.worker(i));
    if (worker == nullptr) return;
    run_on(*worker, [&] { visit(i, *worker); });
  }
}

}  // namespace

bool is_dpdk_stack(NetworkStack& stack) { return dynamic_cast<DpdkStack*>(&stack) != nullptr; }

void print_tcp_connections(NetworkStack& stack, std::ostream& out) {
  for_each_dpdk_worker(stack, [&](unsigned i, DpdkWorker& worker) {
    worker.inet().tcp().for_each_connection(
        [&](const inet::TcpConnection& c) { out << "  worker " << i << ": " << c.describe() << "\n"; });
  });
  out.flush();
}

void print_inet_stats(NetworkStack& stack, std::ostream& out) {
  for_each_dpdk_worker(stack, [&](unsigned i, DpdkWorker& worker) {
    const inet::InetStats& s = worker.inet().stats();
    const std::pair<const char*, uint64_t> counters[] = {
        {"rx_frames", s.rx_frames},
        {"tx_frames", s.tx_frames},
        {"tcp_segments_received", s.tcp_segments_received},
        {"tcp_segments_sent", s.tcp_segments_sent},
        {"tcp_retransmitted_segments", s.tcp_retransmitted_segments},
        {"tcp_timeouts", s.tcp_timeouts},
        {"tcp_fast_retransmits", s.tcp_fast_retransmits},
        {"tcp_bad_checksum", s.tcp_bad_checksum},
        {"rx_malformed_tcp", s.rx_malformed_tcp},
        {"rx_malformed_ipv4", s.rx_malformed_ipv4},
        {"tcp_dropped_out_of_window", s.tcp_dropped_out_of_window},
        {"tcp_dropped_paws", s.tcp_dropped_paws},
        {"tcp_dropped_no_connection", s.tcp_dropped_no_connection},
        {"rx_not_for_us", s.rx_not_for_us},
        {"arp_requests_sent", s.arp_requests_sent},
        {"tx_no_route", s.tx_no_route},
    };
    out << "stats worker " << i << ":";
    for (const auto& [name, value] : counters) {
      if (value != 0) out << " " << name << "=" << value;
    }
    out << "\n";
  });
  if (auto* dpdk = dynamic_cast<DpdkStack*>(&stack)) {
    const pmd::PortStats p = dpdk->ports().port(0).stats();
    out << "stats port: rx_missed=" << p.rx_missed << " rx_errors=" << p.rx_errors
        << " tx_errors=" << p.tx_errors << " rx_nombuf=" << p.rx_nombuf << "\n";
  }
  out.flush();
}

size_t unfinished_tcp_connections(NetworkStack& stack) {
  size_t unfinished = 0;
  for_each_dpdk_worker(stack, [&](unsigned, DpdkWorker& worker) {
    worker.inet().tcp().for_each_connection([&](const inet::TcpConnection& c) {
      if (c.state() != inet::TcpState::TimeWait) ++unfinished;
    });
  });
  return unfinished;
}

void print_arp_entries(NetworkStack& stack, const std::vector<std::string>& ips, std::ostream& out) {
  for_each_dpdk_worker(stack, [&](unsigned i, DpdkWorker& worker) {
    if (i != 0) return;
    for (const std::string& ip : ips) {
      const auto mac = worker.inet().arp().lookup(inet::Ipv4Address{config::parse_ipv4(ip).host_order});
      out << "arp " << ip << " " << (mac ? mac->to_string() : "unresolved") << "\n";
    }
  });
  out.flush();
}

}  // namespace bypass::testing
