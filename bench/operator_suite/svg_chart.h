// A grouped bar chart written as SVG by hand (no plotting dependency): one group per
// operator, one bar per series, on a log10 axis because untuned and tuned speeds differ by
// orders of magnitude. A missing value (<= 0) draws no bar.
#pragma once

#include <string>
#include <vector>

namespace mt::bench {

struct ChartSeries {
  std::string name;
  std::string color;          // CSS color
  std::vector<double> values; // one per group
};

std::string grouped_bar_chart_svg(const std::string& title, const std::string& y_label,
                                  const std::vector<std::string>& groups,
                                  const std::vector<ChartSeries>& series);

} // namespace mt::bench
