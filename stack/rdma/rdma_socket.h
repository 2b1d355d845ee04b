// The socket-interface faces of the RDMA transport: a ConnectedSocketImpl over an RdmaConnection
// and a ServerSocketImpl that takes connection requests (side-channel TCP connections, or rdma_cm
// connect requests handed over by a CmListenPort), completes the QP setup on the worker's loop,
// and hands out only established connections.
#pragma once

#include <deque>
#include <memory>
#include <set>

#include "stack/network_stack.h"
#include "stack/rdma/cm_listener.h"
#include "stack/rdma/rdma_connection.h"

namespace bypass::rdma {

class RdmaWorker;

class RdmaConnectedSocket final : public ConnectedSocketImpl {
 public:
  RdmaConnectedSocket(RdmaWorker& worker, std::shared_ptr<RdmaConnection> conn);
  // ms.inject_socket_failures: 0 off; N: about one read/send in N fails with -ECONNRESET.
  ~RdmaConnectedSocket() override;

  int is_connected() override { return conn_ ? conn_->is_connected() : -ENOTCONN; }
  ssize_t read(char* buf, size_t len) override;
  ssize_t zero_copy_read(BufferList& out, size_t max_len) override;
  ssize_t send(BufferList& data, bool more) override;
  void shutdown() override;
  void close() override;
  int fd() const override { return conn_ ? conn_->event_id() : -1; }
  SocketAddress local_address() const override { return local_; }
  SocketAddress peer_address() const override { return peer_; }
  // Testing: the connection under this socket (null once closed).
  RdmaConnection* connection() { return conn_.get(); }

 private:
  int maybe_inject_failure();

  RdmaWorker& worker_;
  std::shared_ptr<RdmaConnection> conn_;
  SocketAddress local_, peer_;
  uint64_t rng_state_;
};

class RdmaServerSocket final : public ServerSocketImpl {
 public:
  // Side-channel mode: takes a bound, listening, non-blocking TCP socket.
  RdmaServerSocket(RdmaWorker& worker, int listen_fd, const SocketOptions& opts);
  // rdma_cm mode: connect requests come from the CmListenPort this socket subscribes to, given
  // by set_cm_port() before init().
  RdmaServerSocket(RdmaWorker& worker, const SocketOptions& opts);
  void set_cm_port(std::shared_ptr<CmListenPort> port);
  ~RdmaServerSocket() override;
  int init();  // event ids and the accept file event; -errno on failure
  RdmaWorker& worker() { return worker_; }

  int accept(ConnectedSocket* sock, const SocketOptions& opts, SocketAddress* peer,
             Worker* worker) override;
  void abort_accept() override;
  int fd() const override { return event_id_; }
  SocketAddress local_address() const override { return local_; }

  // From RdmaConnection: its handshake finished (or failed).
  void connection_ready(RdmaConnection* conn);
  void connection_failed(RdmaConnection* conn);
  // From the CmListenPort, on this worker's thread: a connect request on `child` (now on this
  // worker's event channel) with the client's private data.
  void on_connect_request(rdma_cm_id* child, const uint8_t* private_data, size_t len);

 private:
  void accept_side_channels();
  void start_connection(std::shared_ptr<RdmaConnection> conn);

  RdmaWorker& worker_;
  int listen_fd_ = -1;
  std::shared_ptr<CmListenPort> cm_port_;
  bool open_ = true;  // until abort_accept()
  int event_id_ = -1;
  SocketOptions opts_;
  SocketAddress local_;
  std::set<std::shared_ptr<RdmaConnection>> handshaking_;
  std::deque<std::shared_ptr<RdmaConnection>> ready_;
};

}  // namespace bypass::rdma
