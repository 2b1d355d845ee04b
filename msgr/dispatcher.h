// Dispatcher: the application's receiving side. Fast dispatch runs on the connection's worker
// thread (keep it short, never block); everything else is queued to the messenger's dispatch
// thread, in order per connection.
#pragma once

#include "msgr/message.h"

namespace bypass::msgr {

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // Queued dispatch. Return true when handled.
  virtual bool ms_dispatch(const MessageRef& m) = 0;
  // True when `m` may be handled by ms_fast_dispatch() on the worker thread that received it.
  virtual bool ms_can_fast_dispatch(const Message&) const { return false; }
  // Handles a message ms_can_fast_dispatch() accepted, on the worker thread: short, never blocking.
  virtual void ms_fast_dispatch(const MessageRef& m) { ms_dispatch(m); }
  virtual void ms_handle_connect(const ConnectionRef&) {}         // outgoing session is ready
  virtual void ms_handle_accept(const ConnectionRef&) {}          // incoming session is ready
  virtual bool ms_handle_reset(const ConnectionRef&) { return false; }  // lossy session dropped
  virtual void ms_handle_remote_reset(const ConnectionRef&) {}    // peer forgot our session
  virtual bool ms_handle_refused(const ConnectionRef&) { return false; }  // connect refused
};

}  // namespace bypass::msgr
