#include "tools/bypass-bench/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

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

std::vector<std::pair<uint64_t, double>> LatencyHistogram::cdf(size_t max_points) const {
  std::vector<std::pair<uint64_t, double>> points;
  if (count_ == 0) return points;
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    seen += counts_[i];
    points.emplace_back(std::min(bucket_high(i), max_),
                        static_cast<double>(seen) / static_cast<double>(count_));
  }
  points.back() = {max_, 1.0};
  if (max_points < 2 || points.size() <= max_points) return points;
  // Keep max_points - 1 evenly spaced points and the last one.
  std::vector<std::pair<uint64_t, double>> thinned;
  const double step = static_cast<double>(points.size() - 1) / static_cast<double>(max_points - 1);
  for (size_t k = 0; k + 1 < max_points; ++k) thinned.push_back(points[static_cast<size_t>(static_cast<double>(k) * step)]);
  thinned.push_back(points.back());
  return thinned;
}

}  // namespace bypass::bench
