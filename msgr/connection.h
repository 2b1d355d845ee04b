// Connection: one session with one peer entity, as the application sees it.
#pragma once

#include <memory>
#include <string>

#include "msgr/entity.h"
#include "msgr/message.h"

namespace bypass::msgr {

class Connection {
 public:
  virtual ~Connection() = default;
  // Queue `m` for the peer; callable from any thread. Messages are delivered in the order they
  // were queued. Returns false when the connection is already closed (the message is dropped and
  // its completion fires with delivered=false).
  virtual bool send_message(MessageRef m) = 0;
  // The same, except on the connection's own worker thread (an application that runs the stack's
  // loops itself): there the message waits in the link's output until flush_output(), so a caller
  // that sends several pays one write for them where send_message would write each out.
  virtual bool send_message_unflushed(MessageRef m) = 0;
  // On the connection's own worker thread: writes out what send_message_unflushed left waiting.
  // Elsewhere nothing waits, and it does nothing.
  virtual void flush_output() = 0;
  // Ask the peer for a KEEPALIVE2_ACK now (liveness probe).
  virtual void send_keepalive() = 0;
  // True while the session is established over a live link.
  virtual bool is_connected() const = 0;
  // The peer's entity name, once the handshake told it.
  virtual EntityName peer_name() const = 0;
  // The peer's addresses (those we connected to, or those it announced).
  virtual EntityAddrVec peer_addrs() const = 0;
  // True under a lossy policy: a fault ends the session instead of reconnecting and replaying.
  virtual bool is_lossy() const = 0;
  // Why the link last failed ("handshake failed in auth: cephx: ..."), empty while none did; for
  // saying what went wrong after ms_handle_reset / ms_handle_refused.
  virtual std::string last_fault() const = 0;
  // Close the session now: queued and unacknowledged messages are dropped, no reconnect.
  virtual void mark_down() = 0;
};

}  // namespace bypass::msgr
