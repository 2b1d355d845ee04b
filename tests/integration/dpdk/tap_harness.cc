#include "tests/integration/dpdk/tap_harness.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

#include "stack/dpdk/dpdk_stack.h"
#include "tests/support/own_network_namespace.h"

namespace bypass::tap_test {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
constexpr size_t kEchoWindow = 4u << 20;  // unsent echo bytes before the server stops reading
}

std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  return s;
}

int run_command(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

void run_on(Worker& w, std::function<void()> fn) { w.center().submit_and_wait(std::move(fn)); }

sockaddr_in kernel_address(const char* ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, ip, &sa.sin_addr);
  return sa;
}

KernelSockaddr kernel_sockaddr(const char* ip, uint16_t port) {
  KernelSockaddr out;
  if (std::strchr(ip, ':') != nullptr) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    inet_pton(AF_INET6, ip, &sa.sin6_addr);
    std::memcpy(&out.storage, &sa, sizeof(sa));
    out.length = sizeof(sa);
  } else {
    const sockaddr_in sa = kernel_address(ip, port);
    std::memcpy(&out.storage, &sa, sizeof(sa));
    out.length = sizeof(sa);
  }
  return out;
}

std::string address_with_port(const std::string& ip, uint16_t port) {
  const bool v6 = ip.find(':') != std::string::npos;
  return (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

// --- EchoServer --------------------------------------------------------------------------------

int EchoServer::start(uint16_t port) {
  int rc = 0;
  run_on(worker_, [&] {
    // One worker listens; with several workers the others' flows are steered to it.
    ListenOptions lopts;
    lopts.reuse_port = false;
    rc = worker_.listen(SocketAddress::ipv4(0, port), lopts, SocketOptions{}, &server_);
    if (rc != 0) return;
    worker_.center().create_file_event(server_.fd(), kEventReadable, [this](int, int) { on_accept(); });
  });
  return rc;
}

void EchoServer::stop() {
  run_on(worker_, [&] {
    if (server_) worker_.center().delete_file_event(server_.fd(), kEventReadable);
    server_ = ServerSocket();
    if (conn_) worker_.center().delete_file_event(conn_.fd(), kEventReadable | kEventWritable);
    conn_ = ConnectedSocket();
    pending_.clear();
  });
}

void EchoServer::on_accept() {
  ConnectedSocket sock;
  SocketAddress peer;
  if (server_.accept(&sock, SocketOptions{}, &peer, &worker_) != 0) return;
  if (conn_) return;  // one client at a time; drop extras
  conn_ = std::move(sock);
  interest_ = kEventNone;
  set_interest(kEventReadable);
}

void EchoServer::set_interest(int mask) {
  const int fd = conn_.fd();
  if (int removed = interest_ & ~mask) worker_.center().delete_file_event(fd, removed);
  const int added = mask & ~interest_;
  if (added & kEventReadable) worker_.center().create_file_event(fd, kEventReadable, [this](int, int) { pump(); });
  if (added & kEventWritable) worker_.center().create_file_event(fd, kEventWritable, [this](int, int) { pump(); });
  interest_ = mask;
}

void EchoServer::pump() {
  if (!conn_) return;
  bool eof = false;
  while (pending_.length() < kEchoWindow) {
    const ssize_t n = conn_.zero_copy_read(pending_, 256 * 1024);
    if (n == 0) eof = true;
    if (n <= 0) {
      if (n < 0 && n != -EAGAIN) errors.fetch_add(1);
      break;
    }
  }
  while (!pending_.empty()) {
    const ssize_t n = conn_.send(pending_, false);
    if (n <= 0) {
      if (n != -EAGAIN) errors.fetch_add(1);
      break;
    }
    echoed.fetch_add(static_cast<uint64_t>(n));
  }
  if (eof && pending_.empty()) {
    conn_.shutdown();
    set_interest(kEventNone);
    return;
  }
  int mask = pending_.empty() ? kEventReadable : kEventWritable;
  if (!pending_.empty() && pending_.length() < kEchoWindow) mask |= kEventReadable;
  if (eof) mask &= ~kEventReadable;
  set_interest(mask);
}

// --- EchoClient --------------------------------------------------------------------------------

EchoClient::EchoClient(Worker& worker, const std::string& data) : worker_(worker), expected_(data) {
  to_send_.append(BufferSegment::borrow(expected_.data(), expected_.size()));
}

int EchoClient::start(const SocketAddress& server) {
  int rc = 0;
  run_on(worker_, [&] {
    rc = worker_.connect(server, SocketOptions{}, &conn_);
    if (rc != 0) return;
    worker_.center().create_file_event(conn_.fd(), kEventReadable | kEventWritable,
                                       [this](int, int mask) { on_event(mask); });
  });
  return rc;
}

void EchoClient::stop() {
  run_on(worker_, [&] {
    if (conn_) worker_.center().delete_file_event(conn_.fd(), kEventReadable | kEventWritable);
    conn_ = ConnectedSocket();
    to_send_.clear();
  });
}

void EchoClient::finish(std::string result) {
  if (finished_) return;
  finished_ = true;
  worker_.center().delete_file_event(conn_.fd(), kEventReadable | kEventWritable);
  done.set_value(std::move(result));
}

void EchoClient::on_event(int mask) {
  if (finished_) return;
  const int connected = conn_.is_connected();
  if (connected < 0) return finish(std::string("connect: ") + socket_error_name(connected));
  if (connected == 0) return;
  if (mask & kEventWritable) {
    while (!to_send_.empty()) {
      const ssize_t n = conn_.send(to_send_, false);
      if (n == -EAGAIN) break;
      if (n < 0) return finish(std::string("send: ") + socket_error_name(static_cast<int>(n)));
    }
    if (to_send_.empty() && !shut_) {
      shut_ = true;
      conn_.shutdown();
    }
    if (to_send_.empty()) worker_.center().delete_file_event(conn_.fd(), kEventWritable);
  }
  for (int round = 0; round < 64; ++round) {
    BufferList got;
    const ssize_t n = conn_.zero_copy_read(got, 1 << 20);
    if (n == -EAGAIN) break;
    if (n < 0) return finish(std::string("read: ") + socket_error_name(static_cast<int>(n)));
    if (n == 0) return finish(offset_ == expected_.size() ? "" : "EOF after " + std::to_string(offset_) + " bytes");
    if (offset_ + got.length() > expected_.size()) return finish("more bytes echoed than sent");
    if (!got.contents_equal(std::string_view(expected_).substr(offset_, got.length())))
      return finish("echoed bytes differ near offset " + std::to_string(offset_));
    offset_ += got.length();
    received.store(offset_);
  }
}

// --- Kernel side -------------------------------------------------------------------------------

std::string kernel_echo_client(const char* stack_ip, uint16_t port, const std::string& data,
                               std::chrono::seconds deadline_after) {
  const KernelSockaddr sa = kernel_sockaddr(stack_ip, port);
  const int fd = ::socket(sa.family(), SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return "socket failed";
  ::connect(fd, sa.get(), sa.length);
  std::string received;
  received.reserve(data.size());
  size_t sent = 0;
  bool shut = false;
  std::string error;
  std::vector<char> buf(256 * 1024);
  const auto deadline = Clock::now() + deadline_after;
  while (received.size() < data.size() && error.empty()) {
    if (Clock::now() > deadline) {
      error = "timed out: sent " + std::to_string(sent) + ", received " + std::to_string(received.size());
      break;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (sent < data.size() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 1000) < 0) {
      if (errno == EINTR) continue;
      error = std::string("poll: ") + strerror(errno);
      break;
    }
    if (p.revents & (POLLERR | POLLHUP) && !(p.revents & POLLIN)) {
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      error = std::string("socket error: ") + strerror(err);
      break;
    }
    if ((p.revents & POLLOUT) && sent < data.size()) {
      const ssize_t n = ::send(fd, data.data() + sent, std::min<size_t>(data.size() - sent, 1 << 20), MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (sent == data.size() && !shut) {
        ::shutdown(fd, SHUT_WR);
        shut = true;
      }
    }
    if (p.revents & POLLIN) {
      const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
      if (n == 0) {
        error = "EOF after " + std::to_string(received.size()) + " bytes";
      } else if (n > 0) {
        received.append(buf.data(), static_cast<size_t>(n));
      } else if (errno != EAGAIN && errno != EINTR) {
        error = std::string("recv: ") + strerror(errno);
      }
    }
  }
  ::close(fd);
  if (!error.empty()) return error;
  if (received != data) {
    size_t at = 0;
    while (at < received.size() && received[at] == data[at]) ++at;
    return "echoed bytes differ at offset " + std::to_string(at) + " of " + std::to_string(received.size());
  }
  return "";
}

KernelEchoServer::KernelEchoServer(const char* ip, std::chrono::seconds deadline) {
  KernelSockaddr sa = kernel_sockaddr(ip, 0);
  listen_fd_ = ::socket(sa.family(), SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("kernel echo server: socket: ") + strerror(errno));
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listen_fd_, sa.get(), sa.length) != 0 || ::listen(listen_fd_, 4) != 0) {
    const std::string why = strerror(errno);
    ::close(listen_fd_);
    throw std::runtime_error("kernel echo server: bind/listen on " + std::string(ip) + ": " + why);
  }
  socklen_t len = sizeof(sa.storage);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa.storage), &len);
  if (sa.family() == AF_INET6) {
    sockaddr_in6 bound{};
    std::memcpy(&bound, &sa.storage, sizeof(bound));
    port_ = ntohs(bound.sin6_port);
  } else {
    sockaddr_in bound{};
    std::memcpy(&bound, &sa.storage, sizeof(bound));
    port_ = ntohs(bound.sin_port);
  }
  thread_ = std::thread([this, deadline] { serve(deadline); });
}

