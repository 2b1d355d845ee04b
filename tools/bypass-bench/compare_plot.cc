#include "tools/bypass-bench/compare_plot.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include "tools/bypass-bench/svg_chart.h"

namespace bypass::bench {

namespace {

constexpr double kPanelWidth = 520;
constexpr double kPanelHeight = 340;
constexpr double kMarginLeft = 80;
constexpr double kMarginTop = 40;
constexpr double kPanelGap = 110;
constexpr double kLegendLine = 20;

std::vector<std::pair<double, double>> rate_points(const ResultCase& c) {
  std::vector<std::pair<double, double>> points;
  for (const ResultSample& s : c.samples) points.emplace_back(s.t, s.messages_per_second);
  return points;
}

}  // namespace

std::string comparison_plot_svg(const std::vector<CompareColumn>& columns) {
  double min_latency = std::numeric_limits<double>::infinity();
  double max_latency = 0;
  double max_seconds = 0;
  double max_rate = 0;
  for (const CompareColumn& column : columns) {
    for (const auto& [us, fraction] : column.result->latency_us.cdf) {
      if (us > 0) min_latency = std::min(min_latency, us);
      max_latency = std::max(max_latency, us);
    }
    for (const ResultSample& s : column.result->samples) {
      max_seconds = std::max(max_seconds, s.t);
      max_rate = std::max(max_rate, s.messages_per_second);
    }
  }
  const ChartPanel cdf_panel(kMarginLeft, kMarginTop, kPanelWidth, kPanelHeight,
                             decade_axis(min_latency, max_latency, "latency (us, log scale)"),
                             {0, 1, false, "fraction of messages at or below"}, "Latency CDF");
  const ChartPanel rate_panel(kMarginLeft + kPanelWidth + kPanelGap, kMarginTop, kPanelWidth, kPanelHeight,
                              zero_based_axis(max_seconds, "time (s)"), zero_based_axis(max_rate, "messages/s"),
                              "Throughput over time");
  const double legend_top = kMarginTop + kPanelHeight + 70;
  SvgDocument doc(kMarginLeft + 2 * kPanelWidth + kPanelGap + 30,
                  legend_top + kLegendLine * static_cast<double>(columns.size()) + 10);
  cdf_panel.draw_frame(doc);
  rate_panel.draw_frame(doc);
  for (size_t i = 0; i < columns.size(); ++i) {
    const CurveStyle style = curve_style(i);
    const ResultCase& c = *columns[i].result;
    cdf_panel.draw_curve(doc, c.latency_us.cdf, style, "cdf", columns[i].label);
    rate_panel.draw_curve(doc, rate_points(c), style, "rate", columns[i].label);
    const double y = legend_top + kLegendLine * static_cast<double>(i);
    doc.line(kMarginLeft, y, kMarginLeft + 30, y,
             "stroke=\"" + style.colour + "\" stroke-width=\"3\"" +
                 (style.dash.empty() ? "" : " stroke-dasharray=\"" + style.dash + "\""));
    doc.text(kMarginLeft + 40, y + 4,
             columns[i].label + " (" + c.transport + ", " + c.mode + ", " + std::to_string(c.message_size) + " B" +
                 (c.samples.empty() ? "; no per-second samples" : "") + ")");
  }
  return doc.str();
}

bool write_comparison_plot(const std::vector<CompareColumn>& columns, const std::string& path, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  out << comparison_plot_svg(columns);
  out.close();
  if (!out) {
    *error = "writing '" + path + "' failed";
    return false;
  }
  return true;
}

}  // namespace bypass::bench
