#include "stack/rdma/rdma_stack.h"

#include <stdexcept>

#include "base/log.h"

namespace bypass {

namespace rdma {

RdmaNetworkStack::RdmaNetworkStack(const config::Config& conf) : NetworkStack(conf, "rdma") {
  device_ = RdmaDevice::open(RdmaDevice::selection_from(conf));
  const RdmaTuning tuning = RdmaTuning::from(conf);
  auto cm_listeners = tuning.use_cm ? std::make_shared<CmListenRegistry>() : nullptr;
  const int workers = static_cast<int>(conf.get_int("ms.workers"));
  for (int i = 0; i < workers; ++i) {
    add_worker(std::make_unique<RdmaWorker>(static_cast<unsigned>(i), device_, tuning, cm_listeners));
  }
}

RdmaNetworkStack::~RdmaNetworkStack() {
  stop();
  workers_.clear();  // before the device: QPs, CQs and MRs go before the PD and context
}

size_t RdmaNetworkStack::awaiting_acknowledgement(unsigned i) {
  return static_cast<RdmaWorker*>(worker(i))->sends_outstanding();
}

RdmaWorkerStats RdmaNetworkStack::worker_stats(unsigned i) {
  return static_cast<RdmaWorker*>(worker(i))->stats();
}

}  // namespace rdma

std::shared_ptr<NetworkStack> make_rdma_stack(const config::Config& conf) {
  return std::make_shared<rdma::RdmaNetworkStack>(conf);
}

}  // namespace bypass