KernelEchoServer::~KernelEchoServer() {
  stop();
  ::close(listen_fd_);
}

void KernelEchoServer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void KernelEchoServer::serve(std::chrono::seconds deadline_after) {
  pollfd lp{listen_fd_, POLLIN, 0};
  const auto deadline = Clock::now() + deadline_after;
  // net_tap signals the process (SIGIO), so every blocking call here may see EINTR.
  while (!stop_ && Clock::now() < deadline) {
    lp.revents = 0;
    if (::poll(&lp, 1, 200) > 0) break;
  }
  if (!(lp.revents & POLLIN)) return;
  const int fd = ::accept(listen_fd_, nullptr, nullptr);
  if (fd < 0) return;
  std::vector<char> buf(256 * 1024);
  while (!stop_ && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t off = 0; off < n && !stop_;) {
      const ssize_t w = ::send(fd, buf.data() + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += w;
    }
  }
  ::close(fd);
}

std::string stack_echo_to_kernel(Worker& worker, const char* kernel_ip, const std::string& data,
                                 std::chrono::seconds deadline) {
  KernelEchoServer kernel_server(kernel_ip, deadline);
  auto client = std::make_unique<EchoClient>(worker, data);
  std::future<std::string> result = client->done.get_future();
  SocketAddress target;
  if (!SocketAddress::parse(address_with_port(kernel_ip, kernel_server.port()), &target))
    return std::string("cannot parse ") + kernel_ip;
  if (const int rc = client->start(target); rc != 0) return std::string("connect: ") + socket_error_name(rc);
  std::string outcome;
  if (result.wait_for(deadline) == std::future_status::ready) {
    outcome = result.get();
    if (outcome.empty() && client->received.load() != data.size())
      outcome = "finished after " + std::to_string(client->received.load()) + " of " + std::to_string(data.size()) + " bytes";
  } else {
    outcome = "timed out after " + std::to_string(client->received.load()) + " echoed bytes";
    // The stack's view of each connection, printed now: stopping the kernel's echo thread below
    // may wait on a send that a stalled connection never lets finish.
    auto& dpdk_worker = static_cast<DpdkWorker&>(worker);
    run_on(worker, [&] {
      dpdk_worker.inet().tcp().for_each_connection(
          [&](const inet::TcpConnection& c) { outcome += "\n  " + c.describe(); });
    });
    std::fprintf(stderr, "stack_echo_to_kernel: %s\n", outcome.c_str());
  }
  client->stop();
  kernel_server.stop();
  return outcome;
}

