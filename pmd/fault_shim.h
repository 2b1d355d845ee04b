// A seeded fault injector around rx and tx bursts: drop, duplicate, reorder, delay and corrupt
// packets at configured rates (parts per million, dpdk.fault_* options; dpdk.fault_on picks rx,
// tx or both). One shim per queue and direction, used only by the thread that owns the queue. The same seed gives the same decisions
// for the same packet sequence, so a failing test run can be replayed.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "config/config.h"

struct rte_mbuf;

namespace bypass::pmd {

struct FaultRates {
  uint32_t drop_ppm = 0;
  uint32_t duplicate_ppm = 0;
  uint32_t reorder_ppm = 0;    // the packet is held back and sent after the next one
  uint32_t delay_ppm = 0;      // the packet is held back for `delay`
  uint32_t corrupt_ppm = 0;    // one bit flipped past the Ethernet header
  std::chrono::nanoseconds delay{0};
  // A packet held for reordering is released after this long if no later packet overtakes it.
  std::chrono::nanoseconds reorder_timeout{std::chrono::milliseconds(1)};

  bool any() const { return drop_ppm || duplicate_ppm || reorder_ppm || delay_ppm || corrupt_ppm; }
  // dpdk.fault_drop/duplicate/reorder/corrupt; dpdk.fault_delay > 0 delays every packet.
  static FaultRates from_config(const config::Config& config);
};

struct FaultCounters {
  uint64_t seen = 0, dropped = 0, duplicated = 0, reordered = 0, delayed = 0, corrupted = 0;
};

class FaultShim {
 public:
  FaultShim(const FaultRates& rates, uint64_t seed);
  ~FaultShim();  // frees packets still held
  FaultShim(const FaultShim&) = delete;
  FaultShim& operator=(const FaultShim&) = delete;

  bool active() const { return rates_.any(); }

  // Takes ownership of pkts[0..count); writes the packets to pass on (faults applied, plus any
  // held packets now due) to out[0..), at most `capacity`, and returns how many. Packets that do
  // not fit stay queued for the next call.
  uint16_t process(rte_mbuf** pkts, uint16_t count, rte_mbuf** out, uint16_t capacity, uint64_t now_ns);
  // Returns packets that could not be passed on (e.g. a full tx ring) to the front of the queue.
  void requeue_front(rte_mbuf** pkts, uint16_t count);
  // Packets queued, delayed or held for reordering.
  size_t held() const;
  const FaultCounters& counters() const { return counters_; }

  static uint64_t now_ns();

 private:
  bool chance(uint32_t ppm);
  void emit(rte_mbuf* pkt, uint64_t now_ns);
  void corrupt(rte_mbuf* pkt);

  FaultRates rates_;
  uint64_t rng_state_;
  FaultCounters counters_;
  std::deque<rte_mbuf*> ready_;
  std::deque<std::pair<rte_mbuf*, uint64_t>> delayed_;  // due time ascending: one fixed delay
  rte_mbuf* reorder_held_ = nullptr;
  uint64_t reorder_held_since_ = 0;
};

}  // namespace bypass::pmd
