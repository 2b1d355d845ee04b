#include "stack/rdma/rdma_stack.h"

#include <algorithm>

namespace bypass {

namespace rdma {

RdmaNetworkStack::RdmaNetworkStack(const config::Config& conf) : NetworkStack(conf, "rdma") {
  device_ = RdmaDevice::open(RdmaDevice::selection_from(conf));
  const RdmaTuning tuning = RdmaTuning::from(conf);
  payload_memory_ = RegisteredMemory::create("rdma registered memory", conf.get_size("rdma.registered_memory"),
                                             tuning.hugepages);
  payload_memory_->register_with(device_->pd(), device_);
  auto cm_listeners = tuning.use_cm ? std::make_shared<CmListenRegistry>() : nullptr;
  const int workers = static_cast<int>(conf.get_int("ms.workers"));
  for (int i = 0; i < workers; ++i) {
    add_worker(std::make_unique<RdmaWorker>(static_cast<unsigned>(i), device_, tuning, cm_listeners, payload_memory_));
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

BufferList RdmaNetworkStack::allocate_payload(size_t bytes, BufferSharing sharing) {
  BufferList out;
  while (bytes > 0) {
    const size_t piece = std::min(bytes, RegisteredMemory::kLargestBlock);
    BufferSegment block = payload_memory_->allocate(piece, sharing);
    if (block.empty()) {
      out.append(BufferSegment::allocate(bytes, sharing));  // used up: ordinary memory for the rest
      break;
    }
    out.append(std::move(block));
    bytes -= piece;
  }
  return out;
}

NetworkStack::WorkerReport RdmaNetworkStack::worker_report(unsigned i) {
  return static_cast<RdmaWorker*>(worker(i))->report();
}

NetworkStack::Counters RdmaNetworkStack::transport_counters() {
  // The counters live on the workers' threads: read there while the loops run.
  std::vector<WorkerReport> reports(num_workers());
  for (unsigned i = 0; i < num_workers(); ++i) {
    auto read = [this, &reports, i] { reports[i] = worker_report(i); };
    if (started_) {
      worker(i)->center().submit_and_wait(read);
    } else {
      read();
    }
  }
  std::vector<std::pair<std::string, uint64_t>> sums;
  for (const WorkerReport& r : reports) {
    for (size_t k = 0; k < r.counters.size(); ++k) {
      if (sums.size() <= k) sums.emplace_back(r.counters[k].first, 0);
      sums[k].second += r.counters[k].second;
    }
  }
  sums.insert(sums.end(), {{"registered_memory_bytes", payload_memory_->region_bytes()},
                           {"registered_memory_bytes_in_use", payload_memory_->bytes_in_use()},
                           {"registered_memory_exhausted", payload_memory_->exhausted()}});
  return sums;
}

}  // namespace rdma

std::shared_ptr<NetworkStack> make_rdma_stack(const config::Config& conf) {
  return std::make_shared<rdma::RdmaNetworkStack>(conf);
}

void register_rdma_transport(TransportRegistry& registry) { registry.add("rdma", make_rdma_stack); }

}  // namespace bypass
