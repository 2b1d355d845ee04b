#include "tools/bypass-bench/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bypass::bench {

std::string svg_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

namespace {

// The 1-2-5 step that divides `span` into about `parts` intervals.
double nice_step(double span, int parts) {
  const double raw = span / parts;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  return magnitude * (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10);
}

}  // namespace

std::vector<double> axis_ticks(const ChartAxis& axis) {
  std::vector<double> ticks;
  if (axis.log_scale) {
    // Powers of ten, and 2 and 5 times them too when there are few decades to show.
    const bool fine = std::log10(axis.high / axis.low) <= 3.01;
    // Bounded in count too: near DBL_MAX, high * 1.0001 is infinite and so is the decade after.
    for (double decade = std::pow(10.0, std::floor(std::log10(axis.low)));
         decade <= axis.high * 1.0001 && std::isfinite(decade) && ticks.size() < 64; decade *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !fine) continue;
        const double t = decade * m;
        if (t >= axis.low * 0.9999 && t <= axis.high * 1.0001) ticks.push_back(t);
      }
    }
    return ticks;
  }
  const double step = nice_step(axis.high - axis.low, 5);
  for (double t = std::ceil(axis.low / step) * step; t <= axis.high + step * 1e-6 && ticks.size() < 50; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string tick_label(double value) {
  const char* suffix = "";
  double scaled = value;
  if (std::abs(value) >= 1e9) {
    scaled = value / 1e9;
    suffix = "G";
  } else if (std::abs(value) >= 1e6) {
    scaled = value / 1e6;
    suffix = "M";
  } else if (std::abs(value) >= 1e3) {
    scaled = value / 1e3;
    suffix = "k";
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g%s", std::round(scaled * 1000) / 1000, suffix);
  return text;
}

ChartAxis zero_based_axis(double max, std::string label) {
  if (!(max > 0) || !std::isfinite(max)) return {0, 1, false, std::move(label)};
  const double step = nice_step(max, 5);
  // A hair over a tick (a last partial second ending at 3.04 s) does not earn a whole empty step;
  // the curve's last few pixels are pinned to the edge instead.
  return {0, std::ceil(max / step - 0.05) * step, false, std::move(label)};
}

ChartAxis decade_axis(double min_positive, double max, std::string label) {
  if (!(min_positive > 0) || !std::isfinite(min_positive)) min_positive = 1;
  max = std::max(max, min_positive);
  // The 1-2-5 values around the data, so a curve ending at 2 ms does not leave a decade empty.
  const double low_decade = std::pow(10.0, std::floor(std::log10(min_positive)));
  double low = low_decade;
  for (double m : {2.0, 5.0})
    if (low_decade * m <= min_positive) low = low_decade * m;
  const double high_decade = std::pow(10.0, std::floor(std::log10(max)));
  double high = high_decade;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    high = high_decade * m;
    if (high >= max) break;
  }
  if (high <= low) high = low * 10;
  return {low, high, true, std::move(label)};
}

CurveStyle curve_style(size_t index) {
  // Tableau 10: distinct hues that stay apart for colour-blind readers too.
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  static const char* const kDashes[] = {"", "6,3", "2,2", "8,3,2,3"};
  const size_t colours = sizeof kColours / sizeof kColours[0];
  return {kColours[index % colours], kDashes[(index / colours) % 4]};
}

void SvgDocument::text(double x, double y, const std::string& content, const std::string& attributes) {
  add("<text x=\"" + svg_number(x) + "\" y=\"" + svg_number(y) + "\"" + (attributes.empty() ? "" : " ") + attributes +
      ">" + xml_escape(content) + "</text>");
}

void SvgDocument::line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  add("<line x1=\"" + svg_number(x1) + "\" y1=\"" + svg_number(y1) + "\" x2=\"" + svg_number(x2) + "\" y2=\"" +
      svg_number(y2) + "\" " + attributes + "/>");
}