// --- TapStackEnvironment -----------------------------------------------------------------------

void TapStackEnvironment::SetUp() {
  current_ = &settings_;
  // The tap, its addresses and whatever a test adds on it (nftables tables, captures, floods)
  // stay in this process's own network namespace: the same names in a test running beside it
  // cannot collide, and nothing outlives the process.
  const std::string own_namespace = test::enter_own_network_namespace();
  ASSERT_EQ(own_namespace, "") << "cannot give the test a network namespace of its own";
  conf_ = std::make_unique<config::Config>();
  conf_->set_assignment("ms.type=dpdk", "test");
  conf_->set_assignment("ms.workers=1", "test");
  conf_->set_assignment("dpdk.vdev=[\"net_tap0,iface=" + settings_.tap + "\"]", "test");
  conf_->set_assignment("dpdk.host_ip=" + settings_.stack_ip, "test");
  conf_->set_assignment("dpdk.netmask=255.255.255.0", "test");
  conf_->set_assignment("dpdk.no_huge=yes", "test");  // net_tap copies: hugepages buy nothing here
  conf_->set_assignment("dpdk.memory=256M", "test");
  const bool ipv6 = !settings_.stack_ip6.empty() && !settings_.kernel_ip6.empty();
  if (ipv6) {
    conf_->set_assignment("dpdk.host_ipv6=" + settings_.stack_ip6, "test");
    conf_->set_assignment("dpdk.ipv6_prefix_length=64", "test");
  }
  for (const std::string& a : settings_.assignments) conf_->set_assignment(a, "test");
  conf_->apply_environment();  // e.g. BYPASS_MS_WORKERS=2 or BYPASS_DPDK_FAULT_DROP
  stack_ = NetworkStack::create(*conf_);
  ASSERT_EQ(run_command("ip addr add " + settings_.kernel_ip + "/24 dev " + settings_.tap), 0);
  if (ipv6) {
    // IPv6 may be off by default (net.ipv6.conf.default.disable_ipv6): on for this tap only. No
    // DAD on the kernel's side (nodad, accept_dad=0): its address is usable at once. net_tap
    // drops the carrier while the port restarts; keep_addr_on_down keeps the address meanwhile.
    const std::string conf = "net.ipv6.conf." + settings_.tap + ".";
    ASSERT_EQ(run_command("sysctl -qw " + conf + "disable_ipv6=0"), 0) << "cannot enable IPv6 on " << settings_.tap;
    run_command("sysctl -qw " + conf + "accept_dad=0");
    ASSERT_EQ(run_command("sysctl -qw " + conf + "keep_addr_on_down=1"), 0);
    // The kernel's end of a tap may carry the port's MAC, and then its EUI-64 link-local address
    // would be the stack's (RFC 4291 App. A): the stack's DAD would find it duplicated and give
    // IPv6 up (RFC 4862 §5.4.5). The kernel generates no link-local address here (addr_gen_mode=1).
    ASSERT_EQ(run_command("sysctl -qw " + conf + "addr_gen_mode=1"), 0);
    ASSERT_EQ(run_command("ip -6 addr add " + settings_.kernel_ip6 + "/64 dev " + settings_.tap + " nodad"), 0);
  }
  ASSERT_EQ(run_command("ip link set " + settings_.tap + " up"), 0);
  stack_->start();
}

