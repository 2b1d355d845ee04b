#include "tools/fio/shared_stack.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "stack/dpdk/dpdk_stack.h"

namespace bypass::fio {

namespace {

// How long a sending process waits for its receiver to leave the memif link (the receiver lingers
// a second for more senders, then stops).
constexpr auto kPeerLeaveWait = std::chrono::seconds(5);

struct Registry {
  std::mutex lock;  // job start-up and clean-up only
  std::map<std::string, std::weak_ptr<SharedStack>> stacks;  // by JobSettings::stack_key
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::shared_ptr<SharedStack> SharedStack::acquire(const JobSettings& job) {
  Registry& r = registry();
  std::lock_guard guard(r.lock);
  if (auto it = r.stacks.find(job.stack_key); it != r.stacks.end())
    if (auto shared = it->second.lock()) {
      // Only one thread may run a stack's loops, and the job that polls it does so only while it
      // waits for its own requests.
      if (!shared->stack_->worker_threads())
        throw std::runtime_error("job " + job.job_name + ": job " + shared->owner_ +
                                 "'s thread polls the network stack these settings name (bypass_poll=job, or "
                                 "ms.worker_threads: false), so no other job can use it: give this job "
                                 "bypass_poll=workers or settings of its own");
      shared->senders_ |= !job.receiver;
      return shared;
    }
  if (job.transport == "dpdk")
    for (const auto& [key, weak] : r.stacks) {
      const auto other = weak.lock();
      if (other && other->stack_->type() == "dpdk")
        throw std::runtime_error("job " + job.job_name + ": this fio process already runs a dpdk stack with other settings (job " +
                                 other->owner_ +
                                 "): a DPDK process owns one port, so give every dpdk job of one fio process the same "
                                 "bypass_config and bypass_set");
    }
  std::shared_ptr<NetworkStack> stack = NetworkStack::create(job.conf);
  // Started here, once, before any messenger of any job thread uses it (start() is not thread-safe).
  // Without worker threads this job's thread becomes the one that runs its loops.
  stack->start();
  std::shared_ptr<SharedStack> shared(new SharedStack(std::move(stack), job.stack_key, job.job_name));
  shared->senders_ = !job.receiver;
  r.stacks[job.stack_key] = shared;
  return shared;
}

// DPDK 22.11's net_memif unmaps its rings under a worker still polling them when the peer
// process leaves (pmd/burst_guard.h). Bypass's tools interpose munmap to make that wait; inside
// fio they cannot (fio's own symbols come first and it exports no munmap), so the engine orders
// the departure instead: a sending process, its workers stopped, stays until its receiver (which
// ends once its senders have gone) has closed the link, so no side polls while the other leaves.
void SharedStack::wait_for_memif_peer_to_leave() {
  auto* dpdk = dynamic_cast<DpdkStack*>(stack_.get());
  if (dpdk == nullptr || dpdk->ports().ports().empty()) return;
  pmd::Port& port = dpdk->ports().port(0);
  if (port.info().driver != "net_memif") return;
  const auto deadline = std::chrono::steady_clock::now() + kPeerLeaveWait;
  while (port.link().up && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

SharedStack::~SharedStack() {
  Registry& r = registry();
  // Stopped under the lock: a job starting meanwhile waits, rather than open the port a second time.
  std::lock_guard guard(r.lock);
  stack_->stop();
  if (senders_) wait_for_memif_peer_to_leave();
  if (auto it = r.stacks.find(key_); it != r.stacks.end() && it->second.expired()) r.stacks.erase(it);
}

}  // namespace bypass::fio
