// The kernel's socket calls as the posix transport makes them. The transport's logic
// (stack/posix/posix_socket.h, posix_stack.h) is a template over such a calls policy, so the same
// code also runs over librdmacm's rsockets (stack/rsocket/rsocket_calls.h): every call is a
// static inline function, so the kernel instantiation makes exactly the system calls it made before
// the policy existed, with no indirect call on the data path.
//
// Every function keeps its libc contract: -1 and errno on failure.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>
#include <memory>

#include "config/config.h"
#include "stack/event_center.h"

namespace bypass {

struct KernelSocketCalls {
  static constexpr const char* kType = "posix";  // NetworkStack::type() and log tags
  // Listeners may share a port (SO_REUSEPORT), so every worker can listen on its own.
  static constexpr bool kReusePort = true;
  // readv fills every vector it is given: zero_copy_read may offer several fresh segments at once.
  static constexpr size_t kReadvSegments = 4;

  // Nothing to check or set: the kernel's sockets are always there.
  static void configure(const config::Config& /*conf*/) {}
  static std::unique_ptr<EventDriver> make_event_driver(const config::Config& conf) {
    return make_epoll_driver(conf.get_duration("posix.busy_poll"));
  }

  // A non-blocking, close-on-exec stream socket.
  static int open_stream(int family) { return ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }
  // A non-blocking, close-on-exec accepted socket.
  static int accept(int fd, sockaddr* peer, socklen_t* len) {
    return ::accept4(fd, peer, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  }
  static int bind(int fd, const sockaddr* addr, socklen_t len) { return ::bind(fd, addr, len); }
  static int listen(int fd, int backlog) { return ::listen(fd, backlog); }
  static int connect(int fd, const sockaddr* addr, socklen_t len) { return ::connect(fd, addr, len); }
  static int setsockopt(int fd, int level, int name, const void* value, socklen_t len) {
    return ::setsockopt(fd, level, name, value, len);
  }
  static int getsockopt(int fd, int level, int name, void* value, socklen_t* len) {
    return ::getsockopt(fd, level, name, value, len);
  }
  static ssize_t recv(int fd, void* buf, size_t len) { return ::recv(fd, buf, len, 0); }
  static ssize_t readv(int fd, const iovec* iov, int count) { return ::readv(fd, iov, count); }
  static ssize_t sendmsg(int fd, const msghdr* msg, int flags) { return ::sendmsg(fd, msg, flags); }
  static int shutdown(int fd, int how) { return ::shutdown(fd, how); }
  static int close(int fd) { return ::close(fd); }
  static int getpeername(int fd, sockaddr* addr, socklen_t* len) { return ::getpeername(fd, addr, len); }
  static int getsockname(int fd, sockaddr* addr, socklen_t* len) { return ::getsockname(fd, addr, len); }

  // Whether a non-blocking connect that reports no error (SO_ERROR 0) has finished: the kernel
  // names the peer only once it has.
  static bool connect_finished(int fd) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    return ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
  }
  // Ends a connect that took too long and wakes whoever waits on the fd: epoll reports the
  // aborted SYN_SENT socket as hung up (readable and writable).
  static void abort_connect(EventCenter& /*center*/, int fd) { ::shutdown(fd, SHUT_RDWR); }
};

}  // namespace bypass
