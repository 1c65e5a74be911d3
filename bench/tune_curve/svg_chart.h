// A line chart written as plain SVG (no plotting dependency): one or more series of (x, y)
// points, optional horizontal reference lines (e.g. oneDNN's GFLOPS), axes with ticks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mt::bench {

struct Series {
  std::string label;
  std::string color; // CSS colour
  std::vector<std::pair<double, double>> points;
};

struct HLine {
  std::string label;
  std::string color;
  double y = 0;
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<HLine> lines;
};

// The chart as an SVG document.
std::string to_svg(const Chart& chart, int width = 760, int height = 440);

} // namespace mt::bench
