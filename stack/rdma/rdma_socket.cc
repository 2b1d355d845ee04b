#include "stack/rdma/rdma_socket.h"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/log.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {

RdmaConnectedSocket::RdmaConnectedSocket(RdmaWorker& worker, std::shared_ptr<RdmaConnection> conn)
    : worker_(worker), conn_(std::move(conn)), rng_state_(worker.next_socket_seed()) {
  worker_.open_sockets.fetch_add(1, std::memory_order_relaxed);
}

int RdmaConnectedSocket::maybe_inject_failure() {
  const int every = worker_.tuning().inject_failures;
  if (every <= 0 || !conn_) return 0;
  // splitmix64: deterministic per socket, so a failing sequence replays.
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  if (z % static_cast<uint64_t>(every) != 0) return 0;
  conn_->inject_reset();
  return -ECONNRESET;
}

RdmaConnectedSocket::~RdmaConnectedSocket() { close(); }

ssize_t RdmaConnectedSocket::read(char* buf, size_t len) {
  if (const int err = maybe_inject_failure()) return err;
  return conn_ ? conn_->read(buf, len) : -EBADF;
}

ssize_t RdmaConnectedSocket::zero_copy_read(BufferList& out, size_t max_len) {
  if (const int err = maybe_inject_failure()) return err;
  return conn_ ? conn_->zero_copy_read(out, max_len) : -EBADF;
}

ssize_t RdmaConnectedSocket::send(BufferList& data, bool /*more: every chunk is posted at once*/) {
  if (const int err = maybe_inject_failure()) return err;
  return conn_ ? conn_->send(data) : -EBADF;
}

void RdmaConnectedSocket::shutdown() {
  if (conn_) conn_->shutdown();
}

void RdmaConnectedSocket::close() {
  if (!conn_) return;
  local_ = conn_->local_address();
  peer_ = conn_->peer_address();
  conn_->close();  // drains in the background; the worker destroys the QP when done
  conn_.reset();
  worker_.open_sockets.fetch_sub(1, std::memory_order_relaxed);
}

// ---------------------------------------------------------------- server

RdmaServerSocket::RdmaServerSocket(RdmaWorker& worker, int listen_fd, const SocketOptions& opts)
    : worker_(worker), listen_fd_(listen_fd), opts_(opts) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    local_ = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

RdmaServerSocket::RdmaServerSocket(RdmaWorker& worker, const SocketOptions& opts)
    : worker_(worker), opts_(opts) {}

void RdmaServerSocket::set_cm_port(std::shared_ptr<CmListenPort> port) {
  cm_port_ = std::move(port);
  local_ = cm_port_->local_address();
}

RdmaServerSocket::~RdmaServerSocket() { abort_accept(); }

int RdmaServerSocket::init() {
  event_id_ = worker_.poller().create_user_event();
  if (event_id_ < 0) return event_id_;
  if (listen_fd_ >= 0)
    worker_.center().create_file_event(listen_fd_, kEventReadable,
                                       [this](int, int) { accept_side_channels(); });
  return 0;
}

void RdmaServerSocket::start_connection(std::shared_ptr<RdmaConnection> conn) {
  // Listed first: a setup that fails inside start() (a bad rdma_cm request) reports
  // connection_failed(), which drops it from here.
  handshaking_.insert(conn);
  if (int rc = conn->start(opts_.connect_timeout); rc < 0) {
    BYPASS_LOG(Warn, "rdma", "cannot set up a connection: %s", strerror(-rc));
    handshaking_.erase(conn);
    conn->detach_server();
    conn->close();
  }
}

void RdmaServerSocket::on_connect_request(rdma_cm_id* child, const uint8_t* private_data, size_t len) {
  auto conn = worker_.adopt(std::make_shared<RdmaConnection>(worker_, child, false, this));
  conn->set_cm_request(private_data, len);
  start_connection(std::move(conn));
}

void RdmaServerSocket::accept_side_channels() {
  for (int i = 0; i < 64; ++i) {  // bounded: one flood of connects cannot starve the loop
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        BYPASS_LOG(Warn, "rdma", "accept on %s: %s", local_.to_string().c_str(), strerror(errno));
      return;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    start_connection(worker_.adopt(std::make_shared<RdmaConnection>(worker_, fd, false, this)));
  }
}

void RdmaServerSocket::connection_ready(RdmaConnection* conn) {
  auto it = std::find_if(handshaking_.begin(), handshaking_.end(),
                         [conn](const auto& p) { return p.get() == conn; });
  if (it == handshaking_.end()) return;
  ready_.push_back(*it);
  handshaking_.erase(it);
  conn->detach_server();
  worker_.poller().notify(event_id_, kEventReadable);
}

void RdmaServerSocket::connection_failed(RdmaConnection* conn) {
  auto it = std::find_if(handshaking_.begin(), handshaking_.end(),
                         [conn](const auto& p) { return p.get() == conn; });
  if (it == handshaking_.end()) return;
  std::shared_ptr<RdmaConnection> keep = *it;
  handshaking_.erase(it);
  keep->close();
}

int RdmaServerSocket::accept(ConnectedSocket* sock, const SocketOptions& /*opts*/, SocketAddress* peer,
                             Worker* /*worker: listen_per_worker, always this one*/) {
  if (ready_.empty()) {
    if (event_id_ >= 0) worker_.poller().clear(event_id_, kEventReadable);
    return open_ ? -EAGAIN : -EBADF;
  }
  std::shared_ptr<RdmaConnection> conn = std::move(ready_.front());
  ready_.pop_front();
  if (ready_.empty()) worker_.poller().clear(event_id_, kEventReadable);
  if (peer) *peer = conn->peer_address();
  *sock = ConnectedSocket(std::make_unique<RdmaConnectedSocket>(worker_, std::move(conn)));
  return 0;
}

void RdmaServerSocket::abort_accept() {
  open_ = false;
  if (cm_port_) {
    cm_port_->unsubscribe(this);
    cm_port_.reset();
  }
  if (listen_fd_ >= 0) {
    if (worker_.center().in_thread()) worker_.center().delete_file_event(listen_fd_, kEventReadable);
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  for (auto& conn : handshaking_) {
    conn->detach_server();
    conn->close();
  }
  handshaking_.clear();
  for (auto& conn : ready_) conn->close();
  ready_.clear();
  if (event_id_ >= 0) {
    if (worker_.center().in_thread())
      worker_.center().delete_file_event(event_id_, kEventReadable | kEventWritable);
    worker_.poller().destroy_user_event(event_id_);
    event_id_ = -1;
  }
}

}  // namespace bypass::rdma
