#include "stack/rdma/cm_listener.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/log.h"
#include "stack/rdma/rdma_socket.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {

CmChannel make_cm_channel() {
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr)
    throw std::runtime_error(std::string("rdma.connect_mode=rdma_cm: cannot open the rdma_cm event "
                                         "channel (/dev/infiniband/rdma_cm; module rdma_ucm?): ") +
                             strerror(errno));
  fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK);
  return CmChannel(channel, [](rdma_event_channel* c) { rdma_destroy_event_channel(c); });
}

int CmListenPort::open(RdmaWorker& owner, const SocketAddress& addr, int backlog,
                       std::shared_ptr<CmListenPort>* out) {
  std::shared_ptr<CmListenPort> port(new CmListenPort(owner));
  port->channel_ = owner.cm_channel();
  if (rdma_create_id(port->channel_.get(), &port->id_, static_cast<CmEventTarget*>(port.get()),
                     RDMA_PS_TCP) != 0)
    return -errno;
  if (rdma_bind_addr(port->id_, const_cast<sockaddr*>(addr.sockaddr_ptr())) != 0 ||
      rdma_listen(port->id_, backlog) != 0) {
    const int err = errno;
    port->close_id();
    return -err;
  }
  const sockaddr* local = rdma_get_local_addr(port->id_);
  port->local_ = SocketAddress::from_sockaddr(
      local, local->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  *out = std::move(port);
  return 0;
}

CmListenPort::~CmListenPort() { close_id(); }

void CmListenPort::close_id() {
  if (id_ == nullptr) return;
  if (rdma_destroy_id(id_) != 0)
    BYPASS_LOG(Warn, "rdma", "rdma_destroy_id (listener %s): %s", local_.to_string().c_str(), strerror(errno));
  id_ = nullptr;
}

bool CmListenPort::subscribe(RdmaServerSocket* server) {
  std::lock_guard guard(lock_);
  if (closing_) return false;
  subscribers_.push_back(server);
  return true;
}

bool CmListenPort::is_subscribed(RdmaServerSocket* server) {
  std::lock_guard guard(lock_);
  return std::find(subscribers_.begin(), subscribers_.end(), server) != subscribers_.end();
}

void CmListenPort::unsubscribe(RdmaServerSocket* server) {
  {
    std::lock_guard guard(lock_);
    std::erase(subscribers_, server);
    if (!subscribers_.empty() || closing_) return;
    closing_ = true;
  }
  if (owner_.center().in_thread()) return close_id();
  // The id's events are read on the owner's thread: destroy it there. (If that loop has already
  // stopped, the closure is dropped and the destructor closes the id with no loop left to race.)
  owner_.center().dispatch_external([self = shared_from_this()] { self->close_id(); });
}

void CmListenPort::on_cm_event(const CmEvent& event) {
  if (event.type == RDMA_CM_EVENT_CONNECT_REQUEST) return on_connect_request(event.id, event.private_data);
  BYPASS_LOG(Warn, "rdma", "rdma_cm listener %s: %s (status %d)", local_.to_string().c_str(),
             rdma_event_str(event.type), event.status);
}

void CmListenPort::on_connect_request(rdma_cm_id* child, const std::vector<uint8_t>& private_data) {
  child->context = nullptr;  // inherited from the listening id; the connection sets its own
  RdmaServerSocket* server = nullptr;
  {
    std::lock_guard guard(lock_);
    if (!subscribers_.empty()) server = subscribers_[next_++ % subscribers_.size()];
  }
  if (server == nullptr) {
    rdma_reject(child, nullptr, 0);
    rdma_destroy_id(child);
    return;
  }
  RdmaWorker& target = server->worker();
  if (&target == &owner_) return server->on_connect_request(child, private_data.data(), private_data.size());
  if (rdma_migrate_id(child, target.cm_channel().get()) != 0) {
    BYPASS_LOG(Warn, "rdma", "rdma_migrate_id to worker %u: %s", target.id(), strerror(errno));
    rdma_reject(child, nullptr, 0);
    rdma_destroy_id(child);
    return;
  }
  target.center().dispatch_external([self = shared_from_this(), server, child, data = private_data] {
    // The server socket is closed on this thread too: checked here, it stays valid for the call.
    if (!self->is_subscribed(server)) {
      rdma_reject(child, nullptr, 0);
      rdma_destroy_id(child);
      return;
    }
    server->on_connect_request(child, data.data(), data.size());
  });
}

int CmListenRegistry::join(RdmaWorker& worker, const SocketAddress& addr, int backlog,
                           RdmaServerSocket* server, std::shared_ptr<CmListenPort>* out) {
  std::lock_guard guard(lock_);
  const std::string key = addr.to_string();
  if (addr.port() != 0) {
    if (auto it = ports_.find(key); it != ports_.end()) {
      if (std::shared_ptr<CmListenPort> port = it->second.lock(); port && port->subscribe(server)) {
        *out = std::move(port);
        return 0;
      }
    }
  }
  std::shared_ptr<CmListenPort> port;
  if (int rc = CmListenPort::open(worker, addr, backlog, &port); rc < 0) return rc;
  port->subscribe(server);
  std::erase_if(ports_, [](const auto& entry) { return entry.second.expired(); });
  ports_[port->local_address().to_string()] = port;
  *out = std::move(port);
  return 0;
}

}  // namespace bypass::rdma
