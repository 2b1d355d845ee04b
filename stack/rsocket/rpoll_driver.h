// RpollDriver: the event loop's wait for the rsocket transport. An rsocket's fd (librdmacm's
// rdma_cm channel fd) never turns readable when data arrives, so epoll cannot wait on it; rpoll()
// can, and takes ordinary fds in the same set (rsocket(7)), such as the loop's wake-up eventfd.
#pragma once

#include <memory>

#include "stack/event_center.h"

namespace bypass {

class RpollDriver : public EventDriver {
 public:
  // Reports `fd` readable and writable, as poll reports a hung-up socket, on every wait until its
  // interest is removed. For a connect that timed out: rshutdown leaves an rsocket that is still
  // connecting alone, so rpoll would not wake the waiter. Only an fd with interest is affected.
  virtual void report_hangup(int fd) = 0;
};

// Throws std::system_error when the wake-up eventfd cannot be created. Needs no RDMA device:
// rpoll() on ordinary fds is poll().
std::unique_ptr<RpollDriver> make_rpoll_driver();

}  // namespace bypass
