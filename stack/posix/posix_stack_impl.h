// Member definitions of StreamWorker and StreamNetworkStack (posix_stack.h), included only by the
// files that instantiate them for one calls policy (posix_stack.cc, stack/rsocket/rsocket_stack.cc).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "base/log.h"
#include "stack/posix/posix_socket.h"
#include "stack/posix/posix_stack.h"

namespace bypass {

namespace stream_detail {

template <class Calls>
int set_flag(int fd, int level, int name) {
  const int one = 1;
  return Calls::setsockopt(fd, level, name, &one, sizeof(one)) == 0 ? 0 : -errno;
}

// Closes `fd` and returns `rc`, keeping errno-based error paths short.
template <class Calls>
int close_and_fail(int fd, int rc) {
  Calls::close(fd);
  return rc;
}

}  // namespace stream_detail

template <class Calls>
StreamWorker<Calls>::StreamWorker(unsigned id, const config::Config& conf)
    : Worker(id, Calls::make_event_driver(conf)),
      inject_socket_failures_(static_cast<int>(conf.get_int("ms.inject_socket_failures"))) {}

template <class Calls>
uint64_t StreamWorker<Calls>::next_socket_seed() {
  return (static_cast<uint64_t>(id() + 1) << 40) ^ (0x5eedULL << 20) ^
         socket_serial_.fetch_add(1, std::memory_order_relaxed);
}

template <class Calls>
int StreamWorker<Calls>::listen(const SocketAddress& addr, const ListenOptions& lopts,
                                const SocketOptions& sopts, ServerSocket* out) {
  using stream_detail::close_and_fail;
  const int fd = Calls::open_stream(addr.family());
  if (fd < 0) return -errno;
  int rc = stream_detail::set_flag<Calls>(fd, SOL_SOCKET, SO_REUSEADDR);
  // Without SO_REUSEPORT (rsockets) one listener accepts for every worker (listen_per_worker()
  // is false) and reuse_port has nothing to share.
  if (rc == 0 && lopts.reuse_port && Calls::kReusePort) rc = stream_detail::set_flag<Calls>(fd, SOL_SOCKET, SO_REUSEPORT);
  // Buffer sizes must be set before listen() so accepted sockets inherit them and the window
  // scale offered in the SYN-ACK matches (RFC 7323 section 2.2: the scale is fixed at SYN time).
  if (rc == 0) rc = apply_socket_options<Calls>(fd, sopts);
  if (rc < 0) return close_and_fail<Calls>(fd, rc);
  if (Calls::bind(fd, addr.sockaddr_ptr(), addr.sockaddr_len()) != 0) return close_and_fail<Calls>(fd, -errno);
  if (Calls::listen(fd, lopts.backlog) != 0) return close_and_fail<Calls>(fd, -errno);
  *out = ServerSocket(std::make_unique<StreamServerSocket<Calls>>(*this, fd));
  return 0;
}

template <class Calls>
int StreamWorker<Calls>::connect(const SocketAddress& addr, const SocketOptions& opts, ConnectedSocket* out) {
  using stream_detail::close_and_fail;
  const int fd = Calls::open_stream(addr.family());
  if (fd < 0) return -errno;
  if (const int rc = apply_socket_options<Calls>(fd, opts); rc < 0) return close_and_fail<Calls>(fd, rc);
  int rc;
  do {
    rc = Calls::connect(fd, addr.sockaddr_ptr(), addr.sockaddr_len());
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno != EINPROGRESS) return close_and_fail<Calls>(fd, -errno);
  counters.connections_opened.fetch_add(1, std::memory_order_relaxed);
  *out = ConnectedSocket(
      std::make_unique<StreamConnectedSocket<Calls>>(*this, fd, rc != 0, opts.connect_timeout));
  return 0;
}

template <class Calls>
StreamNetworkStack<Calls>::StreamNetworkStack(const config::Config& conf)
    : NetworkStack(conf, Calls::kType),
      listen_per_worker_(Calls::kReusePort && conf.get_bool("posix.reuse_port")) {
  Calls::configure(conf);
  const int64_t workers = conf.get_int("ms.workers");
  if (workers < 1) {
    throw std::runtime_error("ms.workers: must be at least 1, got " + std::to_string(workers));
  }
  for (int64_t i = 0; i < workers; ++i) {
    add_worker(std::make_unique<StreamWorker<Calls>>(static_cast<unsigned>(i), conf));
  }
}

template <class Calls>
StreamNetworkStack<Calls>::~StreamNetworkStack() { stop(); }

template <class Calls>
NetworkStack::Counters StreamNetworkStack<Calls>::transport_counters() {
  Counters out;
  uint64_t sent = 0, received = 0, opened = 0, accepted = 0;
  for (unsigned i = 0; i < num_workers(); ++i) {
    const auto& c = static_cast<StreamWorker<Calls>*>(worker(i))->counters;
    sent += c.bytes_sent.load(std::memory_order_relaxed);
    received += c.bytes_received.load(std::memory_order_relaxed);
    opened += c.connections_opened.load(std::memory_order_relaxed);
    accepted += c.connections_accepted.load(std::memory_order_relaxed);
  }
  out.insert(out.end(), {{"bytes_sent", sent}, {"bytes_received", received},
                         {"connections_opened", opened}, {"connections_accepted", accepted}});
  return out;
}

template <class Calls>
NetworkStack::WorkerReport StreamNetworkStack<Calls>::worker_report(unsigned i) {
  const auto& c = static_cast<StreamWorker<Calls>*>(worker(i))->counters;
  WorkerReport report;
  report.counters = {{"bytes_sent", c.bytes_sent.load(std::memory_order_relaxed)},
                     {"bytes_received", c.bytes_received.load(std::memory_order_relaxed)},
                     {"connections_opened", c.connections_opened.load(std::memory_order_relaxed)},
                     {"connections_accepted", c.connections_accepted.load(std::memory_order_relaxed)}};
  return report;
}

}  // namespace bypass
