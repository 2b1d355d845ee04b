// A request/reply client on the Bypass messenger: keeps DEPTH ChecksumRequests in flight on one
// lossless session to reqrep_server and checks every ChecksumReply (fast dispatch on the worker
// thread). A lossless client policy means a broken link is reconnected and unacknowledged
// requests are replayed, so no request is lost. Request payloads are written into memory from
// Messenger::allocate_payload(): over rdma that memory is registered with the device once, at
// start-up, so a payload of at least rdma.rendezvous_threshold bytes is read by the server with
// RDMA READ straight from it: no copy and no registration per request (over posix and dpdk it is
// ordinary memory).
//
//   reqrep_client [--set KEY=VALUE]... SERVER_IP:PORT COUNT [DEPTH] [SIZE]
//
// Exit status 0 when COUNT replies arrived and all were right, 1 otherwise (after 60 s at most).
#include <bypass/config/config.h>
#include <bypass/msgr/messenger.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

#include "example_args.h"
#include "reqrep_protocol.h"

namespace {

using namespace bypass::msgr;

// The payload of request `id`: SIZE bytes that differ from one request to the next.
std::string payload_of(uint64_t id, size_t size) {
  std::string bytes(size, '\0');
  uint64_t x = id * 0x9e3779b97f4a7c15ull + 1;
  for (char& c : bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  return bytes;
}

class ChecksumClient : public Dispatcher {
 public:
  ChecksumClient(Messenger& messenger, uint64_t count, size_t size) : messenger_(messenger), count_(count), size_(size) {}

  void send(const ConnectionRef& con, uint64_t id) {
    auto request = std::make_shared<example::ChecksumRequest>();
    request->id = id;
    // The application writes its bytes straight into the transport's memory (one or more segments).
    request->data() = messenger_.allocate_payload(size_);
    const std::string bytes = payload_of(id, size_);
    size_t at = 0;
    for (const bypass::BufferSegment& segment : request->data().segments()) {
      bytes.copy(segment.data(), segment.length(), at);
      at += segment.length();
    }
    con->send_message(request);
  }
  bool ms_can_fast_dispatch(const Message& m) const override { return m.type() == example::kChecksumReply; }
  void ms_fast_dispatch(const MessageRef& m) override {
    const auto& reply = static_cast<const example::ChecksumReply&>(*m);
    const std::string expected = payload_of(reply.id, size_);
    const bool right = reply.length == expected.size() && reply.checksum == example::checksum_of(expected);
    uint64_t next = 0;
    {
      std::lock_guard<std::mutex> guard(lock_);
      if (!right) ++wrong_;
      ++received_;
      if (sent_ < count_) next = ++sent_;
      if (received_ == count_) done_.notify_all();
    }
    if (next) send(m->connection(), next);  // keep the window full
  }
  bool ms_dispatch(const MessageRef&) override { return false; }

  // Sends the first `depth` requests, then waits for every reply. Returns false on timeout.
  bool run(const ConnectionRef& con, uint64_t depth, std::chrono::seconds timeout) {
    uint64_t first;
    {
      std::lock_guard<std::mutex> guard(lock_);
      first = sent_ = std::min(depth, count_);
    }
    for (uint64_t id = 1; id <= first; ++id) send(con, id);
    std::unique_lock<std::mutex> guard(lock_);
    return done_.wait_for(guard, timeout, [this] { return received_ == count_; });
  }
  uint64_t received() { std::lock_guard<std::mutex> guard(lock_); return received_; }
  uint64_t wrong() { std::lock_guard<std::mutex> guard(lock_); return wrong_; }

 private:
  Messenger& messenger_;
  const uint64_t count_;
  const size_t size_;
  std::mutex lock_;
  std::condition_variable done_;
  uint64_t sent_ = 0, received_ = 0, wrong_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  bypass::config::Config conf;
  const std::vector<std::string> args = example::load_options(argc, argv, conf);
  EntityAddr server;
  if (args.size() < 2 || args.size() > 4 || !EntityAddr::parse(args[0], &server)) {
    std::fprintf(stderr, "usage: %s [--set KEY=VALUE]... SERVER_IP:PORT COUNT [DEPTH] [SIZE]\n", argv[0]);
    return 2;
  }
  int64_t count = 0, depth = 16;
  uint64_t size = 4096;
  try {
    count = bypass::config::parse_int(args[1]);
    if (args.size() > 2) depth = bypass::config::parse_int(args[2]);
    if (args.size() > 3) size = bypass::config::parse_size(args[3]);
  } catch (const bypass::config::ConfigError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  if (count < 1 || depth < 1) {
    std::fprintf(stderr, "%s: COUNT and DEPTH must be at least 1\n", argv[0]);
    return 2;
  }

  std::unique_ptr<Messenger> messenger;
  try {
    messenger = Messenger::create(conf, EntityName{EntityType::Client, 1});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  ChecksumClient client(*messenger, static_cast<uint64_t>(count), size);
  messenger->registry().add(example::kChecksumReply, [] { return std::make_shared<example::ChecksumReply>(); });
  messenger->set_policy(EntityType::Osd, Policy::lossless_client());
  messenger->add_dispatcher(&client);
  if (messenger->start() != 0) {
    std::fprintf(stderr, "%s: the messenger did not start\n", argv[0]);
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  ConnectionRef con = messenger->connect_to(EntityType::Osd, EntityAddrVec{{server}});
  const bool finished = client.run(con, static_cast<uint64_t>(depth), std::chrono::seconds(60));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  messenger->shutdown();
  messenger->wait();

  std::printf("%llu of %lld replies in %.3f s (%.0f requests/s), %llu wrong\n",
              static_cast<unsigned long long>(client.received()), static_cast<long long>(count), seconds,
              client.received() / seconds, static_cast<unsigned long long>(client.wrong()));
  return finished && client.wrong() == 0 ? 0 : 1;
}
