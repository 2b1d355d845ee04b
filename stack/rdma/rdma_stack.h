// The rdma transport: RC queue pairs behind the socket interface (ms.type: rdma).
#pragma once

#include <memory>
#include <vector>

#include "config/config.h"
#include "stack/network_stack.h"
#include "stack/transport_registry.h"
#include "stack/rdma/rdma_worker.h"
#include "stack/rdma/registered_memory.h"

namespace bypass {

namespace rdma {

class RdmaNetworkStack final : public NetworkStack {
 public:
  // Throws std::runtime_error naming the problem when no usable RDMA device is present.
  explicit RdmaNetworkStack(const config::Config& conf);
  ~RdmaNetworkStack() override;
  const RdmaDevice& device() const { return *device_; }
  RdmaWorkerStats worker_stats(unsigned i);
  // The payload memory registered at start-up (allocate_payload(), READ targets).
  RegisteredMemory& registered_memory() { return *payload_memory_; }

  // Blocks of RegisteredMemory (1 MiB at most each), ordinary memory for what it cannot supply.
  BufferList allocate_payload(size_t bytes, BufferSharing sharing = BufferSharing::worker_local) override;
  // Every worker's counters summed, and the registered memory's use.
  Counters transport_counters() override;
  WorkerReport worker_report(unsigned i) override;

 protected:
  // Worker i's sends not yet completed (an RC send completes once the peer's HCA acknowledged
  // it), closing connections' FIN included, and its rendezvous descriptors the peers have not
  // read yet: stop() lingers for them.
  size_t awaiting_acknowledgement(unsigned i) override;

 private:
  std::shared_ptr<RdmaDevice> device_;
  std::shared_ptr<RegisteredMemory> payload_memory_;
};

}  // namespace rdma

std::shared_ptr<NetworkStack> make_rdma_stack(const config::Config& conf);
// Registers make_rdma_stack as ms.type=rdma (called from the generated compiled_transports.cc).
void register_rdma_transport(TransportRegistry& registry);

}  // namespace bypass
