// A request/reply server on the Bypass messenger: answers every ChecksumRequest with a
// ChecksumReply, in fast dispatch (on the connection's worker thread, no queueing), with a
// lossless (stateful server) policy so a client that reconnects gets its session back.
//
//   reqrep_server [--set KEY=VALUE]... ADDR       e.g. 127.0.0.1:0 (port 0: any free port)
//
// Prints "ready IP:PORT" once it listens; SIGINT or SIGTERM shuts it down, then it prints how
// many requests it answered.
#include <bypass/config/config.h>
#include <bypass/msgr/messenger.h>

#include <csignal>
#include <cstdio>
#include <atomic>

#include "example_args.h"
#include "reqrep_protocol.h"

namespace {

using namespace bypass::msgr;

class ChecksumService : public Dispatcher {
 public:
  // Requests are answered where they arrive: on the worker thread, without a thread hand-off.
  bool ms_can_fast_dispatch(const Message& m) const override { return m.type() == example::kChecksumRequest; }
  void ms_fast_dispatch(const MessageRef& m) override { answer(m); }
  bool ms_dispatch(const MessageRef& m) override {
    if (m->type() != example::kChecksumRequest) return false;  // not ours: unhandled
    answer(m);
    return true;
  }
  void ms_handle_accept(const ConnectionRef& con) override {
    std::printf("session from %s\n", con->peer_name().to_string().c_str());
    std::fflush(stdout);
  }
  uint64_t answered() const { return answered_.load(); }

 private:
  void answer(const MessageRef& m) {
    const auto& request = static_cast<const example::ChecksumRequest&>(*m);
    const std::string bytes = request.data().to_string();
    auto reply = std::make_shared<example::ChecksumReply>();
    reply->id = request.id;
    reply->length = bytes.size();
    reply->checksum = example::checksum_of(bytes);
    m->connection()->send_message(reply);
    answered_.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<uint64_t> answered_{0};
};

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals before the messenger starts its threads, so only sigwait() sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  bypass::config::Config conf;
  const std::vector<std::string> args = example::load_options(argc, argv, conf);
  EntityAddr addr;
  if (args.size() != 1 || !EntityAddr::parse(args[0], &addr)) {
    std::fprintf(stderr, "usage: %s [--set KEY=VALUE]... IP:PORT\n", argv[0]);
    return 2;
  }

  ChecksumService service;
  std::unique_ptr<Messenger> messenger;
  try {
    messenger = Messenger::create(conf, EntityName{EntityType::Osd, 0});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  // Received ChecksumRequests come back as ChecksumRequest objects (decode_payload() has run).
  messenger->registry().add(example::kChecksumRequest, [] { return std::make_shared<example::ChecksumRequest>(); });
  messenger->set_policy(EntityType::Client, Policy::stateful_server());
  messenger->add_dispatcher(&service);
  if (const int rc = messenger->bind(addr); rc != 0 || messenger->start() != 0) {
    std::fprintf(stderr, "%s: cannot listen on %s (%d)\n", argv[0], args[0].c_str(), rc);
    return 1;
  }
  const EntityAddrVec bound_addrs = messenger->my_addrs();
  const EntityAddr* bound = bound_addrs.msgr2_addr();
  std::printf("ready %s:%u\n", bound->ip_string().c_str(), unsigned{bound->port()});
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop_signals, &signal);
  messenger->shutdown();
  messenger->wait();
  std::printf("answered %llu requests\n", static_cast<unsigned long long>(service.answered()));
  return 0;
}
