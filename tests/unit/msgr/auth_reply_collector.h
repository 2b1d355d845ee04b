// A dispatcher that keeps the MAuthReplies a client receives (the messenger reads them for their
// tickets first and still dispatches them), for tests of cephx renewals against a Bypass or a Ceph
// monitor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "msgr/auth/cephx_client.h"
#include "msgr/dispatcher.h"
#include "msgr/mon_auth.h"

namespace bypass::msgr::test {

class AuthReplyCollector : public Dispatcher {
 public:
  bool ms_dispatch(const MessageRef& m) override {
    if (m->type() != kMsgAuthReply) return true;
    auto reply = std::make_shared<MonAuthReply>();
    reply->front() = m->front();
    reply->decode_payload();
    std::lock_guard<std::mutex> guard(lock_);
    replies_.push_back(reply);
    cv_.notify_all();
    return true;
  }
  // The first reply of `request_type` (or refusal) from index `from` on, or null after `timeout`.
  std::shared_ptr<MonAuthReply> wait_reply(uint16_t request_type, size_t from, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> guard(lock_);
    std::shared_ptr<MonAuthReply> found;
    cv_.wait_for(guard, timeout, [&] {
      for (size_t i = from; i < replies_.size() && !found; ++i)
        if (auth::cephx_request_type(replies_[i]->result_bl) == request_type || replies_[i]->result != 0)
          found = replies_[i];
      return found != nullptr;
    });
    return found;
  }
  size_t count() {
    std::lock_guard<std::mutex> guard(lock_);
    return replies_.size();
  }

 private:
  std::mutex lock_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<MonAuthReply>> replies_;
};

}  // namespace bypass::msgr::test
