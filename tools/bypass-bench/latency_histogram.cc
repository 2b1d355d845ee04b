#include "tools/bypass-bench/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace bypass::bench {

// Values below kSubBuckets have a bucket each. Above, a value with its highest set bit at
// position b (b >= kSubBucketBits) lands in group e = b - kSubBucketBits + 1, sub-bucket given by
// its top kSubBucketBits + 1 bits: bucket = e * kSubBuckets + (value >> (e - 1)) - kSubBuckets.
size_t LatencyHistogram::bucket_of(uint64_t value) {
  if (value < kSubBuckets) return static_cast<size_t>(value);
  const int top_bit = 63 - std::countl_zero(value);
  const int shift = top_bit - kSubBucketBits;  // >= 0
  const uint64_t mantissa = value >> shift;    // in [kSubBuckets, 2 * kSubBuckets)
  return static_cast<size_t>((static_cast<uint64_t>(shift) + 1) * kSubBuckets + (mantissa - kSubBuckets));
}

uint64_t LatencyHistogram::bucket_low(size_t bucket) {
  if (bucket < kSubBuckets) return bucket;
  const uint64_t shift = bucket / kSubBuckets - 1;
  const uint64_t mantissa = kSubBuckets + bucket % kSubBuckets;
  return mantissa << shift;
}

uint64_t LatencyHistogram::bucket_high(size_t bucket) {
  if (bucket < kSubBuckets) return bucket;
  const uint64_t shift = bucket / kSubBuckets - 1;
  return bucket_low(bucket) + ((uint64_t{1} << shift) - 1);
}

size_t LatencyHistogram::bucket_count() { return bucket_of(UINT64_MAX) + 1; }

LatencyHistogram::LatencyHistogram() : counts_(bucket_count(), 0) {}

void LatencyHistogram::record(uint64_t value) {
  ++counts_[bucket_of(value)];
  ++count_;
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  sum_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
}

uint64_t LatencyHistogram::percentile(double percentile) const {
  if (count_ == 0) return 0;
  const double clamped = std::clamp(percentile, 0.0, 100.0);
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(clamped / 100.0 * static_cast<double>(count_))));
  if (rank >= count_) return max_;  // the top rank is known exactly
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t mid = bucket_low(i) + (bucket_high(i) - bucket_low(i)) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

std::vector<std::pair<double, double>> LatencyHistogram::cdf_points(size_t max_points) const {
  if (max_points < 2) throw std::invalid_argument("cdf_points: max_points must be at least 2");
  std::vector<std::pair<double, double>> points;
  if (count_ == 0) return points;
  const double total = static_cast<double>(count_);
  auto nines = [&](uint64_t seen) { return -std::log10(1.0 - static_cast<double>(seen) / total); };
  // The first and the last point are always kept; the rest of the budget is split between the two
  // spacing rules. Each rule fires at most half that budget times: a point it adds moves its own
  // measure by at least one step, and the measure is bounded (fraction by 1, nines by log10(count)
  // below the last bucket, where 1 - fraction >= 1 / count).
  const double half_budget = std::max(1.0, static_cast<double>(max_points - 2) / 2.0);
  const double fraction_step = 1.0 / half_budget;
  const double nines_step = std::max(1.0, std::log10(total)) / half_budget;
  uint64_t seen = 0;
  double last_fraction = 0.0;
  double last_nines = 0.0;
  for (size_t i = 0; i < counts_.size() && seen < count_; ++i) {
    if (counts_[i] == 0) continue;
    seen += counts_[i];
    const double fraction = static_cast<double>(seen) / total;
    const bool first = points.empty();
    const bool last = seen == count_;
    if (last) {
      points.emplace_back(static_cast<double>(max_), 1.0);
      break;
    }
    const double tail = nines(seen);
    if (!first && points.size() + 1 >= max_points) continue;  // keep room for the last point
    if (first || fraction - last_fraction >= fraction_step || tail - last_nines >= nines_step) {
      points.emplace_back(static_cast<double>(std::min(bucket_high(i), max_)), fraction);
      last_fraction = fraction;
      last_nines = tail;
    }
  }
  return points;
}

}  // namespace bypass::bench
