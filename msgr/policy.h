// Connection policies (the model of Ceph's Messenger::Policy) and the throttles they carry.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace bypass::msgr {

// A counting limit shared by the connections of one policy. take() never blocks: a connection
// that cannot take stops reading from its socket and tries again shortly (TCP backpressure then
// slows the sender), so memory stays bounded without parking a worker thread.
class Throttle {
 public:
  Throttle(std::string name, uint64_t max) : name_(std::move(name)), max_(max) {}
  bool try_take(uint64_t amount);
  void put(uint64_t amount);
  uint64_t current() const { return current_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  uint64_t max_;  // 0 = unlimited
  std::atomic<uint64_t> current_{0};
};

struct Policy {
  bool lossy = false;        // drop the session on any fault; never reconnect or replay
  bool server = false;       // never initiate (re)connections; the peer does
  bool resetcheck = true;    // detect that the peer restarted (session reset)
  std::shared_ptr<Throttle> throttle_bytes;     // bytes of received messages not yet dispatched
  std::shared_ptr<Throttle> throttle_messages;  // count of received messages not yet dispatched

  static Policy lossy_client() { return {true, false, false, nullptr, nullptr}; }
  static Policy lossless_client() { return {false, false, true, nullptr, nullptr}; }
  static Policy stateless_server() { return {true, true, false, nullptr, nullptr}; }
  static Policy stateful_server() { return {false, true, true, nullptr, nullptr}; }
  static Policy lossless_peer() { return {false, false, true, nullptr, nullptr}; }
};

}  // namespace bypass::msgr
