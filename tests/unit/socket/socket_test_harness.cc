#include "tests/unit/socket/socket_test_harness.h"

#include <arpa/inet.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <stdexcept>

namespace bypass::testing {

config::Config make_test_config(const std::vector<std::string>& overrides) {
  config::Config conf;
  conf.apply_environment();
  for (const auto& assignment : overrides) conf.set_assignment(assignment, "test");
  return conf;
}

SocketAddress test_listen_address() {
  const char* text = std::getenv("BYPASS_TEST_ADDR");
  const std::string value = text != nullptr ? text : "127.0.0.1:0";
  SocketAddress addr;
  if (!SocketAddress::parse(value, &addr)) {
    throw std::runtime_error("BYPASS_TEST_ADDR: '" + value + "' is not ip:port or [ipv6]:port");
  }
  return addr;
}

void Completion::signal() {
  std::lock_guard lock(mutex_);
  ++count_;
  cv_.notify_all();
}

bool Completion::wait_for(int count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return count_ >= count; });
}

int Completion::count() {
  std::lock_guard lock(mutex_);
  return count_;
}

void run_on(Worker& w, std::function<void()> fn) { w.center().submit_and_wait(std::move(fn)); }

// ---------------------------------------------------------------------------------------------

StreamHandler::StreamHandler(HandlerPool& pool, Worker& worker, ConnectedSocket socket)
    : pool_(pool), worker_(worker), socket_(std::move(socket)) {}

StreamHandler::~StreamHandler() {
  if (interest_ != kEventNone) worker_.center().delete_file_event(watched_fd_, interest_);
}

void StreamHandler::set_interest(int mask) {
  if (finished_ || !socket_) return;
  const int fd = socket_.fd();
  const int removed = interest_ & ~mask;
  const int added = mask & ~interest_;
  if (removed != kEventNone) worker_.center().delete_file_event(fd, removed);
  if (added & kEventReadable) {
    worker_.center().create_file_event(fd, kEventReadable, [this](int, int) {
      if (!finished_) on_readable();
    });
  }
  if (added & kEventWritable) {
    worker_.center().create_file_event(fd, kEventWritable, [this](int, int) {
      if (!finished_) on_writable();
    });
  }
  interest_ = mask;
  watched_fd_ = fd;
}

void StreamHandler::finish() {
  if (finished_) return;
  finished_ = true;
  pool_.retire(worker_, this);
}

// ---------------------------------------------------------------------------------------------

HandlerPool::HandlerPool(NetworkStack& stack) : stack_(stack), live_(stack.num_workers()) {}

HandlerPool::~HandlerPool() { clear(); }

void HandlerPool::retire(Worker& worker, StreamHandler* handler) {
  // Deferred: the handler may be inside one of its own callbacks right now.
  worker.center().dispatch_external([this, id = worker.id(), handler] { live_[id].erase(handler); });
}

void HandlerPool::clear() {
  for (unsigned i = 0; i < stack_.num_workers(); ++i) {
    run_on(*stack_.worker(i), [this, i] { live_[i].clear(); });
  }
}

size_t HandlerPool::live_count() {
  size_t total = 0;
  for (unsigned i = 0; i < stack_.num_workers(); ++i) {
    run_on(*stack_.worker(i), [&, i] { total += live_[i].size(); });
  }
  return total;
}

// ---------------------------------------------------------------------------------------------

TestListener::TestListener(NetworkStack& stack, AcceptCallback on_accept)
    : stack_(stack), on_accept_(std::move(on_accept)) {
  servers_.resize(stack.num_workers());
}

TestListener::~TestListener() { close(); }

int TestListener::listen(SocketAddress addr, const ListenOptions& lopts, const SocketOptions& sopts) {
  sopts_ = sopts;
  const unsigned listeners = stack_.listen_per_worker() ? stack_.num_workers() : 1;
  for (unsigned i = 0; i < listeners; ++i) {
    Worker& w = *stack_.worker(i);
    int rc = 0;
    run_on(w, [&] {
      rc = w.listen(addr, lopts, sopts, &servers_[i]);
      if (rc != 0) return;
      w.center().create_file_event(servers_[i].fd(), kEventReadable,
                                   [this, &w](int, int) { accept_ready(w); });
      // Port 0: the first listener picks the port, the others share it (SO_REUSEPORT).
      if (i == 0) {
        address_ = servers_[0].local_address();
        addr = address_;
      }
    });
    if (rc != 0) return rc;
  }
  return 0;
}

SocketAddress TestListener::connect_address() const {
  SocketAddress addr = address_;
  if (addr.is_ipv4() && addr.ipv4_host_order() == INADDR_ANY) {
    addr = SocketAddress::ipv4(INADDR_LOOPBACK, addr.port());
  }
  return addr;
}

void TestListener::accept_ready(Worker& w) {
  ServerSocket& server = servers_[w.id()];
  // Bounded so one busy listener cannot starve the loop's other events.
  for (int i = 0; i < 256 && server; ++i) {
    Worker* target = stack_.listen_per_worker() ? &w : stack_.least_loaded_worker();
    ConnectedSocket socket;
    if (server.accept(&socket, sopts_, nullptr, target) != 0) return;
    if (target == &w) {
      on_accept_(w, std::move(socket));
    } else {
      auto moved = std::make_shared<ConnectedSocket>(std::move(socket));
      target->center().dispatch_external(
          [this, target, moved] { on_accept_(*target, std::move(*moved)); });
    }
  }
}

void TestListener::close() {
  for (unsigned i = 0; i < servers_.size(); ++i) {
    if (!servers_[i]) continue;
    run_on(*stack_.worker(i), [&, i] {
      stack_.worker(i)->center().delete_file_event(servers_[i].fd(), kEventReadable);
      servers_[i].abort_accept();
    });
  }
}

void tear_down_transport(std::unique_ptr<TestListener>& listener, std::unique_ptr<HandlerPool>& pool,
                         const std::shared_ptr<NetworkStack>& stack) {
  if (listener) listener->close();
  if (pool) pool->clear();
  listener.reset();
  pool.reset();
  if (stack) stack->stop();
}

namespace {

bool machine_has_rdma_device() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
  return !ec && it != std::filesystem::directory_iterator();
}

}  // namespace

int run_transport_suite(int argc, char** argv, const std::function<void()>& probe) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    test_listen_address();
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "bad test configuration: %s\n", e.what());
    return 1;
  }
  try {
    probe();
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "bad test configuration: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    const char* type = std::getenv("BYPASS_MS_TYPE");
    const bool needs_rdma = type != nullptr && (std::string(type) == "rdma" || std::string(type) == "rsocket");
    if (needs_rdma && !machine_has_rdma_device()) {
      std::printf("SKIP: no RDMA device on this machine: %s\n", e.what());
      return 77;
    }
    std::fprintf(stderr, "the transport cannot start: %s\n", e.what());
    return 1;
  }
  return RUN_ALL_TESTS();
}

}  // namespace bypass::testing
