#include "tools/fio/shared_stack.h"

#include <map>
#include <mutex>
#include <stdexcept>

namespace bypass::fio {

namespace {

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
    if (auto shared = it->second.lock()) return shared;
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
  stack->start();
  std::shared_ptr<SharedStack> shared(new SharedStack(std::move(stack), job.stack_key, job.job_name));
  r.stacks[job.stack_key] = shared;
  return shared;
}

SharedStack::~SharedStack() {
  Registry& r = registry();
  // Stopped under the lock: a job starting meanwhile waits, rather than open the port a second time.
  std::lock_guard guard(r.lock);
  stack_->stop();
  if (auto it = r.stacks.find(key_); it != r.stacks.end() && it->second.expired()) r.stacks.erase(it);
}

}  // namespace bypass::fio
