// The rdma transport: RC queue pairs behind the socket interface (ms.type: rdma).
#pragma once

#include <memory>
#include <vector>

#include "config/config.h"
#include "stack/network_stack.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass {

namespace rdma {

class RdmaNetworkStack final : public NetworkStack {
 public:
  // Throws std::runtime_error naming the problem when no usable RDMA device is present.
  explicit RdmaNetworkStack(const config::Config& conf);
  ~RdmaNetworkStack() override;
  const RdmaDevice& device() const { return *device_; }
  RdmaWorkerStats worker_stats(unsigned i);

 protected:
  // Worker i's sends not yet completed (an RC send completes once the peer's HCA acknowledged
  // it), closing connections' FIN included: stop() lingers for them.
  size_t awaiting_acknowledgement(unsigned i) override;

 private:
  std::shared_ptr<RdmaDevice> device_;
};

}  // namespace rdma

std::shared_ptr<NetworkStack> make_rdma_stack(const config::Config& conf);

}  // namespace bypass
