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
  // `name` appears in logs and stats; `max` 0 means unlimited (only counts).
  Throttle(std::string name, uint64_t max) : name_(std::move(name)), max_(max) {}
  // Takes `amount` if it fits under max, or if nothing is held (so one item larger than the
  // whole budget cannot wedge a connection forever); false means retry later.
  bool try_take(uint64_t amount);
  // Gives back what try_take() took, once the message it counted is dispatched or dropped.
  void put(uint64_t amount);
  uint64_t current() const { return current_.load(std::memory_order_relaxed); }  // held now
  uint64_t max() const { return max_; }  // the limit; 0 = unlimited
  const std::string& name() const { return name_; }  // as given at construction

 private:
  std::string name_;
  uint64_t max_;  // 0 = unlimited
  std::atomic<uint64_t> current_{0};
};

// How connections to one kind of peer behave on faults and how much received data they may hold
// (Ceph's Messenger::Policy). The factories below are Ceph's named presets.
struct Policy {
  bool lossy = false;        // drop the session on any fault; never reconnect or replay
  bool server = false;       // never initiate (re)connections; the peer does
  bool resetcheck = true;    // detect that the peer restarted (session reset)
  std::shared_ptr<Throttle> throttle_bytes;     // bytes of received messages not yet dispatched
  std::shared_ptr<Throttle> throttle_messages;  // count of received messages not yet dispatched

  // Client whose requests the application retries itself (e.g. to monitors): drop on fault.
  static Policy lossy_client() { return {true, false, false, nullptr, nullptr}; }
  // Client that needs every message delivered exactly once: reconnect and replay on fault.
  static Policy lossless_client() { return {false, false, true, nullptr, nullptr}; }
  // Server side of lossy_client(): keeps no session state across faults.
  static Policy stateless_server() { return {true, true, false, nullptr, nullptr}; }
  // Server side of lossless_client(): keeps the session so the client can resume it.
  static Policy stateful_server() { return {false, true, true, nullptr, nullptr}; }
  // Peers of equal rank (e.g. OSD to OSD): either side may reconnect; nothing is lost.
  static Policy lossless_peer() { return {false, false, true, nullptr, nullptr}; }
};

}  // namespace bypass::msgr
