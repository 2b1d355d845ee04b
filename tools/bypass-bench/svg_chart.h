// A small SVG writer for line charts: a document of panels, each with a linear or log-scale axis
// pair, ticks, grid lines, axis labels and polylines. Written directly so plotting needs no
// gnuplot or other tool on the machine.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bypass::bench {

struct ChartAxis {
  double low = 0;
  double high = 1;
  bool log_scale = false;  // low must be > 0 then
  std::string label;
};

// Tick positions for `axis`: 1-2-5 steps on a linear axis; powers of ten on a log axis, with 2x
// and 5x in between when it spans at most three decades.
std::vector<double> axis_ticks(const ChartAxis& axis);
// A tick label: "0.5", "20", "1k", "2.5M".
std::string tick_label(double value);
// A linear axis [0, nice value >= max], or [0, 1] when max <= 0.
ChartAxis zero_based_axis(double max, std::string label);
// A log axis from the 1-2-5 value (1, 2, 5 times a power of ten) at or below `min_positive` to
// the one at or above `max`.
ChartAxis decade_axis(double min_positive, double max, std::string label);

// Text with &, <, >, " and ' escaped for XML.
std::string xml_escape(const std::string& text);

// A distinct stroke colour (and dash pattern after the first ten) for curve `index`.
struct CurveStyle {
  std::string colour;
  std::string dash;  // empty: solid
};
CurveStyle curve_style(size_t index);

class SvgDocument;

// One plotting area at (left, top) of size width x height in the document, axis frame included.
class ChartPanel {
 public:
  ChartPanel(double left, double top, double width, double height, ChartAxis x, ChartAxis y, std::string title);

  // Draws the frame, grid, ticks, tick labels, axis labels and title.
  void draw_frame(SvgDocument& doc) const;
  // Draws `points` (data coordinates) as one <path class="css_class">; values off a log axis
  // (<= 0) are pinned to its low end. Nothing is drawn for no points.
  void draw_curve(SvgDocument& doc, const std::vector<std::pair<double, double>>& points, const CurveStyle& style,
                  const std::string& css_class, const std::string& case_label) const;

 private:
  double to_x(double value) const;
  double to_y(double value) const;
  double left_, top_, width_, height_;
  ChartAxis x_, y_;
  std::string title_;
};

class SvgDocument {
 public:
  SvgDocument(double width, double height) : width_(width), height_(height) {}
  void add(std::string element) { body_ += element + "\n"; }
  void text(double x, double y, const std::string& content, const std::string& attributes = "");
  void line(double x1, double y1, double x2, double y2, const std::string& attributes);
  std::string str() const;

 private:
  double width_, height_;
  std::string body_;
};

// "12.3": one decimal, enough for pixel coordinates.
std::string svg_number(double value);

}  // namespace bypass::bench
