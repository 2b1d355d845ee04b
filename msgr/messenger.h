// Messenger: the entry point of the messaging layer. It owns a network stack (posix, dpdk or
// rdma, picked by ms.type), listens on its bound addresses, creates and tracks connections,
// and hands received messages to the registered dispatchers.
//
//   auto msgr = Messenger::create(conf, EntityName{EntityType::Osd, 0});
//   msgr->set_policy(EntityType::Client, Policy::stateless_server());
//   msgr->add_dispatcher(&my_dispatcher);
//   msgr->bind(addr);          // optional: a pure client need not bind
//   msgr->start();
//   ConnectionRef c = msgr->connect_to(EntityType::Osd, peer_addrs);
//   c->send_message(m);
//   ...
//   msgr->shutdown(); msgr->wait();
//
// Several messengers may share one network stack (one DPDK port serves one process, so a client
// and a server in one process must share its stack): create the stack once with
// NetworkStack::create(conf) and pass it to each Messenger::create(conf, name, stack).
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "msgr/connection.h"
#include "msgr/dispatcher.h"
#include "msgr/entity.h"
#include "msgr/message.h"
#include "msgr/policy.h"

namespace bypass::msgr::auth {
class CephxTicketStore;
}

namespace bypass {
class NetworkStack;
}

namespace bypass::msgr {

class Messenger {
 public:
  // Reads ms.* options from `conf`. Throws std::runtime_error (or config::ConfigError) when the
  // transport cannot be created or an option is inconsistent (e.g. secure mode without a secret).
  static std::unique_ptr<Messenger> create(const config::Config& conf, const EntityName& name);
  // The same on an existing stack shared with other messengers; the stack's own options
  // (ms.type, ms.workers, ms.inject_socket_failures, tcp.*) are the ones it was created with.
  // start() starts the stack if it is not running yet (do that before handing the stack to
  // messengers on several threads: NetworkStack::start() is not thread-safe); shutdown() leaves it
  // running, so the caller stops it once every messenger on it has shut down.
  static std::unique_ptr<Messenger> create(const config::Config& conf, const EntityName& name,
                                           std::shared_ptr<NetworkStack> stack);
  virtual ~Messenger() = default;

  // This messenger's entity name ("osd.0"), announced to peers.
  virtual const EntityName& name() const = 0;
  // The policy of sessions with peers that have no policy of their own type.
  virtual void set_default_policy(const Policy& policy) = 0;
  // The policy of sessions with peers of `peer_type` (e.g. Policy::stateful_server() for clients).
  virtual void set_policy(EntityType peer_type, const Policy& policy) = 0;
  virtual void add_dispatcher(Dispatcher* dispatcher) = 0;  // before start()
  // Message types received as the application's own classes (MessageRegistry::add before start()).
  virtual MessageRegistry& registry() = 0;

  // Listen on `addr` (port 0 picks a free port). May be called several times before start().
  // Returns 0 or a negative errno.
  virtual int bind(const EntityAddr& addr) = 0;
  // The addresses bound so far (with the ports picked for port 0), once start() returned.
  virtual EntityAddrVec my_addrs() const = 0;
  // Starts the stack (if this messenger owns it), the listeners and the dispatch thread.
  // Returns 0, or a negative errno when a bound address cannot be listened on.
  virtual int start() = 0;

  // The connection to the entity at `addrs` (its msgr2 address is used), created if needed.
  virtual ConnectionRef connect_to(EntityType peer_type, const EntityAddrVec& addrs) = 0;
  // Closes the session with the entity at `addrs` now, dropping what is queued (no reconnect).
  virtual void mark_down(const EntityAddrVec& addrs) = 0;
  // mark_down() of every session.
  virtual void mark_down_all() = 0;

  virtual void shutdown() = 0;  // close everything; wait() returns afterwards
  // Blocks until shutdown() has finished (from any thread).
  virtual void wait() = 0;

  // Memory for a message's data (Message::data()) that the transport sends without a copy where
  // it can: NetworkStack::allocate_payload() of this messenger's stack (rdma: registered memory,
  // read by the peer with RDMA READ). Fill the segments in order. Any thread.
  virtual BufferList allocate_payload(size_t bytes) = 0;

  // Perf counters as a JSON object.
  virtual std::string perf_dump_json() const = 0;
  // cephx (ms.auth=cephx): the tickets the monitor handed out, shared by this messenger's
  // connections; nullptr with any other auth method.
  virtual std::shared_ptr<auth::CephxTicketStore> cephx_tickets() const = 0;
};

}  // namespace bypass::msgr