void TapStackEnvironment::TearDown() {
  if (stack_) stack_->stop();
  stack_.reset();
  run_command("ip link del " + settings_.tap);
  current_ = nullptr;
}

inet::InetStats TapStackEnvironment::inet_stats(unsigned w) {
  auto& worker = static_cast<DpdkWorker&>(*stack_->worker(w));
  inet::InetStats out;
  run_on(worker, [&] { out = worker.inet().stats(); });
  return out;
}

pmd::PortStats TapStackEnvironment::port_stats() {
  auto& dpdk = static_cast<DpdkStack&>(*stack_);
  pmd::PortStats out;
  run_on(*stack_->worker(0), [&] { out = dpdk.ports().port(0).stats(); });
  return out;
}

std::string TapStackEnvironment::wait_ipv6_preferred(std::chrono::milliseconds bound) {
  if (current_ == nullptr || current_->stack_ip6.empty()) return "IPv6 is not configured on this tap";
  const std::optional<inet::Ipv6Address> ours = inet::Ipv6Address::from_string(current_->stack_ip6);
  if (!ours) return "cannot parse " + current_->stack_ip6;
  const auto deadline = Clock::now() + bound;
  std::string states;
  for (;;) {
    states.clear();
    bool all = true;
    for (unsigned w = 0; w < stack_->num_workers(); ++w) {
      auto& worker = static_cast<DpdkWorker&>(*stack_->worker(w));
      std::optional<inet::AddressState> state;
      run_on(worker, [&] { state = worker.inet().addresses().address_state(*ours); });
      states += " worker " + std::to_string(w) + ": " + (state ? inet::to_string(*state) : "not ours");
      all = all && state == inet::AddressState::Preferred;
    }
    if (all) return "";
    if (Clock::now() > deadline) return current_->stack_ip6 + " not preferred within the bound:" + states;
    std::this_thread::sleep_for(50ms);
  }
}

unsigned TapStackEnvironment::mbufs_in_use() {
  auto& dpdk = static_cast<DpdkStack&>(*stack_);
  unsigned in_use = 0;
  for (const pmd::MempoolUsage& u : dpdk.ports().pools().usage()) in_use += u.in_use;
  return in_use;
}

}  // namespace bypass::tap_test
