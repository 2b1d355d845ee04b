#include "tools/bypass-bench/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace bypass::bench {
namespace {

TEST(LatencyHistogramTest, BucketsTileTheRangeWithBoundedRelativeError) {
  uint64_t expected_low = 0;
  for (size_t b = 0; b < LatencyHistogram::bucket_count(); ++b) {
    const uint64_t low = LatencyHistogram::bucket_low(b);
    const uint64_t high = LatencyHistogram::bucket_high(b);
    ASSERT_EQ(low, expected_low) << "bucket " << b;
    ASSERT_GE(high, low);
    ASSERT_EQ(LatencyHistogram::bucket_of(low), b);
    ASSERT_EQ(LatencyHistogram::bucket_of(high), b);
    // Width relative to the lowest value in the bucket stays under 1/128.
    if (low > 0) {
      ASSERT_LE(static_cast<double>(high - low) / static_cast<double>(low), 1.0 / 128);
    }
    expected_low = high + 1;
    if (high == UINT64_MAX) break;
  }
  EXPECT_EQ(LatencyHistogram::bucket_high(LatencyHistogram::bucket_count() - 1), UINT64_MAX);
}

TEST(LatencyHistogramTest, PercentilesOfAUniformSample) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.record(v * 1000);  // 1 us .. 100 ms
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.min(), 1000u);
  EXPECT_EQ(h.max(), 100000000u);
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    const double exact = p / 100.0 * 100000 * 1000;
    EXPECT_NEAR(static_cast<double>(h.percentile(p)), exact, exact * 0.01) << "p" << p;
  }
  EXPECT_EQ(h.percentile(100), h.max());
  EXPECT_NEAR(h.mean(), 50000.5 * 1000, 1.0);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverythingInOne) {
  LatencyHistogram a, b, all;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = rng() % 10'000'000;
    (i % 2 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  for (double p : {1.0, 50.0, 99.0, 99.99}) EXPECT_EQ(a.percentile(p), all.percentile(p));
  a.reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.percentile(50), 0u);
}

// Samples of three shapes a latency distribution takes, in nanoseconds, from a fixed seed.
std::vector<uint64_t> uniform_sample(std::mt19937_64& rng) {
  std::uniform_int_distribution<uint64_t> d(1'000, 1'000'000);  // 1 us .. 1 ms
  std::vector<uint64_t> v(200000);
  for (auto& x : v) x = d(rng);
  return v;
}
std::vector<uint64_t> exponential_sample(std::mt19937_64& rng) {
  std::exponential_distribution<double> d(1.0 / 50'000);  // mean 50 us: a long tail
  std::vector<uint64_t> v(200000);
  for (auto& x : v) x = static_cast<uint64_t>(d(rng)) + 1;
  return v;
}
std::vector<uint64_t> bimodal_sample(std::mt19937_64& rng) {
  // 95% fast path around 20 us, 5% slow path around 2 ms (a cache miss, a retransmission).
  std::normal_distribution<double> fast(20'000, 2'000), slow(2'000'000, 200'000);
  std::bernoulli_distribution is_slow(0.05);
  std::vector<uint64_t> v(200000);
  for (auto& x : v) x = static_cast<uint64_t>(std::max(1.0, is_slow(rng) ? slow(rng) : fast(rng)));
  return v;
}

struct NamedSample {
  std::string name;
  std::vector<uint64_t> values;  // sorted
};
std::vector<NamedSample> known_samples() {
  std::mt19937_64 rng(42);
  std::vector<NamedSample> samples{{"uniform", uniform_sample(rng)},
                                   {"exponential", exponential_sample(rng)},
                                   {"bimodal", bimodal_sample(rng)}};
  for (auto& s : samples) std::sort(s.values.begin(), s.values.end());
  return samples;
}

// The nearest-rank percentile (the definition percentile() uses) of sorted `values`.
uint64_t exact_percentile(const std::vector<uint64_t>& values, double p) {
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

TEST(LatencyHistogramTest, PercentilesAreWithinOneBucketOfTheExactValue) {
  for (const NamedSample& s : known_samples()) {
    LatencyHistogram h;
    for (uint64_t v : s.values) h.record(v);
    for (double p : {1.0, 10.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0}) {
      const double exact = static_cast<double>(exact_percentile(s.values, p));
      // A bucket spans at most 1/kSubBuckets of its lowest value, and the answer is in the bucket
      // holding the exact value.
      EXPECT_LE(std::abs(static_cast<double>(h.percentile(p)) - exact), exact / LatencyHistogram::kSubBuckets)
          << s.name << " p" << p;
    }
  }
}

TEST(LatencyHistogramTest, CdfPointsAreExactMonotonicBoundedAndReachTheTail) {
  for (const NamedSample& s : known_samples()) {
    LatencyHistogram h;
    for (uint64_t v : s.values) h.record(v);
    for (size_t max_points : {size_t{2}, size_t{10}, size_t{200}}) {
      const auto cdf = h.cdf_points(max_points);
      ASSERT_GE(cdf.size(), 2u) << s.name;
      ASSERT_LE(cdf.size(), max_points) << s.name;
      EXPECT_EQ(cdf.back().first, static_cast<double>(h.max())) << s.name;
      EXPECT_EQ(cdf.back().second, 1.0) << s.name;
      for (size_t i = 0; i < cdf.size(); ++i) {
        if (i > 0) {
          EXPECT_GT(cdf[i].first, cdf[i - 1].first) << s.name << " point " << i;
          EXPECT_GT(cdf[i].second, cdf[i - 1].second) << s.name << " point " << i;
        }
        // Each point's fraction is the exact share of values <= its value.
        const auto at_or_below = std::upper_bound(s.values.begin(), s.values.end(),
                                                  static_cast<uint64_t>(cdf[i].first)) - s.values.begin();
        EXPECT_DOUBLE_EQ(cdf[i].second, static_cast<double>(at_or_below) / static_cast<double>(s.values.size()))
            << s.name << " point " << i;
      }
    }
    if (s.name != "exponential") continue;
    // A long tail spans many buckets, so the default budget can keep its shape: points between p99
    // and p99.9 and beyond as well as through the body. (The other shapes have only a few buckets
    // in their tails: uniform's top 1% lies in two or three buckets.)
    const auto cdf = h.cdf_points(200);
    const auto in_range = [&](double lo, double hi) {
      return std::count_if(cdf.begin(), cdf.end(), [&](const auto& p) { return p.second > lo && p.second < hi; });
    };
    EXPECT_GE(in_range(0.99, 0.999), 5);
    EXPECT_GE(in_range(0.999, 1.0), 5);
    EXPECT_GE(in_range(0.1, 0.9), 50);
  }
}

TEST(LatencyHistogramTest, CdfOfEmptyAndSingleValueHistograms) {
  LatencyHistogram h;
  EXPECT_TRUE(h.cdf_points(200).empty());
  EXPECT_THROW(h.cdf_points(1), std::invalid_argument);
  h.record(12345);
  const auto cdf = h.cdf_points(200);
  ASSERT_EQ(cdf.size(), 1u);
  EXPECT_EQ(cdf[0], std::make_pair(12345.0, 1.0));
}

}  // namespace
}  // namespace bypass::bench
