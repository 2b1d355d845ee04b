// Sockets of the dpdk transport: thin adapters from the socket interface to inet::TcpConnection /
// inet::TcpListener. fd() is a userspace event id of the worker's PollingDriver; readiness is
// recomputed after every connection event and every call, level-triggered like epoll.
#pragma once

#include <memory>

#include "stack/inet/tcp_layer.h"
#include "stack/network_stack.h"

namespace bypass {

class DpdkWorker;
class SingleListenerTable;

class DpdkConnectedSocket final : public ConnectedSocketImpl {
 public:
  DpdkConnectedSocket(DpdkWorker& worker, std::shared_ptr<inet::TcpConnection> connection,
                      const SocketOptions& opts, bool connecting);
  ~DpdkConnectedSocket() override;
  // From a per-thread free list: a connection's socket object is made and dropped once per
  // connection, on the worker that owns it.
  static void* operator new(size_t size);
  static void operator delete(void* block, size_t size);

  int is_connected() override;
  ssize_t read(char* buf, size_t len) override;
  ssize_t zero_copy_read(BufferList& out, size_t max_len) override;
  ssize_t send(BufferList& data, bool more) override;
  void shutdown() override;
  void close() override;
  int fd() const override { return event_id_; }
  SocketAddress local_address() const override;
  SocketAddress peer_address() const override;

 private:
  void on_connection_event(int events);
  void update_readiness();
  // The pending error as -errno, or 0.
  int error() const;
  // ms.inject_socket_failures: resets the connection on roughly one call in N.
  int maybe_inject_failure();

  DpdkWorker& worker_;
  std::shared_ptr<inet::TcpConnection> connection_;
  int event_id_ = -1;
  EventCenter::TimerId connect_timer_ = 0;
  bool timed_out_ = false;
  bool injected_reset_ = false;
  uint64_t rng_state_ = 0;
  bool write_shut_ = false;
  bool closed_ = false;
};

class DpdkServerSocket final : public ServerSocketImpl {
 public:
  // `single`: only this worker listens on the port (steered through SingleListenerTable).
  // `ipv6`: opened on an IPv6 address (the listener takes both families; local_address() says which).
  DpdkServerSocket(DpdkWorker& worker, std::shared_ptr<inet::TcpListener> listener, SingleListenerTable* single,
                   bool ipv6);
  ~DpdkServerSocket() override;

  int accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
             Worker* worker) override;
  void abort_accept() override;
  int fd() const override { return event_id_; }
  SocketAddress local_address() const override;

 private:
  DpdkWorker& worker_;
  std::shared_ptr<inet::TcpListener> listener_;
  SingleListenerTable* single_;
  bool ipv6_;
  int event_id_ = -1;
};

}  // namespace bypass
