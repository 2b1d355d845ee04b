#include "tools/bypass-bench/latency_histogram.h"

#include <gtest/gtest.h>

#include <random>

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

TEST(LatencyHistogram, CdfIsMonotonicBoundedAndEndsAtMax) {
  LatencyHistogram h;
  EXPECT_TRUE(h.cdf(200).empty());
  for (uint64_t v = 1; v <= 100000; v += 7) h.record(v * 13);
  const auto points = h.cdf(200);
  ASSERT_GE(points.size(), 2u);
  EXPECT_LE(points.size(), 200u);
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_GT(points[i].first, points[i - 1].first) << i;
    EXPECT_GT(points[i].second, points[i - 1].second) << i;
  }
  EXPECT_EQ(points.back().first, h.max());
  EXPECT_DOUBLE_EQ(points.back().second, 1.0);
  // The median point sits near the recorded median (within the bucket resolution).
  for (const auto& [value, fraction] : points) {
    if (fraction >= 0.5) {
      EXPECT_NEAR(static_cast<double>(value), static_cast<double>(h.percentile(50)), h.percentile(50) * 0.05);
      break;
    }
  }
}

}  // namespace
}  // namespace bypass::bench
