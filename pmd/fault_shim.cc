#include "pmd/fault_shim.h"

#include <rte_mbuf.h>
#include <time.h>

namespace bypass::pmd {

FaultRates FaultRates::from_config(const config::Config& config) {
  FaultRates r;
  r.drop_ppm = static_cast<uint32_t>(config.get_int("dpdk.fault_drop"));
  r.duplicate_ppm = static_cast<uint32_t>(config.get_int("dpdk.fault_duplicate"));
  r.reorder_ppm = static_cast<uint32_t>(config.get_int("dpdk.fault_reorder"));
  r.corrupt_ppm = static_cast<uint32_t>(config.get_int("dpdk.fault_corrupt"));
  r.delay = config.get_duration("dpdk.fault_delay");
  r.delay_ppm = r.delay.count() > 0 ? 1'000'000 : 0;
  return r;
}

FaultShim::FaultShim(const FaultRates& rates, uint64_t seed)
    : rates_(rates), rng_state_(seed ? seed : 0x9e3779b97f4a7c15ull) {}

FaultShim::~FaultShim() {
  for (rte_mbuf* m : ready_) rte_pktmbuf_free(m);
  for (auto& [m, due] : delayed_) rte_pktmbuf_free(m);
  if (reorder_held_) rte_pktmbuf_free(reorder_held_);
}

uint64_t FaultShim::now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

bool FaultShim::chance(uint32_t ppm) {
  if (ppm == 0) return false;
  // xorshift64*: tiny, fast and fully determined by the seed.
  rng_state_ ^= rng_state_ >> 12;
  rng_state_ ^= rng_state_ << 25;
  rng_state_ ^= rng_state_ >> 27;
  const uint64_t r = rng_state_ * 0x2545f4914f6cdd1dull;
  return (r >> 11) % 1'000'000 < ppm;
}

void FaultShim::corrupt(rte_mbuf* pkt) {
  const uint16_t len = rte_pktmbuf_data_len(pkt);
  if (len == 0) return;
  chance(1);  // advance the generator so offset and bit differ from the decision draw
  const uint64_t r = rng_state_ * 0x2545f4914f6cdd1dull;
  // Past the Ethernet header when there is one: a real link's FCS would catch L2 damage, the
  // point is to exercise IP/TCP/UDP checksum verification.
  const uint16_t start = len > 14 ? 14 : 0;
  const uint16_t offset = static_cast<uint16_t>(start + (r >> 16) % (len - start));
  rte_pktmbuf_mtod(pkt, uint8_t*)[offset] ^= static_cast<uint8_t>(1u << ((r >> 8) % 8));
}

void FaultShim::emit(rte_mbuf* pkt, uint64_t now_ns) {
  if (!reorder_held_ && chance(rates_.reorder_ppm)) {
    reorder_held_ = pkt;
    reorder_held_since_ = now_ns;
    ++counters_.reordered;
    return;
  }
  ready_.push_back(pkt);
  if (reorder_held_) {  // the held packet now follows one that arrived after it
    ready_.push_back(reorder_held_);
    reorder_held_ = nullptr;
  }
}

uint16_t FaultShim::process(rte_mbuf** pkts, uint16_t count, rte_mbuf** out, uint16_t capacity, uint64_t now_ns) {
  // Delayed packets that are due go first: they are older than this burst.
  while (!delayed_.empty() && delayed_.front().second <= now_ns) {
    emit(delayed_.front().first, now_ns);
    delayed_.pop_front();
  }
  for (uint16_t i = 0; i < count; ++i) {
    rte_mbuf* pkt = pkts[i];
    ++counters_.seen;
    if (chance(rates_.drop_ppm)) {
      ++counters_.dropped;
      rte_pktmbuf_free(pkt);
      continue;
    }
    if (chance(rates_.corrupt_ppm)) {
      ++counters_.corrupted;
      corrupt(pkt);
    }
    if (chance(rates_.delay_ppm)) {
      ++counters_.delayed;
      delayed_.emplace_back(pkt, now_ns + static_cast<uint64_t>(rates_.delay.count()));
      continue;
    }
    rte_mbuf* copy = nullptr;
    if (chance(rates_.duplicate_ppm)) {
      copy = rte_pktmbuf_copy(pkt, pkt->pool, 0, UINT32_MAX);
      if (copy) ++counters_.duplicated;
    }
    emit(pkt, now_ns);
    if (copy) ready_.push_back(copy);
  }
  // A packet held for reordering with nothing behind it is released after the delay, so a quiet
  // link never keeps it forever.
  if (reorder_held_ && now_ns - reorder_held_since_ >= static_cast<uint64_t>(rates_.reorder_timeout.count())) {
    ready_.push_back(reorder_held_);
    reorder_held_ = nullptr;
  }
  uint16_t n = 0;
  while (n < capacity && !ready_.empty()) {
    out[n++] = ready_.front();
    ready_.pop_front();
  }
  return n;
}

void FaultShim::requeue_front(rte_mbuf** pkts, uint16_t count) {
  for (uint16_t i = count; i > 0; --i) ready_.push_front(pkts[i - 1]);
}

size_t FaultShim::held() const { return ready_.size() + delayed_.size() + (reorder_held_ ? 1 : 0); }

}  // namespace bypass::pmd
