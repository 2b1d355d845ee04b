// Member definitions of the stream sockets in posix_socket.h, included only by the files that
// instantiate them for one calls policy (posix_socket.cc, stack/rsocket/rsocket_stack.cc).
// Everything is non-blocking; errors come back as -errno and never raise SIGPIPE (MSG_NOSIGNAL).
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "base/log.h"
#include "stack/posix/posix_socket.h"
#include "stack/posix/posix_stack.h"

namespace bypass {

namespace stream_detail {

// IOV_MAX is the kernel's UIO_MAXIOV (1024): the most segments one sendmsg can take.
constexpr int kMaxIov = IOV_MAX;
// zero_copy_read reads into fresh segments of at most this size.
constexpr size_t kReadChunk = 64 * 1024;
// Below this fill ratio the fresh segment is copied into a tight one so a few bytes do not pin
// a whole chunk for the lifetime of the message.
constexpr size_t kTightCopyDivisor = 8;

template <class Calls>
int set_int_option(int fd, int level, int name, int value) {
  if (Calls::setsockopt(fd, level, name, &value, sizeof(value)) != 0) return -errno;
  return 0;
}

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class Calls>
SocketAddress address_of(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  const int rc = peer ? Calls::getpeername(fd, sa, &len) : Calls::getsockname(fd, sa, &len);
  if (rc != 0) return SocketAddress();
  return SocketAddress::from_sockaddr(sa, len);
}

// A closed fd number is soon reused; a registration left behind in the EventCenter would then
// describe the wrong socket. (Off the owner thread the loop is not running these events.)
inline void forget_file_events(Worker& worker, int fd) {
  if (worker.center().in_thread()) worker.center().delete_file_event(fd, kEventReadable | kEventWritable);
}

}  // namespace stream_detail

template <class Calls>
int apply_socket_options(int fd, const SocketOptions& opts) {
  using stream_detail::set_int_option;
  int rc = set_int_option<Calls>(fd, IPPROTO_TCP, TCP_NODELAY, opts.nodelay ? 1 : 0);
  if (rc == 0 && opts.rcvbuf_bytes > 0) rc = set_int_option<Calls>(fd, SOL_SOCKET, SO_RCVBUF, opts.rcvbuf_bytes);
  if (rc == 0 && opts.sndbuf_bytes > 0) rc = set_int_option<Calls>(fd, SOL_SOCKET, SO_SNDBUF, opts.sndbuf_bytes);
  if (rc == 0 && opts.priority >= 0) rc = set_int_option<Calls>(fd, SOL_SOCKET, SO_PRIORITY, opts.priority);
  return rc;
}

// ---------------------------------------------------------------------------------------------

template <class Calls>
StreamConnectedSocket<Calls>::StreamConnectedSocket(StreamWorker<Calls>& worker, int fd, bool connecting,
                                                    std::chrono::milliseconds connect_timeout)
    : worker_(worker),
      fd_(fd),
      connecting_(connecting),
      connect_deadline_(std::chrono::steady_clock::now() + connect_timeout),
      rng_state_(worker.next_socket_seed()) {
  worker_.open_sockets.fetch_add(1, std::memory_order_relaxed);
  // A connect to a host that never answers leaves the fd silent; the timer makes it fire
  // (Calls::abort_connect wakes any waiter) so the caller sees -ETIMEDOUT from is_connected().
  if (connecting_ && connect_timeout.count() > 0 && worker_.center().in_thread()) {
    connect_timer_ = worker_.center().create_timer(connect_timeout, [this] {
      connect_timer_.reset();
      on_connect_timeout();
    });
  }
}

template <class Calls>
StreamConnectedSocket<Calls>::~StreamConnectedSocket() { close(); }

template <class Calls>
void StreamConnectedSocket<Calls>::cancel_connect_timer() {
  if (connect_timer_ && worker_.center().in_thread()) worker_.center().cancel_timer(*connect_timer_);
  connect_timer_.reset();
}

template <class Calls>
void StreamConnectedSocket<Calls>::on_connect_timeout() {
  if (!connecting_ || fd_ < 0) return;
  if (is_connected() != 0) return;  // finished (or failed) in the meantime
  connect_error_ = ETIMEDOUT;
  Calls::abort_connect(worker_.center(), fd_);
}

template <class Calls>
int StreamConnectedSocket<Calls>::is_connected() {
  if (fd_ < 0) return -EBADF;
  if (connect_error_ != 0) return -connect_error_;
  if (!connecting_) return 1;
  int err = 0;
  socklen_t len = sizeof(err);
  if (Calls::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    connect_error_ = err;
    cancel_connect_timer();
    return -err;
  }
  if (Calls::connect_finished(fd_)) {
    connecting_ = false;
    cancel_connect_timer();
    return 1;
  }
  if (std::chrono::steady_clock::now() >= connect_deadline_) {
    connect_error_ = ETIMEDOUT;
    cancel_connect_timer();
    Calls::abort_connect(worker_.center(), fd_);
    return -ETIMEDOUT;
  }
  return 0;
}

template <class Calls>
int StreamConnectedSocket<Calls>::maybe_inject_failure() {
  const int every = worker_.inject_socket_failures();
  if (every <= 0 || stream_detail::splitmix64(rng_state_) % static_cast<uint64_t>(every) != 0) return 0;
  BYPASS_LOG(Debug, Calls::kType, "fd %d: injecting socket failure (ms.inject_socket_failures=%d)", fd_,
             every);
  Calls::shutdown(fd_, SHUT_RDWR);
  return -ECONNRESET;
}

template <class Calls>
ssize_t StreamConnectedSocket<Calls>::read(char* buf, size_t len) {
  if (fd_ < 0) return -EBADF;
  if (const int err = maybe_inject_failure()) return err;
  for (;;) {
    const ssize_t n = Calls::recv(fd_, buf, len);
    if (n >= 0) {
      worker_.counters.bytes_received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      return n;
    }
    if (errno != EINTR) return -errno;
  }
}

template <class Calls>
ssize_t StreamConnectedSocket<Calls>::zero_copy_read(BufferList& out, size_t max_len) {
  if (fd_ < 0) return -EBADF;
  if (max_len == 0) return 0;
  if (const int err = maybe_inject_failure()) return err;
  // The transport copies into user memory either way; the best it can do is read straight into
  // fresh segments (one readv across several when the caller wants much and the calls fill them
  // all) that are then handed over without another copy.
  std::array<BufferSegment, Calls::kReadvSegments> segments;
  std::array<iovec, Calls::kReadvSegments> iov{};
  size_t chunks = 0;
  for (size_t wanted = max_len; wanted > 0 && chunks < Calls::kReadvSegments; ++chunks) {
    segments[chunks] = BufferSegment::allocate(std::min(wanted, stream_detail::kReadChunk));
    iov[chunks] = {segments[chunks].data(), segments[chunks].length()};
    wanted -= segments[chunks].length();
  }
  ssize_t n;
  do {
    n = Calls::readv(fd_, iov.data(), static_cast<int>(chunks));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  worker_.counters.bytes_received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  size_t left = static_cast<size_t>(n);
  for (size_t i = 0; i < chunks && left > 0; ++i) {
    BufferSegment& segment = segments[i];
    const size_t got = std::min(left, segment.length());
    left -= got;
    if (got < segment.length() / stream_detail::kTightCopyDivisor) {
      out.append(BufferSegment::copy_of(segment.data(), got));
    } else {
      segment.truncate(got);
      out.append(std::move(segment));
    }
  }
  return n;
}

template <class Calls>
ssize_t StreamConnectedSocket<Calls>::send(BufferList& data, bool more) {
  if (fd_ < 0) return -EBADF;
  if (data.empty()) return 0;
  if (const int err = maybe_inject_failure()) return err;
  iovec iov[stream_detail::kMaxIov];
  size_t total = 0;
  while (!data.empty()) {
    const int count = data.to_iovec(iov, stream_detail::kMaxIov, 0);
    size_t batch = 0;
    for (int i = 0; i < count; ++i) batch += iov[i].iov_len;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    // MSG_MORE while this call has more to push than one sendmsg takes, or the caller says more
    // follows: the kernel then fills whole segments instead of sending a short one now.
    const int flags = MSG_NOSIGNAL | ((more || batch < data.length()) ? MSG_MORE : 0);
    const ssize_t n = Calls::sendmsg(fd_, &msg, flags);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (total > 0) break;  // report what was accepted; the error shows on the next call
      return -errno;
    }
    data.trim_front(static_cast<size_t>(n));
    total += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < batch) break;  // socket buffer full: the next call would EAGAIN
  }
  worker_.counters.bytes_sent.fetch_add(total, std::memory_order_relaxed);
  return total > 0 ? static_cast<ssize_t>(total) : -EAGAIN;
}

