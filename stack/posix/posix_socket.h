// Kernel-socket implementations of ConnectedSocketImpl and ServerSocketImpl.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "stack/network_stack.h"

namespace bypass {

class PosixWorker;

// Applies TCP_NODELAY, SO_RCVBUF, SO_SNDBUF and SO_PRIORITY; returns 0 or -errno.
int apply_socket_options(int fd, const SocketOptions& opts);

class PosixConnectedSocket final : public ConnectedSocketImpl {
 public:
  // Takes ownership of `fd`. `connecting`: a non-blocking connect is in flight and must finish
  // within `connect_timeout`.
  PosixConnectedSocket(PosixWorker& worker, int fd, bool connecting,
                       std::chrono::milliseconds connect_timeout);
  ~PosixConnectedSocket() override;
  PosixConnectedSocket(const PosixConnectedSocket&) = delete;
  PosixConnectedSocket& operator=(const PosixConnectedSocket&) = delete;

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

  PosixWorker& worker_;
  int fd_;
  bool connecting_;
  int connect_error_ = 0;  // latched: SO_ERROR is cleared when read
  std::chrono::steady_clock::time_point connect_deadline_;
  std::optional<uint64_t> connect_timer_;
  uint64_t rng_state_;
};

class PosixServerSocket final : public ServerSocketImpl {
 public:
  PosixServerSocket(PosixWorker& worker, int fd);
  ~PosixServerSocket() override;
  PosixServerSocket(const PosixServerSocket&) = delete;
  PosixServerSocket& operator=(const PosixServerSocket&) = delete;

  int accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
             Worker* worker) override;
  void abort_accept() override;
  int fd() const override { return fd_; }
  SocketAddress local_address() const override;

 private:
  PosixWorker& worker_;
  int fd_;
};

}  // namespace bypass
