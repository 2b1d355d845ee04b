// The posix NetworkStack and Worker: listen/connect on kernel sockets, epoll per worker.
#include "stack/posix/posix_stack.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "base/log.h"
#include "stack/posix/posix_socket.h"

namespace bypass {

namespace {

int set_flag(int fd, int level, int name) {
  const int one = 1;
  return ::setsockopt(fd, level, name, &one, sizeof(one)) == 0 ? 0 : -errno;
}

// Closes `fd` and returns `rc`, keeping errno-based error paths short.
int close_and_fail(int fd, int rc) {
  ::close(fd);
  return rc;
}

}  // namespace

PosixWorker::PosixWorker(unsigned id, const config::Config& conf)
    : Worker(id, make_epoll_driver()),
      inject_socket_failures_(static_cast<int>(conf.get_int("ms.inject_socket_failures"))) {}

uint64_t PosixWorker::next_socket_seed() {
  return (static_cast<uint64_t>(id() + 1) << 40) ^ (0x5eedULL << 20) ^
         socket_serial_.fetch_add(1, std::memory_order_relaxed);
}

int PosixWorker::listen(const SocketAddress& addr, const ListenOptions& lopts,
                        const SocketOptions& sopts, ServerSocket* out) {
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int rc = set_flag(fd, SOL_SOCKET, SO_REUSEADDR);
  if (rc == 0 && lopts.reuse_port) rc = set_flag(fd, SOL_SOCKET, SO_REUSEPORT);
  // Buffer sizes must be set before listen() so accepted sockets inherit them and the window
  // scale offered in the SYN-ACK matches (RFC 7323 section 2.2: the scale is fixed at SYN time).
  if (rc == 0) rc = apply_socket_options(fd, sopts);
  if (rc < 0) return close_and_fail(fd, rc);
  if (::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0) return close_and_fail(fd, -errno);
  if (::listen(fd, lopts.backlog) != 0) return close_and_fail(fd, -errno);
  *out = ServerSocket(std::make_unique<PosixServerSocket>(*this, fd));
  return 0;
}

int PosixWorker::connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) {
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (const int rc = apply_socket_options(fd, opts); rc < 0) return close_and_fail(fd, rc);
  int rc;
  do {
    rc = ::connect(fd, addr.sockaddr_ptr(), addr.sockaddr_len());
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno != EINPROGRESS) return close_and_fail(fd, -errno);
  counters.connections_opened.fetch_add(1, std::memory_order_relaxed);
  *out = ConnectedSocket(
      std::make_unique<PosixConnectedSocket>(*this, fd, rc != 0, opts.connect_timeout));
  return 0;
}

PosixNetworkStack::PosixNetworkStack(const config::Config& conf)
    : NetworkStack(conf, "posix"), listen_per_worker_(conf.get_bool("posix.reuse_port")) {
  const int64_t workers = conf.get_int("ms.workers");
  if (workers < 1) {
    throw std::runtime_error("ms.workers: must be at least 1, got " + std::to_string(workers));
  }
  for (int64_t i = 0; i < workers; ++i) {
    add_worker(std::make_unique<PosixWorker>(static_cast<unsigned>(i), conf));
  }
}

PosixNetworkStack::~PosixNetworkStack() { stop(); }

NetworkStack::Counters PosixNetworkStack::transport_counters() {
  Counters out;
  uint64_t sent = 0, received = 0, opened = 0, accepted = 0;
  for (unsigned i = 0; i < num_workers(); ++i) {
    const PosixWorker::Counters& c = static_cast<PosixWorker*>(worker(i))->counters;
    sent += c.bytes_sent.load(std::memory_order_relaxed);
    received += c.bytes_received.load(std::memory_order_relaxed);
    opened += c.connections_opened.load(std::memory_order_relaxed);
    accepted += c.connections_accepted.load(std::memory_order_relaxed);
  }
  out.insert(out.end(), {{"bytes_sent", sent}, {"bytes_received", received},
                         {"connections_opened", opened}, {"connections_accepted", accepted}});
  return out;
}

NetworkStack::WorkerReport PosixNetworkStack::worker_report(unsigned i) {
  const PosixWorker::Counters& c = static_cast<PosixWorker*>(worker(i))->counters;
  WorkerReport report;
  report.counters = {{"bytes_sent", c.bytes_sent.load(std::memory_order_relaxed)},
                     {"bytes_received", c.bytes_received.load(std::memory_order_relaxed)},
                     {"connections_opened", c.connections_opened.load(std::memory_order_relaxed)},
                     {"connections_accepted", c.connections_accepted.load(std::memory_order_relaxed)}};
  return report;
}

std::shared_ptr<NetworkStack> make_posix_stack(const config::Config& conf) {
  return std::make_shared<PosixNetworkStack>(conf);
}

}  // namespace bypass
