// One rdma_cm event, copied out of librdmacm's event (which is acknowledged before it is acted on:
// acting may destroy the id, and rdma_destroy_id waits for the id's events to be acknowledged),
// and what receives it: the id's context is always a CmEventTarget (a listening port or a
// connection), so the worker dispatches without knowing which.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <vector>

namespace bypass::rdma {

struct CmEvent {
  rdma_cm_event_type type;
  int status;                         // 0, -errno, or a CM reject reason
  rdma_cm_id* id;                     // CONNECT_REQUEST: the new child id
  std::vector<uint8_t> private_data;  // from the peer's REQ, REP or REJ
};

class CmEventTarget {
 public:
  virtual void on_cm_event(const CmEvent& event) = 0;

 protected:
  ~CmEventTarget() = default;
};

}  // namespace bypass::rdma