std::string SvgDocument::str() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width_) + "\" height=\"" +
         svg_number(height_) + "\" viewBox=\"0 0 " + svg_number(width_) + " " + svg_number(height_) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
         body_ + "</svg>\n";
}

ChartPanel::ChartPanel(double left, double top, double width, double height, ChartAxis x, ChartAxis y,
                       std::string title)
    : left_(left), top_(top), width_(width), height_(height), x_(std::move(x)), y_(std::move(y)),
      title_(std::move(title)) {}

double ChartPanel::to_x(double value) const {
  double f;
  if (x_.log_scale) f = (std::log10(std::max(value, x_.low)) - std::log10(x_.low)) / (std::log10(x_.high) - std::log10(x_.low));
  else f = (value - x_.low) / (x_.high - x_.low);
  return left_ + std::clamp(f, 0.0, 1.0) * width_;
}

double ChartPanel::to_y(double value) const {
  double f;
  if (y_.log_scale) f = (std::log10(std::max(value, y_.low)) - std::log10(y_.low)) / (std::log10(y_.high) - std::log10(y_.low));
  else f = (value - y_.low) / (y_.high - y_.low);
  return top_ + height_ - std::clamp(f, 0.0, 1.0) * height_;
}

void ChartPanel::draw_frame(SvgDocument& doc) const {
  const std::string grid = "stroke=\"#dddddd\" stroke-width=\"1\"";
  const std::string axis = "stroke=\"black\" stroke-width=\"1\"";
  for (double t : axis_ticks(x_)) {
    const double x = to_x(t);
    doc.line(x, top_, x, top_ + height_, grid);
    doc.line(x, top_ + height_, x, top_ + height_ + 5, axis);
    doc.text(x, top_ + height_ + 18, tick_label(t), "text-anchor=\"middle\"");
  }
  for (double t : axis_ticks(y_)) {
    const double y = to_y(t);
    doc.line(left_, y, left_ + width_, y, grid);
    doc.line(left_ - 5, y, left_, y, axis);
    doc.text(left_ - 8, y + 4, tick_label(t), "text-anchor=\"end\"");
  }
  doc.add("<rect x=\"" + svg_number(left_) + "\" y=\"" + svg_number(top_) + "\" width=\"" + svg_number(width_) +
          "\" height=\"" + svg_number(height_) + "\" fill=\"none\" " + axis + "/>");
  doc.text(left_ + width_ / 2, top_ + height_ + 38, x_.label, "text-anchor=\"middle\"");
  const double label_x = left_ - 55;
  const double label_y = top_ + height_ / 2;
  doc.text(label_x, label_y, y_.label,
           "text-anchor=\"middle\" transform=\"rotate(-90 " + svg_number(label_x) + " " + svg_number(label_y) + ")\"");
  doc.text(left_ + width_ / 2, top_ - 10, title_, "text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\"");
}

void ChartPanel::draw_curve(SvgDocument& doc, const std::vector<std::pair<double, double>>& points,
                            const CurveStyle& style, const std::string& css_class,
                            const std::string& case_label) const {
  if (points.empty()) return;
  std::string d;
  for (size_t i = 0; i < points.size(); ++i)
    d += (i ? " L" : "M") + svg_number(to_x(points[i].first)) + "," + svg_number(to_y(points[i].second));
  // A single point still shows: a zero-length segment with round caps is a dot.
  if (points.size() == 1) d += " l0,0";
  doc.add("<path class=\"" + xml_escape(css_class) + "\" data-case=\"" + xml_escape(case_label) + "\" d=\"" + d +
          "\" fill=\"none\" stroke=\"" + style.colour + "\" stroke-width=\"2\" stroke-linecap=\"round\"" +
          (style.dash.empty() ? "" : " stroke-dasharray=\"" + style.dash + "\"") + "/>");
}

}  // namespace bypass::bench
