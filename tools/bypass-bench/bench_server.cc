#include "tools/bypass-bench/bench_server.h"

#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <stdexcept>

#include "msgr/messenger.h"
#include "pmd/mempools.h"
#include "stack/inet/wire/bytes.h"
#include "stack/network_stack.h"
#include "tools/bypass-bench/bench_job.h"
#include "tools/bypass-bench/bench_protocol.h"
#include "tools/bypass-bench/process_snapshot.h"

namespace bypass::bench {

namespace {

class Responder : public msgr::Dispatcher {
 public:
  // `reply_size`: answer with that many bytes (one buffer every worker shares); none: echo.
  Responder(NetworkStack& stack, const msgr::Messenger*& messenger, std::optional<uint64_t> reply_size)
      : stack_(stack), messenger_(messenger), fixed_reply_(reply_size.has_value()) {
    if (reply_size && *reply_size > 0) {
      const std::string bytes(*reply_size, 'r');
      reply_payload_.append(BufferSegment::copy_of(bytes.data(), bytes.size(), BufferSharing::across_threads));
    }
  }

  // Data messages are answered on the connection's worker; stats requests go to the queued
  // dispatch thread because a snapshot waits on every worker.
  bool ms_can_fast_dispatch(const msgr::Message& m) const override { return m.type() != kStatsRequest; }
  void ms_fast_dispatch(const msgr::MessageRef& m) override {
    if (m->type() != kBenchRequest) return;  // kBenchStream: consumed
    auto reply = msgr::make_message(kBenchReply);
    reply->set_tid(m->tid());
    // Shares the request's received buffers (a reply of the same size without a copy), or the
    // fixed reply's.
    reply->data().append(fixed_reply_ ? reply_payload_ : m->data());
    m->connection()->send_message(std::move(reply));
  }
  bool ms_dispatch(const msgr::MessageRef& m) override {
    if (m->type() != kStatsRequest) return false;
    auto reply = std::make_shared<msgr::Message>(kStatsReply);
    reply->set_tid(m->tid());
    reply->data().append_copy(ProcessSnapshot::take(stack_, {messenger_}).text());
    m->connection()->send_message(std::move(reply));
    return true;
  }

 private:
  NetworkStack& stack_;
  const msgr::Messenger*& messenger_;
  const bool fixed_reply_;
  BufferList reply_payload_;  // bench.reply_size bytes, when set
};

msgr::EntityAddr listen_address(const config::Config& side, const BenchJob& job, const std::string& transport) {
  std::string text = job.server_address;
  if (text.empty()) text = (transport == "dpdk" ? side.get_ipv4("dpdk.host_ip").to_string() : "127.0.0.1") + ":0";
  SocketAddress parsed;
  if (transport == "dpdk" && SocketAddress::parse(text, &parsed) && parsed.is_ipv6()) {
    // The userspace stack has no loopback interface, and a wildcard listener would print "[::]"
    // for the client to connect to: ::1 and :: mean this side's own IPv6 address (side_config).
    const std::array<uint8_t, 16> octets = parsed.ipv6_octets();
    const inet::Ipv6Address ip = inet::Ipv6Address::from_bytes(octets.data());
    if (ip.is_loopback() || ip.is_unspecified())
      text = "[" + side.get_string("dpdk.host_ipv6") + "]:" + std::to_string(parsed.port());
  }
  msgr::EntityAddr addr;
  if (!msgr::EntityAddr::parse("v2:" + text, &addr))
    throw config::ConfigError("bench.server_address: '" + text + "' is not IPv4:port or [IPv6]:port");
  return addr;
}

// One line per mbuf pool (dpdk only): what a long-lived server holds, for leak checks between
// clients. "status mempool NAME in_use N size N".
void print_status(std::ostream& out) {
  for (const pmd::MempoolUsage& pool : pmd::process_mempool_usage())
    out << kStatusPrefix << "mempool " << pool.name << " in_use " << pool.in_use << " size " << pool.size << "\n";
  out << kStatusPrefix << "end" << std::endl;
}

}  // namespace

int run_bench_server(const config::Config& conf, std::ostream& out) {
  const BenchJob job = BenchJob::from_config(conf);
  const std::string transport = job.single_transport(conf, "server");
  const config::Config side = side_config(conf, Side::Server, transport);
  const msgr::EntityAddr addr = listen_address(side, job, transport);

  // Block the stop signals before any thread starts so every thread inherits the mask and only
  // sigwait below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // a status line, then serve on
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::shared_ptr<NetworkStack> stack = NetworkStack::create(side);
  const msgr::Messenger* messenger_view = nullptr;
  Responder responder(*stack, messenger_view, job.reply_size);
  std::unique_ptr<msgr::Messenger> messenger =
      msgr::Messenger::create(side, msgr::EntityName{msgr::EntityType::Osd, 0}, stack);
  messenger_view = messenger.get();
  messenger->set_default_policy(side.get_string("bench.server_policy") == "stateless" ? msgr::Policy::stateless_server()
                                                                                    : msgr::Policy::stateful_server());
  messenger->add_dispatcher(&responder);
  if (const int rc = messenger->bind(addr); rc != 0)
    throw std::runtime_error("server: cannot listen on " + addr.to_string() + ": " + socket_error_name(rc));
  if (messenger->start() != 0) throw std::runtime_error("server: the messenger did not start");
  const msgr::EntityAddrVec bound_addrs = messenger->my_addrs();
  const msgr::EntityAddr* bound = bound_addrs.msgr2_addr();
  if (bound == nullptr) throw std::runtime_error("server: the messenger has no msgr2 address");
  out << kReadyPrefix << bound->ip_port_string() << " " << transport << std::endl;

  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) == 0 && signal_number == SIGUSR1) print_status(out);
  messenger->shutdown();
  messenger->wait();
  stack->stop();
  return 0;
}

const char* bench_server_usage() {
  return "usage: bypass-bench [-c JOB.yaml] [--set key=value]... server\n"
         "\n"
         "Serves the messenger benchmark of the job for one transport (bench.transports must name\n"
         "one, or ms.type is used): listens on bench.server_address (default 127.0.0.1, or\n"
         "dpdk.host_ip for dpdk, on a free port; for dpdk [::1] and [::] mean its dpdk.host_ipv6),\n"
         "prints 'ready IP:PORT TRANSPORT' and answers\n"
         "until SIGINT/SIGTERM; SIGUSR1 prints 'status mempool NAME in_use N size N' lines (dpdk) and\n"
         "'status end'. The server side's settings are bench.server.<transport> and\n"
         "bench.server.cpus. Run `bypass-bench client` with the same job against it.\n";
}

}  // namespace bypass::bench
