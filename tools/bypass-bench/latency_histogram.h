// A log-linear latency histogram in the spirit of HdrHistogram: every power-of-two range is split
// into kSubBuckets equal buckets, so any recorded value is known to within 1/kSubBuckets (< 0.8%)
// of itself, from 1 ns to hours, in a fixed 60 KiB of counters. Recording is O(1) and lock-free
// for its single owner thread; histograms from several threads are merged afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace bypass::bench {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // 128

  LatencyHistogram();

  void record(uint64_t value);
  void merge(const LatencyHistogram& other);
  void reset();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  // The value at `percentile` (0..100]: the midpoint of the bucket holding that rank, clamped to
  // the exact min and max. 0 when empty.
  uint64_t percentile(double percentile) const;

  // The cumulative distribution as at most `max_points` (>= 2) points (value, fraction of the
  // recorded values <= value), in the recorded unit. Values and fractions strictly increase; the
  // last point is (max(), 1.0). Each point sits on a bucket's upper edge (clamped to max()), so its
  // fraction is exact. Points are chosen evenly in fraction for the body and evenly in "nines"
  // (-log10(1 - fraction)) for the tail, so p99.9 and beyond keep their shape. Empty when empty;
  // std::invalid_argument when max_points < 2.
  std::vector<std::pair<double, double>> cdf_points(size_t max_points) const;

  // Bucket arithmetic, public for tests.
  static size_t bucket_of(uint64_t value);
  static uint64_t bucket_low(size_t bucket);
  static uint64_t bucket_high(size_t bucket);
  static size_t bucket_count();

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace bypass::bench
