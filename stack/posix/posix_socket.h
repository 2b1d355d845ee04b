// Stream sockets over a socket-calls policy (KernelSocketCalls: the kernel's TCP; RsocketCalls:
// librdmacm's rsockets): the ConnectedSocketImpl and ServerSocketImpl of the posix and rsocket
// transports. The member definitions are in posix_socket_impl.h; each transport instantiates them
// once (posix_socket.cc, stack/rsocket/rsocket_stack.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "stack/network_stack.h"
#include "stack/posix/socket_calls.h"

namespace bypass {

template <class Calls>
class StreamWorker;

// Applies TCP_NODELAY, SO_RCVBUF, SO_SNDBUF and SO_PRIORITY through `Calls`; returns 0 or -errno.
template <class Calls>
int apply_socket_options(int fd, const SocketOptions& opts);

template <class Calls>
class StreamConnectedSocket final : public ConnectedSocketImpl {
 public:
  // Takes ownership of `fd`. `connecting`: a non-blocking connect is in flight and must finish
  // within `connect_timeout`.
  StreamConnectedSocket(StreamWorker<Calls>& worker, int fd, bool connecting,
                        std::chrono::milliseconds connect_timeout);
  ~StreamConnectedSocket() override;
  StreamConnectedSocket(const StreamConnectedSocket&) = delete;
  StreamConnectedSocket& operator=(const StreamConnectedSocket&) = delete;

  int is_connected() override;
  ssize_t read(char* buf, size_t len) override;
  ssize_t zero_copy_read(BufferList& out, size_t max_len) override;
  ssize_t send(BufferList& data, bool more) override;
  void shutdown() override;
  void close() override;
  int fd() const override { return fd_; }
  SocketAddress local_address() const override;
  SocketAddress peer_address() const override;

 private:
  // -ECONNRESET (after shutting the socket down) when ms.inject_socket_failures picks this call.
  int maybe_inject_failure();
  void on_connect_timeout();
  void cancel_connect_timer();

  StreamWorker<Calls>& worker_;
  int fd_;
  bool connecting_;
  int connect_error_ = 0;  // latched: SO_ERROR is cleared when read
  std::chrono::steady_clock::time_point connect_deadline_;
  std::optional<uint64_t> connect_timer_;
  uint64_t rng_state_;
};

template <class Calls>
class StreamServerSocket final : public ServerSocketImpl {
 public:
  StreamServerSocket(StreamWorker<Calls>& worker, int fd);
  ~StreamServerSocket() override;
  StreamServerSocket(const StreamServerSocket&) = delete;
  StreamServerSocket& operator=(const StreamServerSocket&) = delete;

  int accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
             Worker* worker) override;
  void abort_accept() override;
  int fd() const override { return fd_; }
  SocketAddress local_address() const override;

 private:
  StreamWorker<Calls>& worker_;
  int fd_;
};

// The posix transport's kernel sockets.
using PosixConnectedSocket = StreamConnectedSocket<KernelSocketCalls>;
using PosixServerSocket = StreamServerSocket<KernelSocketCalls>;
extern template class StreamConnectedSocket<KernelSocketCalls>;
extern template class StreamServerSocket<KernelSocketCalls>;

}  // namespace bypass
