// A worker's transport counters (perf dump, /metrics, benchmark reports): plain integers bumped on
// the worker's thread, read there (NetworkStack::worker_report) or through it. All monotonic.
#pragma once

#include <cstdint>

namespace bypass::rdma {

#define BYPASS_RDMA_COUNTERS(X)                                                              \
  X(bytes_sent)                  /* stream bytes the owners' send() accepted */              \
  X(bytes_received)              /* stream bytes handed to the owners */                     \
  X(tx_copied_bytes)             /* payload bytes copied into send chunks */                 \
  X(rx_copied_bytes)             /* payload bytes copied out by read() (not zero_copy_read) */ \
  X(zero_copy_sent_bytes)        /* bytes sent by SEND from registered memory, in place */   \
  X(send_work_requests)          /* SENDs posted: data, descriptors, credits, releases, FIN */ \
  X(read_work_requests)          /* RDMA READs posted */                                     \
  X(receive_work_requests)       /* receives posted */                                       \
  X(completions)                 /* work completions polled, send, READ and receive */      \
  X(send_eagain)                 /* sends refused for lack of chunks, slots or credits */   \
  X(rendezvous_descriptors_sent) /* descriptor SENDs posted */                               \
  X(rendezvous_sent_transfers)   /* descriptors the peer read and released */               \
  X(rendezvous_sent_bytes)       /* their bytes: read from our memory by the peer's READs */ \
  X(rendezvous_read_transfers)   /* descriptors we read completely with RDMA READ */        \
  X(rendezvous_read_bytes)       /* bytes our READs brought in */                           \
  X(rendezvous_read_fallbacks)   /* READ targets registered afresh: RegisteredMemory was used up */

struct RdmaCounters {
#define BYPASS_RDMA_DECLARE(name) uint64_t name = 0;
  BYPASS_RDMA_COUNTERS(BYPASS_RDMA_DECLARE)
#undef BYPASS_RDMA_DECLARE

  // Calls visit(name, value) for every counter, in declaration order.
  template <typename Visit>
  void for_each(Visit&& visit) const {
#define BYPASS_RDMA_VISIT(name) visit(#name, name);
    BYPASS_RDMA_COUNTERS(BYPASS_RDMA_VISIT)
#undef BYPASS_RDMA_VISIT
  }
};

}  // namespace bypass::rdma
