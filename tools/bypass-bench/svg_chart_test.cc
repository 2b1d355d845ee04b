#include "tools/bypass-bench/svg_chart.h"

#include <gtest/gtest.h>

namespace bypass::bench {
namespace {

TEST(SvgChartTest, LinearTicksStepByOneTwoOrFive) {
  EXPECT_EQ(axis_ticks(zero_based_axis(23000, "")), (std::vector<double>{0, 5000, 10000, 15000, 20000, 25000}));
  EXPECT_EQ(axis_ticks(zero_based_axis(3, "")), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(zero_based_axis(3.04, "").high, 3);   // a last partial second just past a tick
  EXPECT_EQ(zero_based_axis(3.2, "").high, 4);
  EXPECT_EQ(zero_based_axis(0, "").high, 1);      // nothing measured: still a drawable axis
  EXPECT_EQ(zero_based_axis(-5, "").high, 1);
}

TEST(SvgChartTest, LogAxisSnapsToOneTwoFiveAndTicksDecades) {
  const ChartAxis narrow = decade_axis(57, 1900, "");
  EXPECT_EQ(narrow.low, 50);
  EXPECT_EQ(narrow.high, 2000);
  EXPECT_TRUE(narrow.log_scale);
  EXPECT_EQ(axis_ticks(narrow), (std::vector<double>{50, 100, 200, 500, 1000, 2000}));
  // Over three decades only powers of ten are labelled.
  const ChartAxis wide = decade_axis(57, 461126, "");
  EXPECT_EQ(wide.high, 500000);
  EXPECT_EQ(axis_ticks(wide), (std::vector<double>{100, 1000, 10000, 100000}));
  // Extreme values end in finite, bounded tick lists.
  const ChartAxis huge = decade_axis(1e-300, 1e308, "");
  EXPECT_LE(axis_ticks(huge).size(), 64u);
  EXPECT_FALSE(axis_ticks(decade_axis(1e300, 1e308, "")).empty());
  // No positive value (every latency rounded to 0): a default decade rather than log(0).
  const ChartAxis none = decade_axis(0, 0, "");
  EXPECT_EQ(none.low, 1);
  EXPECT_EQ(none.high, 10);
}

TEST(SvgChartTest, TickLabelsAndEscaping) {
  EXPECT_EQ(tick_label(0), "0");
  EXPECT_EQ(tick_label(0.5), "0.5");
  EXPECT_EQ(tick_label(200), "200");
  EXPECT_EQ(tick_label(1000), "1k");
  EXPECT_EQ(tick_label(25000), "25k");
  EXPECT_EQ(tick_label(2500000), "2.5M");
  EXPECT_EQ(xml_escape("a<b & \"c\" 'd'>\x01"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;?");
}

TEST(SvgChartTest, CurvesAreOnePathEachWithDistinctStyles) {
  SvgDocument doc(200, 100);
  const ChartPanel panel(10, 10, 100, 50, {0, 10, false, "x"}, {0, 1, false, "y"}, "t");
  panel.draw_curve(doc, {{0, 0}, {5, 0.5}, {10, 1}}, curve_style(0), "cdf", "a<b");
  panel.draw_curve(doc, {}, curve_style(1), "cdf", "empty");
  const std::string svg = doc.str();
  EXPECT_NE(svg.find("<path class=\"cdf\" data-case=\"a&lt;b\" d=\"M10.0,60.0 L60.0,35.0 L110.0,10.0\""),
            std::string::npos)
      << svg;
  EXPECT_EQ(svg.find("empty"), std::string::npos);
  for (size_t i = 1; i < 10; ++i) EXPECT_NE(curve_style(i).colour, curve_style(i - 1).colour);
  EXPECT_EQ(curve_style(10).colour, curve_style(0).colour);
  EXPECT_NE(curve_style(10).dash, curve_style(0).dash);  // past ten cases the dash tells them apart
}

}  // namespace
}  // namespace bypass::bench
