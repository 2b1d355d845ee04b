// librdmacm's rsockets (rsocket(7): a socket API over RDMA reliable connections) as the calls
// policy of the posix transport's logic (stack/posix/socket_calls.h): StreamWorker<RsocketCalls>
// is the rsocket transport. Every function keeps its libc contract: -1 and errno on failure.
// rsockets differ from kernel sockets where the comments below say.
#pragma once

#include <fcntl.h>
#include <rdma/rsocket.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <memory>

#include "config/config.h"
#include "stack/event_center.h"
#include "stack/rsocket/rpoll_driver.h"
#include "stack/rsocket/rsocket_services.h"

namespace bypass {

struct RsocketCalls {
  static constexpr const char* kType = "rsocket";  // NetworkStack::type() and log tags
  // rsetsockopt takes no SO_REUSEPORT (rsocket(7) lists what it takes): one listener accepts for
  // every worker.
  static constexpr bool kReusePort = false;
  // rreadv fills only the first vector it is given (librdmacm's rrecvv), so zero_copy_read offers
  // one segment per call rather than allocating several it cannot fill.
  static constexpr size_t kReadvSegments = 1;

  // Throws std::runtime_error when this machine has no RDMA device (rsockets run over RDMA
  // connections only); takes rsocket.max_connections (rsocket_stack.cc).
  static void configure(const config::Config& conf);
  // rsocket fds never turn readable for epoll; rpoll() waits on them.
  static std::unique_ptr<EventDriver> make_event_driver(const config::Config& /*conf*/) { return make_rpoll_driver(); }

  static int open_stream(int family) {
    const int fd = ::rsocket(family, SOCK_STREAM, 0);
    return fd < 0 ? fd : non_blocking(fd);
  }
  // raccept hands the rsocket to a librdmacm service thread (rsocket_services.h), and its data
  // transfers block unless rfcntl says otherwise.
  static int accept(int fd, sockaddr* peer, socklen_t* len) {
    const int accepted = rsocket_accept(fd, peer, len);
    return accepted < 0 ? accepted : non_blocking(accepted);
  }
  static int bind(int fd, const sockaddr* addr, socklen_t len) { return ::rbind(fd, addr, len); }
  // rlisten, and rconnect that goes on in the background, hand the rsocket to a librdmacm service
  // thread until rclose (rsocket_services.h).
  static int listen(int fd, int backlog) { return rsocket_listen(fd, backlog); }
  static int connect(int fd, const sockaddr* addr, socklen_t len) { return rsocket_connect(fd, addr, len); }
  // SO_PRIORITY and SO_REUSEPORT fail with ENOTSUP (rsocket(7)); TCP_NODELAY is accepted and
  // ignored (every rsend goes out at once); SO_RCVBUF/SO_SNDBUF size the rsocket's registered
  // buffers (set on the listener, accepted rsockets inherit them).
  static int setsockopt(int fd, int level, int name, const void* value, socklen_t len) {
    return ::rsetsockopt(fd, level, name, value, len);
  }
  static int getsockopt(int fd, int level, int name, void* value, socklen_t* len) {
    return ::rgetsockopt(fd, level, name, value, len);
  }
  static ssize_t recv(int fd, void* buf, size_t len) { return ::rrecv(fd, buf, len, 0); }
  static ssize_t readv(int fd, const iovec* iov, int count) { return ::rreadv(fd, iov, count); }
  // rsendmsg copies into the rsocket's registered send buffer and RDMA-writes it; it raises no
  // SIGPIPE and ignores MSG_MORE.
  static ssize_t sendmsg(int fd, const msghdr* msg, int flags) { return ::rsendmsg(fd, msg, flags); }
  // rshutdown and rclose of a connected rsocket wait (blocking) until the sends posted so far
  // completed, which takes up to the queue pair's retry timeout when the peer is gone.
  static int shutdown(int fd, int how) { return ::rshutdown(fd, how); }
  static int close(int fd) { return rsocket_close(fd); }
  static int getpeername(int fd, sockaddr* addr, socklen_t* len) { return ::rgetpeername(fd, addr, len); }
  static int getsockname(int fd, sockaddr* addr, socklen_t* len) { return ::rgetsockname(fd, addr, len); }

  // rgetpeername names the peer while the connect is still in progress, so it cannot tell; a
  // send of nothing drives the connect as far as it can and fails with EAGAIN until it finished
  // (librdmacm's rsend), like a kernel socket's.
  static bool connect_finished(int fd) { return ::rsend(fd, nullptr, 0, MSG_DONTWAIT) == 0; }
  // rshutdown leaves an rsocket that is still connecting alone and rpoll would not report it:
  // the driver reports the fd hung up itself, so the waiter looks again and sees the timeout.
  static void abort_connect(EventCenter& center, int fd) {
    static_cast<RpollDriver&>(center.driver()).report_hangup(fd);  // make_event_driver() built it
  }

 private:
  static int non_blocking(int fd) {
    if (::rfcntl(fd, F_SETFL, O_NONBLOCK) == 0) return fd;
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
};

}  // namespace bypass