template <class Calls>
void StreamConnectedSocket<Calls>::shutdown() {
  if (fd_ >= 0) Calls::shutdown(fd_, SHUT_WR);
}

template <class Calls>
void StreamConnectedSocket<Calls>::close() {
  if (fd_ < 0) return;
  cancel_connect_timer();
  stream_detail::forget_file_events(worker_, fd_);
  Calls::close(fd_);
  fd_ = -1;
  worker_.open_sockets.fetch_sub(1, std::memory_order_relaxed);
}

template <class Calls>
SocketAddress StreamConnectedSocket<Calls>::local_address() const {
  return stream_detail::address_of<Calls>(fd_, false);
}

template <class Calls>
SocketAddress StreamConnectedSocket<Calls>::peer_address() const {
  return stream_detail::address_of<Calls>(fd_, true);
}

// ---------------------------------------------------------------------------------------------

template <class Calls>
StreamServerSocket<Calls>::StreamServerSocket(StreamWorker<Calls>& worker, int fd) : worker_(worker), fd_(fd) {
  worker_.open_sockets.fetch_add(1, std::memory_order_relaxed);
}

template <class Calls>
StreamServerSocket<Calls>::~StreamServerSocket() { abort_accept(); }

template <class Calls>
int StreamServerSocket<Calls>::accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
                                      Worker* worker) {
  if (fd_ < 0) return -EBADF;
  auto* owner = worker != nullptr ? dynamic_cast<StreamWorker<Calls>*>(worker) : &worker_;
  if (owner == nullptr) return -EINVAL;  // a worker of another transport cannot own this fd
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  int fd;
  do {
    fd = Calls::accept(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -errno;
  if (const int rc = apply_socket_options<Calls>(fd, opts); rc < 0) {
    Calls::close(fd);
    return rc;
  }
  *sock = ConnectedSocket(
      std::make_unique<StreamConnectedSocket<Calls>>(*owner, fd, false, std::chrono::milliseconds(0)));
  owner->counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
  if (peer != nullptr) *peer = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  return 0;
}

template <class Calls>
void StreamServerSocket<Calls>::abort_accept() {
  if (fd_ < 0) return;
  stream_detail::forget_file_events(worker_, fd_);
  Calls::close(fd_);
  fd_ = -1;
  worker_.open_sockets.fetch_sub(1, std::memory_order_relaxed);
}

template <class Calls>
SocketAddress StreamServerSocket<Calls>::local_address() const {
  return stream_detail::address_of<Calls>(fd_, false);
}

}  // namespace bypass
