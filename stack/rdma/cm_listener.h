// The rdma_cm connect mode's listening side. rdma_cm has no SO_REUSEPORT: one address can have one
// listening id. So every worker that listens on an address subscribes to one CmListenPort, whose
// id lives on the event channel of the worker that listened first (its owner). A connect request
// is handed to the subscribers in turn: the child id is migrated to that worker's event channel
// and the worker's RdmaServerSocket sets up the connection there (QP on that worker's CQ and SRQ),
// so each connection still lives entirely on one worker, as with the side channel's listeners.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stack/network_stack.h"
#include "stack/rdma/cm_event.h"

namespace bypass::rdma {

class RdmaServerSocket;
class RdmaWorker;

// Owns an rdma_event_channel; ids keep it alive (rdma_destroy_id writes to the channel's fd).
using CmChannel = std::shared_ptr<rdma_event_channel>;
CmChannel make_cm_channel();  // non-blocking fd; throws std::runtime_error naming the cause

class CmListenPort final : public CmEventTarget, public std::enable_shared_from_this<CmListenPort> {
 public:
  // Creates, binds and listens on `owner`'s event channel (owner's thread). -errno on failure.
  static int open(RdmaWorker& owner, const SocketAddress& addr, int backlog,
                  std::shared_ptr<CmListenPort>* out);
  ~CmListenPort();
  CmListenPort(const CmListenPort&) = delete;
  CmListenPort& operator=(const CmListenPort&) = delete;

  SocketAddress local_address() const { return local_; }
  // Any thread. Returns false when the port is already closing (its last subscriber left).
  bool subscribe(RdmaServerSocket* server);
  // The server's thread. The last one out closes the id on the owner's thread.
  void unsubscribe(RdmaServerSocket* server);
  // Owner's thread: a connect request goes to the next subscriber; other events on a listening
  // id (address change, device removal) are logged.
  void on_cm_event(const CmEvent& event) override;

 private:
  explicit CmListenPort(RdmaWorker& owner) : owner_(owner) {}
  bool is_subscribed(RdmaServerSocket* server);
  void on_connect_request(rdma_cm_id* child, const std::vector<uint8_t>& private_data);
  void close_id();  // owner's thread (or any once the loops stopped)

  RdmaWorker& owner_;
  CmChannel channel_;
  rdma_cm_id* id_ = nullptr;
  SocketAddress local_;
  std::mutex lock_;
  std::vector<RdmaServerSocket*> subscribers_;
  size_t next_ = 0;
  bool closing_ = false;
};

// The stack's listening ports by address, so the second worker listening on an address joins the
// first one's port instead of failing with EADDRINUSE.
class CmListenRegistry {
 public:
  // Subscribes `server` (on `worker`'s thread) to the port for `addr`, opening it when none is
  // open. Port 0 always opens a new port (an ephemeral one). -errno on failure.
  int join(RdmaWorker& worker, const SocketAddress& addr, int backlog, RdmaServerSocket* server,
           std::shared_ptr<CmListenPort>* out);

 private:
  std::mutex lock_;
  std::map<std::string, std::weak_ptr<CmListenPort>> ports_;
};

}  // namespace bypass::rdma
