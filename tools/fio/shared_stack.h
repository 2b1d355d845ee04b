// The network stacks of one fio process: jobs whose Bypass settings are the same share one stack
// (a receiver and its senders in one threaded fio process run on the same workers), and a dpdk
// stack is the only one of the process (a DPDK process owns its port).
#pragma once

#include <memory>
#include <string>

#include "stack/network_stack.h"
#include "tools/fio/job_settings.h"

namespace bypass::fio {

class SharedStack {
 public:
  // The running stack for `job`'s settings: the one another job of this process holds, or a new
  // one, started. Throws std::runtime_error when the transport cannot start here, or when a dpdk
  // job's settings differ from those of the dpdk stack this process already runs.
  static std::shared_ptr<SharedStack> acquire(const JobSettings& job);

  ~SharedStack();  // the last job to let go stops the stack
  SharedStack(const SharedStack&) = delete;
  SharedStack& operator=(const SharedStack&) = delete;

  const std::shared_ptr<NetworkStack>& stack() const { return stack_; }

 private:
  SharedStack(std::shared_ptr<NetworkStack> stack, std::string key, std::string owner)
      : stack_(std::move(stack)), key_(std::move(key)), owner_(std::move(owner)) {}
  void wait_for_memif_peer_to_leave();

  std::shared_ptr<NetworkStack> stack_;
  std::string key_;    // JobSettings::stack_key
  std::string owner_;  // the job that created it, for error messages
  bool senders_ = false;  // a sending job used it: at the end, its receiver leaves first
};

}  // namespace bypass::fio
